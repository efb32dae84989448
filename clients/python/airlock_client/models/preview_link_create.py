from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="PreviewLinkCreate")


@_attrs_define
class PreviewLinkCreate:
    """
    Attributes:
        port (int): A TCP port inside the sandbox
        ttl_s (int | None | Unset):
    """

    port: int
    ttl_s: int | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        port = self.port

        ttl_s: int | None | Unset
        if isinstance(self.ttl_s, Unset):
            ttl_s = UNSET
        else:
            ttl_s = self.ttl_s

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "port": port,
            }
        )
        if ttl_s is not UNSET:
            field_dict["ttl_s"] = ttl_s

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        port = d.pop("port")

        def _parse_ttl_s(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        ttl_s = _parse_ttl_s(d.pop("ttl_s", UNSET))

        preview_link_create = cls(
            port=port,
            ttl_s=ttl_s,
        )

        return preview_link_create
