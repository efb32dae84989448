from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.review_summary_state import ReviewSummaryState, check_review_summary_state

T = TypeVar("T", bound="ReviewSummary")


@_attrs_define
class ReviewSummary:
    """
    Attributes:
        base (str):
        created_at (str):
        finished_at (None | str):
        head (str):
        id (str):
        repo (str):
        state (ReviewSummaryState):
        test_exit_code (int | None):
        verdict (None | str):
    """

    base: str
    created_at: str
    finished_at: None | str
    head: str
    id: str
    repo: str
    state: ReviewSummaryState
    test_exit_code: int | None
    verdict: None | str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        base = self.base

        created_at = self.created_at

        finished_at: None | str
        finished_at = self.finished_at

        head = self.head

        id = self.id

        repo = self.repo

        state: str = self.state

        test_exit_code: int | None
        test_exit_code = self.test_exit_code

        verdict: None | str
        verdict = self.verdict

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "base": base,
                "created_at": created_at,
                "finished_at": finished_at,
                "head": head,
                "id": id,
                "repo": repo,
                "state": state,
                "test_exit_code": test_exit_code,
                "verdict": verdict,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        base = d.pop("base")

        created_at = d.pop("created_at")

        def _parse_finished_at(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        finished_at = _parse_finished_at(d.pop("finished_at"))

        head = d.pop("head")

        id = d.pop("id")

        repo = d.pop("repo")

        state = check_review_summary_state(d.pop("state"))

        def _parse_test_exit_code(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        test_exit_code = _parse_test_exit_code(d.pop("test_exit_code"))

        def _parse_verdict(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        verdict = _parse_verdict(d.pop("verdict"))

        review_summary = cls(
            base=base,
            created_at=created_at,
            finished_at=finished_at,
            head=head,
            id=id,
            repo=repo,
            state=state,
            test_exit_code=test_exit_code,
            verdict=verdict,
        )

        review_summary.additional_properties = d
        return review_summary

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
