"""Building the default image offline from Debian packages (`mmdebstrap`).

The guest never reaches a package index: Debian packages come from the host's mirror, Python
wheels are downloaded on the host and installed offline inside the chroot. The result is an
OCI layout with one gzip layer in `<state_dir>/images/<name>/`, keyed by a hash of the build
inputs so an unchanged build is instant.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from importlib import resources
from pathlib import Path

from . import apt, oci
from .errors import ImageBuildFailed
from .image_store import (
    DEFAULT_IMAGE,
    HOSTS_BASE,
    IMAGE_PATH,
    INIT_PATH,
    PACKAGES,
    PYTEST_REQUIREMENT,
    RECIPE_VERSION,
    SANDBOX_UID,
    SHIM_PATH,
    SUITE,
    Progress,
    adopt_rootfs,
    check_name,
    existing,
    get_image,
    install_layout,
    locked,
    stderr_progress,
)
from .types import ImageInfo

# The C sources of the image's init and statx shim, package data of the wheel.
_SOURCES = Path(str(resources.files("service.runtime") / "image_sources"))


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
chroot "$root" groupadd -g 1000 sandbox
chroot "$root" useradd -u 1000 -g 1000 -m -d /home/sandbox -s /bin/bash sandbox
install -d -o 1000 -g 1000 -m 0755 "$root/work"
rm -rf "$root/tmp/airlock-wheels"
cp -r "$files/wheels" "$root/tmp/airlock-wheels"
chroot "$root" python3 -m venv /opt/venv
chroot "$root" /opt/venv/bin/pip install --no-index --no-cache-dir --disable-pip-version-check \
    --find-links /tmp/airlock-wheels "$3"
rm -rf "$root/tmp/airlock-wheels"
# The sandbox user's environment: `pip install` adds and upgrades packages in it.
chroot "$root" chown -R 1000:1000 /opt/venv
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


# The image's own identity: the rootfs is made on the build host and would keep its name.
_IDENTITY = {
    "etc/hostname": "sandbox\n",
    "etc/hosts": HOSTS_BASE,
    "etc/mailname": None,
    "etc/machine-id": None,
}


def _clean_rootfs(rootfs: Path) -> None:
    """No package index, no host resolver config or identity, no caches left in the image."""
    for name, content in _IDENTITY.items():
        target = rootfs / name
        if target.is_symlink() or target.exists():
            target.unlink()
        if content is not None:
            target.write_text(content)
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


# Where the programs that may call statx live; libraries are left alone (see below).
_PROGRAM_DIRS = ("usr/bin", "usr/sbin", "usr/local/bin", "usr/local/sbin")


def _imports_statx(readelf: str, path: Path) -> bool:
    """Whether the ELF file at `path` takes `statx` from a shared library."""
    try:
        with path.open("rb") as handle:
            head = handle.read(4)
            if head != b"\x7fELF" or b"statx\0" not in head + handle.read():
                return False
    except OSError:
        return False
    out = subprocess.run(
        [readelf, "--dyn-syms", "--wide", str(path)],
        capture_output=True,
        text=True,
        errors="replace",
        check=False,
    ).stdout
    for line in out.splitlines():
        fields = line.split()
        if len(fields) >= 8 and fields[6] == "UND" and fields[7].split("@")[0] == "statx":
            return True
    return False


def _link_statx_shim(rootfs: Path, tools: tuple[str, str], progress: Progress) -> None:
    """Make the statx shim a first dependency of each program that calls statx.

    Only those programs load it (ls, stat, dir, vdir in bookworm): a system-wide
    `/etc/ld.so.preload` made every process in a sandbox open and map it, about 3 ms per
    exec under gVisor here. As the first DT_NEEDED entry it comes before libc in the
    program's lookup scope, so its `statx` is the one bound. Libraries that import statx
    themselves (libsystemd, libudev) are not patched: their callers are not sandbox tools.
    """
    readelf, patchelf = tools
    linked = []
    for directory in _PROGRAM_DIRS:
        base = rootfs / directory
        if not base.is_dir():
            continue
        for path in sorted(base.iterdir()):
            if path.is_symlink() or not path.is_file() or not _imports_statx(readelf, path):
                continue
            _run([patchelf, "--add-needed", SHIM_PATH, str(path)], progress, "link statx shim")
            linked.append(f"/{directory}/{path.name}")
    progress(f"statx shim linked into {len(linked)} program(s): {', '.join(linked) or 'none'}")


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


def build_default_image(
    state_dir: Path,
    progress: Progress | None = None,
    name: str = DEFAULT_IMAGE,
    force: bool = False,
) -> ImageInfo:
    """Build the default image from Debian packages, offline for the guest.

    Instant when an image built from the same inputs exists (unless `force`).
    """
    progress = progress or stderr_progress
    state_dir = Path(state_dir)
    check_name(name)
    key = build_key()
    with locked(state_dir, f"image-{name}"):
        if not force:
            current = existing(state_dir, name)
            if current is not None and current.build_key == key:
                progress(f"image {name!r} is up to date ({current.digest[:19]}...)")
                return current
        return _build(state_dir, name, key, progress)


def _build(state_dir: Path, name: str, key: str, progress: Progress) -> ImageInfo:
    started = time.monotonic()
    mmdebstrap = _require("mmdebstrap", "mmdebstrap")
    # Used after mmdebstrap (by _link_statx_shim), looked up first so a missing one fails early.
    elf_tools = (_require("readelf", "binutils"), _require("patchelf", "patchelf"))
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
        _link_statx_shim(rootfs, elf_tools, progress)
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
        adopt_rootfs(state_dir, digest, rootfs)
        install_layout(state_dir, name, layout_tmp)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    info = get_image(state_dir, name)
    progress(
        f"built image {name!r} {info.digest} ({info.size_bytes / 1e6:.0f} MB) "
        f"in {time.monotonic() - started:.0f} s"
    )
    return info
