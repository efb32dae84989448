from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

from ..models.pool_target_set_size import PoolTargetSetSize, check_pool_target_set_size
from ..types import UNSET, Unset

T = TypeVar("T", bound="PoolTargetSet")


@_attrs_define
class PoolTargetSet:
    """
    Attributes:
        target (int):
        size (PoolTargetSetSize | Unset):  Default: 'small'.
    """

    target: int
    size: PoolTargetSetSize | Unset = "small"

    def to_dict(self) -> dict[str, Any]:
        target = self.target

        size: str | Unset = UNSET
        if not isinstance(self.size, Unset):
            size = self.size

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "target": target,
            }
        )
        if size is not UNSET:
            field_dict["size"] = size

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        target = d.pop("target")

        _size = d.pop("size", UNSET)
        size: PoolTargetSetSize | Unset
        if isinstance(_size, Unset):
            size = UNSET
        else:
            size = check_pool_target_set_size(_size)

        pool_target_set = cls(
            target=target,
            size=size,
        )

        return pool_target_set
