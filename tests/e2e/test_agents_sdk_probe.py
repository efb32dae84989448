"""The OpenAI Agents SDK's own sandbox integration probe, run on `AirlockSandboxClient` against a
real server on gVisor.

Ports `tests/sandbox/integration_tests/test_runner_pause_resume.py` (with its `_helpers.py` and
`test_model.py`) of openai/openai-agents-python at 7f7a44f8dc0650296bd5ab6c745c9bcbaa6ac3b7,
written for the UnixLocal backend. The same scenario and checks: a `SandboxAgent` driven through
`Runner.run` by a scripted model materializes a manifest with every built-in entry type, writes a
file, applies a patch, is refused every way out of the workspace, extracts a tar, echoes stdin
on a terminal, and stops for an approval; the run state goes through JSON and a new run resumes
it, finds the workspace restored and reads a file back. What differs:
- The workspace is the sandbox's `/work`, not `/workspace` on the host.
- The fake external tools (git, rclone, fusermount3, blobfuse2, mount-s3) are installed in each
  sandbox the client makes, into /usr/local/bin by an exec as root, where the SDK's git entry and
  in-container rclone mounts run them; upstream puts them on the host's PATH. Upstream also fakes
  `cp` and `rm`; here the fake `git clone` writes the checkout, and the real ones run.
- Upstream's checks of the host (the workspace directory gone after each run, the backend id
  "unix_local", `workspace_root_owned`) become this backend's: the sandbox stopped, "airlock",
  and a session that owns (does not keep) its sandbox.
- The symlink escape's link and target are made inside the sandbox.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agents import RunConfig, Runner, function_tool
from agents.items import RunItem, ToolCallOutputItem
from agents.run_state import RunState
from agents.sandbox import LocalSnapshotSpec, SandboxAgent, SandboxRunConfig
from agents.sandbox.session import (
    CallbackSink,
    Instrumentation,
    SandboxSession,
    SandboxSessionEvent,
)
from agents.sandbox.session.sandbox_session_state import SandboxSessionState
from agents.testing import ScriptedModel, assistant_message, function_call
from airlock_agents import AirlockSandboxClient, AirlockSandboxClientOptions

from tests.e2e.agents_sdk_probe_tools import (
    INSTALL_MOCK_TOOLS,
    FileTools,
    LifecycleTools,
    every_entry_type,
    local_sources,
    step,
)
from tests.e2e.conftest import Airlock, Tenant

FIRST_RUN_OUTPUTS = [
    "manifest materialized",
    "wrote runtime_note.txt",
    "lifecycle patch applied",
    "workspace escape blocked",
    "archive extracted",
    "pty started and echoed stdin",
]


class ToolsInstalled(AirlockSandboxClient):
    """Every sandbox it makes or finds again has the fake tools, before the session starts and
    materializes its manifest (as an image or template with the tools would)."""

    async def create(self, **kwargs: Any) -> SandboxSession:
        return await installed(await super().create(**kwargs))

    async def resume(self, state: SandboxSessionState) -> SandboxSession:
        return await installed(await super().resume(state))


async def installed(session: SandboxSession) -> SandboxSession:
    done = await session.exec("sh", "-c", INSTALL_MOCK_TOOLS, shell=False, user="root")
    assert done.ok(), done.stderr
    return session


class ProbeModel(ScriptedModel):
    """The scripted model: one tool call a turn, then a final answer."""

    def call(self, name: str, arguments: Mapping[str, Any] | None = None) -> None:
        self.enqueue([function_call(name, dict(arguments or {}), call_id=f"call_{name}")])

    def answer(self, text: str) -> None:
        self.enqueue([assistant_message(text)])


@function_tool(needs_approval=True)
def approval_tool() -> str:
    return "approved"


def probe_agent(model: ProbeModel, manifest: Any) -> SandboxAgent:
    return SandboxAgent(
        name="sandbox",
        model=model,
        instructions="Use the sandbox lifecycle tools.",
        default_manifest=manifest,
        tools=[approval_tool],
        capabilities=[FileTools(), LifecycleTools()],
    )


def tool_outputs(items: Sequence[RunItem], agent: SandboxAgent) -> list[str]:
    return [str(i.output) for i in items if isinstance(i, ToolCallOutputItem) and i.agent is agent]


def finished(events: list[SandboxSessionEvent], op: str) -> int:
    return sum(1 for e in events if e.op == op and e.phase == "finish" and getattr(e, "ok", False))


def failures(events: list[SandboxSessionEvent]) -> list[tuple[str, object, object]]:
    return [
        (e.op, e.error_type, e.error_message)
        for e in events
        # Less the reads, writes and patches the probe expects to be refused.
        if getattr(e, "ok", True) is False and e.op not in ("read", "write", "apply_patch")
    ]


async def stopped(airlock: Airlock, tenant: Tenant, sandbox_id: str) -> bool:
    return str((await airlock.get_sandbox(tenant, sandbox_id)).state) in ("stopping", "stopped")


async def test_the_sdk_probe_pauses_and_resumes_a_run_on_airlock(
    airlock: Airlock, tmp_path: Path
) -> None:
    # The SDK resolves every file path with execs in the sandbox: the probe makes some 320
    # execs in 90 s, past the default quota of 120 a minute.
    tenant = await airlock.tenant(execs_per_minute=1000)
    manifest = every_entry_type("/work", local_sources(tmp_path))
    events: list[SandboxSessionEvent] = []
    sink = CallbackSink(lambda event, _session: events.append(event), mode="sync")
    client = ToolsInstalled(
        url=airlock.server.url, api_key=tenant.key, instrumentation=Instrumentation(sinks=[sink])
    )
    sandbox = SandboxRunConfig(
        client=client,
        options=AirlockSandboxClientOptions(ttl=600),
        # The workspace tar between the runs goes here (not the SDK's default, under $HOME).
        snapshot=LocalSnapshotSpec(base_path=tmp_path / "snapshots"),
    )
    config = RunConfig(sandbox=sandbox, tracing_disabled=True)

    model = ProbeModel()
    model.call("assert_manifest_materialized")
    model.call("write_file", {"path": "runtime_note.txt", "content": "runtime note v1\n"})
    for name in (
        "apply_lifecycle_patch",
        "assert_workspace_escape_blocked",
        "extract_lifecycle_archive",
    ):
        model.call(name)
    model.call("start_lifecycle_pty")
    model.call("approval_tool")
    agent = probe_agent(model, manifest)
    # The tools' own steps name themselves; this names a failure of the session's start (the
    # manifest's materialization) or end.
    async with step("first run"):
        first = await Runner.run(
            agent, "verify the sandbox lifecycle and wait for approval", run_config=config
        )

    async with step("first run ends at the approval"):
        assert tool_outputs(first.new_items, agent) == FIRST_RUN_OUTPUTS
        assert len(first.interruptions) == 1
    async with step("run state saved"):
        state = first.to_state()
        saved = state._sandbox
        # None when the run's end (stop, shutdown) failed: the failed operations say why.
        assert saved is not None, failures(events)
        assert saved["backend_id"] == "airlock"  # upstream: "unix_local"
        assert saved["current_agent_name"] == "sandbox"
        session = saved["session_state"]
        assert isinstance(session, dict)
        assert session["snapshot"]["type"] == "local"
        # Upstream: `workspace_root_owned` is True (UnixLocal made the host directory and removes
        # it). Here the session owns the whole sandbox, deleted when the run ends.
        assert "workspace_root_owned" not in session and session["keep_on_exit"] is False
        assert session["workspace_root_ready"] is True
        assert session["manifest"]["root"] == "/work"
        first_sandbox = session["sandbox_id"]
        tenant.sandboxes.append(first_sandbox)
    async with step("first run's sandbox stopped"):
        # Upstream: the host workspace directory no longer exists.
        assert await stopped(airlock, tenant, first_sandbox)
        assert (finished(events, "stop"), finished(events, "shutdown")) == (1, 1)

    resumed_model = ProbeModel()
    resumed_model.call("assert_restored_lifecycle_state")
    resumed_model.call("read_file", {"path": "runtime_note.txt"})
    resumed_model.answer("done")
    resumed_agent = probe_agent(resumed_model, manifest)
    async with step("run state restored from JSON, approval given"):
        restored = await RunState.from_json(resumed_agent, state.to_json())
        pending = restored.get_interruptions()
        assert len(pending) == 1
        restored.approve(pending[0])
    async with step("resumed run"):  # a new sandbox, the workspace restored from the tar
        resumed = await Runner.run(resumed_agent, restored, run_config=config)

    async with step("resumed run finishes"):
        assert resumed.final_output == "done"
        assert tool_outputs(resumed.new_items, resumed_agent)[-3:] == [
            "approved",
            "restored lifecycle state verified",
            "runtime note v1\n",
        ]
    async with step("resumed run's sandbox stopped"):
        second_sandbox = resumed.to_state()._sandbox["session_state"]["sandbox_id"]  # type: ignore[index]
        tenant.sandboxes.append(second_sandbox)
        assert second_sandbox != first_sandbox  # the first was deleted: a new one, from the tar
        assert await stopped(airlock, tenant, second_sandbox)
        assert (finished(events, "stop"), finished(events, "shutdown")) == (2, 2)
