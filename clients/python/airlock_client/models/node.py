from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.node_state import NodeState, check_node_state

if TYPE_CHECKING:
    from ..models.capacity import Capacity
    from ..models.node_capacity import NodeCapacity
    from ..models.node_labels import NodeLabels


T = TypeVar("T", bound="Node")


@_attrs_define
class Node:
    """A host that runs sandboxes: what it offers, what its live sandboxes hold, its lease.

    Attributes:
        address (str):
        allocated (Capacity):
        capacity (NodeCapacity):
        id (str):
        labels (NodeLabels):
        lease_expires_at (str):
        platform (None | str):
        registered_at (str):
        runtime (str):
        sandboxes (int):
        state (NodeState):
        version (str):
    """

    address: str
    allocated: Capacity
    capacity: NodeCapacity
    id: str
    labels: NodeLabels
    lease_expires_at: str
    platform: None | str
    registered_at: str
    runtime: str
    sandboxes: int
    state: NodeState
    version: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        address = self.address

        allocated = self.allocated.to_dict()

        capacity = self.capacity.to_dict()

        id = self.id

        labels = self.labels.to_dict()

        lease_expires_at = self.lease_expires_at

        platform: None | str
        platform = self.platform

        registered_at = self.registered_at

        runtime = self.runtime

        sandboxes = self.sandboxes

        state: str = self.state

        version = self.version

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "address": address,
                "allocated": allocated,
                "capacity": capacity,
                "id": id,
                "labels": labels,
                "lease_expires_at": lease_expires_at,
                "platform": platform,
                "registered_at": registered_at,
                "runtime": runtime,
                "sandboxes": sandboxes,
                "state": state,
                "version": version,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.capacity import Capacity
        from ..models.node_capacity import NodeCapacity
        from ..models.node_labels import NodeLabels

        d = dict(src_dict)
        address = d.pop("address")

        allocated = Capacity.from_dict(d.pop("allocated"))

        capacity = NodeCapacity.from_dict(d.pop("capacity"))

        id = d.pop("id")

        labels = NodeLabels.from_dict(d.pop("labels"))

        lease_expires_at = d.pop("lease_expires_at")

        def _parse_platform(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        platform = _parse_platform(d.pop("platform"))

        registered_at = d.pop("registered_at")

        runtime = d.pop("runtime")

        sandboxes = d.pop("sandboxes")

        state = check_node_state(d.pop("state"))

        version = d.pop("version")

        node = cls(
            address=address,
            allocated=allocated,
            capacity=capacity,
            id=id,
            labels=labels,
            lease_expires_at=lease_expires_at,
            platform=platform,
            registered_at=registered_at,
            runtime=runtime,
            sandboxes=sandboxes,
            state=state,
            version=version,
        )

        node.additional_properties = d
        return node

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
