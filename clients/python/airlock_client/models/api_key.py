from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="ApiKey")


@_attrs_define
class ApiKey:
    """
    Attributes:
        created_at (str):
        created_by (str):
        id (str):
        last_used_at (None | str):
        name (str):
        prefix (str):
        revoked_at (None | str):
        scopes (list[str]):
        tenant_id (str):
    """

    created_at: str
    created_by: str
    id: str
    last_used_at: None | str
    name: str
    prefix: str
    revoked_at: None | str
    scopes: list[str]
    tenant_id: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        created_at = self.created_at

        created_by = self.created_by

        id = self.id

        last_used_at: None | str
        last_used_at = self.last_used_at

        name = self.name

        prefix = self.prefix

        revoked_at: None | str
        revoked_at = self.revoked_at

        scopes = self.scopes

        tenant_id = self.tenant_id

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "created_at": created_at,
                "created_by": created_by,
                "id": id,
                "last_used_at": last_used_at,
                "name": name,
                "prefix": prefix,
                "revoked_at": revoked_at,
                "scopes": scopes,
                "tenant_id": tenant_id,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        created_at = d.pop("created_at")

        created_by = d.pop("created_by")

        id = d.pop("id")

        def _parse_last_used_at(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        last_used_at = _parse_last_used_at(d.pop("last_used_at"))

        name = d.pop("name")

        prefix = d.pop("prefix")

        def _parse_revoked_at(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        revoked_at = _parse_revoked_at(d.pop("revoked_at"))

        scopes = cast(list[str], d.pop("scopes"))

        tenant_id = d.pop("tenant_id")

        api_key = cls(
            created_at=created_at,
            created_by=created_by,
            id=id,
            last_used_at=last_used_at,
            name=name,
            prefix=prefix,
            revoked_at=revoked_at,
            scopes=scopes,
            tenant_id=tenant_id,
        )

        api_key.additional_properties = d
        return api_key

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
