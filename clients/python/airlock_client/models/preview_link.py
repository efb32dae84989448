from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="PreviewLink")


@_attrs_define
class PreviewLink:
    """
    Attributes:
        expires_at (str):
        host_url (None | str):
        jti (str):
        port (int):
        sandbox_id (str):
        url (str):
    """

    expires_at: str
    host_url: None | str
    jti: str
    port: int
    sandbox_id: str
    url: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        expires_at = self.expires_at

        host_url: None | str
        host_url = self.host_url

        jti = self.jti

        port = self.port

        sandbox_id = self.sandbox_id

        url = self.url

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "expires_at": expires_at,
                "host_url": host_url,
                "jti": jti,
                "port": port,
                "sandbox_id": sandbox_id,
                "url": url,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        expires_at = d.pop("expires_at")

        def _parse_host_url(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        host_url = _parse_host_url(d.pop("host_url"))

        jti = d.pop("jti")

        port = d.pop("port")

        sandbox_id = d.pop("sandbox_id")

        url = d.pop("url")

        preview_link = cls(
            expires_at=expires_at,
            host_url=host_url,
            jti=jti,
            port=port,
            sandbox_id=sandbox_id,
            url=url,
        )

        preview_link.additional_properties = d
        return preview_link

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
