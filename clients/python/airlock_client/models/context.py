from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.context_language import ContextLanguage, check_context_language
from ..models.context_state import ContextState, check_context_state
from ..types import UNSET, Unset

T = TypeVar("T", bound="Context")


@_attrs_define
class Context:
    """
    Attributes:
        created_at (str):
        id (str):
        language (ContextLanguage):
        runs (int):
        sandbox_id (str):
        state (ContextState):
        gone_reason (None | str | Unset):
        python (None | str | Unset):
    """

    created_at: str
    id: str
    language: ContextLanguage
    runs: int
    sandbox_id: str
    state: ContextState
    gone_reason: None | str | Unset = UNSET
    python: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        created_at = self.created_at

        id = self.id

        language: str = self.language

        runs = self.runs

        sandbox_id = self.sandbox_id

        state: str = self.state

        gone_reason: None | str | Unset
        if isinstance(self.gone_reason, Unset):
            gone_reason = UNSET
        else:
            gone_reason = self.gone_reason

        python: None | str | Unset
        if isinstance(self.python, Unset):
            python = UNSET
        else:
            python = self.python

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "created_at": created_at,
                "id": id,
                "language": language,
                "runs": runs,
                "sandbox_id": sandbox_id,
                "state": state,
            }
        )
        if gone_reason is not UNSET:
            field_dict["gone_reason"] = gone_reason
        if python is not UNSET:
            field_dict["python"] = python

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        created_at = d.pop("created_at")

        id = d.pop("id")

        language = check_context_language(d.pop("language"))

        runs = d.pop("runs")

        sandbox_id = d.pop("sandbox_id")

        state = check_context_state(d.pop("state"))

        def _parse_gone_reason(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        gone_reason = _parse_gone_reason(d.pop("gone_reason", UNSET))

        def _parse_python(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        python = _parse_python(d.pop("python", UNSET))

        context = cls(
            created_at=created_at,
            id=id,
            language=language,
            runs=runs,
            sandbox_id=sandbox_id,
            state=state,
            gone_reason=gone_reason,
            python=python,
        )

        context.additional_properties = d
        return context

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
