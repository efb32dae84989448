from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.pool_overview_snapshots import PoolOverviewSnapshots, check_pool_overview_snapshots

if TYPE_CHECKING:
    from ..models.pool_status import PoolStatus


T = TypeVar("T", bound="PoolOverview")


@_attrs_define
class PoolOverview:
    """
    Attributes:
        host (str):
        note (str):
        pools (list[PoolStatus]):
        snapshots (PoolOverviewSnapshots):
    """

    host: str
    note: str
    pools: list[PoolStatus]
    snapshots: PoolOverviewSnapshots
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        host = self.host

        note = self.note

        pools = []
        for pools_item_data in self.pools:
            pools_item = pools_item_data.to_dict()
            pools.append(pools_item)

        snapshots: str = self.snapshots

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "host": host,
                "note": note,
                "pools": pools,
                "snapshots": snapshots,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.pool_status import PoolStatus

        d = dict(src_dict)
        host = d.pop("host")

        note = d.pop("note")

        pools = []
        _pools = d.pop("pools")
        for pools_item_data in _pools:
            pools_item = PoolStatus.from_dict(pools_item_data)

            pools.append(pools_item)

        snapshots = check_pool_overview_snapshots(d.pop("snapshots"))

        pool_overview = cls(
            host=host,
            note=note,
            pools=pools,
            snapshots=snapshots,
        )

        pool_overview.additional_properties = d
        return pool_overview

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
