"""Execution contexts through HTTP on gVisor: a Python interpreter kept between runs, its
output, values and errors as data, its deadlines, its isolation and a pause in its life."""

from __future__ import annotations

import base64
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from tests.e2e.conftest import Airlock, Tenant, audit_events


async def new_context(http: httpx.AsyncClient, sid: str, **body: Any) -> dict[str, Any]:
    r = await http.post(f"/v1/sandboxes/{sid}/contexts", json=body)
    assert r.status_code == 201, r.text
    return r.json()


async def run(
    http: httpx.AsyncClient, sid: str, ctx: str, code: str, **body: Any
) -> dict[str, Any]:
    r = await http.post(f"/v1/sandboxes/{sid}/contexts/{ctx}/run", json={"code": code, **body})
    assert r.status_code == 200, r.text
    return r.json()


async def test_a_context_keeps_its_state_and_answers_as_data(
    airlock: Airlock, tenant: Tenant
) -> None:
    box = await airlock.sandbox(tenant)
    async with airlock.http(tenant.key) as http:
        ctx = await new_context(http, box.id)
        assert ctx["state"] == "ready" and ctx["python"], ctx
        assert ctx["id"].startswith("ctx_")

        first = await run(http, box.id, ctx["id"], "x = 41\nprint('hello')\nimport sys\n"
                          "print('to stderr', file=sys.stderr)")  # fmt: skip
        assert first["ok"] and first["stdout"] == "hello\n", first
        assert first["stderr"] == "to stderr\n" and first["results"] == [], first
        assert first["execution_count"] == 1 and first["error"] is None

        second = await run(http, box.id, ctx["id"], "x + 1")
        assert second["results"] == [{"data": {"text/plain": "42"}}], second

        # What a process the code starts prints is the run's output too.
        child = await run(http, box.id, ctx["id"], "import subprocess\n"
                          "subprocess.run(['sh', '-c', 'echo from a child'])\nNone")  # fmt: skip
        assert child["stdout"] == "from a child\n", child

        # The same user, directory and empty environment as an exec, and no stdin.
        code = "import os, sys\n(os.getuid(), os.getcwd(), sorted(os.environ), sys.stdin.read())"
        facts = await run(http, box.id, ctx["id"], code)
        uid, cwd, names, stdin = eval(facts["results"][0]["data"]["text/plain"])  # noqa: S307
        assert (uid, cwd, stdin) == (1000, "/work", ""), facts
        assert set(names) <= {"PATH", "HOME", "MPLBACKEND", "LC_CTYPE"}, names

        # Rich results by MIME type.
        rich = await run(http, box.id, ctx["id"], "class Shown:\n"
                         "    def _repr_html_(self): return '<b>hi</b>'\n"
                         "    def _repr_json_(self): return {'a': 1}\n"
                         "    def _repr_png_(self): return b'\\x89PNG\\r\\n'\n"
                         "    def __repr__(self): return 'Shown()'\n"
                         "Shown()")  # fmt: skip
        assert rich["results"] == [
            {"data": {"text/plain": "Shown()", "text/html": "<b>hi</b>",
                      "application/json": {"a": 1}, "image/png": "iVBORw0K"}}
        ], rich  # fmt: skip

        failed = await run(http, box.id, ctx["id"], "def f():\n    return 1 / 0\nf()")
        assert not failed["ok"] and not failed["context_lost"], failed
        error = failed["error"]
        assert error["name"] == "ZeroDivisionError" and error["value"] == "division by zero"
        assert error["traceback"][0].startswith("Traceback"), error
        assert "kernel" not in "".join(error["traceback"]), error  # the code's frames only
        assert any("return 1 / 0" in line for line in error["traceback"]), error

        bad = await run(http, box.id, ctx["id"], "def (:")
        assert bad["error"]["name"] == "SyntaxError", bad

        listed = (await http.get(f"/v1/sandboxes/{box.id}/contexts")).json()["items"]
        assert [c["id"] for c in listed] == [ctx["id"]] and listed[0]["runs"] == 7, listed

        assert (
            await http.delete(f"/v1/sandboxes/{box.id}/contexts/{ctx['id']}")
        ).status_code == 204
        r = await http.post(f"/v1/sandboxes/{box.id}/contexts/{ctx['id']}/run", json={"code": "x"})
        assert r.status_code == 404, r.text
    actions = [e["action"] for e in await audit_events(airlock, tenant)]
    assert actions.count("context.run") == 7 and "context.delete" in actions, actions


