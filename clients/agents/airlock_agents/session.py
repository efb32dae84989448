"""`AirlockSandboxSession`: the Agents SDK's sandbox session over one Airlock sandbox.

Commands are Airlock execs (as a uid the sandbox resolves from a user name), files go through
the file routes, and the workspace is persisted and restored as one tar through the archive
routes (`GET|PUT /v1/sandboxes/{id}/archive`), packed and unpacked inside the sandbox.
"""

from __future__ import annotations

import io
import re
import tarfile
from collections.abc import Sequence
from pathlib import Path

from agents.sandbox.errors import (
    ExecTimeoutError,
    ExecTransportError,
    WorkspaceArchiveReadError,
    WorkspaceArchiveWriteError,
    WorkspaceReadNotFoundError,
    WorkspaceStartError,
    WorkspaceWriteTypeError,
)
from agents.sandbox.session.base_sandbox_session import BaseSandboxSession
from agents.sandbox.session.pty_types import PtyExecUpdate, clamp_pty_yield_time_ms, resolve_pty_write_yield_time_ms
from agents.sandbox.session.runtime_helpers import RESOLVE_WORKSPACE_PATH_HELPER, RuntimeHelperScript
from agents.sandbox.types import ExecResult, User
from agents.sandbox.util.tar_utils import UnsafeTarMemberError, validate_tar_bytes
from agents.sandbox.workspace_paths import sandbox_path_str
from airlock_client.api.files import download_archive, upload_archive
from airlock_client.types import File
from airlock_sdk import errors
from airlock_sdk.aio import AsyncSandbox
from airlock_sdk.retries import aretry

from .pty import PtyProcesses
from .state import WORKSPACE_ROOT, AirlockSandboxSessionState

# The API takes a uid (and gid), never a name: names are looked up in the sandbox once.
NUMERIC_USER = re.compile(r"[0-9]{1,10}(:[0-9]{1,10})?")
LOOKUP_USER = 'id -u -- "$1" && id -g -- "$1"'
# Errors worth trying the whole step again for: the service was unreachable or overloaded.
RETRYABLE = (errors.TransportError, errors.ServiceUnavailable)


