"""The image store: where images and their unpacked root filesystems live, its lock, and the
default image's recipe constants (service.runtime.image_build builds it, service.runtime.images
lists, imports and unpacks).

Images live as OCI layouts in `<state_dir>/images/<name>/`; root filesystems are unpacked once
per manifest digest into `<state_dir>/rootfs/<hex>/`.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

from . import oci
from .errors import ImageNotFound, InvalidImage
from .types import ImageInfo

Progress = Callable[[str], None]

DEFAULT_IMAGE = "default"
SUITE = "bookworm"
PACKAGES = ("python3", "python3-venv", "python3-pip", "git", "ca-certificates", "procps")
PYTEST_REQUIREMENT = "pytest==9.2.0"
SANDBOX_UID = 1000
IMAGE_PATH = "/opt/venv/bin:/usr/local/bin:/usr/bin:/bin"
INIT_PATH = "/sbin/airlock-init"
SHIM_PATH = "/usr/local/lib/libairlock-statx.so"
# The image's /etc/hosts; a networked sandbox's own name is added to it (gvisor.network).
HOSTS_BASE = "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"
RECIPE_VERSION = "5"  # bump when the steps in image_build.py change meaning
_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")


def stderr_progress(line: str) -> None:
    print(f"[image] {line}", file=sys.stderr, flush=True)


def images_dir(state_dir: Path) -> Path:
    return Path(state_dir) / "images"


def check_name(name: str) -> str:
    if not _NAME.match(name):
        raise ImageNotFound(name)
    return name


@contextlib.contextmanager
def locked(state_dir: Path, what: str) -> Iterator[None]:
    lock_dir = Path(state_dir) / "locks"
    lock_dir.mkdir(parents=True, exist_ok=True)
    with (lock_dir / f"{what}.lock").open("w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def install_layout(state_dir: Path, name: str, layout: Path) -> None:
    target = images_dir(state_dir) / name
    target.parent.mkdir(parents=True, exist_ok=True)
    old = target.with_name(f".old-{name}-{os.getpid()}")
    if target.exists():
        target.rename(old)
    shutil.move(str(layout), target)
    shutil.rmtree(old, ignore_errors=True)


def existing(state_dir: Path, name: str) -> ImageInfo | None:
    try:
        return get_image(state_dir, name)
    except (ImageNotFound, InvalidImage):
        return None


def info_of(name: str, layout: oci.Layout) -> ImageInfo:
    created = (layout.path / "index.json").stat().st_mtime
    return ImageInfo(
        name=name,
        digest=layout.manifest_digest,
        size_bytes=layout.size_bytes,
        created_at=created,
        path=str(layout.path),
        build_key=layout.annotations.get(oci.ANNOTATION_BUILD_KEY),
        config=dict(layout.config.get("config") or {}),
    )


def get_image(state_dir: Path, name: str) -> ImageInfo:
    path = images_dir(state_dir) / check_name(name)
    if not (path / "index.json").is_file():
        raise ImageNotFound(name)
    return info_of(name, oci.read_layout(path))


def rootfs_dir(state_dir: Path, digest: str) -> Path:
    return Path(state_dir) / "rootfs" / digest.split(":", 1)[1]


def adopt_rootfs(state_dir: Path, digest: str, rootfs: Path) -> None:
    target = rootfs_dir(state_dir, digest)
    if (target.parent / f"{target.name}.complete").exists():
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.exists():
        shutil.rmtree(target)
    shutil.move(str(rootfs), target)
    (target.parent / f"{target.name}.complete").touch()
