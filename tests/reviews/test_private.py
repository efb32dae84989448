"""A review of a private repository, end to end on the real runtime: the tenant's secret
fetches it from an HTTPS git host behind Basic auth; a wrong or deleted secret fails the fetch
with a clear reason; and the value is nowhere it must not be: not in the sandbox (a test in
the repository scans its files and every process's environment and command line), not in the
database, not in the service's log, not in the report."""

from __future__ import annotations

import logging
import re
import secrets
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from service.audit.recorder import AuditContext
from service.auth.principal import SCOPES, Principal, PrincipalKind
from service.db.base import Base
from service.db.session import make_engine, make_sessionmaker
from service.reviews import service as reviews
from service.reviews.fetch import HttpAuth
from service.reviews.schemas import ReviewCreate, ReviewCredentials
from service.secrets.repository import SecretRepository
from tests.conftest import Api, Tenant
from tests.reviews.conftest import (
    BILLING,
    PRIVATE_PASSWORD,
    TESTS,
    assert_sandbox_gone,
    make_repo,
    review,
    stages,
    wait_for,
)
from tests.reviews.git_https import GitHost

# Runs inside the sandbox. It knows the secret's prefix only as two parts, so neither the
# repository nor its compiled files hold it; a planted copy in a file and in a process's
# environment shows the scan would find one.
SCAN_TEST = """
import base64, os, subprocess, sys

PARTS = ("airlock-private", "-repo-token-")
SKIP = ("/proc", "/sys", "/dev")


def needles():
    mark = "".join(PARTS)
    basic = ("x-access-token:" + mark).encode()
    return [mark.encode(), base64.b64encode(basic[: len(basic) // 3 * 3])]


def scan_files(needles, root="/"):
    hits, count = [], 0
    for top, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if os.path.join(top, d) not in SKIP]
        for name in files:
            path = os.path.join(top, name)
            if os.path.islink(path) or not os.path.isfile(path):
                continue
            try:
                with open(path, "rb") as handle:
                    data = handle.read()
            except OSError:
                continue
            count += 1
            if any(n in data for n in needles):
                hits.append(path)
    return hits, count


def scan_processes(needles):
    hits, count = [], 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        for part in ("environ", "cmdline"):
            try:
                with open(f"/proc/{pid}/{part}", "rb") as handle:
                    data = handle.read()
            except OSError:
                continue
            count += 1
            if any(n in data for n in needles):
                hits.append(f"{pid}/{part}")
    return hits, count


def test_nothing_of_the_secret_is_inside(tmp_path):
    found = needles()
    file_hits, files = scan_files(found)
    process_hits, processes = scan_processes(found)
    planted = tmp_path / "planted"
    planted.write_bytes(b"<" + found[0] + b">")
    child = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)"], env={"PLANTED": found[0].decode()}
    )
    try:
        control_file = str(planted) in scan_files(found, str(tmp_path))[0]
        control_env = f"{child.pid}/environ" in scan_processes(found)[0]
    finally:
        child.kill()
        child.wait()
        planted.unlink()
    print(
        f"SCAN files={files} processes={processes} file_hits={file_hits} "
        f"process_hits={process_hits} control_file={control_file} control_env={control_env}"
    )
    assert control_file and control_env
    assert not file_hits and not process_hits
"""
TEST_COMMAND = ["python", "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider"]


class Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record) + repr(record.args))


@pytest.fixture
def service_log() -> Iterator[Collect]:
    """Every log record of the service (and of anything else in this process) while it runs."""
    collect, root = Collect(), logging.getLogger()
    level = root.level
    root.addHandler(collect)
    root.setLevel(logging.DEBUG)
    yield collect
    root.removeHandler(collect)
    root.setLevel(level)


@pytest.fixture
async def review_engine(rapi: Api) -> AsyncIterator[AsyncEngine]:
    engine = make_engine(rapi.settings.effective_database_url)
    yield engine
    await engine.dispose()


async def put_secret(api: Api, tenant: Tenant, name: str, value: str) -> None:
    body = {"value": value, "allowed_hosts": ["127.0.0.1"]}  # the git host's
    r = await api.client.put(f"/v1/secrets/{name}", json=body, headers=tenant.headers)
    assert r.status_code == 201, r.text


def private_repo(git_host: GitHost, tmp_path: Path) -> str:
    name = f"private-{secrets.token_hex(4)}"
    repo = make_repo(
        tmp_path,
        {"billing.py": BILLING, "test_billing.py": TESTS},
        {"test_scan.py": SCAN_TEST},
    )
    git_host.add(name, repo)
    return git_host.url(name)


