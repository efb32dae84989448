from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..models.network_policy_mode import NetworkPolicyMode, check_network_policy_mode
from ..types import UNSET, Unset

T = TypeVar("T", bound="NetworkPolicy")


@_attrs_define
class NetworkPolicy:
    """A template's network, the same policy as a sandbox's: its setup steps run under it.
    Sandboxes started from the template choose their own (`none` unless asked).

        Attributes:
            allow (list[str] | Unset):
            mode (NetworkPolicyMode | Unset):  Default: 'none'.
    """

    allow: list[str] | Unset = UNSET
    mode: NetworkPolicyMode | Unset = "none"

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
        mode: NetworkPolicyMode | Unset
        if isinstance(_mode, Unset):
            mode = UNSET
        else:
            mode = check_network_policy_mode(_mode)

        network_policy = cls(
            allow=allow,
            mode=mode,
        )

        return network_policy
