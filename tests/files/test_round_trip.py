"""Single files in and out: bytes survive, the listing shows them, the audit records them."""

from __future__ import annotations

from tests.conftest import Api
from tests.files.conftest import Box, random_bytes, sha256


async def test_five_mib_file_round_trips_byte_for_byte(box: Box) -> None:
    data = random_bytes(5 << 20)
    r = await box.put("/work/data/blob.bin", data)
    assert r.status_code == 201, r.text
    assert r.json() == {"path": "/work/data/blob.bin", "size": len(data)}

    r = await box.get("/work/data/blob.bin")
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("application/octet-stream")
    assert 'filename="blob.bin"' in r.headers["content-disposition"]
    assert sha256(r.content) == sha256(data)

    listing = await box.listing("/work/data")
    assert listing["blob.bin"]["kind"] == "file"
    assert listing["blob.bin"]["size"] == len(data)
    assert listing["blob.bin"]["mode"] == "0644"
    assert not [n for n in listing if n.startswith(".airlock-")]


async def test_mode_empty_file_and_replacement(box: Box) -> None:
    r = await box.put("/work/run.sh", b"#!/bin/sh\necho hi\n", params={"mode": "0755"})
    assert r.status_code == 201, r.text
    ran = await box.sh("/work/run.sh")
    assert ran["stdout"] == "hi\n"
    assert (await box.listing())["run.sh"]["mode"] == "0755"

    assert (await box.put("/work/empty", b"")).json()["size"] == 0
    r = await box.get("/work/empty")
    assert r.status_code == 200 and r.content == b""

    await box.put("/work/run.sh", b"second")
    assert (await box.get("/work/run.sh")).content == b"second"

    r = await box.put("/work/x", b"x", params={"mode": "rwx"})
    assert r.status_code == 422 and r.json()["code"] == "validation_failed"


async def test_a_directory_is_neither_replaced_nor_downloaded(box: Box) -> None:
    await box.sh("mkdir -p /work/dir && echo keep > /work/dir/inside")
    r = await box.put("/work/dir", b"not a dir")
    assert r.status_code == 409 and r.json()["code"] == "path_not_allowed", r.text
    assert (await box.get("/work/dir/inside")).content == b"keep\n"
    r = await box.get("/work/dir")
    assert r.status_code == 409 and r.json()["code"] == "path_not_allowed"
    assert set(await box.listing("/work/dir")) == {"inside"}


async def test_uploads_and_downloads_are_audited(files_api: Api, box: Box) -> None:
    await box.put("/work/audited.txt", b"12345")
    await box.get("/work/audited.txt")
    r = await files_api.client.get(
        "/v1/audit", params={"target": box.id}, headers=box.tenant.headers
    )
    assert r.status_code == 200, r.text
    events = {e["action"]: e for e in r.json()["items"]}
    assert events["file.write"]["details"] == {
        "path": "/work/audited.txt",
        "bytes": 5,
        "mode": "0644",
    }
    assert events["file.write"]["outcome"] == "ok"
    assert events["file.read"]["details"] == {"path": "/work/audited.txt"}


async def test_listing_describes_each_entry(box: Box) -> None:
    ran = await box.sh(
        "mkdir /work/d && printf abc > /work/f && ln -s /work/f /work/l"
        " && chmod 0640 /work/f && touch -d @1700000000 /work/f"
    )
    assert ran["exit_code"] == 0, ran
    listing = await box.listing()
    assert listing["d"]["kind"] == "dir"
    assert listing["l"]["kind"] == "symlink"
    assert listing["f"] == {
        "name": "f",
        "kind": "file",
        "size": 3,
        "mode": "0640",
        "mtime": "2023-11-14T22:13:20Z",
    }
