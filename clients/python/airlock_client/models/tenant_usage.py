from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="TenantUsage")


@_attrs_define
class TenantUsage:
    """What the tenant holds now. `stored_output_bytes`: its finished execs' stored output
    (trimmed to `max_stored_output_mib`); running execs' output is counted when they end.

        Attributes:
            stored_output_bytes (int):
    """

    stored_output_bytes: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        stored_output_bytes = self.stored_output_bytes

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "stored_output_bytes": stored_output_bytes,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        stored_output_bytes = d.pop("stored_output_bytes")

        tenant_usage = cls(
            stored_output_bytes=stored_output_bytes,
        )

        tenant_usage.additional_properties = d
        return tenant_usage

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
