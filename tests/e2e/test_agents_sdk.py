"""The OpenAI Agents SDK's sandbox interface on Airlock (`airlock_agents`) against a real
server on gVisor, offline: the SDK's own scripted model drives a `SandboxAgent` whose tools run
commands and write files in an Airlock sandbox. The run pauses for an approval and is saved as
JSON; a new Python process resumes it in the same sandbox and finds the files there."""

from __future__ import annotations

import asyncio
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from agents import RunConfig, Runner, function_tool
from agents.sandbox import LocalSnapshotSpec, SandboxAgent, SandboxRunConfig
from agents.testing import ModelCall, ModelStep, ScriptedModel, function_call
from airlock_agents import AirlockSandboxClient, AirlockSandboxClientOptions
from openai.types.responses import ResponseCustomToolCall

from tests.e2e.conftest import Airlock, Tenant

PATCH = "*** Begin Patch\n*** Add File: hello.py\n+print('hello from a patch')\n*** End Patch\n"

# The second half, in a process of its own: the saved run (a file named by argv[1]) continues
# once its pending approval is given, with a client made from AIRLOCK_URL / AIRLOCK_API_KEY.
RESUME = """
import asyncio, json, sys
from agents import RunConfig, RunState, Runner, function_tool
from agents.sandbox import SandboxAgent, SandboxRunConfig
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call
from airlock_agents import AirlockSandboxClient

@function_tool(needs_approval=True)
def publish(summary: str) -> str:
    "Publish the summary once a person approves."
    return "published: " + summary

def last_output(call):
    outputs = [i["output"] for i in call.input if i.get("type") == "function_call_output"]
    return [assistant_message(str(outputs[-1]))]

async def main():
    model = ScriptedModel([
        [function_call("exec_command", {"cmd": "cat notes.txt hello.py"}, call_id="c7")],
        ModelStep.respond(last_output),
    ])
    agent = SandboxAgent(name="builder", model=model, tools=[publish])
    with open(sys.argv[1]) as saved:
        state = await RunState.from_string(agent, saved.read())
    for pending in state.get_interruptions():
        state.approve(pending)
    client = AirlockSandboxClient()
    config = RunConfig(sandbox=SandboxRunConfig(client=client), tracing_disabled=True)
    result = await Runner.run(agent, state, run_config=config)
    sandbox = result.to_state().to_json()["sandbox"]["session_state"]
    print(json.dumps({"final": result.final_output, "sandbox_id": sandbox["sandbox_id"]}))
    await client.delete_sandbox(sandbox)

asyncio.run(main())
"""


@function_tool(needs_approval=True)
def publish(summary: str) -> str:
    "Publish the summary once a person approves."
    return "published: " + summary


def outputs(call: ModelCall) -> dict[str, str]:
    """The tool outputs the model has been given so far, by call id."""
    return {
        item["call_id"]: str(item["output"])
        for item in call.input
        if isinstance(item, dict) and str(item.get("type", "")).endswith("_call_output")
    }


def feed_the_reader(call: ModelCall) -> Any:
    """Answer the interactive command started last (its session id is in the tool's output)."""
    session = re.search(r"session ID (\d+)", outputs(call)["c4"])
    assert session, outputs(call)["c4"]
    args = {"session_id": int(session[1]), "chars": "ping\n", "yield_time_ms": 3000}
    return [function_call("write_stdin", args, call_id="c5")]


def first_half_model() -> ScriptedModel:
    shell = "echo 'from part one' > notes.txt && pwd && id -u"
    patch = ResponseCustomToolCall(
        type="custom_tool_call", call_id="c2", id="c2", name="apply_patch", input=PATCH
    )
    interactive = {"cmd": "tty; read line; echo got $line", "tty": True, "yield_time_ms": 500}
    return ScriptedModel(
        [
            [function_call("exec_command", {"cmd": shell}, call_id="c1")],
            [patch],
            [function_call("exec_command", {"cmd": "python3 hello.py"}, call_id="c3")],
            [function_call("exec_command", interactive, call_id="c4")],
            ModelStep.respond(feed_the_reader),
            [function_call("publish", {"summary": "notes written"}, call_id="c6")],
        ]
    )


async def sandbox_state(airlock: Airlock, tenant: Tenant, sandbox_id: str) -> str:
    async with airlock.http(tenant.key) as http:
        answer = await http.get(f"/v1/sandboxes/{sandbox_id}")
    assert answer.status_code == 200, answer.text
    return str(answer.json()["state"])