class AirlockSandboxSession(BaseSandboxSession):
    state: AirlockSandboxSessionState

    def __init__(self, *, state: AirlockSandboxSessionState, sandbox: AsyncSandbox) -> None:
        self.state = state
        self.sandbox = sandbox
        self._uids: dict[str, str] = {}
        self._closed = False
        self._pty = PtyProcesses(sandbox)

    # -- commands ------------------------------------------------------------------------------

    async def exec(
        self,
        *command: str | Path,
        timeout: float | None = None,
        shell: bool | list[str] = True,
        user: str | User | None = None,
    ) -> ExecResult:
        # The user becomes the exec's own `user` (the base class would prefix `sudo -u`).
        argv = self._prepare_exec_command(*command, shell=shell, user=None)
        return await self._run(argv, timeout, await self._uid(user))

    async def _exec_internal(self, *command: str | Path, timeout: float | None = None) -> ExecResult:
        return await self._run([str(part) for part in command], timeout, None)

    async def _run(self, argv: Sequence[str], timeout: float | None, uid: str | None) -> ExecResult:
        try:
            done = await self.sandbox.run(
                list(argv),
                timeout=self._exec_timeout(timeout),
                env=await self._env(),
                cwd=self._cwd(),
                user=uid,
            )
        except errors.AirlockError as exc:
            raise ExecTransportError(
                command=argv, context={"code": exc.code}, cause=exc, retryable=isinstance(exc, RETRYABLE)
            ) from exc
        if done.outcome == "timeout":
            raise ExecTimeoutError(command=argv, timeout_s=timeout, context={"exec_id": done.id})
        if done.exit_code is None:
            context = {"exec_id": done.id, "outcome": done.outcome, "error": done.error}
            raise ExecTransportError(command=argv, context=context)
        return ExecResult(stdout=done.stdout.encode(), stderr=done.stderr.encode(), exit_code=done.exit_code)

    # -- interactive processes -----------------------------------------------------------------

    def supports_pty(self) -> bool:
        return True

    async def pty_exec_start(
        self,
        *command: str | Path,
        timeout: float | None = None,
        shell: bool | list[str] = True,
        user: str | User | None = None,
        tty: bool = False,
        yield_time_s: float | None = None,
        max_output_tokens: int | None = None,
    ) -> PtyExecUpdate:
        argv = self._prepare_exec_command(*command, shell=shell, user=None)
        yield_ms = 10_000 if yield_time_s is None else int(yield_time_s * 1000)
        try:
            return await self._pty.start(
                argv,
                stdin_open=tty,
                yield_ms=clamp_pty_yield_time_ms(yield_ms),
                max_tokens=max_output_tokens,
                timeout=self._exec_timeout(timeout),
                env=await self._env(),
                cwd=self._cwd(),
                user=await self._uid(user),
            )
        except errors.AirlockError as exc:
            raise ExecTransportError(
                command=argv, context={"code": exc.code}, cause=exc, retryable=isinstance(exc, RETRYABLE)
            ) from exc

    async def pty_write_stdin(
        self,
        *,
        session_id: int,
        chars: str,
        yield_time_s: float | None = None,
        max_output_tokens: int | None = None,
    ) -> PtyExecUpdate:
        yield_ms = 250 if yield_time_s is None else int(yield_time_s * 1000)
        yield_ms = resolve_pty_write_yield_time_ms(yield_time_ms=yield_ms, input_empty=chars == "")
        try:
            return await self._pty.write(session_id, chars, yield_ms=yield_ms, max_tokens=max_output_tokens)
        except errors.AirlockError as exc:
            command = ["write_stdin", str(session_id)]
            raise ExecTransportError(command=command, context={"code": exc.code}, cause=exc) from exc

    async def pty_terminate_all(self) -> None:
        await self._pty.end_all()

    def _exec_timeout(self, timeout: float | None) -> float | None:
        if timeout is None:
            return self.state.exec_timeout_s
        return max(timeout, 0.001)

    async def _env(self) -> dict[str, str]:
        return await self.state.manifest.environment.resolve()

    def _cwd(self) -> str | None:
        root = self.state.manifest.root
        if root == WORKSPACE_ROOT or self.state.workspace_root_ready:
            return root
        return None  # the API's default, /work, until the manifest's root is made

    async def _uid(self, user: str | User | None) -> str | None:
        if user is None:
            return None
        name = user.name if isinstance(user, User) else str(user)
        if NUMERIC_USER.fullmatch(name):
            return name
        if name not in self._uids:
            found = await self._run(["sh", "-c", LOOKUP_USER, "sh", name], 30, None)
            if not found.ok():
                raise ExecTransportError(
                    command=["id", name], context={"reason": "unknown_user", "stderr": found.stderr.decode()}
                )
            self._uids[name] = ":".join(found.stdout.decode().split())
        return self._uids[name]

    async def _prepare_backend_workspace(self) -> None:
        root = self.state.manifest.root
        if root == WORKSPACE_ROOT:
            return
        made = await self._run(["mkdir", "-p", "--", root], 30, None)
        if not made.ok():
            raise WorkspaceStartError(path=Path(root), context={"stderr": made.stderr.decode()})

    # -- files ---------------------------------------------------------------------------------

    def _runtime_helpers(self) -> tuple[RuntimeHelperScript, ...]:
        return (RESOLVE_WORKSPACE_PATH_HELPER,)

    def _current_runtime_helper_cache_key(self) -> object | None:
        return self.state.sandbox_id  # a resume into a new sandbox installs the helper again

    async def _validate_path_access(self, path: Path | str, *, for_write: bool = False) -> Path:
        """Every file path is resolved where the files are: the SDK's resolve helper runs in the
        sandbox (an exec), follows each symlink there and refuses a path that leads out of the
        workspace with `InvalidManifestPathError`, as the SDK's own backends do; the file routes
        would follow the link anywhere in the sandbox. Between that check and the file call a
        process in the sandbox could swap a directory for a link; it can only point within the
        same sandbox, whose whole filesystem that process can already write."""
        return await self._validate_remote_path_access(path, for_write=for_write)

    async def read(self, path: Path | str, *, user: str | User | None = None) -> io.IOBase:
        if user is not None:
            target = await self._check_read_with_exec(path, user=user)
        else:
            target = await self._validate_path_access(path)
        try:
            return io.BytesIO(await self.sandbox.files.read(sandbox_path_str(target)))
        except errors.AirlockError as exc:
            if exc.code == "path_not_found":
                raise WorkspaceReadNotFoundError(path=target, cause=exc) from exc
            raise WorkspaceArchiveReadError(path=target, cause=exc, retryable=isinstance(exc, RETRYABLE)) from exc

    async def write(self, path: Path | str, data: io.IOBase, *, user: str | User | None = None) -> None:
        if user is not None:
            await self._check_write_with_exec(path, user=user)
        target = await self._validate_path_access(path, for_write=True)
        payload = _payload(data, target)
        remote = sandbox_path_str(target)
        try:
            try:
                await self.sandbox.files.write(remote, payload)
            except errors.Conflict as exc:
                if exc.code != "path_not_allowed":
                    raise
                # Most often a missing directory: make it, then try once more.
                await self._run(["mkdir", "-p", "--", str(target.parent)], 30, None)
                await self.sandbox.files.write(remote, payload)
        except errors.AirlockError as exc:
            raise WorkspaceArchiveWriteError(path=target, cause=exc, retryable=isinstance(exc, RETRYABLE)) from exc

    # -- the workspace as a tar ----------------------------------------------------------------

    async def persist_workspace(self) -> io.IOBase:
        root = self._workspace_root_path()

        async def call() -> bytes:
            answer = await download_archive.asyncio_detailed(
                self.sandbox.id, client=self.sandbox.client, dir_=root.as_posix()
            )
            errors.unwrap(answer)
            return answer.content

        try:
            raw = await aretry(call)
        except errors.AirlockError as exc:
            raise WorkspaceArchiveReadError(path=root, cause=exc, retryable=isinstance(exc, RETRYABLE)) from exc
        skipped = self._persist_workspace_skip_relpaths()
        return io.BytesIO(_without(raw, skipped) if skipped else raw)

    async def hydrate_workspace(self, data: io.IOBase) -> None:
        root = self._workspace_root_path()
        payload = _payload(data, root)
        try:
            validate_tar_bytes(payload, allow_external_symlink_targets=False)
        except UnsafeTarMemberError as exc:
            context = {"reason": "unsafe_or_invalid_tar", "member": exc.member}
            raise WorkspaceArchiveWriteError(path=root, context=context, cause=exc) from exc
        try:
            answer = await upload_archive.asyncio_detailed(
                self.sandbox.id, client=self.sandbox.client, body=File(payload=payload), dir_=root.as_posix()
            )
            errors.unwrap(answer)
        except errors.AirlockError as exc:
            raise WorkspaceArchiveWriteError(path=root, cause=exc, retryable=isinstance(exc, RETRYABLE)) from exc

    # -- lifecycle -----------------------------------------------------------------------------

    async def running(self) -> bool:
        try:
            await self.sandbox.refresh()
        except errors.AirlockError:
            return False
        return self.sandbox.state == "running"

    async def _shutdown_backend(self) -> None:
        """The end of a run: the sandbox is deleted unless the session keeps it (`keep_on_exit`).
        The connection is closed either way; called again, it does nothing."""
        if self._closed:
            return
        self._closed = True
        try:
            if not self.state.keep_on_exit:
                await self.sandbox.delete()
        finally:
            await self.sandbox.close()


def _payload(data: io.IOBase, path: Path) -> bytes:
    payload = data.read()
    if isinstance(payload, str):
        payload = payload.encode()
    if not isinstance(payload, bytes | bytearray):
        raise WorkspaceWriteTypeError(path=path, actual_type=type(payload).__name__)
    return bytes(payload)


def _without(raw: bytes, skipped: set[Path]) -> bytes:
    """The archive less the members under `skipped` (workspace-relative paths the SDK keeps out
    of a snapshot); the archive route packs the whole directory."""
    prefixes = {p.as_posix().strip("/") for p in skipped} - {"", "."}

    def kept(name: str) -> bool:
        rel = name.removeprefix("./").strip("/")
        return not any(rel == p or rel.startswith(p + "/") for p in prefixes)

    out = io.BytesIO()
    with tarfile.open(fileobj=io.BytesIO(raw)) as source, tarfile.open(fileobj=out, mode="w") as target:
        for member in source:
            if kept(member.name):
                target.addfile(member, source.extractfile(member) if member.isfile() else None)
    return out.getvalue()
