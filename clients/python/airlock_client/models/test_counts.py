from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="TestCounts")


@_attrs_define
class TestCounts:
    """Tests by outcome, as the review's pytest plugin recorded them.

    Attributes:
        error (int):
        failed (int):
        passed (int):
        skipped (int):
        xfailed (int):
        xpassed (int):
    """

    error: int
    failed: int
    passed: int
    skipped: int
    xfailed: int
    xpassed: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        error = self.error

        failed = self.failed

        passed = self.passed

        skipped = self.skipped

        xfailed = self.xfailed

        xpassed = self.xpassed

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "error": error,
                "failed": failed,
                "passed": passed,
                "skipped": skipped,
                "xfailed": xfailed,
                "xpassed": xpassed,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        error = d.pop("error")

        failed = d.pop("failed")

        passed = d.pop("passed")

        skipped = d.pop("skipped")

        xfailed = d.pop("xfailed")

        xpassed = d.pop("xpassed")

        test_counts = cls(
            error=error,
            failed=failed,
            passed=passed,
            skipped=skipped,
            xfailed=xfailed,
            xpassed=xpassed,
        )

        test_counts.additional_properties = d
        return test_counts

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
