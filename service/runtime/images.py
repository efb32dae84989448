"""Sandbox images: build the default image offline, list, import, unpack.

Images live as OCI layouts in `<state_dir>/images/<name>/`. Runtimes that need a plain root
filesystem (gVisor) get it from `ensure_rootfs`, unpacked once per manifest digest into
`<state_dir>/rootfs/<hex>/` and shared read-only by every sandbox of that image.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from . import apt, oci
from .errors import ImageBuildFailed, ImageNotFound, InvalidImage
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
RECIPE_VERSION = "3"  # bump when the build steps below change meaning
_SOURCES = Path(__file__).resolve().parents[2] / "images"
_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")


def _stderr_progress(line: str) -> None:
    print(f"[image] {line}", file=sys.stderr, flush=True)


def images_dir(state_dir: Path) -> Path:
    return Path(state_dir) / "images"


def check_name(name: str) -> str:
    if not _NAME.match(name):
        raise ImageNotFound(name)
    return name


def _build_inputs() -> dict[str, str]:
    inputs = {
        "recipe": RECIPE_VERSION,
        "suite": SUITE,
        "packages": ",".join(PACKAGES),
        "pytest": PYTEST_REQUIREMENT,
        "path": IMAGE_PATH,
        "customize": _CUSTOMIZE,
    }
    for source in ("airlock-init.c", "statx-shim.c"):
        inputs[source] = (_SOURCES / source).read_text()
    return inputs


def build_key() -> str:
    """Hash of everything that determines the default image's content."""
    blob = json.dumps(_build_inputs(), sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()[:32]


# Runs inside mmdebstrap's customize phase: $1 is the root filesystem, $2 our staging dir.
_CUSTOMIZE = r"""set -eu
root="$1"; files="$2"
install -m 0755 "$files/airlock-init" "$root/sbin/airlock-init"
install -D -m 0755 "$files/libairlock-statx.so" "$root/usr/local/lib/libairlock-statx.so"
echo /usr/local/lib/libairlock-statx.so > "$root/etc/ld.so.preload"
chroot "$root" groupadd -g 1000 sandbox
chroot "$root" useradd -u 1000 -g 1000 -m -d /home/sandbox -s /bin/bash sandbox
install -d -o 1000 -g 1000 -m 0755 "$root/work"
rm -rf "$root/tmp/airlock-wheels"
cp -r "$files/wheels" "$root/tmp/airlock-wheels"
chroot "$root" python3 -m venv /opt/venv
chroot "$root" /opt/venv/bin/pip install --no-index --no-cache-dir --disable-pip-version-check \
    --find-links /tmp/airlock-wheels "$3"
rm -rf "$root/tmp/airlock-wheels"
"""


def _run(cmd: list[str], progress: Progress, what: str, env: dict[str, str] | None = None) -> None:
    progress(f"{what}: {' '.join(cmd[:3])} ...")
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        env=env,
        text=True,
        errors="replace",
    )
    tail: list[str] = []
    assert proc.stdout is not None
    for line in proc.stdout:
        line = line.rstrip()
        if line:
            tail = [*tail[-19:], line]
            progress(f"  {line}")
    if proc.wait() != 0:
        raise ImageBuildFailed(f"{what} failed (exit {proc.returncode}):\n" + "\n".join(tail))


def _require(tool: str, package: str) -> str:
    found = shutil.which(tool)
    if not found:
        raise ImageBuildFailed(f"{tool} not found; install it with `apt-get install {package}`")
    return found


def _compile_helpers(staging: Path, progress: Progress) -> None:
    gcc = _require("gcc", "gcc libc6-dev")
    _run(
        [
            gcc,
            "-O2",
            "-s",
            "-static",
            "-o",
            str(staging / "airlock-init"),
            str(_SOURCES / "airlock-init.c"),
        ],
        progress,
        "compile init",
    )
    _run(
        [
            gcc,
            "-O2",
            "-s",
            "-shared",
            "-fPIC",
            "-o",
            str(staging / "libairlock-statx.so"),
            str(_SOURCES / "statx-shim.c"),
        ],
        progress,
        "compile statx shim",
    )


def _download_wheels(staging: Path, progress: Progress) -> None:
    wheels = staging / "wheels"
    wheels.mkdir()
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--disable-pip-version-check",
            "--quiet",
            "--only-binary=:all:",
            "--python-version",
            "3.11",
            "--dest",
            str(wheels),
            PYTEST_REQUIREMENT,
        ],
        progress,
        "download wheels on the host",
    )


def _chroot_env() -> dict[str, str]:
    """A small, explicit environment for mmdebstrap and the chroot: no host pip settings."""
    keep = {"http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"}
    env = {k: v for k, v in os.environ.items() if k in keep}
    env.update(
        PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        HOME="/root",
        LC_ALL="C.UTF-8",
        DEBIAN_FRONTEND="noninteractive",
    )
    return env


def _clean_rootfs(rootfs: Path) -> None:
    """No package index, no host resolver config, no caches left in the image."""
    (rootfs / "etc/apt/sources.list").unlink(missing_ok=True)
    for entry in (rootfs / "etc/apt/sources.list.d").glob("*"):
        entry.unlink()
    resolv = rootfs / "etc/resolv.conf"
    if resolv.is_symlink():
        resolv.unlink()
    resolv.write_text("")
    for cache in ("var/lib/apt/lists", "var/cache/apt", "var/log/apt"):
        target = rootfs / cache
        if target.is_dir():
            for child in target.iterdir():
                if child.is_dir() and not child.is_symlink():
                    shutil.rmtree(child)
                else:
                    child.unlink()


