from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..models.sandbox_network_mode import SandboxNetworkMode, check_sandbox_network_mode
from ..types import UNSET, Unset

T = TypeVar("T", bound="SandboxNetwork")


@_attrs_define
class SandboxNetwork:
    """Egress of a sandbox: `none` (the default), `allowlist` (only `allow`) or `open` (where
    the operator allowed it for the tenant). The host, link-local addresses (cloud metadata)
    and other sandboxes are never reachable.

        Attributes:
            allow (list[str] | Unset):
            mode (SandboxNetworkMode | Unset):  Default: 'none'.
    """

    allow: list[str] | Unset = UNSET
    mode: SandboxNetworkMode | Unset = "none"

    def to_dict(self) -> dict[str, Any]:
        allow: list[str] | Unset = UNSET
        if not isinstance(self.allow, Unset):
            allow = self.allow

        mode: str | Unset = UNSET
        if not isinstance(self.mode, Unset):
            mode = self.mode

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if allow is not UNSET:
            field_dict["allow"] = allow
        if mode is not UNSET:
            field_dict["mode"] = mode

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        allow = cast(list[str], d.pop("allow", UNSET))

        _mode = d.pop("mode", UNSET)
        mode: SandboxNetworkMode | Unset
        if isinstance(_mode, Unset):
            mode = UNSET
        else:
            mode = check_sandbox_network_mode(_mode)

        sandbox_network = cls(
            allow=allow,
            mode=mode,
        )

        return sandbox_network
