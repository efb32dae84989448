from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..models.network_change_mode import NetworkChangeMode, check_network_change_mode
from ..types import UNSET, Unset

T = TypeVar("T", bound="NetworkChange")


@_attrs_define
class NetworkChange:
    """A running sandbox's new egress: "allowlist" or "open" (a sandbox created without a
    network keeps none: changing it is a 409).

        Attributes:
            mode (NetworkChangeMode):
            allow (list[str] | Unset):
    """

    mode: NetworkChangeMode
    allow: list[str] | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        mode: str = self.mode

        allow: list[str] | Unset = UNSET
        if not isinstance(self.allow, Unset):
            allow = self.allow

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "mode": mode,
            }
        )
        if allow is not UNSET:
            field_dict["allow"] = allow

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        mode = check_network_change_mode(d.pop("mode"))

        allow = cast(list[str], d.pop("allow", UNSET))

        network_change = cls(
            mode=mode,
            allow=allow,
        )

        return network_change