def _pack_layer(rootfs: Path, staging: Path, progress: Progress) -> tuple[Path, str]:
    """Tar the rootfs (sorted, numeric owners) and gzip it; return (layer.tar.gz, diff_id)."""
    layer_tar = staging / "layer.tar"
    _run(
        [
            _require("tar", "tar"),
            "--create",
            "--file",
            str(layer_tar),
            "--sort=name",
            "--numeric-owner",
            "--one-file-system",
            "-C",
            str(rootfs),
            ".",
        ],
        progress,
        "pack rootfs",
    )
    diff_id = oci.sha256_file(layer_tar)
    progress("compress layer (gzip)")
    layer_gz = staging / "layer.tar.gz"
    with layer_gz.open("wb") as out:
        subprocess.run(
            [_require("gzip", "gzip"), "-n", "-6", "-c", str(layer_tar)], stdout=out, check=True
        )
    layer_tar.unlink()
    return layer_gz, diff_id


@contextlib.contextmanager
def _locked(state_dir: Path, what: str) -> Iterator[None]:
    lock_dir = Path(state_dir) / "locks"
    lock_dir.mkdir(parents=True, exist_ok=True)
    with (lock_dir / f"{what}.lock").open("w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def build_default_image(
    state_dir: Path,
    progress: Progress | None = None,
    name: str = DEFAULT_IMAGE,
    force: bool = False,
) -> ImageInfo:
    """Build the default image from Debian packages, offline for the guest.

    Instant when an image built from the same inputs exists (unless `force`).
    """
    progress = progress or _stderr_progress
    state_dir = Path(state_dir)
    check_name(name)
    key = build_key()
    with _locked(state_dir, f"image-{name}"):
        if not force:
            current = _existing(state_dir, name)
            if current is not None and current.build_key == key:
                progress(f"image {name!r} is up to date ({current.digest[:19]}...)")
                return current
        return _build(state_dir, name, key, progress)


def _build(state_dir: Path, name: str, key: str, progress: Progress) -> ImageInfo:
    started = time.monotonic()
    mmdebstrap = _require("mmdebstrap", "mmdebstrap")
    mirror = apt.host_mirror()
    progress(f"building image {name!r} (key {key[:12]}) from {mirror} {SUITE}")
    tmp_root = state_dir / "tmp"
    tmp_root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix="build-", dir=tmp_root))
    try:
        _compile_helpers(staging, progress)
        _download_wheels(staging, progress)
        (staging / "customize.sh").write_text(_CUSTOMIZE)
        rootfs = staging / "rootfs"
        env = _chroot_env()
        hook = f'sh {staging}/customize.sh "$1" {staging} "{PYTEST_REQUIREMENT}"'
        _run(
            [
                mmdebstrap,
                "--mode=root",
                "--variant=minbase",
                "--format=directory",
                "--include=" + ",".join(PACKAGES),
                '--aptopt=APT::Install-Recommends "false"',
                "--dpkgopt=path-exclude=/usr/share/doc/*",
                "--dpkgopt=path-exclude=/usr/share/man/*",
                "--customize-hook=" + hook,
                SUITE,
                str(rootfs),
                f"deb {mirror} {SUITE} main",
            ],
            progress,
            "mmdebstrap",
            env=env,
        )
        _clean_rootfs(rootfs)
        layer_gz, diff_id = _pack_layer(rootfs, staging, progress)
        layout_tmp = staging / "layout"
        image_config = {
            "User": f"{SANDBOX_UID}:{SANDBOX_UID}",
            "Env": [f"PATH={IMAGE_PATH}"],
            "WorkingDir": "/work",
            "Cmd": [INIT_PATH],
        }
        annotations = {oci.ANNOTATION_REF: name, oci.ANNOTATION_BUILD_KEY: key}
        digest = oci.write_layout(layout_tmp, layer_gz, diff_id, image_config, annotations)
        # The rootfs we just packed is exactly the unpacked image: keep it as the runtime copy.
        _adopt_rootfs(state_dir, digest, rootfs)
        _install_layout(state_dir, name, layout_tmp)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    info = get_image(state_dir, name)
    progress(
        f"built image {name!r} {info.digest} ({info.size_bytes / 1e6:.0f} MB) "
        f"in {time.monotonic() - started:.0f} s"
    )
    return info


def _install_layout(state_dir: Path, name: str, layout: Path) -> None:
    target = images_dir(state_dir) / name
    target.parent.mkdir(parents=True, exist_ok=True)
    old = target.with_name(f".old-{name}-{os.getpid()}")
    if target.exists():
        target.rename(old)
    shutil.move(str(layout), target)
    shutil.rmtree(old, ignore_errors=True)


def _existing(state_dir: Path, name: str) -> ImageInfo | None:
    try:
        return get_image(state_dir, name)
    except (ImageNotFound, InvalidImage):
        return None


def _info(name: str, layout: oci.Layout) -> ImageInfo:
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
    return _info(name, oci.read_layout(path))


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
    with _locked(state_dir, f"image-{name}"):
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
            _install_layout(state_dir, name, copy)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return get_image(state_dir, name)


def rootfs_dir(state_dir: Path, digest: str) -> Path:
    return Path(state_dir) / "rootfs" / digest.split(":", 1)[1]


def _adopt_rootfs(state_dir: Path, digest: str, rootfs: Path) -> None:
    target = rootfs_dir(state_dir, digest)
    if (target.parent / f"{target.name}.complete").exists():
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.exists():
        shutil.rmtree(target)
    shutil.move(str(rootfs), target)
    (target.parent / f"{target.name}.complete").touch()


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
    with _locked(state_dir, f"rootfs-{target.name[:16]}"):
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
    with _locked(state_dir, f"image-{name}"):
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
