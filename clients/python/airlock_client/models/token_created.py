from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="TokenCreated")


@_attrs_define
class TokenCreated:
    """
    Attributes:
        expires_at (str):
        jti (str):
        sandbox_id (None | str):
        scopes (list[str]):
        token (str):
        token_type (str | Unset):  Default: 'Bearer'.
    """

    expires_at: str
    jti: str
    sandbox_id: None | str
    scopes: list[str]
    token: str
    token_type: str | Unset = "Bearer"
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        expires_at = self.expires_at

        jti = self.jti

        sandbox_id: None | str
        sandbox_id = self.sandbox_id

        scopes = self.scopes

        token = self.token

        token_type = self.token_type

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "expires_at": expires_at,
                "jti": jti,
                "sandbox_id": sandbox_id,
                "scopes": scopes,
                "token": token,
            }
        )
        if token_type is not UNSET:
            field_dict["token_type"] = token_type

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        expires_at = d.pop("expires_at")

        jti = d.pop("jti")

        def _parse_sandbox_id(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        sandbox_id = _parse_sandbox_id(d.pop("sandbox_id"))

        scopes = cast(list[str], d.pop("scopes"))

        token = d.pop("token")

        token_type = d.pop("token_type", UNSET)

        token_created = cls(
            expires_at=expires_at,
            jti=jti,
            sandbox_id=sandbox_id,
            scopes=scopes,
            token=token,
            token_type=token_type,
        )

        token_created.additional_properties = d
        return token_created

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