async def test_code_can_leave_processes_running(airlock: Airlock, tenant: Tenant) -> None:
    box = await airlock.sandbox(tenant)
    async with airlock.http(tenant.key) as http:
        ctx = (await new_context(http, box.id))["id"]
        # As users start a server from a notebook: with `&` (the child keeps the run's stdout
        # and stderr) and with `nohup`. The run answers without waiting for either.
        started = time.monotonic()
        left = await run(http, box.id, ctx, "import os, subprocess\n"
                         "subprocess.run('sleep 300 & echo $! > /tmp/amp.pid', shell=True)\n"
                         "os.system('nohup sleep 301 >/dev/null 2>&1 & echo $! > /tmp/nohup.pid')\n"
                         "print('left running')", timeout_s=30)  # fmt: skip
        assert time.monotonic() - started < 10, left
        assert left["ok"] and not left["timed_out"] and left["stdout"] == "left running\n", left
        # A later run finds both still running (each as its command, once the shell's child
        # has become it), and its own output comes back as before.
        code = (
            "import time\n"
            "def alive(name, words):\n"
            "    pid = int(open(f'/tmp/{name}.pid').read())\n"
            "    for _ in range(100):\n"
            "        os.kill(pid, 0)\n"
            "        if open(f'/proc/{pid}/cmdline', 'rb').read().split(b'\\0')[:-1] == words:\n"
            "            return True\n"
            "        time.sleep(0.05)\n"
            "print('still here')\n"
            "[alive('amp', [b'sleep', b'300']), alive('nohup', [b'sleep', b'301'])]"
        )
        later = await run(http, box.id, ctx, code)
        assert later["ok"] and later["stdout"] == "still here\n", later
        assert later["results"][0]["data"]["text/plain"] == "[True, True]", later


async def test_deadlines_interrupt_then_kill(airlock: Airlock, tenant: Tenant) -> None:
    box = await airlock.sandbox(tenant)
    async with airlock.http(tenant.key) as http:
        ctx = (await new_context(http, box.id))["id"]
        await run(http, box.id, ctx, "kept = 'still here'")
        slow = await run(http, box.id, ctx, "import time\nwhile True:\n    time.sleep(0.05)",
                         timeout_s=0.5)  # fmt: skip
        assert slow["timed_out"] and not slow["context_lost"], slow
        assert slow["error"]["name"] == "TimeoutError", slow
        # `except Exception` does not swallow the deadline.
        caught = await run(http, box.id, ctx, "import time\ntry:\n    time.sleep(30)\n"
                           "except Exception:\n    pass", timeout_s=0.5)  # fmt: skip
        assert caught["timed_out"] and not caught["context_lost"], caught
        assert (await run(http, box.id, ctx, "kept"))["results"][0]["data"]["text/plain"] == (
            "'still here'"
        )

        # Code that keeps the deadline from reaching it is killed with the interpreter.
        stuck = await run(http, box.id, ctx, "import signal, time\n"
                          "signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})\n"
                          "time.sleep(60)", timeout_s=0.5)  # fmt: skip
        assert stuck["timed_out"] and stuck["context_lost"] and not stuck["ok"], stuck
        got = (await http.get(f"/v1/sandboxes/{box.id}/contexts/{ctx}")).json()
        assert got["state"] == "gone" and "deadline" in got["gone_reason"], got
        r = await http.post(f"/v1/sandboxes/{box.id}/contexts/{ctx}/run", json={"code": "1"})
        assert r.status_code == 409 and r.json()["code"] == "context_gone", r.text
        # Its process is gone from the sandbox.
        count = "ps -eo args | grep -c '^python3 -c' || true"
        r = await http.post(f"/v1/sandboxes/{box.id}/execs", json={"cmd": ["sh", "-c", count]})
        assert r.json()["stdout"].strip() == "0", r.json()


async def test_a_context_survives_a_pause(airlock: Airlock, tenant: Tenant) -> None:
    box = await airlock.sandbox(tenant)
    async with airlock.http(tenant.key) as http:
        ctx = (await new_context(http, box.id))["id"]
        await run(http, box.id, ctx, "import os\ncounter = 1\npid = os.getpid()")
        r = await http.post(f"/v1/sandboxes/{box.id}/pause")
        assert r.status_code == 200 and r.json()["state"] == "paused", r.text
        # A run on the paused sandbox wakes it; the interpreter goes on where it was.
        after = await run(http, box.id, ctx, "counter += 1\n(counter, pid == os.getpid())")
        assert after["results"][0]["data"]["text/plain"] == "(2, True)", after
        assert after["execution_count"] == 2, after


