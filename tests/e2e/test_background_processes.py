"""Background processes through pause and resume, idle sleep and wake, and fork, over HTTP on
gVisor. Whatever shape a user starts a long-lived process in (`&`, `nohup`, `setsid`, a double
fork, an exec with `wait: false`), it comes back from each as the same process (same pid, its
count going on through the file it holds open); two processes joined by a pipe keep talking, a
server keeps answering through the port route, and the clock they read runs on with the host's.

One journey serves every test, to keep the run short: a sandbox whose first exec (sent as
soon as the sandbox exists, as a user's would be) starts the shell shapes, the pipe pair and a
web server, and a sandbox whose `wait: false` exec runs on, go side by side through three
pauses, an idle sleep woken by a call, and a fork. Each test judges its part of what was seen.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from tests.e2e.conftest import Airlock

# Appends "<pid> <count> <time>" to /tmp/<name>.log through one open file, ten times a second;
# named "-" it writes to stdout instead; given a second argument it relays the counts it reads
# from stdin (the far end of a pipe).
TICK = """
import os, sys, time
name = sys.argv[1]
out = sys.stdout if name == "-" else open("/tmp/" + name + ".log", "a", buffering=1)
source = sys.stdin if len(sys.argv) > 2 else None
n = 0
while True:
    if source is None:
        n += 1
        time.sleep(0.1)
    else:
        n = int(source.readline().split()[1])
    out.write("%d %d %.3f\\n" % (os.getpid(), n, time.time()))
    out.flush()
"""

# The first exec of the sandbox: every shell shape, a pipe between two processes, a server.
STARTS = """
python3 -c "$TICK" amp >/dev/null 2>&1 &
nohup python3 -c "$TICK" nohup >/dev/null 2>&1 &
setsid python3 -c "$TICK" setsid >/dev/null 2>&1 &
(python3 -c "$TICK" double-fork >/dev/null 2>&1 &)
python3 -c "$TICK" - 2>/dev/null | python3 -c "$TICK" pipe relay >/dev/null 2>&1 &
mkdir -p /tmp/www && echo served > /tmp/www/index.txt
python3 -m http.server 8000 --bind 127.0.0.1 --directory /tmp/www >/dev/null 2>&1 &
"""
SHELL_SHAPES = ["amp", "nohup", "setsid", "double-fork"]
WAIT_FALSE = "wait-false"

# The last line each log holds, twice 0.6 s apart, and the sandbox's clock.
LOOK = """
import glob, json, os, time
def last():
    seen = {}
    for path in glob.glob("/tmp/*.log"):
        with open(path, "rb") as f:
            f.seek(max(0, os.path.getsize(path) - 256))
            lines = f.read().decode().split("\\n")[:-1]
        if lines:
            pid, n, at = lines[-1].split()
            seen[os.path.basename(path)[:-4]] = [int(pid), int(n), float(at)]
    return seen
