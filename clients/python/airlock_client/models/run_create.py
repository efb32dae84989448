from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="RunCreate")


@_attrs_define
class RunCreate:
    """Code to run in the context. Its deadline interrupts the code (a `TimeoutError` in the
    answer) and the context goes on; code that does not stop within 5 s more (a long call
    that does not let Python's signal handlers run) ends the context with it.

        Attributes:
            code (str):
            timeout_s (float | Unset):  Default: 60.0.
    """

    code: str
    timeout_s: float | Unset = 60.0

    def to_dict(self) -> dict[str, Any]:
        code = self.code

        timeout_s = self.timeout_s

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "code": code,
            }
        )
        if timeout_s is not UNSET:
            field_dict["timeout_s"] = timeout_s

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        code = d.pop("code")

        timeout_s = d.pop("timeout_s", UNSET)

        run_create = cls(
            code=code,
            timeout_s=timeout_s,
        )

        return run_create
