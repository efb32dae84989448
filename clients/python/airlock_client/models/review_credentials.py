from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="ReviewCredentials")


@_attrs_define
class ReviewCredentials:
    """How to fetch a private https repository: a tenant secret (`PUT /v1/secrets/{name}`)
    sent as the password of HTTP Basic auth. The value is read on the host at fetch time and
    given to git through its environment only; nothing of it enters the sandbox.

        Attributes:
            secret (str):
            username (str | Unset):  Default: 'x-access-token'.
    """

    secret: str
    username: str | Unset = "x-access-token"

    def to_dict(self) -> dict[str, Any]:
        secret = self.secret

        username = self.username

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "secret": secret,
            }
        )
        if username is not UNSET:
            field_dict["username"] = username

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        secret = d.pop("secret")

        username = d.pop("username", UNSET)

        review_credentials = cls(
            secret=secret,
            username=username,
        )

        return review_credentials
