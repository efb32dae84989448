from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.exec_state import ExecState, check_exec_state
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.exec_env import ExecEnv


T = TypeVar("T", bound="Exec")


@_attrs_define
class Exec:
    """
    Attributes:
        cmd (list[str]):
        created_at (str):
        cwd (str):
        duration_ms (int | None):
        env (ExecEnv):
        error (None | str):
        exit_code (int | None):
        finished_at (None | str):
        id (str):
        outcome (None | str):
        sandbox_id (str):
        secret_names (list[str]):
        started_at (None | str):
        state (ExecState):
        stderr (None | str):
        stderr_bytes (int):
        stderr_truncated (bool):
        stdout (None | str):
        stdout_bytes (int):
        stdout_truncated (bool):
        timeout_s (float):
        user (None | str):
        output_purged (bool | Unset):  Default: False.
        tty (bool | Unset):  Default: False.
    """

    cmd: list[str]
    created_at: str
    cwd: str
    duration_ms: int | None
    env: ExecEnv
    error: None | str
    exit_code: int | None
    finished_at: None | str
    id: str
    outcome: None | str
    sandbox_id: str
    secret_names: list[str]
    started_at: None | str
    state: ExecState
    stderr: None | str
    stderr_bytes: int
    stderr_truncated: bool
    stdout: None | str
    stdout_bytes: int
    stdout_truncated: bool
    timeout_s: float
    user: None | str
    output_purged: bool | Unset = False
    tty: bool | Unset = False
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        cmd = self.cmd

        created_at = self.created_at

        cwd = self.cwd

        duration_ms: int | None
        duration_ms = self.duration_ms

        env = self.env.to_dict()

        error: None | str
        error = self.error

        exit_code: int | None
        exit_code = self.exit_code

        finished_at: None | str
        finished_at = self.finished_at

        id = self.id

        outcome: None | str
        outcome = self.outcome

        sandbox_id = self.sandbox_id

        secret_names = self.secret_names

        started_at: None | str
        started_at = self.started_at

        state: str = self.state

        stderr: None | str
        stderr = self.stderr

        stderr_bytes = self.stderr_bytes

        stderr_truncated = self.stderr_truncated

        stdout: None | str
        stdout = self.stdout

        stdout_bytes = self.stdout_bytes

        stdout_truncated = self.stdout_truncated

        timeout_s = self.timeout_s

        user: None | str
        user = self.user

        output_purged = self.output_purged

        tty = self.tty

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "cmd": cmd,
                "created_at": created_at,
                "cwd": cwd,
                "duration_ms": duration_ms,
                "env": env,
                "error": error,
                "exit_code": exit_code,
                "finished_at": finished_at,
                "id": id,
                "outcome": outcome,
                "sandbox_id": sandbox_id,
                "secret_names": secret_names,
                "started_at": started_at,
                "state": state,
                "stderr": stderr,
                "stderr_bytes": stderr_bytes,
                "stderr_truncated": stderr_truncated,
                "stdout": stdout,
                "stdout_bytes": stdout_bytes,
                "stdout_truncated": stdout_truncated,
                "timeout_s": timeout_s,
                "user": user,
            }
        )
        if output_purged is not UNSET:
            field_dict["output_purged"] = output_purged
        if tty is not UNSET:
            field_dict["tty"] = tty

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.exec_env import ExecEnv

        d = dict(src_dict)
        cmd = cast(list[str], d.pop("cmd"))

        created_at = d.pop("created_at")

        cwd = d.pop("cwd")

        def _parse_duration_ms(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        duration_ms = _parse_duration_ms(d.pop("duration_ms"))

        env = ExecEnv.from_dict(d.pop("env"))

        def _parse_error(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        error = _parse_error(d.pop("error"))

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

        secret_names = cast(list[str], d.pop("secret_names"))

        def _parse_started_at(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        started_at = _parse_started_at(d.pop("started_at"))

        state = check_exec_state(d.pop("state"))

        def _parse_stderr(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        stderr = _parse_stderr(d.pop("stderr"))

        stderr_bytes = d.pop("stderr_bytes")

        stderr_truncated = d.pop("stderr_truncated")

        def _parse_stdout(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        stdout = _parse_stdout(d.pop("stdout"))

        stdout_bytes = d.pop("stdout_bytes")

        stdout_truncated = d.pop("stdout_truncated")

        timeout_s = d.pop("timeout_s")

        def _parse_user(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        user = _parse_user(d.pop("user"))

        output_purged = d.pop("output_purged", UNSET)

        tty = d.pop("tty", UNSET)

        exec_ = cls(
            cmd=cmd,
            created_at=created_at,
            cwd=cwd,
            duration_ms=duration_ms,
            env=env,
            error=error,
            exit_code=exit_code,
            finished_at=finished_at,
            id=id,
            outcome=outcome,
            sandbox_id=sandbox_id,
            secret_names=secret_names,
            started_at=started_at,
            state=state,
            stderr=stderr,
            stderr_bytes=stderr_bytes,
            stderr_truncated=stderr_truncated,
            stdout=stdout,
            stdout_bytes=stdout_bytes,
            stdout_truncated=stdout_truncated,
            timeout_s=timeout_s,
            user=user,
            output_purged=output_purged,
            tty=tty,
        )

        exec_.additional_properties = d
        return exec_

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
