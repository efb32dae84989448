from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.quotas_patch import QuotasPatch


T = TypeVar("T", bound="TenantCreate")


@_attrs_define
class TenantCreate:
    """
    Attributes:
        name (str):
        quotas (None | QuotasPatch | Unset):
    """

    name: str
    quotas: None | QuotasPatch | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.quotas_patch import QuotasPatch

        name = self.name

        quotas: dict[str, Any] | None | Unset
        if isinstance(self.quotas, Unset):
            quotas = UNSET
        elif isinstance(self.quotas, QuotasPatch):
            quotas = self.quotas.to_dict()
        else:
            quotas = self.quotas

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "name": name,
            }
        )
        if quotas is not UNSET:
            field_dict["quotas"] = quotas

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.quotas_patch import QuotasPatch

        d = dict(src_dict)
        name = d.pop("name")

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

        tenant_create = cls(
            name=name,
            quotas=quotas,
        )

        return tenant_create
