"""The `airlock` command as an operator runs it: a clean environment and a fresh state dir."""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from service.__main__ import main

AIRLOCK = Path(sys.executable).parent / "airlock"
# Generous: these bound a hang, they are not performance expectations.
COMMAND_TIMEOUT_S = 120


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "AIRLOCK_STATE_DIR": str(tmp_path / "state"),
        # The code of the checkout the tests run from, where PYTHONPATH points at one.
        **{k: v for k, v in os.environ.items() if k == "PYTHONPATH"},
    }


def airlock(
    env: dict[str, str], cwd: Path, *args: str, timeout: float = COMMAND_TIMEOUT_S
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(AIRLOCK), *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def ok(result: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert result.returncode == 0, f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    return result


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_migrate_is_idempotent_and_creates_the_embedded_database(
    env: dict[str, str], tmp_path: Path
) -> None:
    first = ok(airlock(env, tmp_path, "migrate"))
    assert "at head" in first.stderr
    assert (tmp_path / "state" / "airlock.db").is_file()
    ok(airlock(env, tmp_path, "migrate"))
    # Nothing lands in the working directory when a state dir is configured.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state"]


def test_keys_rotate_adds_a_signing_key(env: dict[str, str], tmp_path: Path) -> None:
    ok(airlock(env, tmp_path, "migrate"))
    first = ok(airlock(env, tmp_path, "keys", "rotate"))
    listed = ok(airlock(env, tmp_path, "keys", "list")).stdout.split("\n")
    rows = [line.split() for line in listed if line.strip()]
    assert len(rows) == 1 and rows[0][1] == "signing"
    first_kid = rows[0][0]
    assert first_kid in first.stdout

    second = ok(airlock(env, tmp_path, "keys", "rotate"))
    rows = [line.split() for line in ok(airlock(env, tmp_path, "keys", "list")).stdout.split("\n")]
    rows = [r for r in rows if r]
    assert len(rows) == 2
    markers = {kid: marker for kid, marker in rows}
    assert markers[first_kid] == "verify-only"
    (new_kid,) = [kid for kid, marker in markers.items() if marker == "signing"]
    assert new_kid != first_kid
    assert new_kid in second.stdout
    assert len(list((tmp_path / "state" / "keys").glob("*.pem"))) == 2


def test_serve_refuses_an_unmigrated_database(env: dict[str, str], tmp_path: Path) -> None:
    result = airlock(env, tmp_path, "serve", "--port", str(free_port()), timeout=60)
    assert result.returncode != 0, result.stderr
    assert "airlock migrate" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr, result.stderr


def test_serve_refuses_a_production_start_without_secrets(
    env: dict[str, str], tmp_path: Path
) -> None:
    ok(airlock(env, tmp_path, "migrate"))
    env = {**env, "AIRLOCK_ENV": "production"}
    result = airlock(env, tmp_path, "serve", "--port", str(free_port()), timeout=60)
    assert result.returncode != 0, result.stderr
    assert "AIRLOCK_OPERATOR_KEY" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr, result.stderr


@contextmanager
def serving(env: dict[str, str], tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """`airlock serve` on a free port until /readyz answers: its URL and its log; stopped on
    the way out (SIGTERM, a clean exit)."""
    port = free_port()
    log = tmp_path / "serve.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [str(AIRLOCK), "serve", "--port", str(port)],
            env=env,
            cwd=tmp_path,
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
        )
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        answered = False
        while time.monotonic() < deadline and proc.poll() is None and not answered:
            try:
                answered = httpx.get(f"{base}/readyz", timeout=2).is_success
            except httpx.TransportError:
                time.sleep(0.2)
        assert answered, f"serve never answered; exit {proc.poll()}:\n{log.read_text()}"
        yield base, log
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    assert proc.returncode in (0, -15), log.read_text()


def test_serve_answers_on_loopback(env: dict[str, str], tmp_path: Path) -> None:
    ok(airlock(env, tmp_path, "migrate"))
    with serving(env, tmp_path) as (base, log):
        health = httpx.get(f"{base}/healthz", timeout=2)
        assert health.status_code == 200
        assert health.json()["status"] == "ok"
        assert health.headers["x-request-id"]

        # The operator key generated on this first run is the credential that works.
        key = (tmp_path / "state" / "operator_key").read_text().strip()
        assert key in log.read_text()
        auth = {"Authorization": f"Bearer {key}"}
        r = httpx.post(f"{base}/v1/tenants", json={"name": "cli-tenant"}, headers=auth, timeout=10)
        assert r.status_code == 201, r.text


def test_the_log_level_quiets_the_services_own_lines(env: dict[str, str], tmp_path: Path) -> None:
    """AIRLOCK_LOG_LEVEL=WARNING leaves the service's own INFO lines out (which runtime was
    chosen, the node registered), not only uvicorn's."""
    env = {**env, "AIRLOCK_LOG_LEVEL": "WARNING"}
    migrated = ok(airlock(env, tmp_path, "migrate"))
    assert " INFO " not in migrated.stderr, migrated.stderr
    with serving(env, tmp_path) as (_, log):
        pass
    shown = log.read_text()
    assert "serving on" in shown  # the start line is the command's own, always shown
    assert not [line for line in shown.splitlines() if "INFO" in line], shown


def test_debug_turns_on_the_services_own_debug_lines(
    env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DEBUG is the service's (`airlock.*`, `service.*`) debug lines; the libraries it uses
    stay at INFO (a root logger at DEBUG would let them all speak)."""
    library = logging.getLogger("alembic.runtime.migration")
    loggers = [logging.getLogger(n) for n in ("", "airlock", "service")]
    saved = [(logger, logger.level, list(logger.handlers)) for logger in loggers]
    for name, value in {**env, "AIRLOCK_LOG_LEVEL": "DEBUG"}.items():
        monkeypatch.setenv(name, value)
    try:
        assert main(["keys", "rotate"]) == 0
        assert logging.getLogger("airlock.jobs.ttl").isEnabledFor(logging.DEBUG)
        assert logging.getLogger("service.sandboxes.usage").isEnabledFor(logging.DEBUG)
        assert library.isEnabledFor(logging.INFO) and not library.isEnabledFor(logging.DEBUG)
    finally:
        for logger, level, handlers in saved:
            logger.setLevel(level)
            logger.handlers[:] = handlers


@pytest.mark.parametrize(
    ("variable", "value", "shown"),
    [
        ("AIRLOCK_PORT", "80a", "airlock: AIRLOCK_PORT: '80a' is not a whole number"),
        (
            "AIRLOCK_ENV",
            "prod",
            "airlock: AIRLOCK_ENV: 'prod' is not one of development, production",
        ),
        ("AIRLOCK_EXACT_NPROC", "yes", "airlock: AIRLOCK_EXACT_NPROC: 'yes' is not true or false"),
        (
            "AIRLOCK_CPU_OVERCOMMIT",
            "lots",
            "airlock: AIRLOCK_CPU_OVERCOMMIT: 'lots' is not a number",
        ),
        ("AIRLOCK_PAUSE_COPIES", "9", "airlock: AIRLOCK_PAUSE_COPIES must be 0 to 5"),
        ("AIRLOCK_POOL_TARGETS", "python", "airlock: AIRLOCK_POOL_TARGETS: 'python' is not name"),
        ("AIRLOCK_STATE_DIR", "{tmp}/a-file/state", "airlock: AIRLOCK_STATE_DIR: cannot make"),
    ],
)
def test_a_bad_value_is_named_with_exit_status_2(
    env: dict[str, str], tmp_path: Path, variable: str, value: str, shown: str
) -> None:
    (tmp_path / "a-file").touch()
    result = airlock({**env, variable: value.format(tmp=tmp_path)}, tmp_path, "migrate")
    assert result.returncode == 2, result.stderr
    assert shown in result.stderr, result.stderr
    assert "Traceback" not in result.stderr, result.stderr


def test_a_misspelled_setting_is_named_with_the_one_meant(
    env: dict[str, str], tmp_path: Path
) -> None:
    """A warning, not a refusal: the same environment may hold variables of the project's other
    parts (`sbx`'s, the compose file's, the tests'), and another tool's may be unknown here."""
    env = {
        **env,
        "AIRLOCK_LOG_LEVL": "WARNING",
        "AIRLOCK_URL": "http://127.0.0.1:1",
        "AIRLOCK_API_KEY": "alk_x",
        "AIRLOCK_TEST_DATABASE": "sqlite",
    }
    result = ok(airlock(env, tmp_path, "migrate"))
    warnings = [line for line in result.stderr.splitlines() if "warning" in line]
    assert warnings == [
        "airlock: warning: AIRLOCK_LOG_LEVL is not a setting (did you mean AIRLOCK_LOG_LEVEL?); "
        "it is ignored"
    ], result.stderr
