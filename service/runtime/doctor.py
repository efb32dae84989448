"""`airlock doctor`: what this host offers the sandbox runtimes, and what to fix."""

from __future__ import annotations

import asyncio
import os
import shutil
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from . import images, select
from .config import RuntimeConfig
from .errors import RuntimeUnavailable, SandboxRuntimeError
from .gvisor import GVisorRuntime, cgroups, choose_platform, disk, platform
from .types import ExecRequest, SandboxSpec

DatabaseCheck = Callable[[], Awaitable[str]]


@dataclass
class Check:
    name: str
    ok: bool
    detail: str
    fix: str | None = None


@dataclass
class Report:
    checks: list[Check] = field(default_factory=list)
    usable: list[str] = field(default_factory=list)
    chosen: str | None = None

    @property
    def ok(self) -> bool:
        return bool(self.usable)

    def add(self, name: str, ok: bool, detail: str, fix: str | None = None) -> Check:
        check = Check(name, ok, detail, fix)
        self.checks.append(check)
        return check


def kvm_info() -> tuple[bool, str]:
    """Whether /dev/kvm exists and which KVM this is (kvm-pvm is paravirtualized nesting)."""
    present = os.path.exists("/dev/kvm")
    try:
        cmdline = Path("/proc/cmdline").read_text()
    except OSError:
        cmdline = ""
    try:
        modules = Path("/proc/modules").read_text()
    except OSError:
        modules = ""
    signs = []
    if Path("/sys/module/kvm_pvm").exists() or "kvm_pvm" in modules:
        signs.append("kvm_pvm module loaded")
    if "nested_pvm" in cmdline:
        signs.append("nested_pvm on the kernel command line")
    if signs:
        return present, "kvm-pvm (paravirtualized nested virtualization: " + ", ".join(signs) + ")"
    for module, kind in (("kvm_intel", "kvm-intel"), ("kvm_amd", "kvm-amd")):
        if Path(f"/sys/module/{module}").exists():
            return present, kind
    return present, "kvm (kind unknown)" if present else "none"


async def _gvisor_works(state_dir: Path, platform: str | None) -> tuple[bool, str]:
    started = time.monotonic()

    async def run_true(runtime: GVisorRuntime, box_id: str) -> tuple[bool, str]:
        result = await runtime.run(box_id, ExecRequest(argv=["true"], timeout_s=30))
        if result.exit_code != 0:
            return False, f"`true` in a test sandbox ended {result.outcome} {result.exit_code}"
        return True, f"a test sandbox ran `true` ({time.monotonic() - started:.1f} s end to end)"

    return await _in_test_sandbox(state_dir, platform, run_true)


async def _gvisor_snapshots(state_dir: Path, platform: str | None) -> tuple[bool, str]:
    """Checkpoint a test sandbox and restore it into a new one (what template builds and the
    warm pool rely on)."""

    async def restore(runtime: GVisorRuntime, box_id: str) -> tuple[bool, str]:
        snapshot = await runtime.snapshot(box_id)
        try:
            clone = await runtime.create_from_snapshot(snapshot.id)
            try:
                result = await runtime.run(clone.id, ExecRequest(argv=["true"], timeout_s=30))
            finally:
                await runtime.destroy(clone.id)
        finally:
            await runtime.delete_snapshot(snapshot.id)
        if result.exit_code != 0:
            return False, f"`true` in a restored sandbox ended {result.outcome} {result.exit_code}"
        return True, (
            f"checkpoint + restore work ({snapshot.size_bytes / 1e6:.1f} MB image); templates "
            "are snapshotted and the warm pool restores members from them"
        )

    return await _in_test_sandbox(state_dir, platform, restore)


async def _in_test_sandbox(
    state_dir: Path,
    platform: str | None,
    check: Callable[[GVisorRuntime, str], Awaitable[tuple[bool, str]]],
) -> tuple[bool, str]:
    """`check` run on a small test sandbox of the default image, destroyed after it; a
    runtime that fails to open or errs is the check's failure."""
    try:
        runtime = await GVisorRuntime.open(state_dir, platform)
    except SandboxRuntimeError as exc:
        return False, str(exc)
    try:
        box = await runtime.create(images.DEFAULT_IMAGE, SandboxSpec(memory_mib=128, disk_mib=16))
        try:
            return await check(runtime, box.id)
        finally:
            await runtime.destroy(box.id)
    except SandboxRuntimeError as exc:
        return False, f"{type(exc).__name__}: {exc}"
    finally:
        await runtime.close()


async def default_database_check(url: str) -> str:
    """Connect with SQLAlchemy and run SELECT 1; returns the backend name."""
    from sqlalchemy import text
    from sqlalchemy.ext.asyncio import create_async_engine

    if not url:
        raise RuntimeError("no database configured (AIRLOCK_DATABASE_URL)")
    engine = create_async_engine(url)
    try:
        async with asyncio.timeout(10), engine.connect() as conn:
            await conn.execute(text("SELECT 1"))
        return engine.url.get_backend_name()
    finally:
        await engine.dispose()


