"""A large review bundle against a real `airlock serve`: it is stored in the database piece by
piece as it arrives and read back piece by piece for the fetch, so the server's memory grows
by a small fraction of the bundle's size, and a review of it fetches the commits it holds."""

from __future__ import annotations

import asyncio
import os
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx

from tests.e2e.conftest import Airlock
from tests.e2e.test_request_bodies import PeakRss

MIB = 1 << 20
BLOB_MIB = 72  # random, so the bundle is at least this large
PIECE = 256 << 10  # what the client sends at a time


def git(repo: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@b", "GIT_COMMITTER_NAME": "a",
           "GIT_COMMITTER_EMAIL": "a@b", "PATH": "/usr/bin:/bin", "HOME": str(repo)}  # fmt: skip
    out = subprocess.run(["git", "-C", str(repo), *args], check=True, env=env, capture_output=True)
    return out.stdout.decode().strip()


def big_bundle(tmp: Path) -> tuple[Path, str, str]:
    """A bundle of `main` (a large random blob) and `feature` (one small test on top)."""
    repo = tmp / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    with (repo / "blob.bin").open("wb") as f:
        for _ in range(BLOB_MIB):
            f.write(os.urandom(MIB))
    git(repo, "add", "blob.bin")
    git(repo, "commit", "-q", "-m", "a large blob")
    git(repo, "checkout", "-q", "-b", "feature")
    (repo / "test_blob.py").write_text("def test_blob():\n    assert True\n")
    git(repo, "add", "test_blob.py")
    git(repo, "commit", "-q", "-m", "a test")
    bundle = tmp / "big.bundle"
    git(repo, "bundle", "create", "-q", str(bundle), "main", "feature")
    return bundle, git(repo, "rev-parse", "main"), git(repo, "rev-parse", "feature")


async def pieces(path: Path) -> AsyncIterator[bytes]:
    with path.open("rb") as f:
        while piece := await asyncio.to_thread(f.read, PIECE):
            yield piece


async def wait_for(http: httpx.AsyncClient, review_id: str, bound_s: float) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + bound_s
    while True:
        got = (await http.get(f"/v1/reviews/{review_id}")).json()
        if got["state"] in ("finished", "failed"):
            return dict(got)
        assert loop.time() < deadline, got  # the bound only keeps a broken run finite
        await asyncio.sleep(0.5)


async def test_a_large_bundle_is_streamed_into_the_database_and_out_to_the_fetch(
    airlock: Airlock, tmp_path: Path
) -> None:
    tenant = await airlock.tenant(max_upload_mib=BLOB_MIB + 32)
    bundle, base_commit, head_commit = await asyncio.to_thread(big_bundle, tmp_path)
    size = bundle.stat().st_size
    server = airlock.server
    assert server.proc is not None
    async with airlock.http(tenant.key) as http:
        with PeakRss(server.proc.pid) as upload:
            r = await http.post(
                "/v1/reviews/bundles",
                content=pieces(bundle),  # chunked: the server sees it arrive in pieces
                headers={"Content-Type": "application/octet-stream"},
            )
        assert r.status_code == 201, r.text
        stored = r.json()
        with PeakRss(server.proc.pid) as fetch:
            r = await http.post(
                "/v1/reviews",
                json={
                    "repo": stored["id"],
                    "base": "main",
                    "head": "feature",
                    "test": ["python3", "-m", "pytest", "-q"],
                },
            )
            assert r.status_code == 202, r.text
            report = await wait_for(http, r.json()["id"], 600)
    print(
        f"\nbundle of {size / MIB:.1f} MiB: server peak RSS growth {upload.growth / MIB:.1f} MiB "
        f"during the upload, {fetch.growth / MIB:.1f} MiB during the review"
    )
    assert stored["size"] == size
    assert upload.growth < size / 4, (upload.growth, size)
    assert fetch.growth < size / 4, (fetch.growth, size)
    # The review fetched the commits the bundle holds.
    fetched = next(s for s in report["stages"] if s["name"] == "fetch")
    assert fetched["outcome"] == "ok", report
    assert (report["base_commit"], report["head_commit"]) == (base_commit, head_commit), report
    # Stored as ordered pieces of at most 1 MiB, adding up to the bundle.
    pieces_stored = await airlock.db.fetch(
        "SELECT seq, octet_length(data) AS n FROM review_bundle_chunks WHERE bundle_id = $1 "
        "ORDER BY seq",
        stored["id"],
    )
    assert [p["seq"] for p in pieces_stored] == list(range(len(pieces_stored)))
    assert sum(p["n"] for p in pieces_stored) == size
    assert max(p["n"] for p in pieces_stored) <= MIB