async def test_what_a_context_refuses(airlock: Airlock, tenant: Tenant) -> None:
    other = await airlock.tenant()
    box = await airlock.sandbox(tenant)
    async with airlock.http(tenant.key) as http, airlock.http(other.key) as intruder:
        ctx = (await new_context(http, box.id))["id"]
        # Another tenant sees neither the sandbox nor its context.
        for call in (
            intruder.get(f"/v1/sandboxes/{box.id}/contexts"),
            intruder.get(f"/v1/sandboxes/{box.id}/contexts/{ctx}"),
            intruder.post(f"/v1/sandboxes/{box.id}/contexts/{ctx}/run", json={"code": "1"}),
            intruder.delete(f"/v1/sandboxes/{box.id}/contexts/{ctx}"),
        ):
            assert (await call).status_code == 404
        # A context of another sandbox of the same tenant is not found through this one.
        second = await airlock.sandbox(tenant)
        r = await http.post(f"/v1/sandboxes/{second.id}/contexts/{ctx}/run", json={"code": "1"})
        assert r.status_code == 404, r.text
        # Nor by a token of the tenant bound to that other sandbox, right after a run of the
        # tenant's own found the sandbox running.
        r = await http.post("/v1/tokens", json={"scopes": ["exec"], "sandbox_id": second.id})
        assert r.status_code == 201, r.text
        bound = {"Authorization": f"Bearer {r.json()['token']}"}
        assert (await run(http, box.id, ctx, "1"))["ok"] is True
        r = await http.post(
            f"/v1/sandboxes/{box.id}/contexts/{ctx}/run", json={"code": "1"}, headers=bound
        )
        assert r.status_code == 404, r.text
        for body, field in (
            ({"code": "1", "timeout": 5}, "timeout"),
            ({"code": "1", "timeout_s": 0}, "timeout_s"),
            ({"code": "1", "timeout_s": 100_000}, "timeout_s"),
            ({}, "code"),
        ):
            r = await http.post(f"/v1/sandboxes/{box.id}/contexts/{ctx}/run", json=body)
            assert r.status_code == 422 and field in r.text, (body, r.text)
        r = await http.post(f"/v1/sandboxes/{box.id}/contexts", json={"language": "ruby"})
        assert r.status_code == 422, r.text
        # Over the tenant's own maximum timeout.
        r = await http.post(f"/v1/sandboxes/{box.id}/contexts/{ctx}/run",
                            json={"code": "1", "timeout_s": 3600})  # fmt: skip
        assert r.status_code == 422 and r.json()["max_timeout_s"] == 600, r.text
        # No python3 where it runs: the context says why it did not start.
        r = await http.post(f"/v1/sandboxes/{box.id}/contexts", json={"env": {"PATH": "/nowhere"}})
        assert r.status_code == 422 and r.json()["code"] == "context_not_started", r.text
        assert "python3" in r.json()["detail"], r.text


# matplotlib and what it needs, pinned, as wheels for the default image's Python (3.11, x86-64
# glibc): downloaded once into the host's cache and uploaded, since sandboxes here reach no index.
CACHE = Path(os.environ.get("AIRLOCK_TEST_CACHE", "/var/tmp/airlock-test-cache")) / "wheels"
PLOTTING = (
    "matplotlib==3.9.2", "numpy==2.4.6", "pillow==13.0.0", "contourpy==1.3.3", "cycler==0.12.1",
    "fonttools==4.69.1", "kiwisolver==1.5.1", "packaging==26.4", "pyparsing==3.3.3",
    "python-dateutil==4.0.0", "tzdata==2026.6",
)  # fmt: skip


def plotting_wheels() -> list[Path]:
    target = CACHE / "plotting"
    if not (target / "done").exists():
        target.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary",
             ":all:", "--disable-pip-version-check", "-d", str(target), *PLOTTING],
            check=True, timeout=600,
        )  # fmt: skip
        (target / "done").touch()
    return sorted(target.glob("*.whl"))


async def test_a_matplotlib_figure_comes_back_as_png(airlock: Airlock, tenant: Tenant) -> None:
    box = await airlock.sandbox(tenant, size="medium")
    async with airlock.http(tenant.key) as http:
        for path in plotting_wheels():
            r = await http.put(
                f"/v1/sandboxes/{box.id}/files/work/wheels/{path.name}", content=path.read_bytes()
            )
            assert r.status_code == 201, r.text
        install = ["python3", "-m", "pip", "install", "--quiet", "--no-index", "--find-links",
                   "/work/wheels", "matplotlib==3.9.2"]  # fmt: skip
        r = await http.post(
            f"/v1/sandboxes/{box.id}/execs", json={"cmd": install, "timeout_s": 300}
        )
        assert r.status_code == 200 and r.json()["exit_code"] == 0, r.text

        ctx = (await new_context(http, box.id))["id"]
        code = (
            "import matplotlib.pyplot as plt\n"
            "plt.plot([1, 2, 3], [1, 4, 9])\n"
            "plt.title('squares')\n"
            "'drawn'"
        )
        drawn = await run(http, box.id, ctx, code)
        assert drawn["ok"], drawn
        value, figure = drawn["results"]
        assert value == {"data": {"text/plain": "'drawn'"}}, drawn
        png = base64.b64decode(figure["data"]["image/png"])
        assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 5000, len(png)
        assert figure["data"]["text/plain"].startswith("<Figure"), figure
        # Sent once: the figure was closed.
        assert (await run(http, box.id, ctx, "len(plt.get_fignums())"))["results"] == [
            {"data": {"text/plain": "0"}}
        ]
