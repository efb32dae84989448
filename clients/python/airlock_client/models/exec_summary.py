from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.exec_summary_state import ExecSummaryState, check_exec_summary_state
from ..types import UNSET, Unset

T = TypeVar("T", bound="ExecSummary")


@_attrs_define
class ExecSummary:
    """An entry of the exec history: no output, argv with secrets masked.

    Attributes:
        cmd (list[str]):
        created_at (str):
        duration_ms (int | None):
        exit_code (int | None):
        finished_at (None | str):
        id (str):
        outcome (None | str):
        sandbox_id (str):
        state (ExecSummaryState):
        stderr_bytes (int):
        stdout_bytes (int):
        output_purged (bool | Unset):  Default: False.
    """

    cmd: list[str]
    created_at: str
    duration_ms: int | None
    exit_code: int | None
    finished_at: None | str
    id: str
    outcome: None | str
    sandbox_id: str
    state: ExecSummaryState
    stderr_bytes: int
    stdout_bytes: int
    output_purged: bool | Unset = False
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        cmd = self.cmd

        created_at = self.created_at

        duration_ms: int | None
        duration_ms = self.duration_ms

        exit_code: int | None
        exit_code = self.exit_code

        finished_at: None | str
        finished_at = self.finished_at

        id = self.id

        outcome: None | str
        outcome = self.outcome

        sandbox_id = self.sandbox_id

        state: str = self.state

        stderr_bytes = self.stderr_bytes

        stdout_bytes = self.stdout_bytes

        output_purged = self.output_purged

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "cmd": cmd,
                "created_at": created_at,
                "duration_ms": duration_ms,
                "exit_code": exit_code,
                "finished_at": finished_at,
                "id": id,
                "outcome": outcome,
                "sandbox_id": sandbox_id,
                "state": state,
                "stderr_bytes": stderr_bytes,
                "stdout_bytes": stdout_bytes,
            }
        )
        if output_purged is not UNSET:
            field_dict["output_purged"] = output_purged

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        cmd = cast(list[str], d.pop("cmd"))

        created_at = d.pop("created_at")

        def _parse_duration_ms(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        duration_ms = _parse_duration_ms(d.pop("duration_ms"))

        def _parse_exit_code(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        exit_code = _parse_exit_code(d.pop("exit_code"))

        def _parse_finished_at(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        finished_at = _parse_finished_at(d.pop("finished_at"))

        id = d.pop("id")

        def _parse_outcome(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        outcome = _parse_outcome(d.pop("outcome"))

        sandbox_id = d.pop("sandbox_id")

        state = check_exec_summary_state(d.pop("state"))

        stderr_bytes = d.pop("stderr_bytes")

        stdout_bytes = d.pop("stdout_bytes")

        output_purged = d.pop("output_purged", UNSET)

        exec_summary = cls(
            cmd=cmd,
            created_at=created_at,
            duration_ms=duration_ms,
            exit_code=exit_code,
            finished_at=finished_at,
            id=id,
            outcome=outcome,
            sandbox_id=sandbox_id,
            state=state,
            stderr_bytes=stderr_bytes,
            stdout_bytes=stdout_bytes,
            output_purged=output_purged,
        )

        exec_summary.additional_properties = d
        return exec_summary

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
