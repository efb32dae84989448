"""OCI image layout: write one, read one, unpack its layers into a root filesystem.

Only the parts Airlock needs: one platform (linux/amd64), gzip or plain tar layers, whiteouts.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import shutil
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import InvalidImage

MEDIA_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
MEDIA_INDEX = "application/vnd.oci.image.index.v1+json"
MEDIA_CONFIG = "application/vnd.oci.image.config.v1+json"
MEDIA_LAYER_GZIP = "application/vnd.oci.image.layer.v1.tar+gzip"
MEDIA_LAYER_TAR = "application/vnd.oci.image.layer.v1.tar"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
ANNOTATION_REF = "org.opencontainers.image.ref.name"
ANNOTATION_BUILD_KEY = "dev.airlock.build-key"
_CHUNK = 1 << 20


@dataclass(frozen=True)
class Layout:
    """A parsed OCI layout: the one manifest Airlock will run and its config."""

    path: Path
    manifest_digest: str
    manifest: dict[str, Any]
    config: dict[str, Any]
    annotations: dict[str, str]

    @property
    def layers(self) -> list[dict[str, Any]]:
        return list(self.manifest.get("layers", []))

    @property
    def size_bytes(self) -> int:
        return sum(int(layer.get("size", 0)) for layer in self.layers)

    def blob(self, digest: str) -> Path:
        algo, _, hexpart = digest.partition(":")
        if algo != "sha256" or not re.fullmatch(r"[0-9a-f]{64}", hexpart):
            raise InvalidImage(f"unsupported digest {digest!r}")
        return self.path / "blobs" / "sha256" / hexpart


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return "sha256:" + digest.hexdigest()


def _write_blob(blobs: Path, data: bytes) -> tuple[str, int]:
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    (blobs / digest.split(":", 1)[1]).write_bytes(data)
    return digest, len(data)


def _canonical(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def write_layout(
    dest: Path,
    layer_gz: Path,
    diff_id: str,
    image_config: dict[str, Any],
    annotations: dict[str, str],
) -> str:
    """Write a single-layer layout at `dest` (moving `layer_gz` in); return the manifest digest."""
    blobs = dest / "blobs" / "sha256"
    blobs.mkdir(parents=True, exist_ok=True)
    layer_digest = sha256_file(layer_gz)
    layer_size = layer_gz.stat().st_size
    shutil.move(str(layer_gz), blobs / layer_digest.split(":", 1)[1])
    config = {
        "architecture": "amd64",
        "os": "linux",
        "config": image_config,
        "rootfs": {"type": "layers", "diff_ids": [diff_id]},
    }
    config_digest, config_size = _write_blob(blobs, _canonical(config))
    manifest = {
        "schemaVersion": 2,
        "mediaType": MEDIA_MANIFEST,
        "config": {"mediaType": MEDIA_CONFIG, "digest": config_digest, "size": config_size},
        "layers": [{"mediaType": MEDIA_LAYER_GZIP, "digest": layer_digest, "size": layer_size}],
    }
    manifest_digest, manifest_size = _write_blob(blobs, _canonical(manifest))
    index = {
        "schemaVersion": 2,
        "mediaType": MEDIA_INDEX,
        "manifests": [
            {
                "mediaType": MEDIA_MANIFEST,
                "digest": manifest_digest,
                "size": manifest_size,
                "platform": {"architecture": "amd64", "os": "linux"},
                "annotations": annotations,
            }
        ],
    }
    (dest / "oci-layout").write_text(json.dumps({"imageLayoutVersion": "1.0.0"}))
    (dest / "index.json").write_text(json.dumps(index, indent=2))
    return manifest_digest


def _load_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError as exc:
        raise InvalidImage(f"{path.name} missing in {path.parent}") from exc
    except (OSError, ValueError) as exc:
        raise InvalidImage(f"cannot read {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise InvalidImage(f"{path} is not a JSON object")
    return data


def _pick_manifest(layout_path: Path, index: dict[str, Any]) -> dict[str, Any]:
    for _ in range(4):  # nested indexes (multi-platform) are followed a few levels deep
        entries = index.get("manifests") or []
        if not entries:
            raise InvalidImage(f"{layout_path}: index lists no manifests")
        chosen = next(
            (
                e
                for e in entries
                if (e.get("platform") or {}).get("architecture", "amd64") == "amd64"
                and (e.get("platform") or {}).get("os", "linux") == "linux"
            ),
            None,
        )
        if chosen is None:
            raise InvalidImage(f"{layout_path}: no linux/amd64 manifest")
        if chosen.get("mediaType") in (MEDIA_INDEX, DOCKER_LIST):
            probe = Layout(layout_path, "", {}, {}, {})
            index = _load_json(probe.blob(chosen["digest"]))
            continue
        return chosen
    raise InvalidImage(f"{layout_path}: index nesting too deep")


def read_layout(path: Path, verify: bool = False) -> Layout:
    """Parse a layout directory; with `verify`, check every blob against its digest."""
    if not (path / "oci-layout").is_file():
        raise InvalidImage(f"{path} is not an OCI layout (no oci-layout file)")
    entry = _pick_manifest(path, _load_json(path / "index.json"))
    probe = Layout(path, entry["digest"], {}, {}, {})
    manifest = _load_json(probe.blob(entry["digest"]))
    if manifest.get("mediaType", MEDIA_MANIFEST) not in (MEDIA_MANIFEST, DOCKER_MANIFEST):
        raise InvalidImage(f"{path}: unsupported manifest type {manifest.get('mediaType')}")
    config = _load_json(probe.blob(manifest["config"]["digest"]))
    layout = Layout(path, entry["digest"], manifest, config, dict(entry.get("annotations") or {}))
    if verify:
        wanted = [entry["digest"], manifest["config"]["digest"]]
        wanted += [layer["digest"] for layer in layout.layers]
        for digest in wanted:
            blob = layout.blob(digest)
            if not blob.is_file():
                raise InvalidImage(f"{path}: blob {digest} missing")
            if sha256_file(blob) != digest:
                raise InvalidImage(f"{path}: blob {digest} does not match its digest")
    return layout


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()


def _open_layer(layout: Layout, layer: dict[str, Any]) -> tarfile.TarFile:
    blob = layout.blob(layer["digest"])
    media = layer.get("mediaType", MEDIA_LAYER_GZIP)
    if "zstd" in media:
        raise InvalidImage(f"zstd layers are not supported ({layer['digest']})")
    with blob.open("rb") as fh:
        gzipped = fh.read(2) == b"\x1f\x8b"
    if gzipped:
        return tarfile.open(fileobj=gzip.open(blob, "rb"), mode="r|")
    return tarfile.open(blob, mode="r|")


def _safe_names_exact_modes(member: tarfile.TarInfo, dest: str) -> tarfile.TarInfo | None:
    """tarfile's `tar` filter for names and links (nothing lands outside `dest`), but with the
    image's modes kept: a root filesystem needs its setuid, sticky and world-writable bits."""
    checked = tarfile.tar_filter(member, dest)
    return None if checked is None else checked.replace(mode=member.mode, deep=False)


