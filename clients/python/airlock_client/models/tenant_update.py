from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define

from ..models.tenant_update_status_type_0 import TenantUpdateStatusType0, check_tenant_update_status_type_0
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.quotas_patch import QuotasPatch


T = TypeVar("T", bound="TenantUpdate")


@_attrs_define
class TenantUpdate:
    """
    Attributes:
        quotas (None | QuotasPatch | Unset):
        status (None | TenantUpdateStatusType0 | Unset):
    """

    quotas: None | QuotasPatch | Unset = UNSET
    status: None | TenantUpdateStatusType0 | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.quotas_patch import QuotasPatch

        quotas: dict[str, Any] | None | Unset
        if isinstance(self.quotas, Unset):
            quotas = UNSET
        elif isinstance(self.quotas, QuotasPatch):
            quotas = self.quotas.to_dict()
        else:
            quotas = self.quotas

        status: None | str | Unset
        if isinstance(self.status, Unset):
            status = UNSET
        elif isinstance(self.status, str):
            status = self.status
        else:
            status = self.status

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if quotas is not UNSET:
            field_dict["quotas"] = quotas
        if status is not UNSET:
            field_dict["status"] = status

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.quotas_patch import QuotasPatch

        d = dict(src_dict)

        def _parse_quotas(data: object) -> None | QuotasPatch | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                quotas_type_0 = QuotasPatch.from_dict(data)

                return quotas_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | QuotasPatch | Unset, data)

        quotas = _parse_quotas(d.pop("quotas", UNSET))

        def _parse_status(data: object) -> None | TenantUpdateStatusType0 | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                status_type_0 = check_tenant_update_status_type_0(data)

                return status_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | TenantUpdateStatusType0 | Unset, data)

        status = _parse_status(d.pop("status", UNSET))

        tenant_update = cls(
            quotas=quotas,
            status=status,
        )

        return tenant_update