async def diagnose(
    config: RuntimeConfig,
    check_database: DatabaseCheck | None = None,
    refresh_probe: bool = True,
) -> Report:
    """What works here for the runtime configuration `config` (built from the settings)."""
    report = Report()
    state_dir = Path(config.state_dir)
    present, kind = kvm_info()
    report.add("kvm", present, f"/dev/kvm {'present' if present else 'absent'}; {kind}")

    probe = await select.probe_boxlite(state_dir, refresh=refresh_probe)
    if probe.ok:
        report.usable.append("boxlite")
        report.add("boxlite", True, f"{probe.version}: {probe.diagnosis} ({probe.seconds:.1f} s)")
    else:
        report.add(
            "boxlite",
            False,
            f"{probe.version or 'not installed'}: cannot boot a VM\n" + _indent(probe.diagnosis),
            "needs hardware virtualization (bare metal or nested VT-x/AMD-V); kvm-pvm won't do",
        )

    runsc = shutil.which("runsc")
    if runsc is None:
        report.add("runsc", False, "not found on PATH", "apt-get install runsc")
    else:
        version = await asyncio.to_thread(platform.version, runsc)
        try:
            choice = await asyncio.to_thread(choose_platform, runsc, config.runsc_platform)
        except RuntimeUnavailable as exc:
            report.add("runsc", False, f"{runsc}, {version}: {exc.diagnosis}")
        else:
            report.add("runsc", True, f"{runsc}, {version}\nplatform {choice}")

    missing = disk.missing_tools()
    report.add(
        "sandbox disks",
        not missing,
        f"missing {', '.join(missing)}" if missing else "fallocate, mkfs.ext4, mount (loop)",
        "apt-get install util-linux mount e2fsprogs" if missing else None,
    )

    layout = cgroups.detect()
    report.add("cgroups", layout != "none", layout, None if layout != "none" else "mount cgroupfs")
    pid_max = cgroups.pid_max()
    if pid_max:
        report.add("pid space", True, f"pid_max {pid_max}; sandboxes together may use half")

    found = images.list_images(state_dir)
    listing = ", ".join(f"{i.name} {i.digest[:19]} {i.size_bytes / 1e6:.0f} MB" for i in found)
    has_default = any(i.name == images.DEFAULT_IMAGE for i in found)
    report.add(
        "images",
        has_default,
        listing or f"none in {state_dir / 'images'}",
        None if has_default else "airlock image build  (or scripts/runtime-setup.sh)",
    )

    if runsc is not None and has_default:
        works, detail = await _gvisor_works(state_dir, config.runsc_platform)
        report.add("gvisor", works, detail, None if works else "see the runsc line above")
        if works:
            report.usable.append("gvisor")
            await snapshot_check(report, config)

    if check_database is not None:
        try:
            report.add("database", True, await check_database())
        except Exception as exc:  # any failure to connect is the finding itself
            report.add(
                "database", False, f"{type(exc).__name__}: {exc}", "check AIRLOCK_DATABASE_URL"
            )

    wanted = config.runtime
    if wanted == "auto":
        report.chosen = report.usable[0] if report.usable else None
    elif wanted in report.usable:
        report.chosen = wanted
    if report.chosen is None and report.usable:
        report.add(
            "runtime",
            False,
            f"AIRLOCK_RUNTIME={wanted} cannot work here",
            f"use AIRLOCK_RUNTIME={report.usable[0]} or auto",
        )
    return report


async def snapshot_check(report: Report, config: RuntimeConfig) -> None:
    if not config.template_snapshots:
        report.add(
            "snapshots",
            True,
            "off (AIRLOCK_TEMPLATE_SNAPSHOTS=off): the warm pool pre-starts members from the "
            "image with the template's setup run",
        )
        return
    ok, detail = await _gvisor_snapshots(Path(config.state_dir), config.runsc_platform)
    report.add(
        "snapshots",
        ok,
        detail
        if ok
        else f"gvisor cannot snapshot here: {detail}\nthe warm pool pre-starts members from "
        "the image with the template's setup run instead (slower starts)",
        None if ok else "see the runsc line above; restore needs the same runsc and platform",
    )


def _indent(text: str, prefix: str = "      ") -> str:
    return "\n".join(prefix + line for line in text.splitlines())


def render(report: Report) -> str:
    lines = []
    for check in report.checks:
        mark = "ok  " if check.ok else "FAIL"
        first, *rest = check.detail.splitlines() or [""]
        lines.append(f"[{mark}] {check.name:<10} {first}")
        lines += [f"{'':17} {line}" for line in rest]
        if check.fix and not check.ok:
            lines.append(f"{'':17} fix: {check.fix}")
    if report.chosen:
        lines.append(f"runtime: {report.chosen} (usable here: {', '.join(report.usable)})")
    elif report.usable:
        lines.append(f"runtime: configured one unusable; usable: {', '.join(report.usable)}")
    else:
        lines.append("runtime: NONE can work on this host")
        fixes = [c.fix for c in report.checks if c.fix and not c.ok]
        lines += [f"  fix: {fix}" for fix in fixes]
    return "\n".join(lines)
