"""The review fetch's git is confined like any parser of untrusted input: an unprivileged uid
and rlimits (seen by the git host, which looks up the process at the other end of each
connection), no proxy from the service's environment (which would resolve the host again and
undo the address pinning), and a byte cap that stops an oversized repository with a clear
failure. Reviews through the API on the app with its runner on gVisor."""

from __future__ import annotations

import base64
import os
import secrets
import socket
import threading
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from litestar.testing import AsyncTestClient

from service.app import create_app
from service.reviews.confine import MAX_PROCESSES, MIB
from service.runtime.gvisor import destroy_left
from service.settings import Settings
from tests.conftest import OPERATOR_KEY, Api, Tenant
from tests.reviews import git_peer
from tests.reviews.conftest import (
    BILLING,
    PRIVATE_PASSWORD,
    TESTS,
    make_repo,
    migrated_database,
    own_state,
    review,
    stages,
)
from tests.reviews.git_https import GitHost
from tests.reviews.git_peer import WatchedHost

CAP_MIB = 1


@pytest.fixture(scope="module")
def watched_host(
    git_host: GitHost, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[WatchedHost]:
    root = tmp_path_factory.mktemp("watched-git-host") / "srv"
    host, httpd = git_peer.start(root, git_host, "x-access-token", PRIVATE_PASSWORD)
    yield host
    httpd.shutdown()


@dataclass
class Proxy:
    port: int
    # What each connection to it said first.
    seen: list[bytes] = field(default_factory=list)


@pytest.fixture
def proxy() -> Iterator[Proxy]:
    """A listener standing in for a forward proxy."""
    server = socket.create_server(("127.0.0.1", 0))
    state = Proxy(port=server.getsockname()[1])
    seen = state.seen

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(2)
                try:
                    seen.append(conn.recv(4096))
                except OSError:
                    seen.append(b"")

    threading.Thread(target=serve, daemon=True).start()
    yield state
    server.close()


async def with_repo(
    api: Api, tenant: Tenant, host: GitHost, tmp_path: Path, change: dict[str, str]
) -> str:
    r = await api.client.put(
        "/v1/secrets/watched",
        json={"value": PRIVATE_PASSWORD, "allowed_hosts": ["127.0.0.1"]},
        headers=tenant.headers,
    )
    assert r.status_code in (200, 201), r.text
    name = f"confined-{secrets.token_hex(4)}"
    host.add(name, make_repo(tmp_path, {"billing.py": BILLING, "test_billing.py": TESTS}, change))
    return host.url(name)


async def test_git_runs_as_an_unprivileged_uid_under_rlimits(
    rapi: Api, rtenant: Tenant, watched_host: WatchedHost, tmp_path: Path
) -> None:
    url = await with_repo(rapi, rtenant, watched_host, tmp_path, {"NOTES": "a note\n"})
    before = len(watched_host.peers)
    report = await review(rapi, rtenant, repo=url, head="pr-42", credentials={"secret": "watched"})
    assert stages(report)["fetch"]["outcome"] == "ok", report
    peers = watched_host.peers[before:]
    assert peers and all(p is not None for p in peers), peers
    settings = rapi.settings
    for peer in peers:
        assert peer is not None
        # Real, effective, saved and filesystem uid: all the fetch uid, none root.
        assert peer.uids == [settings.review_fetch_uid] * 4, peer
        assert peer.limits["Max address space"] == str(settings.review_fetch_memory_mib * MIB)
        assert peer.limits["Max file size"] == str(settings.review_fetch_max_mib * MIB)
        assert peer.limits["Max processes"] == str(MAX_PROCESSES)
        assert peer.limits["Max cpu time"] != "unlimited"
        assert peer.limits["Max core file size"] == "0"
    assert {Path(p.command).name for p in peers if p is not None} == {"git-remote-https"}


async def test_a_proxy_in_the_services_environment_is_not_used(
    rapi: Api,
    rtenant: Tenant,
    watched_host: WatchedHost,
    tmp_path: Path,
    proxy: Proxy,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Set as an operator whose host reaches the internet through a proxy would; the proxy
    # would resolve the repository's host name again, past the addresses the service checked.
    port = proxy.port
    monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("https_proxy", f"http://127.0.0.1:{port}")
    url = await with_repo(rapi, rtenant, watched_host, tmp_path, {"NOTES": "proxied?\n"})
    before = len(watched_host.log)
    report = await review(rapi, rtenant, repo=url, head="pr-42", credentials={"secret": "watched"})
    assert proxy.seen == []
    assert stages(report)["fetch"]["outcome"] == "ok", report
    # The git host itself was reached, at the pinned address.
    assert any("git-upload-pack" in line for line in watched_host.log[before:])


@pytest.fixture(scope="module")
async def capped(
    review_state: Path, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Api]:
    """The app with a fetch byte cap of CAP_MIB."""
    async with (
        migrated_database("airlock_review_capped") as url,
        own_state(review_state, tmp_path_factory, "review-capped-state") as state,
    ):
        settings = Settings.from_env(
            {},
            state_dir=state,
            database_url=url,
            operator_key=OPERATOR_KEY,
            runtime="gvisor",
            review_allow_local_repos=True,
            review_fetch_max_mib=CAP_MIB,
        )
        try:
            async with AsyncTestClient(app=create_app(settings), timeout=300) as client:
                yield Api(client=client, settings=settings)
        finally:
            await destroy_left(state, strict=True)


async def test_a_repository_over_the_byte_cap_is_stopped(
    capped: Api, watched_host: WatchedHost, tmp_path: Path
) -> None:
    tenant = await capped.tenant()
    # Three times the cap of data that does not compress, in the pull request's commit.
    big = {"blob.txt": base64.b64encode(os.urandom(3 * CAP_MIB * MIB)).decode()}
    url = await with_repo(capped, tenant, watched_host, tmp_path, big)
    report = await review(capped, tenant, repo=url, head="pr-42", credentials={"secret": "watched"})
    assert report["state"] == "failed", report
    assert stages(report)["fetch"]["outcome"] == "failed"
    assert f"larger than the fetch limit of {CAP_MIB} MiB" in report["error"], report["error"]
    assert "AIRLOCK_REVIEW_FETCH_MAX_MIB" in report["error"]
    assert report["sandbox_id"] is None
    # Under the cap, the same app fetches.
    url = await with_repo(capped, tenant, watched_host, tmp_path, {"NOTES": "small\n"})
    report = await review(capped, tenant, repo=url, head="pr-42", credentials={"secret": "watched"})
    assert stages(report)["fetch"]["outcome"] == "ok", report
