from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.exec_create_env import ExecCreateEnv
    from ..models.exec_create_secrets import ExecCreateSecrets


T = TypeVar("T", bound="ExecCreate")


@_attrs_define
class ExecCreate:
    """One command. `secrets` reach the process as environment variables only and are masked
    in the output of every exec of the sandbox, for the sandbox's life; they are never
    stored.

        Attributes:
            cmd (list[str]):
            cols (int | None | Unset):
            cwd (str | Unset):  Default: '/work'.
            env (ExecCreateEnv | Unset):
            max_output_bytes (int | Unset):  Default: 1048576.
            rows (int | None | Unset):
            secrets (ExecCreateSecrets | Unset):
            stdin (None | str | Unset):
            stdin_open (bool | Unset):  Default: False.
            timeout_s (float | Unset):  Default: 60.0.
            tty (bool | Unset):  Default: False.
            user (None | str | Unset):
            wait (bool | Unset):  Default: True.
    """

    cmd: list[str]
    cols: int | None | Unset = UNSET
    cwd: str | Unset = "/work"
    env: ExecCreateEnv | Unset = UNSET
    max_output_bytes: int | Unset = 1048576
    rows: int | None | Unset = UNSET
    secrets: ExecCreateSecrets | Unset = UNSET
    stdin: None | str | Unset = UNSET
    stdin_open: bool | Unset = False
    timeout_s: float | Unset = 60.0
    tty: bool | Unset = False
    user: None | str | Unset = UNSET
    wait: bool | Unset = True

    def to_dict(self) -> dict[str, Any]:
        cmd = self.cmd

        cols: int | None | Unset
        if isinstance(self.cols, Unset):
            cols = UNSET
        else:
            cols = self.cols

        cwd = self.cwd

        env: dict[str, Any] | Unset = UNSET
        if not isinstance(self.env, Unset):
            env = self.env.to_dict()

        max_output_bytes = self.max_output_bytes

        rows: int | None | Unset
        if isinstance(self.rows, Unset):
            rows = UNSET
        else:
            rows = self.rows

        secrets: dict[str, Any] | Unset = UNSET
        if not isinstance(self.secrets, Unset):
            secrets = self.secrets.to_dict()

        stdin: None | str | Unset
        if isinstance(self.stdin, Unset):
            stdin = UNSET
        else:
            stdin = self.stdin

        stdin_open = self.stdin_open

        timeout_s = self.timeout_s

        tty = self.tty

        user: None | str | Unset
        if isinstance(self.user, Unset):
            user = UNSET
        else:
            user = self.user

        wait = self.wait

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "cmd": cmd,
            }
        )
        if cols is not UNSET:
            field_dict["cols"] = cols
        if cwd is not UNSET:
            field_dict["cwd"] = cwd
        if env is not UNSET:
            field_dict["env"] = env
        if max_output_bytes is not UNSET:
            field_dict["max_output_bytes"] = max_output_bytes
        if rows is not UNSET:
            field_dict["rows"] = rows
        if secrets is not UNSET:
            field_dict["secrets"] = secrets
        if stdin is not UNSET:
            field_dict["stdin"] = stdin
        if stdin_open is not UNSET:
            field_dict["stdin_open"] = stdin_open
        if timeout_s is not UNSET:
            field_dict["timeout_s"] = timeout_s
        if tty is not UNSET:
            field_dict["tty"] = tty
        if user is not UNSET:
            field_dict["user"] = user
        if wait is not UNSET:
            field_dict["wait"] = wait

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.exec_create_env import ExecCreateEnv
        from ..models.exec_create_secrets import ExecCreateSecrets

        d = dict(src_dict)
        cmd = cast(list[str], d.pop("cmd"))

        def _parse_cols(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        cols = _parse_cols(d.pop("cols", UNSET))

        cwd = d.pop("cwd", UNSET)

        _env = d.pop("env", UNSET)
        env: ExecCreateEnv | Unset
        if isinstance(_env, Unset):
            env = UNSET
        else:
            env = ExecCreateEnv.from_dict(_env)

        max_output_bytes = d.pop("max_output_bytes", UNSET)

        def _parse_rows(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        rows = _parse_rows(d.pop("rows", UNSET))

        _secrets = d.pop("secrets", UNSET)
        secrets: ExecCreateSecrets | Unset
        if isinstance(_secrets, Unset):
            secrets = UNSET
        else:
            secrets = ExecCreateSecrets.from_dict(_secrets)

        def _parse_stdin(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        stdin = _parse_stdin(d.pop("stdin", UNSET))

        stdin_open = d.pop("stdin_open", UNSET)

        timeout_s = d.pop("timeout_s", UNSET)

        tty = d.pop("tty", UNSET)

        def _parse_user(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        user = _parse_user(d.pop("user", UNSET))

        wait = d.pop("wait", UNSET)

        exec_create = cls(
            cmd=cmd,
            cols=cols,
            cwd=cwd,
            env=env,
            max_output_bytes=max_output_bytes,
            rows=rows,
            secrets=secrets,
            stdin=stdin,
            stdin_open=stdin_open,
            timeout_s=timeout_s,
            tty=tty,
            user=user,
            wait=wait,
        )

        return exec_create
