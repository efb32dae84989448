from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.tenant_status import TenantStatus, check_tenant_status

if TYPE_CHECKING:
    from ..models.quotas import Quotas


T = TypeVar("T", bound="Tenant")


@_attrs_define
class Tenant:
    """
    Attributes:
        created_at (str):
        id (str):
        name (str):
        quotas (Quotas):
        status (TenantStatus):
        updated_at (str):
    """

    created_at: str
    id: str
    name: str
    quotas: Quotas
    status: TenantStatus
    updated_at: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        created_at = self.created_at

        id = self.id

        name = self.name

        quotas = self.quotas.to_dict()

        status: str = self.status

        updated_at = self.updated_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "created_at": created_at,
                "id": id,
                "name": name,
                "quotas": quotas,
                "status": status,
                "updated_at": updated_at,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.quotas import Quotas

        d = dict(src_dict)
        created_at = d.pop("created_at")

        id = d.pop("id")

        name = d.pop("name")

        quotas = Quotas.from_dict(d.pop("quotas"))

        status = check_tenant_status(d.pop("status"))

        updated_at = d.pop("updated_at")

        tenant = cls(
            created_at=created_at,
            id=id,
            name=name,
            quotas=quotas,
            status=status,
            updated_at=updated_at,
        )

        tenant.additional_properties = d
        return tenant

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
