from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.regression import Regression
    from ..models.test_counts import TestCounts


T = TypeVar("T", bound="ReviewGate")


@_attrs_define
class ReviewGate:
    """Whether the tests allow an approval, decided before the model is asked: never when the
    change touches test infrastructure, when the head's results are missing or odd, when a
    test fails, or when a test that passes at the base fails, vanishes or is skipped at the
    head. The head's exit code and output never count.

        Attributes:
            approvable (bool):
            base (None | TestCounts):
            failing (list[str]):
            findings (list[str]):
            head (None | TestCounts):
            infrastructure (list[str]):
            regressions (list[Regression]):
            reaches (list[str] | Unset):
    """

    approvable: bool
    base: None | TestCounts
    failing: list[str]
    findings: list[str]
    head: None | TestCounts
    infrastructure: list[str]
    regressions: list[Regression]
    reaches: list[str] | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.test_counts import TestCounts

        approvable = self.approvable

        base: dict[str, Any] | None
        if isinstance(self.base, TestCounts):
            base = self.base.to_dict()
        else:
            base = self.base

        failing = self.failing

        findings = self.findings

        head: dict[str, Any] | None
        if isinstance(self.head, TestCounts):
            head = self.head.to_dict()
        else:
            head = self.head

        infrastructure = self.infrastructure

        regressions = []
        for regressions_item_data in self.regressions:
            regressions_item = regressions_item_data.to_dict()
            regressions.append(regressions_item)

        reaches: list[str] | Unset = UNSET
        if not isinstance(self.reaches, Unset):
            reaches = self.reaches

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "approvable": approvable,
                "base": base,
                "failing": failing,
                "findings": findings,
                "head": head,
                "infrastructure": infrastructure,
                "regressions": regressions,
            }
        )
        if reaches is not UNSET:
            field_dict["reaches"] = reaches

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.regression import Regression
        from ..models.test_counts import TestCounts

        d = dict(src_dict)
        approvable = d.pop("approvable")

        def _parse_base(data: object) -> None | TestCounts:
            if data is None:
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                base_type_0 = TestCounts.from_dict(data)

                return base_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | TestCounts, data)

        base = _parse_base(d.pop("base"))

        failing = cast(list[str], d.pop("failing"))

        findings = cast(list[str], d.pop("findings"))

        def _parse_head(data: object) -> None | TestCounts:
            if data is None:
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                head_type_0 = TestCounts.from_dict(data)

                return head_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | TestCounts, data)

        head = _parse_head(d.pop("head"))

        infrastructure = cast(list[str], d.pop("infrastructure"))

        regressions = []
        _regressions = d.pop("regressions")
        for regressions_item_data in _regressions:
            regressions_item = Regression.from_dict(regressions_item_data)

            regressions.append(regressions_item)

        reaches = cast(list[str], d.pop("reaches", UNSET))

        review_gate = cls(
            approvable=approvable,
            base=base,
            failing=failing,
            findings=findings,
            head=head,
            infrastructure=infrastructure,
            regressions=regressions,
            reaches=reaches,
        )

        review_gate.additional_properties = d
        return review_gate

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
