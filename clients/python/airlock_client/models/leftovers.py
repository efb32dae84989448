from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="Leftovers")


@_attrs_define
class Leftovers:
    """
    Attributes:
        sandboxes (list[str] | Unset):
        snapshots (list[str] | Unset):
    """

    sandboxes: list[str] | Unset = UNSET
    snapshots: list[str] | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        sandboxes: list[str] | Unset = UNSET
        if not isinstance(self.sandboxes, Unset):
            sandboxes = self.sandboxes

        snapshots: list[str] | Unset = UNSET
        if not isinstance(self.snapshots, Unset):
            snapshots = self.snapshots

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({})
        if sandboxes is not UNSET:
            field_dict["sandboxes"] = sandboxes
        if snapshots is not UNSET:
            field_dict["snapshots"] = snapshots

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        sandboxes = cast(list[str], d.pop("sandboxes", UNSET))

        snapshots = cast(list[str], d.pop("snapshots", UNSET))

        leftovers = cls(
            sandboxes=sandboxes,
            snapshots=snapshots,
        )

        leftovers.additional_properties = d
        return leftovers

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