first = last()
time.sleep(0.6)
print(json.dumps({"first": first, "then": last(), "now": time.time()}))
"""
MOMENTS = ["started", "resume 1", "resume 2", "resume 3", "woken", "fork"]
IDLE_S = 10  # the shortest idle timeout a sandbox may have


@dataclass(frozen=True)
class Look:
    """What the logs said at one moment of the journey, in the sandbox (or its fork)."""

    moment: str
    first: dict[str, tuple[int, int, float]]
    then: dict[str, tuple[int, int, float]]
    inside_now: float  # the sandbox's clock at the end of the look
    host_span: tuple[float, float]  # the host's clock around the look
    woke_ms: int | None  # the look woke the sandbox, in this long
    port: tuple[int, str] | None = None  # the web server's answer through the port route


@dataclass
class Journey:
    sandbox_id: str
    looks: list[Look] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)  # steps that did not happen as asked
    exec_states: list[str] = field(default_factory=list)  # the `wait: false` exec's, per look
    exec_end: dict[str, Any] | None = None  # that exec once killed at the end

    def at(self, moment: str) -> Look:
        return next(look for look in self.looks if look.moment == moment)


@dataclass
class Journeys:
    shell: Journey  # the shell shapes, the pipe pair and the web server
    wait_false: Journey  # the `wait: false` exec

    def of(self, shape: str) -> Journey:
        return self.wait_false if shape == WAIT_FALSE else self.shell


@pytest.fixture(scope="module")
async def journeys(site: Airlock) -> Journeys:
    tenant = await site.tenant()
    async with site.http(tenant.key) as http:
        # One after the other, so each first exec comes as soon after its create as a user's.
        shell = await _begin(http, _start_shell_shapes)
        wait_false = await _begin(http, _start_wait_false)
        await asyncio.gather(
            _travel(http, *shell, port=True), _travel(http, *wait_false, port=False)
        )
        for journey, _ in (shell, wait_false):
            await http.delete(f"/v1/sandboxes/{journey.sandbox_id}")
    return Journeys(shell[0], wait_false[0])


@pytest.mark.sqlite
@pytest.mark.parametrize("shape", [*SHELL_SHAPES, WAIT_FALSE])
async def test_a_background_process_lives_through_pauses_sleep_and_fork(
    journeys: Journeys, shape: str
) -> None:
    """The same process (its pid) at every moment, counting on through its open file, in the
    sandbox after each resume and the wake, and in the fork."""
    journey = journeys.of(shape)
    assert_lived(journey, shape)
    if shape == WAIT_FALSE:
        # It stays the exec it was (running all along) and answers a kill at the end.
        assert journey.exec_states == ["running"] * (len(MOMENTS) - 1), journey.exec_states
        assert journey.exec_end is not None
        assert (journey.exec_end["state"], journey.exec_end["outcome"]) == ("finished", "killed")


@pytest.mark.sqlite
async def test_processes_joined_by_a_pipe_keep_talking(journeys: Journeys) -> None:
    # The relay logs the counts the producer sends it: they go on after every step.
    assert_lived(journeys.shell, "pipe")


@pytest.mark.sqlite
async def test_a_server_keeps_answering_through_the_port_route(journeys: Journeys) -> None:
    journey = journeys.shell
    assert not journey.refused, journey.refused
    answers = [(look.moment, look.port) for look in journey.looks]
    assert answers == [(moment, (200, "served\n")) for moment in MOMENTS], answers


@pytest.mark.sqlite
async def test_the_clock_runs_on_with_the_hosts(journeys: Journeys) -> None:
    """After each resume, the wake and in the fork, the time a background process writes is the
    host's time (not the time it was checkpointed at), and it only goes forward."""
    journey = journeys.shell
    assert not journey.refused, journey.refused
    assert [look.moment for look in journey.looks] == MOMENTS
    last = 0.0
    for look in journey.looks:
        before, after = look.host_span
        assert before - 1 <= look.inside_now <= after + 1, (look.moment, look.host_span, look)
        written = look.then.get("amp")
        assert written is not None, f"{look.moment}: the process is gone"
        assert look.inside_now - 1 <= written[2] <= look.inside_now, (look.moment, written)
        assert written[2] > last, (look.moment, written, last)
        last = written[2]
    asleep = journey.at("woken")
    assert asleep.woke_ms is not None and asleep.woke_ms > 0, "the wake was not a resume"


def assert_lived(journey: Journey, shape: str) -> None:
    assert not journey.refused, f"{shape}: {journey.refused}"
    assert [look.moment for look in journey.looks] == MOMENTS
    pids, count = set(), 0
    for look in journey.looks:
        first, then = look.first.get(shape), look.then.get(shape)
        assert first is not None and then is not None, f"{look.moment}: no {shape} process"
        pids |= {first[0], then[0]}
        assert then[1] > first[1], f"{look.moment}: {shape} stopped counting ({first}, {then})"
        assert first[1] > count, f"{look.moment}: {shape} counted from scratch ({first})"
        count = then[1]
    assert len(pids) == 1, f"{shape} is not the process it was: pids {sorted(pids)}"


Start = Callable[[httpx.AsyncClient, str], Awaitable[str | None]]


async def _start_shell_shapes(http: httpx.AsyncClient, sandbox_id: str) -> str | None:
    """The sandbox's first exec, right after it was made, as a user's would come."""
    body = {"cmd": ["sh", "-c", STARTS], "env": {"TICK": TICK}}
    r = await http.post(f"/v1/sandboxes/{sandbox_id}/execs", json=body)
    assert r.status_code == 200 and r.json()["exit_code"] == 0, r.text
    return None


