from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.tenant import Tenant


T = TypeVar("T", bound="TenantCreated")


@_attrs_define
class TenantCreated:
    """
    Attributes:
        api_key (str):
        api_key_id (str):
        tenant (Tenant):
    """

    api_key: str
    api_key_id: str
    tenant: Tenant
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        api_key = self.api_key

        api_key_id = self.api_key_id

        tenant = self.tenant.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "api_key": api_key,
                "api_key_id": api_key_id,
                "tenant": tenant,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.tenant import Tenant

        d = dict(src_dict)
        api_key = d.pop("api_key")

        api_key_id = d.pop("api_key_id")

        tenant = Tenant.from_dict(d.pop("tenant"))

        tenant_created = cls(
            api_key=api_key,
            api_key_id=api_key_id,
            tenant=tenant,
        )

        tenant_created.additional_properties = d
        return tenant_created

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
