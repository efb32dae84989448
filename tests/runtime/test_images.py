"""Images: cached default build, listing, importing a layout, unpacking layers."""

from __future__ import annotations

import gzip
import io
import json
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from service.runtime import ImageNotFound, InvalidImage, apt, images, oci


def test_default_build_is_cached(state_dir: Path) -> None:
    before = images.get_image(state_dir, images.DEFAULT_IMAGE)
    lines: list[str] = []
    again = images.build_default_image(state_dir, progress=lines.append)
    assert again.digest == before.digest
    assert again.build_key == images.build_key()
    assert any("up to date" in line for line in lines)


def test_default_image_layout(state_dir: Path) -> None:
    info = images.get_image(state_dir, images.DEFAULT_IMAGE)
    layout = oci.read_layout(Path(info.path), verify=True)
    assert len(layout.layers) == 1
    assert layout.layers[0]["mediaType"] == oci.MEDIA_LAYER_GZIP
    assert layout.config["config"]["User"] == "1000:1000"
    rootfs = images.rootfs_dir(state_dir, info.digest)
    assert (rootfs / "sbin/airlock-init").is_file()
    assert (rootfs / "opt/venv/bin/pytest").exists()
    assert (rootfs / "etc/resolv.conf").read_text() == ""
    assert not (rootfs / "etc/apt/sources.list").exists()
    assert list((rootfs / "etc/apt/sources.list.d").iterdir()) == []
    assert (rootfs / "work").stat().st_uid == 1000
    # The statx shim is linked into the programs that need it, not preloaded into all.
    assert not (rootfs / "etc/ld.so.preload").exists()
    for program in ("ls", "stat"):
        dynamic = subprocess.run(
            ["readelf", "--dynamic", "--wide", str(rootfs / "usr/bin" / program)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        needed = [line for line in dynamic.splitlines() if "(NEEDED)" in line]
        assert images.SHIM_PATH in needed[0], needed
    assert info.name in {i.name for i in images.list_images(state_dir)}


def test_import_layout(state_dir: Path, tmp_path: Path) -> None:
    source = images.get_image(state_dir, images.DEFAULT_IMAGE)
    copy = tmp_path / "exported"
    shutil.copytree(source.path, copy)
    try:
        imported = images.import_image(state_dir, copy, name="imported-copy")
        assert imported.digest == source.digest
        assert "imported-copy" in {i.name for i in images.list_images(state_dir)}
    finally:
        images.remove_image(state_dir, "imported-copy")
    with pytest.raises(ImageNotFound):
        images.get_image(state_dir, "imported-copy")


def _layer(files: dict[str, bytes | None]) -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            if data is None:
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return gzip.compress(raw.getvalue())


def _two_layer_layout(path: Path) -> None:
    blobs = path / "blobs" / "sha256"
    blobs.mkdir(parents=True)

    def put(data: bytes) -> dict[str, object]:
        import hashlib

        digest = hashlib.sha256(data).hexdigest()
        (blobs / digest).write_bytes(data)
        return {"digest": f"sha256:{digest}", "size": len(data)}

    base = _layer({"etc": None, "etc/keep": b"k", "etc/gone": b"g", "opq": None, "opq/a": b"a"})
    top = _layer({"etc/.wh.gone": b"", "opq/.wh..wh..opq": b"", "opq/b": b"b"})
    layers = [{"mediaType": oci.MEDIA_LAYER_GZIP, **put(base)}, {**put(top)}]
    config = put(json.dumps({"architecture": "amd64", "os": "linux", "config": {}}).encode())
    manifest = {
        "schemaVersion": 2,
        "mediaType": oci.MEDIA_MANIFEST,
        "config": {"mediaType": oci.MEDIA_CONFIG, **config},
        "layers": layers,
    }
    entry = {"mediaType": oci.MEDIA_MANIFEST, **put(json.dumps(manifest).encode())}
    (path / "index.json").write_text(json.dumps({"schemaVersion": 2, "manifests": [entry]}))
    (path / "oci-layout").write_text('{"imageLayoutVersion": "1.0.0"}')


def test_unpack_applies_whiteouts(tmp_path: Path) -> None:
    _two_layer_layout(tmp_path / "layout")
    dest = tmp_path / "rootfs"
    dest.mkdir()
    oci.unpack_layers(oci.read_layout(tmp_path / "layout", verify=True), dest)
    assert (dest / "etc/keep").read_bytes() == b"k"
    assert not (dest / "etc/gone").exists()
    assert sorted(p.name for p in (dest / "opq").iterdir()) == ["b"]


def test_corrupt_layout_is_rejected(tmp_path: Path, state_dir: Path) -> None:
    _two_layer_layout(tmp_path / "layout")
    blob = next((tmp_path / "layout" / "blobs" / "sha256").iterdir())
    blob.write_bytes(blob.read_bytes() + b"tampered")
    with pytest.raises(InvalidImage):
        images.import_image(state_dir, tmp_path / "layout", name="corrupt")
    with pytest.raises(InvalidImage):
        images.import_image(state_dir, tmp_path / "missing", name="missing")


def test_host_mirror_from_sources(tmp_path: Path) -> None:
    (tmp_path / "sources.list.d").mkdir()
    (tmp_path / "sources.list").write_text("# nothing\n")
    (tmp_path / "sources.list.d" / "debian.sources").write_text(
        "Types: deb\nURIs: http://mirror.example/debian\nSuites: bookworm bookworm-updates\n"
        "Components: main\n\nTypes: deb\nURIs: http://mirror.example/debian-security\n"
        "Suites: bookworm-security\nComponents: main\n"
    )
    assert apt.host_mirror("bookworm", tmp_path) == "http://mirror.example/debian"
    (tmp_path / "sources.list.d" / "debian.sources").unlink()
    (tmp_path / "sources.list").write_text(
        "deb [arch=amd64] http://other.example/d bookworm main\n"
    )
    assert apt.host_mirror("bookworm", tmp_path) == "http://other.example/d"


def _single_layer_layout(path: Path, members: list[tuple[tarfile.TarInfo, bytes]]) -> None:
    import hashlib

    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if data else None)
    blobs = path / "blobs" / "sha256"
    blobs.mkdir(parents=True)

    def put(data: bytes) -> dict[str, object]:
        digest = hashlib.sha256(data).hexdigest()
        (blobs / digest).write_bytes(data)
        return {"digest": f"sha256:{digest}", "size": len(data)}

    layer = {"mediaType": oci.MEDIA_LAYER_TAR, **put(raw.getvalue())}
    config = put(json.dumps({"architecture": "amd64", "os": "linux"}).encode())
    manifest = {
        "schemaVersion": 2,
        "config": {"mediaType": oci.MEDIA_CONFIG, **config},
        "layers": [layer],
    }
    entry = {"mediaType": oci.MEDIA_MANIFEST, **put(json.dumps(manifest).encode())}
    (path / "index.json").write_text(json.dumps({"schemaVersion": 2, "manifests": [entry]}))
    (path / "oci-layout").write_text('{"imageLayoutVersion": "1.0.0"}')


def _member(
    name: str, kind: bytes = tarfile.REGTYPE, mode: int = 0o644, link: str = "", data: bytes = b""
) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.linkname, info.size = kind, mode, link, len(data)
    return info, data


def test_unpack_keeps_modes(tmp_path: Path) -> None:
    _single_layer_layout(
        tmp_path / "layout",
        [
            _member("tmp", tarfile.DIRTYPE, 0o1777),
            _member("bin/su", mode=0o4755, data=b"#!"),
        ],
    )
    dest = tmp_path / "rootfs"
    dest.mkdir()
    oci.unpack_layers(oci.read_layout(tmp_path / "layout"), dest)
    assert (dest / "tmp").stat().st_mode & 0o7777 == 0o1777
    assert (dest / "bin/su").stat().st_mode & 0o7777 == 0o4755


@pytest.mark.parametrize(
    "members",
    [
        [_member("../escaped", data=b"x")],
        [_member("link", tarfile.SYMTYPE, link="/tmp"), _member("link/escaped", data=b"x")],
    ],
)
def test_unpack_refuses_to_write_outside(tmp_path: Path, members: list) -> None:
    _single_layer_layout(tmp_path / "layout", members)
    dest = tmp_path / "rootfs"
    dest.mkdir()
    with pytest.raises(InvalidImage):
        oci.unpack_layers(oci.read_layout(tmp_path / "layout"), dest)
    assert not (tmp_path / "escaped").exists()
    assert not Path("/tmp/escaped").exists()


@pytest.mark.parametrize(
    "members",
    [
        [("../victim/.wh.other", tarfile.REGTYPE, "")],
        [("link", tarfile.SYMTYPE, "VICTIM"), ("link/.wh.other", tarfile.REGTYPE, "")],
        [("link", tarfile.SYMTYPE, "VICTIM"), ("link/important", tarfile.REGTYPE, "")],
        [("link", tarfile.SYMTYPE, "VICTIM"), ("link/.wh..wh..opq", tarfile.REGTYPE, "")],
    ],
    ids=[
        "whiteout above the root",
        "whiteout through a symlink",
        "file through a symlink",
        "opaque dir through a symlink",
    ],
)
def test_hostile_layers_touch_nothing_outside(
    tmp_path: Path, members: list[tuple[str, bytes, str]]
) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    for name in ("important", "other"):
        (victim / name).write_text("keep me")
    _single_layer_layout(
        tmp_path / "layout",
        [
            _member(name, kind, link=link.replace("VICTIM", str(victim)), data=b"x" * 0)
            for name, kind, link in members
        ],
    )
    dest = tmp_path / "rootfs"
    dest.mkdir()
    with pytest.raises(InvalidImage):
        oci.unpack_layers(oci.read_layout(tmp_path / "layout"), dest)
    assert sorted(p.name for p in victim.iterdir()) == ["important", "other"]
    assert (victim / "important").read_text() == "keep me"
