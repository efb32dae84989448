from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="Secret")


@_attrs_define
class Secret:
    """A secret's name and times; its value is write-only.

    Attributes:
        allowed_hosts (list[str]):
        created_at (str):
        created_by (str):
        name (str):
        updated_at (str):
    """

    allowed_hosts: list[str]
    created_at: str
    created_by: str
    name: str
    updated_at: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        allowed_hosts = self.allowed_hosts

        created_at = self.created_at

        created_by = self.created_by

        name = self.name

        updated_at = self.updated_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "allowed_hosts": allowed_hosts,
                "created_at": created_at,
                "created_by": created_by,
                "name": name,
                "updated_at": updated_at,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        allowed_hosts = cast(list[str], d.pop("allowed_hosts"))

        created_at = d.pop("created_at")

        created_by = d.pop("created_by")

        name = d.pop("name")

        updated_at = d.pop("updated_at")

        secret = cls(
            allowed_hosts=allowed_hosts,
            created_at=created_at,
            created_by=created_by,
            name=name,
            updated_at=updated_at,
        )

        secret.additional_properties = d
        return secret

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
