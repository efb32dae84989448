"""A directory as a tar in both directions, unpacked and packed inside the sandbox: members
land only under the target directory, whatever names the archive uses."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

from tests.conftest import Api
from tests.files.conftest import Box, make_tar, random_bytes, sha256

TAR = "application/x-tar"


async def put_archive(box: Box, directory: str, archive: bytes) -> object:
    return await box.client.put(
        f"{box.url}/archive",
        params={"dir": directory},
        content=archive,
        headers={**box.tenant.headers, "Content-Type": TAR},
    )


async def get_archive(box: Box, directory: str) -> object:
    return await box.client.get(
        f"{box.url}/archive", params={"dir": directory}, headers=box.tenant.headers
    )


async def test_directory_tree_round_trips_through_tar(box: Box) -> None:
    files = {
        "src/main.py": b"print('hi')\n",
        "src/pkg/data.bin": random_bytes(300_000),
        "README": b"readme\n",
        "empty.txt": b"",
    }
    archive = make_tar({"src": None, "src/pkg": None, **files})
    r = await put_archive(box, "/work/project", archive)
    assert r.status_code == 201, r.text
    assert r.json() == {"dir": "/work/project", "size": len(archive)}

    listing = await box.listing("/work/project/src/pkg")
    assert listing["data.bin"]["size"] == 300_000
    r = await box.get("/work/project/src/pkg/data.bin")
    assert sha256(r.content) == sha256(files["src/pkg/data.bin"])
    ran = await box.sh("cd /work/project && python3 src/main.py 2>/dev/null || cat src/main.py")
    assert "hi" in ran["stdout"]
    assert not [n for n in await box.listing() if n.startswith(".airlock-")]

    r = await get_archive(box, "/work/project")
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith(TAR)
    assert 'filename="project.tar"' in r.headers["content-disposition"]
    assert int(r.headers["content-length"]) == len(r.content)
    with tarfile.open(fileobj=io.BytesIO(r.content)) as tar:
        members = {m.name.removeprefix("./"): m for m in tar.getmembers()}
        assert {n for n, m in members.items() if m.isfile()} == set(files)
        for name, content in files.items():
            extracted = tar.extractfile(members[name])
            assert extracted is not None and extracted.read() == content
    assert not [n for n in await box.listing() if n.startswith(".airlock-")]


async def test_archive_of_work_itself_excludes_its_temporary_file(box: Box) -> None:
    await box.put("/work/only.txt", b"one")
    r = await get_archive(box, "/work")
    assert r.status_code == 200, r.text
    with tarfile.open(fileobj=io.BytesIO(r.content)) as tar:
        names = {m.name for m in tar.getmembers()}
    assert names == {".", "./only.txt"}, names
    assert set(await box.listing()) == {"only.txt"}


async def test_escaping_members_stay_inside_the_target(box: Box) -> None:
    archive = make_tar(
        {
            "../evil-parent": b"evil",
            "ok/../../evil-dotdot": b"evil",
            "/work/evil-absolute": b"evil",
            "/tmp/evil-tmp": b"evil",
            "fine.txt": b"fine",
        },
    )
    r = await put_archive(box, "/work/target", archive)
    assert r.status_code == 422, r.text  # tar refuses `..` members and says so
    assert "Member name contains '..'" in r.json()["stderr"]
    ran = await box.sh(
        "for p in /work/evil-parent /work/evil-dotdot /work/evil-absolute /tmp/evil-tmp "
        "/evil-dotdot /evil-parent; do test -e $p && echo LEAK $p; done; "
        "find /work /tmp -name 'evil-*' | sort"
    )
    assert "LEAK" not in ran["stdout"], ran["stdout"]
    found = ran["stdout"].split()
    assert found == ["/work/target/tmp/evil-tmp", "/work/target/work/evil-absolute"], found


async def test_a_symlink_in_the_archive_cannot_carry_its_own_members_out(
    box: Box, tmp_path: Path
) -> None:
    host_dir = tmp_path / "host"
    host_dir.mkdir()
    archive = make_tar(
        {"out/planted": b"x", "host/planted": b"x"},
        symlinks={"out": "/tmp", "host": str(host_dir)},
        links_first=True,
    )
    r = await put_archive(box, "/work/t", archive)
    assert r.status_code == 422, r.text  # tar defers the links, then cannot write through them
    assert r.json()["code"] == "archive_rejected"
    ran = await box.sh("test -e /tmp/planted && echo LEAK; find /tmp -name planted")
    assert ran["stdout"] == "", ran
    assert list(host_dir.iterdir()) == []


async def test_a_broken_archive_is_422_with_tars_message(box: Box) -> None:
    r = await put_archive(box, "/work/bad", b"this is not a tar archive" * 100)
    assert r.status_code == 422, r.text
    body = r.json()
    assert body["code"] == "archive_rejected"
    assert "tar" in body["stderr"]
    assert not [n for n in await box.listing() if n.startswith(".airlock-")]


async def test_archive_paths_and_targets(box: Box) -> None:
    await box.put("/work/file.txt", b"x")
    r = await get_archive(box, "/work/file.txt")
    assert r.status_code == 409 and r.json()["code"] == "path_not_allowed", r.text
    r = await put_archive(box, "/etc/airlock-test", make_tar({"a": b"a"}))
    assert r.status_code == 409 and r.json()["code"] == "path_not_allowed", r.text


async def test_archives_are_audited(files_api: Api, box: Box) -> None:
    archive = make_tar({"a.txt": b"a"})
    await put_archive(box, "/work/au", archive)
    await get_archive(box, "/work/au")
    r = await files_api.client.get(
        "/v1/audit", params={"target": box.id}, headers=box.tenant.headers
    )
    events = {e["action"]: e for e in r.json()["items"]}
    assert events["archive.write"]["details"] == {"dir": "/work/au", "bytes": len(archive)}
    assert events["archive.read"]["details"]["dir"] == "/work/au"
    assert events["archive.read"]["details"]["bytes"] > 0
