from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="SecretPut")


@_attrs_define
class SecretPut:
    """
    Attributes:
        value (str): 1 to 65536 bytes as UTF-8
        allowed_hosts (list[str] | Unset):
    """

    value: str
    allowed_hosts: list[str] | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        value = self.value

        allowed_hosts: list[str] | Unset = UNSET
        if not isinstance(self.allowed_hosts, Unset):
            allowed_hosts = self.allowed_hosts

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "value": value,
            }
        )
        if allowed_hosts is not UNSET:
            field_dict["allowed_hosts"] = allowed_hosts

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        value = d.pop("value")

        allowed_hosts = cast(list[str], d.pop("allowed_hosts", UNSET))

        secret_put = cls(
            value=value,
            allowed_hosts=allowed_hosts,
        )

        return secret_put
