"""The gVisor exec agent (PID 1 of sandboxes whose image has python3): its link is untrusted.

Garbage, oversized frames or frames for channels never opened close the link for good, the
exec caught in it ends with nothing left running, and later execs go through `runsc exec`.
An agent that stops answering is given up on the same way. A restored sandbox talks to its
agent over the new pipes; a service that lost the pipes (a restart) still gets every exec
done, and the agent ends the execs nobody reads any more.
"""

from __future__ import annotations

import asyncio
import struct
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from service.runtime import ExecRequest, SandboxSpec
from service.runtime.gvisor import GVisorRuntime, agent_boot
from service.runtime.gvisor.agent_frames import EXIT, HEADER, STARTED, STDOUT
from service.runtime.gvisor.agent_link import AgentLink, AgentLost

from .conftest import REPO
from .helpers import host_processes_mentioning, sh

SMALL = SandboxSpec(memory_mib=128, disk_mib=16, pids=64)


@pytest.fixture
async def box(gvisor: GVisorRuntime) -> AsyncIterator[str]:
    info = await gvisor.create("default", SMALL)
    assert await gvisor.agent_ready(info.id), "the exec agent did not come up"
    yield info.id
    await gvisor.destroy(info.id)


async def ps(runtime: GVisorRuntime, sandbox_id: str) -> str:
    result = await runtime.run(sandbox_id, ExecRequest(argv=["ps", "-e", "-o", "args="]))
    return result.stdout.decode()


def frame(kind: int, channel: int, payload: bytes) -> bytes:
    return HEADER.pack(len(payload), kind, channel) + payload


def printf_escaped(data: bytes) -> str:
    return "".join(f"\\{b:03o}" for b in data)


@pytest.mark.parametrize(
    "written",
    [
        pytest.param(b"hello from a root process\n", id="garbage"),
        pytest.param(struct.pack(">IBI", 100 << 20, STDOUT, 1), id="oversized"),
        pytest.param(frame(STDOUT, 4000, b"x"), id="unopened-channel"),
    ],
)
async def test_untrusted_output_closes_the_link(
    gvisor: GVisorRuntime, box: str, written: bytes
) -> None:
    # A root process in the sandbox writes to the agent's stdout, then would idle.
    script = f"printf '{printf_escaped(written)}' > /proc/1/fd/1; sleep 4301"
    result = await gvisor.run(box, ExecRequest(argv=["sh", "-c", script], user="0:0", timeout_s=30))
    assert result.outcome == "killed"
    assert not await gvisor.agent_ready(box, 0)
    # later work goes through `runsc exec`, and nothing of that exec is left
    assert (await sh(gvisor, box, "echo still fine")).stdout == b"still fine\n"
    assert "sleep 4301" not in await ps(gvisor, box)
    assert [p for p in host_processes_mentioning(box) if " exec " in p] == []


async def test_an_agent_that_stops_answering_is_given_up(
    gvisor: GVisorRuntime, gvisor_runsc: GVisorRuntime, box: str
) -> None:
    # Freeze PID 1 from a root process started by `runsc exec` (another runtime object on
    # the same state dir has no link, so it uses `runsc exec`).
    stop = ExecRequest(argv=["kill", "-STOP", "1"], user="0:0")
    assert (await gvisor_runsc.run(box, stop)).exit_code == 0
    try:
        # the exec sent to the frozen agent is given up (never started a second way) ...
        lost = await sh(gvisor, box, "echo lost")
        assert (lost.outcome, lost.stdout) == ("killed", b"")
        assert not await gvisor.agent_ready(box, 0)
        # ... and the next goes through `runsc exec`
        result = await sh(gvisor, box, "echo answered")
        assert (result.outcome, result.stdout) == ("exited", b"answered\n")
    finally:
        cont = ExecRequest(argv=["kill", "-CONT", "1"], user="0:0")
        await gvisor_runsc.run(box, cont)
    assert (await sh(gvisor, box, "echo after")).stdout == b"after\n"
    assert "echo lost" not in await ps(gvisor, box)


async def test_deadline_through_the_agent_leaves_nothing(gvisor: GVisorRuntime, box: str) -> None:
    tree = "sleep 4401 & (setsid sleep 4402 &); sleep 4403"
    result = await sh(gvisor, box, tree, timeout_s=1)
    assert result.outcome == "timeout"
    assert await gvisor.agent_ready(box, 0)  # a deadline is no reason to drop the agent
    left = await ps(gvisor, box)
    assert not any(f"sleep 440{i}" in left for i in (1, 2, 3))


async def test_restored_sandboxes_talk_to_their_agent(gvisor: GVisorRuntime, box: str) -> None:
    assert (await sh(gvisor, box, "echo prepared > /work/state")).exit_code == 0
    snapshot = await gvisor.snapshot(box)
    try:
        clone = await gvisor.create_from_snapshot(snapshot.id)
        try:
            for sandbox_id in (box, clone.id):
                assert await gvisor.agent_ready(sandbox_id, 0)
                result = await sh(gvisor, sandbox_id, "cat /work/state; cat", stdin=b"in\n")
                assert result.stdout == b"prepared\nin\n"
        finally:
            await gvisor.destroy(clone.id)
    finally:
        await gvisor.delete_snapshot(snapshot.id)


