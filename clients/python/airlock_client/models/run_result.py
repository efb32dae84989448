from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.run_result_data import RunResultData


T = TypeVar("T", bound="RunResult")


@_attrs_define
class RunResult:
    """A value to show, by MIME type: `text/plain` always, and `image/png` (base64),
    `image/svg+xml`, `text/html`, `text/markdown` or `application/json` when it has them.

        Attributes:
            data (RunResultData):
    """

    data: RunResultData
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data = self.data.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "data": data,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.run_result_data import RunResultData

        d = dict(src_dict)
        data = RunResultData.from_dict(d.pop("data"))

        run_result = cls(
            data=data,
        )

        run_result.additional_properties = d
        return run_result

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