async def test_a_saved_run_resumes_in_a_new_process_in_the_same_sandbox(
    airlock: Airlock, tenant: Tenant, tmp_path: Path
) -> None:
    model = first_half_model()
    agent = SandboxAgent(name="builder", model=model, tools=[publish])
    client = AirlockSandboxClient(url=airlock.server.url, api_key=tenant.key)
    options = AirlockSandboxClientOptions(ttl=600, network={"mode": "none"}, keep_on_exit=True)
    # The workspace tar of the run's end goes here (not the SDK's default, under $HOME).
    snapshot = LocalSnapshotSpec(base_path=tmp_path / "snapshots")
    sandbox = SandboxRunConfig(client=client, options=options, snapshot=snapshot)
    config = RunConfig(sandbox=sandbox, tracing_disabled=True)
    result = await Runner.run(agent, "write the notes", run_config=config)

    # The tools ran in the sandbox: a shell command, a patch (a file write), a program, and an
    # interactive command on a terminal fed through its stdin; then the run stopped for the
    # approval.
    assert [i.raw_item.name for i in result.interruptions] == ["publish"]
    seen = outputs(model.calls[-1])
    assert "/work\n" in seen["c1"] and "exited with code 0" in seen["c1"], seen["c1"]
    assert "hello from a patch" in seen["c3"], seen["c3"]
    assert "/dev/pts/" in seen["c4"], seen["c4"]  # under a terminal
    assert "got ping" in seen["c5"] and "exited with code 0" in seen["c5"], seen["c5"]

    saved = json.dumps(result.to_state().to_json())
    assert tenant.key not in saved
    session = json.loads(saved)["sandbox"]["session_state"]
    assert session["type"] == "airlock" and session["keep_on_exit"] is True
    sandbox_id = session["sandbox_id"]
    tenant.sandboxes.append(sandbox_id)
    assert await sandbox_state(airlock, tenant, sandbox_id) == "running"

    (tmp_path / "run.json").write_text(saved)
    env = {
        **os.environ,
        "AIRLOCK_URL": airlock.server.url,
        "AIRLOCK_API_KEY": tenant.key,
        "OPENAI_AGENTS_DISABLE_TRACING": "1",
    }
    done = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-c", RESUME, str(tmp_path / "run.json")],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    second = json.loads(done.stdout.splitlines()[-1])
    assert second["sandbox_id"] == sandbox_id
    assert "from part one" in second["final"] and "hello from a patch" in second["final"]
    assert await sandbox_state(airlock, tenant, sandbox_id) in ("stopping", "stopped")


async def test_a_resume_without_the_sandbox_restores_the_workspace_from_its_tar(
    airlock: Airlock, tenant: Tenant, tmp_path: Path
) -> None:
    client = AirlockSandboxClient(url=airlock.server.url, api_key=tenant.key)
    session = await client.create(
        snapshot=LocalSnapshotSpec(base_path=tmp_path),
        options=AirlockSandboxClientOptions(ttl=300),
    )
    first = session.state.sandbox_id
    tenant.sandboxes.append(first)
    async with session:  # its end persists the workspace as a tar, then deletes the sandbox
        await session.write(Path("data/kept.txt"), io.BytesIO(b"kept\n"))
    assert await sandbox_state(airlock, tenant, first) in ("stopping", "stopped")

    state = client.deserialize_session_state(client.serialize_session_state(session.state))
    resumed = await client.resume(state)
    tenant.sandboxes.append(resumed.state.sandbox_id)
    assert resumed.state.sandbox_id != first
    async with resumed:
        assert (await resumed.read(Path("data/kept.txt"))).read() == b"kept\n"
        listed = await resumed.exec("ls -a data")
        assert listed.stdout.decode().split() == [".", "..", "kept.txt"]
        # A user name becomes the exec's uid, looked up in the sandbox.
        assert (await resumed.exec("id -u", user="nobody")).stdout == b"65534\n"
    assert await sandbox_state(airlock, tenant, resumed.state.sandbox_id) in ("stopping", "stopped")


def test_without_the_agents_sdk_the_import_names_it() -> None:
    blocked = "import sys; sys.modules['agents'] = None; import airlock_agents"
    done = subprocess.run([sys.executable, "-c", blocked], capture_output=True, text=True)
    assert done.returncode == 1
    assert "pip install 'openai-agents == 0.24.0'" in done.stderr.splitlines()[-1], done.stderr