def _inside(dest: Path, relative: str, layer: dict[str, Any]) -> Path:
    """`dest/relative` with every symlink on the way resolved, refused unless it stays inside
    `dest`: whiteouts and replacements delete things, so their targets are checked first."""
    if relative.startswith("..") or os.path.isabs(relative):
        raise InvalidImage(f"layer {layer['digest'][:19]}: member {relative!r} leaves the root")
    parent = os.path.realpath(dest / os.path.dirname(relative))
    root = os.path.realpath(dest)
    if parent != root and not parent.startswith(root + os.sep):
        raise InvalidImage(f"layer {layer['digest'][:19]}: {relative!r} resolves outside the root")
    return Path(parent) / os.path.basename(relative)


def unpack_layers(layout: Layout, dest: Path) -> None:
    """Apply the layers in order into `dest` (an empty directory), honouring OCI whiteouts.

    Members are vetted by tarfile's `tar` filter (no absolute paths, nothing outside `dest`).
    The layout is an operator-supplied image, never sandbox output.
    """
    for layer in layout.layers:
        with _open_layer(layout, layer) as tar:
            for member in tar:
                name = os.path.normpath(member.name.lstrip("/"))
                if name in (".", ""):
                    continue
                parent, base = os.path.split(name)
                if base == ".wh..wh..opq":
                    target = _inside(dest, os.path.join(parent, "x"), layer).parent
                    if target.is_dir() and not target.is_symlink():
                        for child in target.iterdir():
                            _remove(child)
                    continue
                if base.startswith(".wh."):
                    _remove(_inside(dest, os.path.join(parent, base[len(".wh.") :]), layer))
                    continue
                existing = _inside(dest, name, layer)
                if (existing.exists() or existing.is_symlink()) and not (
                    member.isdir() and existing.is_dir() and not existing.is_symlink()
                ):
                    _remove(existing)
                try:
                    tar.extract(member, dest, numeric_owner=True, filter=_safe_names_exact_modes)
                except tarfile.FilterError as exc:
                    raise InvalidImage(f"layer {layer['digest'][:19]}: {exc}") from exc
