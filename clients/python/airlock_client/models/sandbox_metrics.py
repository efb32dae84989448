from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="SandboxMetrics")


@_attrs_define
class SandboxMetrics:
    """What a running sandbox uses now. A figure its runtime cannot measure is null.

    Attributes:
        at (str):
        cpu_seconds (float | None):
        memory_bytes (int):
        memory_limit_bytes (int):
        processes (int | None):
        processes_limit (int):
        sandbox_id (str):
        writable_bytes (int | None):
        writable_limit_bytes (int | None):
    """

    at: str
    cpu_seconds: float | None
    memory_bytes: int
    memory_limit_bytes: int
    processes: int | None
    processes_limit: int
    sandbox_id: str
    writable_bytes: int | None
    writable_limit_bytes: int | None
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        at = self.at

        cpu_seconds: float | None
        cpu_seconds = self.cpu_seconds

        memory_bytes = self.memory_bytes

        memory_limit_bytes = self.memory_limit_bytes

        processes: int | None
        processes = self.processes

        processes_limit = self.processes_limit

        sandbox_id = self.sandbox_id

        writable_bytes: int | None
        writable_bytes = self.writable_bytes

        writable_limit_bytes: int | None
        writable_limit_bytes = self.writable_limit_bytes

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "at": at,
                "cpu_seconds": cpu_seconds,
                "memory_bytes": memory_bytes,
                "memory_limit_bytes": memory_limit_bytes,
                "processes": processes,
                "processes_limit": processes_limit,
                "sandbox_id": sandbox_id,
                "writable_bytes": writable_bytes,
                "writable_limit_bytes": writable_limit_bytes,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        at = d.pop("at")

        def _parse_cpu_seconds(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        cpu_seconds = _parse_cpu_seconds(d.pop("cpu_seconds"))

        memory_bytes = d.pop("memory_bytes")

        memory_limit_bytes = d.pop("memory_limit_bytes")

        def _parse_processes(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        processes = _parse_processes(d.pop("processes"))

        processes_limit = d.pop("processes_limit")

        sandbox_id = d.pop("sandbox_id")

        def _parse_writable_bytes(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        writable_bytes = _parse_writable_bytes(d.pop("writable_bytes"))

        def _parse_writable_limit_bytes(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        writable_limit_bytes = _parse_writable_limit_bytes(d.pop("writable_limit_bytes"))

        sandbox_metrics = cls(
            at=at,
            cpu_seconds=cpu_seconds,
            memory_bytes=memory_bytes,
            memory_limit_bytes=memory_limit_bytes,
            processes=processes,
            processes_limit=processes_limit,
            sandbox_id=sandbox_id,
            writable_bytes=writable_bytes,
            writable_limit_bytes=writable_limit_bytes,
        )

        sandbox_metrics.additional_properties = d
        return sandbox_metrics

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