LEAVING_OWNER = """
import asyncio, os, sys
from service.runtime.gvisor import GVisorRuntime
from service.runtime import ExecRequest, SandboxSpec
from service.runtime.gvisor import agent_link

async def main():
    rt = await GVisorRuntime.open(sys.argv[1])
    box = await rt.create("default", SandboxSpec(memory_mib=128, disk_mib=16))
    assert await rt.agent_ready(box.id)
    await rt.exec(box.id, ExecRequest(argv=["sleep", "4501"]))
    print(box.id, flush=True)
    os._exit(0)  # a crash: the agent's pipes close with this process

asyncio.run(main())
"""


async def test_a_restarted_service_execs_without_the_agent(
    gvisor: GVisorRuntime, state_dir: Path
) -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        LEAVING_OWNER,
        str(state_dir),
        stdout=asyncio.subprocess.PIPE,
        cwd=REPO,
    )
    out, _ = await proc.communicate()
    box = out.decode().strip()
    assert box.startswith("alk-")
    try:
        assert not await gvisor.agent_ready(box, 0)  # this process never held its pipes
        assert (await sh(gvisor, box, "echo adopted")).stdout == b"adopted\n"
        # the agent ended the exec whose reader went away
        deadline = time.monotonic() + 10
        left = await ps(gvisor, box)
        for _ in range(50):
            if "sleep 4501" not in left or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.2)
            left = await ps(gvisor, box)
        assert "sleep 4501" not in left
        # long after its host went away the agent is still an init: orphans are reaped
        await asyncio.sleep(1.5)
        assert (await sh(gvisor, box, "sleep 0.2 & exit 0")).exit_code == 0

        async def zombies() -> list[str]:
            result = await gvisor.run(box, ExecRequest(argv=["ps", "-e", "-o", "stat=,args="]))
            return [line for line in result.stdout.decode().splitlines() if "Z" in line.split()[0]]

        for _ in range(25):
            if not await zombies():
                break
            await asyncio.sleep(0.2)
        assert await zombies() == []
    finally:
        await gvisor.destroy(box)


def test_only_images_with_python_get_the_agent(tmp_path: Path) -> None:
    assert not agent_boot.available(tmp_path)
    (tmp_path / "usr" / "bin").mkdir(parents=True)
    (tmp_path / "usr" / "bin" / "python3").symlink_to("python3.11")
    assert agent_boot.available(tmp_path)


class _Pipe:
    """Feeds bytes to a link's parser the way the event loop does."""

    def __init__(self, link: AgentLink) -> None:
        self.link = link

    def send(self, data: bytes, pieces: int = 3) -> None:
        step = max(1, len(data) // pieces)
        for at in range(0, len(data), step):
            self.link.data_received(data[at : at + step])


def _link_with_channel() -> tuple[AgentLink, _Pipe, object]:
    link = AgentLink("alk-test")
    channel = link.open_channel()
    return link, _Pipe(link), channel


@pytest.mark.parametrize(
    "payload",
    [
        frame(STARTED, 1, b'{"pid": 1}'),  # PID 1 is never an exec
        frame(STARTED, 1, b'{"pid": 12, "extra": 1}'),
        frame(STARTED, 1, b'{"pid": "12"}'),
        frame(EXIT, 1, b'{"code": 999, "signal": null, "out": 0, "err": 0, "ran": 0}'),
        frame(EXIT, 1, b'{"code": 0, "signal": null, "out": -5, "err": 0, "ran": 0}'),
        frame(EXIT, 1, b"not json"),
        frame(70, 1, b"\x00\x00"),  # a stdin acknowledgement of the wrong size
        frame(200, 1, b""),  # unknown kind
        frame(STDOUT, 2, b"data"),  # channel never opened
        struct.pack(">IBI", 600 * 1024, STDOUT, 1),  # over the frame limit
    ],
)
async def test_link_parser_refuses_bad_frames(payload: bytes) -> None:
    link, pipe, channel = _link_with_channel()
    pipe.send(payload)
    assert link.broken is not None
    assert not link.usable
    with pytest.raises(AgentLost):
        await channel.exit  # type: ignore[attr-defined]


async def test_link_parser_takes_frames_split_anywhere() -> None:
    link, pipe, channel = _link_with_channel()
    got: list[bytes] = []
    channel.attach(lambda stream, data: got.append(data))  # type: ignore[attr-defined]
    end = b'{"code": 3, "signal": null, "out": 5, "err": 0, "ran": 0.01}'
    pipe.send(
        frame(STARTED, 1, b'{"pid": 42}') + frame(STDOUT, 1, b"hello") + frame(EXIT, 1, end),
        pieces=17,
    )
    assert link.broken is None
    assert await channel.started == 42  # type: ignore[attr-defined]
    assert (await channel.exit).code == 3  # type: ignore[attr-defined]
    assert got == [b"hello"]
