"""Sandbox images: build the default image offline, list, import, unpack.

Images live as OCI layouts in `<state_dir>/images/<name>/`. Runtimes that need a plain root
filesystem (gVisor) get it from `ensure_rootfs`, unpacked once per manifest digest into
`<state_dir>/rootfs/<hex>/` and shared read-only by every sandbox of that image.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
from pathlib import Path

from . import oci
from .errors import ImageBuildFailed, ImageNotFound, InvalidImage
from .image_build import build_default_image, build_key
from .image_store import (
    DEFAULT_IMAGE,
    IMAGE_PATH,
    INIT_PATH,
    SHIM_PATH,
    Progress,
    check_name,
    get_image,
    images_dir,
    install_layout,
    locked,
    rootfs_dir,
)
from .types import ImageInfo

__all__ = [
    "DEFAULT_IMAGE",
    "IMAGE_PATH",
    "INIT_PATH",
    "SHIM_PATH",
    "Progress",
    "build_default_image",
    "build_key",
    "check_name",
    "get_image",
    "images_dir",
    "rootfs_dir",
]


def list_images(state_dir: Path) -> list[ImageInfo]:
    root = images_dir(state_dir)
    found: list[ImageInfo] = []
    if root.is_dir():
        for entry in sorted(root.iterdir()):
            if entry.name.startswith(".") or not (entry / "index.json").is_file():
                continue
            with contextlib.suppress(InvalidImage, ImageNotFound):
                found.append(get_image(state_dir, entry.name))
    return found


def import_image(state_dir: Path, path: Path, name: str | None = None) -> ImageInfo:
    """Copy an OCI layout made elsewhere into the image store, after checking every blob."""
    source = Path(path)
    layout = oci.read_layout(source, verify=True)
    name = name or layout.annotations.get(oci.ANNOTATION_REF) or source.name
    name = name.split(":")[-1] if "/" in name or ":" in name else name
    check_name(name)
    with locked(state_dir, f"image-{name}"):
        tmp_root = Path(state_dir) / "tmp"
        tmp_root.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix="import-", dir=tmp_root))
        try:
            copy = staging / "layout"
            copy.mkdir()
            shutil.copy2(source / "oci-layout", copy / "oci-layout")
            shutil.copy2(source / "index.json", copy / "index.json")
            blobs = copy / "blobs" / "sha256"
            blobs.mkdir(parents=True)
            for blob in (source / "blobs" / "sha256").iterdir():
                shutil.copy2(blob, blobs / blob.name)
            install_layout(state_dir, name, copy)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return get_image(state_dir, name)


def _unpacked(target: Path) -> bool:
    return (target.parent / f"{target.name}.complete").exists()


def ensure_rootfs(state_dir: Path, image: str) -> tuple[ImageInfo, Path]:
    """The image's root filesystem on the host, unpacked once per manifest digest.

    When the image store is a symlink into another state dir (tests share one), that state
    dir's unpacked copy is used rather than unpacking again.
    """
    info = get_image(state_dir, image)
    target = rootfs_dir(state_dir, info.digest)
    if _unpacked(target):
        return info, target
    shared = rootfs_dir(Path(info.path).resolve().parents[1], info.digest)
    if _unpacked(shared):
        return info, shared
    marker = target.parent / f"{target.name}.complete"
    with locked(state_dir, f"rootfs-{target.name[:16]}"):
        if marker.exists():
            return info, target
        staging = target.with_name(f".unpack-{target.name[:16]}-{os.getpid()}")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        try:
            oci.unpack_layers(oci.read_layout(Path(info.path)), staging)
            shutil.rmtree(target, ignore_errors=True)
            staging.rename(target)
            marker.touch()
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return info, target


def remove_image(state_dir: Path, name: str) -> None:
    """Forget an image layout. Its unpacked rootfs stays while sandboxes may use it."""
    target = images_dir(state_dir) / check_name(name)
    with locked(state_dir, f"image-{name}"):
        if not target.exists():
            raise ImageNotFound(name)
        shutil.rmtree(target)


def main(argv: list[str] | None = None) -> int:
    """`python -m service.runtime.images build|list|import PATH`: image work without the CLI."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m service.runtime.images")
    parser.add_argument("--state-dir", type=Path, default=None)
    sub = parser.add_subparsers(dest="action", required=True)
    build = sub.add_parser("build")
    build.add_argument("--force", action="store_true")
    sub.add_parser("list")
    imp = sub.add_parser("import")
    imp.add_argument("path", type=Path)
    imp.add_argument("--name")
    args = parser.parse_args(argv)
    state_dir = args.state_dir or Path(os.environ.get("AIRLOCK_STATE_DIR", "/var/lib/airlock"))
    try:
        if args.action == "build":
            build_default_image(state_dir, force=args.force)
        elif args.action == "import":
            info = import_image(state_dir, args.path, args.name)
            print(f"imported {info.name} {info.digest}")
        else:
            for info in list_images(state_dir):
                print(f"{info.name}\t{info.digest}\t{info.size_bytes / 1e6:.0f} MB")
    except (ImageBuildFailed, ImageNotFound, InvalidImage) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
