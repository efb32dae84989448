from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="Transition")


@_attrs_define
class Transition:
    """
    Attributes:
        at (str):
        from_state (None | str):
        reason (None | str):
        to_state (str):
    """

    at: str
    from_state: None | str
    reason: None | str
    to_state: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        at = self.at

        from_state: None | str
        from_state = self.from_state

        reason: None | str
        reason = self.reason

        to_state = self.to_state

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "at": at,
                "from_state": from_state,
                "reason": reason,
                "to_state": to_state,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        at = d.pop("at")

        def _parse_from_state(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        from_state = _parse_from_state(d.pop("from_state"))

        def _parse_reason(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        reason = _parse_reason(d.pop("reason"))

        to_state = d.pop("to_state")

        transition = cls(
            at=at,
            from_state=from_state,
            reason=reason,
            to_state=to_state,
        )

        transition.additional_properties = d
        return transition

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
