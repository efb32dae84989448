from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="Capacity")


@_attrs_define
class Capacity:
    """
    Attributes:
        disk_mib (int):
        memory_mib (int):
        vcpus (float):
    """

    disk_mib: int
    memory_mib: int
    vcpus: float
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        disk_mib = self.disk_mib

        memory_mib = self.memory_mib

        vcpus = self.vcpus

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "disk_mib": disk_mib,
                "memory_mib": memory_mib,
                "vcpus": vcpus,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        disk_mib = d.pop("disk_mib")

        memory_mib = d.pop("memory_mib")

        vcpus = d.pop("vcpus")

        capacity = cls(
            disk_mib=disk_mib,
            memory_mib=memory_mib,
            vcpus=vcpus,
        )

        capacity.additional_properties = d
        return capacity

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