async def database_dump(engine: AsyncEngine) -> bytes:
    """Every row of every table, as bytes to search."""
    out = bytearray()
    async with engine.connect() as conn:
        for table in Base.metadata.sorted_tables:
            for row in (await conn.execute(select(table))).all():
                for value in row:
                    out += (
                        bytes(value)
                        if isinstance(value, bytes | memoryview)
                        else str(value).encode()
                    )
                    out += b"\x00"
    return bytes(out)


async def test_a_private_repository_is_reviewed_and_its_secret_stays_on_the_host(
    rapi: Api,
    rtenant: Tenant,
    git_host: GitHost,
    tmp_path: Path,
    service_log: Collect,
    review_engine: AsyncEngine,
    capfd: pytest.CaptureFixture[str],
) -> None:
    await put_secret(rapi, rtenant, "git-host", PRIVATE_PASSWORD)
    url = private_repo(git_host, tmp_path)
    report = await review(
        rapi, rtenant, repo=url, head="pr-42", test=TEST_COMMAND, credentials={"secret": "git-host"}
    )
    assert report["state"] == "finished", report
    assert stages(report)["fetch"]["outcome"] == "ok"
    assert git_host.authorizations[-1] == git_host.expected()
    assert report["test_exit_code"] == 0, report["test_output"]
    assert report["verdict"] == "APPROVE"
    assert report["credentials"] == {"secret": "git-host", "username": "x-access-token"}

    # Inside: the scan walked the filesystem and the processes, its planted copies were found,
    # and nothing of the secret was.
    scan = re.search(
        r"SCAN files=(\d+) processes=(\d+) file_hits=(.*) process_hits=(.*) "
        r"control_file=(\w+) control_env=(\w+)",
        report["test_output"],
    )
    assert scan is not None, report["test_output"]
    files, processes, file_hits, process_hits, control_file, control_env = scan.groups()
    assert int(files) > 1000 and int(processes) >= 2, scan.group(0)
    assert (file_hits, process_hits) == ("[]", "[]")
    assert (control_file, control_env) == ("True", "True")

    # On the host: not in the report, any table, the service's log or its output.
    needles = [PRIVATE_PASSWORD, HttpAuth("x-access-token", PRIVATE_PASSWORD).token]
    dump = await database_dump(review_engine)
    out, err = capfd.readouterr()
    # The capture ran from before the secret was stored to the end.
    assert any("PUT http://testserver.local/v1/secrets/git-host" in x for x in service_log.lines)
    for needle in needles:
        assert needle not in str(report)
        assert needle.encode() not in dump
        assert all(needle not in line for line in service_log.lines)
        assert needle not in out and needle not in err
    await assert_sandbox_gone(rapi, rtenant, report)


async def test_a_wrong_secret_fails_the_fetch(
    rapi: Api, rtenant: Tenant, git_host: GitHost, tmp_path: Path
) -> None:
    wrong = "ghp-wrong-" + secrets.token_urlsafe(16)
    await put_secret(rapi, rtenant, "stale", wrong)
    url = private_repo(git_host, tmp_path)
    report = await review(rapi, rtenant, repo=url, head="pr-42", credentials={"secret": "stale"})
    assert report["state"] == "failed", report
    fetch = stages(report)["fetch"]
    assert fetch["outcome"] == "failed"
    assert "with the credentials of user 'x-access-token' failed" in fetch["detail"]
    assert "could not read Username" in report["error"]
    assert wrong not in str(report)
    # Nothing was started for it.
    assert report["sandbox_id"] is None and "sandbox" not in stages(report)


async def test_a_secret_deleted_before_the_fetch_fails_it(
    rapi: Api, rtenant: Tenant, git_host: GitHost, tmp_path: Path, review_engine: AsyncEngine
) -> None:
    await put_secret(rapi, rtenant, "short-lived", PRIVATE_PASSWORD)
    url = private_repo(git_host, tmp_path)
    principal = Principal(
        kind=PrincipalKind.API_KEY, actor="key_test", tenant_id=rtenant.id, scopes=frozenset(SCOPES)
    )
    ctx = AuditContext(actor="key_test", request_id=None, client=None)
    data = ReviewCreate(repo=url, head="pr-42", credentials=ReviewCredentials(secret="short-lived"))
    # Accepted while the secret exists, and the secret deleted in the same transaction: the
    # runner can only see the review once the secret is gone.
    async with make_sessionmaker(review_engine)() as session, session.begin():
        accepted = await reviews.create_review(session, rapi.settings, principal, ctx, data)
        assert await SecretRepository(session, rtenant.id).delete("short-lived")
    report = await wait_for(rapi, rtenant, accepted.id)
    assert report["state"] == "failed", report
    assert stages(report)["fetch"]["outcome"] == "failed"
    assert "the secret 'short-lived' does not exist" in report["error"]
    assert report["sandbox_id"] is None
