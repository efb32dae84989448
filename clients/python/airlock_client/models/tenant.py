from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.tenant_status import TenantStatus, check_tenant_status
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.quotas import Quotas
    from ..models.tenant_usage import TenantUsage


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
        usage (None | TenantUsage | Unset):
    """

    created_at: str
    id: str
    name: str
    quotas: Quotas
    status: TenantStatus
    updated_at: str
    usage: None | TenantUsage | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.tenant_usage import TenantUsage

        created_at = self.created_at

        id = self.id

        name = self.name

        quotas = self.quotas.to_dict()

        status: str = self.status

        updated_at = self.updated_at

        usage: dict[str, Any] | None | Unset
        if isinstance(self.usage, Unset):
            usage = UNSET
        elif isinstance(self.usage, TenantUsage):
            usage = self.usage.to_dict()
        else:
            usage = self.usage

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
        if usage is not UNSET:
            field_dict["usage"] = usage

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.quotas import Quotas
        from ..models.tenant_usage import TenantUsage

        d = dict(src_dict)
        created_at = d.pop("created_at")

        id = d.pop("id")

        name = d.pop("name")

        quotas = Quotas.from_dict(d.pop("quotas"))

        status = check_tenant_status(d.pop("status"))

        updated_at = d.pop("updated_at")

        def _parse_usage(data: object) -> None | TenantUsage | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                usage_type_0 = TenantUsage.from_dict(data)

                return usage_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | TenantUsage | Unset, data)

        usage = _parse_usage(d.pop("usage", UNSET))

        tenant = cls(
            created_at=created_at,
            id=id,
            name=name,
            quotas=quotas,
            status=status,
            updated_at=updated_at,
            usage=usage,
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
