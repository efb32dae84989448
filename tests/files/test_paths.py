"""Paths name things inside the sandbox only: bad ones are 422, missing ones 404, and no
symlink planted in the sandbox can make a download read a file of the host."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.files.conftest import Box


@pytest.mark.parametrize(
    "url_path",
    [
        "/work/%2E%2E/etc/passwd",
        "/work/a/%2E%2E/%2E%2E/etc/shadow",
        "/work/%2E/a",
        "/work/a%00b",
    ],
)
async def test_bad_paths_are_422_with_a_clear_reason(box: Box, url_path: str) -> None:
    for r in (await box.get(url_path), await box.put(url_path, b"x")):
        assert r.status_code == 422, r.text
        body = r.json()
        assert body["code"] == "invalid_path"
        assert body["detail"].startswith("invalid path")


@pytest.mark.parametrize("directory", ["work", "work/sub", "../etc", "/work/../etc"])
async def test_relative_or_dotted_directories_are_422(box: Box, directory: str) -> None:
    for url in (f"{box.url}/files", f"{box.url}/archive"):
        r = await box.client.get(url, params={"dir": directory}, headers=box.tenant.headers)
        # The document states the form of `dir` (an absolute path without `.` or `..`).
        assert r.status_code == 422, r.text
        problem = r.json()
        assert problem["code"] == "validation_failed"
        assert [e.get("key") for e in problem["errors"]] == ["directory"], problem


async def test_missing_file_or_directory_is_404(box: Box) -> None:
    r = await box.get("/work/nope.txt")
    assert r.status_code == 404, r.text
    assert r.json()["code"] == "path_not_found"
    assert r.json()["path"] == "/work/nope.txt"
    r = await box.client.get(
        f"{box.url}/files", params={"dir": "/work/nope"}, headers=box.tenant.headers
    )
    assert r.status_code == 404 and r.json()["code"] == "path_not_found"
    r = await box.client.get(
        f"{box.url}/archive", params={"dir": "/work/nope"}, headers=box.tenant.headers
    )
    assert r.status_code == 404 and r.json()["code"] == "path_not_found"


async def test_symlinks_resolve_inside_the_sandbox_never_on_the_host(
    box: Box, tmp_path: Path
) -> None:
    marker = tmp_path / "host-secret.txt"
    marker.write_text("HOST-ONLY-MARKER")
    ran = await box.sh(
        f"ln -s {marker} /work/to-host && ln -s {tmp_path} /work/to-host-dir"
        " && ln -s /etc/shadow /work/to-shadow && ln -s /etc/hostname /work/to-hostname"
    )
    assert ran["exit_code"] == 0, ran

    for path in ("/work/to-host", "/work/to-host-dir/host-secret.txt"):
        r = await box.get(path)
        assert r.status_code == 404, r.text  # the host's file does not exist in the sandbox
        assert b"HOST-ONLY-MARKER" not in r.content
    r = await box.get("/work/to-shadow")
    assert r.status_code == 409, r.text  # the sandbox's own shadow, unreadable to its user
    assert r.json()["code"] == "path_not_allowed"
    r = await box.get("/work/to-hostname")
    assert r.status_code == 200  # a link within the sandbox is followed there

    # Writing through a link replaces the link; it never writes where it points.
    assert (await box.put("/work/to-host", b"overwritten")).status_code == 201
    assert marker.read_text() == "HOST-ONLY-MARKER"
    assert (await box.listing())["to-host"]["kind"] == "file"

    r = await box.client.get(
        f"{box.url}/files", params={"dir": str(tmp_path)}, headers=box.tenant.headers
    )
    assert r.status_code == 404, r.text