async def _start_wait_false(http: httpx.AsyncClient, sandbox_id: str) -> str | None:
    body = {"cmd": ["python3", "-c", TICK, WAIT_FALSE], "wait": False, "timeout_s": 600}
    r = await http.post(f"/v1/sandboxes/{sandbox_id}/execs", json=body)
    assert r.status_code == 202, r.text
    return str(r.json()["id"])


async def _begin(http: httpx.AsyncClient, start: Start) -> tuple[Journey, str | None]:
    """A new sandbox and its processes; the `wait: false` exec's id, if one runs them."""
    r = await http.post("/v1/sandboxes", json={"ttl_s": 600})
    assert r.status_code == 201, r.text
    journey = Journey(r.json()["id"])
    return journey, await start(http, journey.sandbox_id)


async def _travel(
    http: httpx.AsyncClient, journey: Journey, exec_id: str | None, *, port: bool
) -> None:
    """Three pauses, an idle sleep and a fork, looking after each."""
    await asyncio.sleep(1)
    await _look(http, journey, "started", port, exec_id)
    for round_ in (1, 2, 3):
        await _step(http, journey, f"pause {round_}", "pause")
        await _step(http, journey, f"resume {round_}", "resume")
        await _look(http, journey, f"resume {round_}", port, exec_id)
    await _sleep_idle(http, journey)
    await _look(http, journey, "woken", port, exec_id)
    await _fork_and_look(http, journey, port)
    if exec_id is not None:
        r = await http.post(f"/v1/sandboxes/{journey.sandbox_id}/execs/{exec_id}/kill")
        journey.exec_end = r.json() if r.status_code == 200 else {"kill": r.text}


async def _step(http: httpx.AsyncClient, journey: Journey, what: str, action: str) -> None:
    r = await http.post(f"/v1/sandboxes/{journey.sandbox_id}/{action}")
    if r.status_code != 200:
        journey.refused.append(f"{what}: {r.status_code} {r.text[:300]}")


async def _sleep_idle(http: httpx.AsyncClient, journey: Journey) -> None:
    """Let idle detection pause the sandbox (only for this step: it has no idle timeout)."""
    path = f"/v1/sandboxes/{journey.sandbox_id}"
    r = await http.patch(path, json={"idle_timeout_s": IDLE_S})
    assert r.status_code == 200, r.text
    deadline = time.monotonic() + IDLE_S + 30
    while (await http.get(path)).json()["state"] != "paused":
        if time.monotonic() > deadline:
            journey.refused.append("idle sleep: the sandbox was never paused")
            break
        await asyncio.sleep(0.5)


async def _fork_and_look(http: httpx.AsyncClient, journey: Journey, port: bool) -> None:
    path = f"/v1/sandboxes/{journey.sandbox_id}"
    r = await http.patch(path, json={"idle_timeout_s": 0})
    assert r.status_code == 200, r.text
    r = await http.post(f"{path}/fork", json={"ttl_s": 300})
    if r.status_code != 201:
        journey.refused.append(f"fork: {r.status_code} {r.text[:300]}")
        return
    child = Journey(r.json()["id"])
    try:
        await _look(http, child, "fork", port, None)
        journey.looks += child.looks
    finally:
        await http.delete(f"/v1/sandboxes/{child.sandbox_id}")


async def _look(
    http: httpx.AsyncClient, journey: Journey, moment: str, port: bool, exec_id: str | None
) -> None:
    sandbox = f"/v1/sandboxes/{journey.sandbox_id}"
    before = time.time()
    r = await http.post(f"{sandbox}/execs", json={"cmd": ["python3", "-c", LOOK]})
    after = time.time()
    assert r.status_code == 200 and r.json()["exit_code"] == 0, r.text
    seen = json.loads(r.json()["stdout"])
    woke = r.headers.get("airlock-woke-ms")
    answer = None
    if port:
        served = await http.get(f"{sandbox}/ports/8000/index.txt")
        answer = (served.status_code, served.text)
    journey.looks.append(
        Look(
            moment,
            {k: tuple(v) for k, v in seen["first"].items()},  # type: ignore[misc]
            {k: tuple(v) for k, v in seen["then"].items()},  # type: ignore[misc]
            seen["now"],
            (before, after),
            int(woke) if woke is not None else None,
            answer,
        )
    )
    if exec_id is not None:
        state = (await http.get(f"{sandbox}/execs/{exec_id}")).json()["state"]
        journey.exec_states.append(state)
