from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.run_error import RunError
    from ..models.run_result import RunResult


T = TypeVar("T", bound="Run")


@_attrs_define
class Run:
    """One run: what the code printed, the value of its last expression and each matplotlib
    figure it left open (`results`), and the exception that ended it (`error`).

        Attributes:
            context_id (str):
            context_lost (bool):
            duration_ms (float):
            error (None | RunError):
            execution_count (int | None):
            ok (bool):
            results (list[RunResult]):
            results_dropped (int):
            stderr (str):
            stderr_truncated (bool):
            stdout (str):
            stdout_truncated (bool):
            timed_out (bool):
    """

    context_id: str
    context_lost: bool
    duration_ms: float
    error: None | RunError
    execution_count: int | None
    ok: bool
    results: list[RunResult]
    results_dropped: int
    stderr: str
    stderr_truncated: bool
    stdout: str
    stdout_truncated: bool
    timed_out: bool
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.run_error import RunError

        context_id = self.context_id

        context_lost = self.context_lost

        duration_ms = self.duration_ms

        error: dict[str, Any] | None
        if isinstance(self.error, RunError):
            error = self.error.to_dict()
        else:
            error = self.error

        execution_count: int | None
        execution_count = self.execution_count

        ok = self.ok

        results = []
        for results_item_data in self.results:
            results_item = results_item_data.to_dict()
            results.append(results_item)

        results_dropped = self.results_dropped

        stderr = self.stderr

        stderr_truncated = self.stderr_truncated

        stdout = self.stdout

        stdout_truncated = self.stdout_truncated

        timed_out = self.timed_out

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "context_id": context_id,
                "context_lost": context_lost,
                "duration_ms": duration_ms,
                "error": error,
                "execution_count": execution_count,
                "ok": ok,
                "results": results,
                "results_dropped": results_dropped,
                "stderr": stderr,
                "stderr_truncated": stderr_truncated,
                "stdout": stdout,
                "stdout_truncated": stdout_truncated,
                "timed_out": timed_out,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.run_error import RunError
        from ..models.run_result import RunResult

        d = dict(src_dict)
        context_id = d.pop("context_id")

        context_lost = d.pop("context_lost")

        duration_ms = d.pop("duration_ms")

        def _parse_error(data: object) -> None | RunError:
            if data is None:
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                error_type_0 = RunError.from_dict(data)

                return error_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | RunError, data)

        error = _parse_error(d.pop("error"))

        def _parse_execution_count(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        execution_count = _parse_execution_count(d.pop("execution_count"))

        ok = d.pop("ok")

        results = []
        _results = d.pop("results")
        for results_item_data in _results:
            results_item = RunResult.from_dict(results_item_data)

            results.append(results_item)

        results_dropped = d.pop("results_dropped")

        stderr = d.pop("stderr")

        stderr_truncated = d.pop("stderr_truncated")

        stdout = d.pop("stdout")

        stdout_truncated = d.pop("stdout_truncated")

        timed_out = d.pop("timed_out")

        run = cls(
            context_id=context_id,
            context_lost=context_lost,
            duration_ms=duration_ms,
            error=error,
            execution_count=execution_count,
            ok=ok,
            results=results,
            results_dropped=results_dropped,
            stderr=stderr,
            stderr_truncated=stderr_truncated,
            stdout=stdout,
            stdout_truncated=stdout_truncated,
            timed_out=timed_out,
        )

        run.additional_properties = d
        return run

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
