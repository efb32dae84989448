from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="BrokenLink")


@_attrs_define
class BrokenLink:
    """
    Attributes:
        event_id (int | None):
        reason (str):
        seq (int):
    """

    event_id: int | None
    reason: str
    seq: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        event_id: int | None
        event_id = self.event_id

        reason = self.reason

        seq = self.seq

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "event_id": event_id,
                "reason": reason,
                "seq": seq,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)

        def _parse_event_id(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        event_id = _parse_event_id(d.pop("event_id"))

        reason = d.pop("reason")

        seq = d.pop("seq")

        broken_link = cls(
            event_id=event_id,
            reason=reason,
            seq=seq,
        )

        broken_link.additional_properties = d
        return broken_link

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
