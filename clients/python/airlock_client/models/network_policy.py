from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.network_policy_mode import NetworkPolicyMode, check_network_policy_mode
from ..types import UNSET, Unset

T = TypeVar("T", bound="NetworkPolicy")


@_attrs_define
class NetworkPolicy:
    """
    Attributes:
        allow (list[str] | Unset):
        mode (NetworkPolicyMode | Unset):  Default: 'none'.
    """

    allow: list[str] | Unset = UNSET
    mode: NetworkPolicyMode | Unset = "none"
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        allow: list[str] | Unset = UNSET
        if not isinstance(self.allow, Unset):
            allow = self.allow

        mode: str | Unset = UNSET
        if not isinstance(self.mode, Unset):
            mode = self.mode

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
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

        network_policy.additional_properties = d
        return network_policy

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
