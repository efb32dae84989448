"""`AirlockSandboxClient`: makes, finds again and deletes the Airlock sandboxes of Agents SDK
sessions."""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from agents.sandbox.manifest import Manifest
from agents.sandbox.session import SandboxSession, SandboxSessionState
from agents.sandbox.session.dependencies import Dependencies
from agents.sandbox.session.manager import Instrumentation
from agents.sandbox.session.sandbox_client import BaseSandboxClient
from agents.sandbox.snapshot import SnapshotBase, SnapshotSpec, resolve_snapshot
from airlock_sdk import errors
from airlock_sdk.aio import AsyncSandbox
from airlock_sdk.config import Config

from .session import AirlockSandboxSession
from .state import WORKSPACE_ROOT, AirlockSandboxClientOptions, AirlockSandboxSessionState, AirlockSandboxSpec


class AirlockSandboxClient(BaseSandboxClient[AirlockSandboxClientOptions]):
    """Sandboxes on one Airlock service. The URL and credential (an API key or a token with the
    sandbox, exec and file scopes) come from the arguments, else `AIRLOCK_URL` and
    `AIRLOCK_API_KEY`, else the config file; they stay here, never in a session's state."""

    backend_id = "airlock"
    supports_default_options = True

    def __init__(
        self,
        url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float | None = None,
        instrumentation: Instrumentation | None = None,
        dependencies: Dependencies | None = None,
    ) -> None:
        config = Config.resolve(url, api_key)
        self._url = config.url
        self._api_key = config.api_key
        self._timeout = timeout
        self._instrumentation = instrumentation or Instrumentation()
        self._dependencies = dependencies

    def __repr__(self) -> str:  # never the credential
        return f"AirlockSandboxClient(url={self._url!r})"

    async def create(
        self,
        *,
        snapshot: SnapshotSpec | SnapshotBase | None = None,
        manifest: Manifest | None = None,
        options: AirlockSandboxClientOptions | None = None,
    ) -> SandboxSession:
        manifest = self._validate_manifest_for_create(manifest or Manifest(root=WORKSPACE_ROOT))
        options = options or AirlockSandboxClientOptions()
        session_id = uuid.uuid4()
        sandbox = await self._new_sandbox(options)
        state = AirlockSandboxSessionState(
            session_id=session_id,
            manifest=manifest,
            snapshot=resolve_snapshot(snapshot, str(session_id)),
            sandbox_id=sandbox.id,
            **options.model_dump(exclude={"type"}),
        )
        return self._wrap(AirlockSandboxSession(state=state, sandbox=sandbox), preserved=False)

    async def resume(self, state: SandboxSessionState) -> SandboxSession:
        """The session's sandbox when it still runs; otherwise a new one like it, whose workspace
        the session's start restores from the state's snapshot (when it has one)."""
        if not isinstance(state, AirlockSandboxSessionState):
            raise TypeError("AirlockSandboxClient.resume expects an AirlockSandboxSessionState")
        state.assert_path_grants_rebound()
        sandbox = await self._running_sandbox(state.sandbox_id)
        preserved = sandbox is not None
        if sandbox is None:
            sandbox = await self._new_sandbox(state)
            state.sandbox_id = sandbox.id
            state.workspace_root_ready = False
        return self._wrap(AirlockSandboxSession(state=state, sandbox=sandbox), preserved=preserved)

    async def delete(self, session: SandboxSession) -> SandboxSession:
        """What a run does with its session when it ends: the sandbox is deleted unless the
        session keeps it (`keep_on_exit`); `delete_sandbox` deletes a kept one."""
        inner = session._inner
        if not isinstance(inner, AirlockSandboxSession):
            raise TypeError("AirlockSandboxClient.delete expects a session it made")
        await inner.shutdown()
        return session

    async def delete_sandbox(self, state: SandboxSessionState | Mapping[str, object]) -> None:
        """Delete the sandbox a (saved) session state names, kept or not. Deleting one that is
        already gone is not an error."""
        if not isinstance(state, SandboxSessionState):
            state = self.deserialize_session_state(dict(state))
        if not isinstance(state, AirlockSandboxSessionState):
            raise TypeError("AirlockSandboxClient.delete_sandbox expects an AirlockSandboxSessionState")
        try:
            sandbox = await AsyncSandbox.connect(state.sandbox_id, **self._connection())
        except errors.NotFound:
            return
        async with sandbox:
            await sandbox.delete()

    def deserialize_session_state(self, payload: dict[str, object]) -> SandboxSessionState:
        return self._deserialize_session_state_payload(payload, AirlockSandboxSessionState)

    def _connection(self) -> dict[str, object]:
        return {"url": self._url, "api_key": self._api_key, "timeout": self._timeout}

    async def _new_sandbox(self, spec: AirlockSandboxSpec) -> AsyncSandbox:
        return await AsyncSandbox.create(**spec.create_arguments(), **self._connection())

    async def _running_sandbox(self, sandbox_id: str) -> AsyncSandbox | None:
        try:
            sandbox = await AsyncSandbox.connect(sandbox_id, **self._connection())
        except errors.NotFound:
            return None
        # A paused sandbox (asleep when idle) is still there: its next call wakes it.
        if sandbox.state in ("running", "paused", "pausing", "resuming"):
            return sandbox
        await sandbox.close()
        return None

    def _wrap(self, inner: AirlockSandboxSession, *, preserved: bool) -> SandboxSession:
        inner._set_start_state_preserved(preserved, system=preserved)
        return self._wrap_session(inner, instrumentation=self._instrumentation)
