"""Runtime latency: Airlock's runtime beside the raw runtime CLI doing the same, in one run,
on every runsc platform this runsc offers (ptrace and systrap side by side).

    .venv/bin/python bench/runtime.py [--rounds 15] [--execs 30] [--state-dir .airlock]
                                      [--platforms ptrace,systrap] [--vcpus 1]
                                      [--suite-runs 3] [--json PATH]

Prints median and p95 (ms) of create, first exec, exec `true`, exec `python3 -c pass`, a
syscall-heavy loop (20,000 `os.stat` in Python), a fork-heavy loop (100 fork+exec of
`/bin/true` from sh) and destroy, for Airlock and for raw `runsc` on an identical bundle,
with the ratio; checkpoint and restore (a snapshot of a running sandbox, a sandbox made from
it); a test suite the bench writes (bench/workload.py: 1,050 pytest tests in 50 files) run in
a sandbox and natively on the host (the image's own python3 and pytest in a chroot of the same
root filesystem), alternated, with the ratio; then Airlock's medians per
platform side by side. `--vcpus` sets the
sandboxes' CPU quota (systrap spends quota in both the sentry and the stub: see the
runtime README). BoxLite is measured where
its probe VM boots and reported as skipped otherwise. `--json PATH` also writes the tables to
PATH for `bench/compare.py` (bench/results/README.md).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import secrets
import shutil
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import msgspec
import workload

from bench.tables import Better, Column, Label, Report, json_argument
from service.runtime import ExecRequest, SandboxSpec, images, select
from service.runtime.gvisor import GVisorRuntime, platform, reaper
from service.runtime.gvisor import bundle as gvisor_bundle

SPEC = SandboxSpec(memory_mib=256, disk_mib=64, pids=64)
SYSCALLS = ["python3", "-c", "import os\nfor _ in range(20000): os.stat('/')"]
FORKS = ["sh", "-c", "i=0; while [ $i -lt 100 ]; do /bin/true; i=$((i + 1)); done"]
OPS = (
    "create",
    "first exec",
    "exec true",
    "exec python3 -c pass",
    "20k os.stat (python)",
    "100 fork+exec (sh)",
    "destroy",
    "checkpoint",
    "restore",
    "test suite",
)
SUITE_DIR = "/work/suite"


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


class RawRunsc:
    """The same operations through the runsc CLI directly, on the same kind of bundle."""

    def __init__(self, runtime: GVisorRuntime, rootfs: Path, work: Path) -> None:
        self.base = [
            runtime.runsc,
            f"--root={work / 'root'}",
            f"--platform={runtime.platform}",
            "--network=none",
            "--cpu-num-from-quota",
        ]
        self.rootfs = rootfs
        self.work = work

    async def _run(self, *args: str, quiet: bool = False) -> int:
        out = asyncio.subprocess.DEVNULL if quiet else asyncio.subprocess.PIPE
        proc = await asyncio.create_subprocess_exec(
            *self.base, *args, stdin=asyncio.subprocess.DEVNULL, stdout=out, stderr=out
        )
        await proc.communicate()
        return proc.returncode or 0

    async def _reaping(self, *args: str) -> int:
        task = asyncio.ensure_future(self._run(*args, quiet=True))
        while not task.done():
            reaper.reap_adopted()
            await asyncio.wait([task], timeout=0.01)
        reaper.reap_adopted()
        return task.result()

    async def create(self) -> str:
        cid = "raw-" + secrets.token_hex(12)
        bundle = self.work / cid
        bundle.mkdir()
        config = gvisor_bundle.bundle_config(
            sandbox_id=cid,
            rootfs=self.rootfs,
            spec=SPEC,
            cgroups_path=f"/airlock-raw/{cid}",
            home="/home/sandbox",
            init_argv=[images.INIT_PATH],
        )
        (bundle / "config.json").write_text(json.dumps(config))
        await self._reaping("run", "--detach", f"--bundle={bundle}", cid)
        return cid

    async def exec(self, cid: str, *argv: str) -> int:
        return await self._run("exec", "--user=1000:1000", "--cwd=/work", cid, *argv)

    async def destroy(self, cid: str) -> None:
        await self._reaping("kill", cid, "KILL")
        await self._reaping("delete", "--force", cid)
        shutil.rmtree(self.work / cid, ignore_errors=True)


def remove_cgroup_parent(name: str) -> None:
    for controller in Path("/sys/fs/cgroup").glob(f"*/{name}"):
        with contextlib.suppress(OSError):
            controller.rmdir()


async def timed(samples: dict[str, list[float]], op: str, coro: object) -> object:
    started = time.perf_counter()
    result = await coro  # type: ignore[misc]
    samples[op].append((time.perf_counter() - started) * 1000)
    return result


async def snapshots(runtime: GVisorRuntime, ours: dict[str, list[float]], rounds: int) -> None:
    """Checkpoint (snapshot of a running sandbox with a file written) and restore (a new
    sandbox from it, answering its first exec)."""
    for _ in range(rounds):
        box = await runtime.create(images.DEFAULT_IMAGE, SPEC)
        await runtime.run(box.id, ExecRequest(argv=["sh", "-c", "echo kept > /work/kept"]))
        snap = await timed(ours, "checkpoint", runtime.snapshot(box.id))
        started = time.perf_counter()
        clone = await runtime.create_from_snapshot(snap.id)
        kept = await runtime.run(clone.id, ExecRequest(argv=["cat", "/work/kept"]))
        ours["restore"].append((time.perf_counter() - started) * 1000)
        assert kept.stdout == b"kept\n", kept
        for sandbox_id in (clone.id, box.id):
            await runtime.destroy(sandbox_id)
        await runtime.delete_snapshot(snap.id)


# Natively: the image's own python3 and pytest, outside any sandbox, in a chroot of the same
# root filesystem (a private mount namespace gives it a /tmp of its own, the suite in it, and
# the host's /dev), as the sandbox's user: the same files and versions, only gVisor differs.
NATIVE = """set -e
root=$1; suite=$2; path=$3; shift 3
mount -t tmpfs -o size=256m tmpfs "$root/tmp"
mount --rbind /dev "$root/dev"
cp -r "$suite" "$root/tmp/suite"
chown -R 1000:1000 "$root/tmp/suite"
exec chroot --userspec=1000:1000 "$root" /usr/bin/env -i PATH="$path" HOME=/tmp \
    PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 sh -c 'cd /tmp/suite && exec "$@"' sh "$@"
"""


async def test_suite(
    runtime: GVisorRuntime, rootfs: Path, tmp: Path, runs: int
) -> dict[str, list[float]]:
    """The bench's own test suite in one sandbox and natively (see NATIVE), alternated: wall
    ms of each run (the sandbox's measured from here, through the exec)."""
    local = tmp / "suite"
    total = workload.write(local)
    box = await runtime.create(images.DEFAULT_IMAGE, SPEC)
    await runtime.run(box.id, ExecRequest(argv=["mkdir", "-p", SUITE_DIR]))
    for path in sorted(local.iterdir()):
        await runtime.write_file(box.id, f"{SUITE_DIR}/{path.name}", path.read_bytes())
    env = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    inside = ExecRequest(argv=workload.command("python3"), cwd=SUITE_DIR, env=env, timeout_s=600)
    native = ["unshare", "--mount", "--propagation", "private", "sh", "-c", NATIVE, "sh"]
    native += [str(rootfs), str(local), images.IMAGE_PATH, *workload.command("python3")]
    times: dict[str, list[float]] = defaultdict(list)
    for _ in range(runs):
        started = time.perf_counter()
        done = await runtime.run(box.id, inside)
        times["sandbox"].append((time.perf_counter() - started) * 1000)
        assert done.exit_code == 0 and f"{total} passed".encode() in done.stdout, done
        started = time.perf_counter()
        proc = await asyncio.create_subprocess_exec(
            *native, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
        )
        out, _ = await proc.communicate()
        times["native"].append((time.perf_counter() - started) * 1000)
        assert proc.returncode == 0 and f"{total} passed".encode() in out, out[-500:]
    await runtime.destroy(box.id)
    return times


async def bench_gvisor(
    state_dir: Path, rounds: int, execs: int, platform_name: str, suite_runs: int, report: Report
) -> dict[str, float]:
    """One platform's table; returns Airlock's medians by operation."""
    runtime = await GVisorRuntime.open(state_dir, platform_name)
    info, rootfs = images.ensure_rootfs(state_dir, images.DEFAULT_IMAGE)
    ours: dict[str, list[float]] = defaultdict(list)
    raw: dict[str, list[float]] = defaultdict(list)
    true_req = ExecRequest(argv=["true"])
    py_req = ExecRequest(argv=["python3", "-c", "pass"])
    with tempfile.TemporaryDirectory(prefix="airlock-bench-") as tmp:
        baseline = RawRunsc(runtime, rootfs, Path(tmp))
        for _ in range(rounds):
            box = await timed(ours, "create", runtime.create(images.DEFAULT_IMAGE, SPEC))
            cid = await timed(raw, "create", baseline.create())
            await timed(ours, "first exec", runtime.run(box.id, true_req))
            await timed(raw, "first exec", baseline.exec(cid, "true"))
            for _ in range(max(1, execs // rounds)):
                await timed(ours, "exec true", runtime.run(box.id, true_req))
                await timed(raw, "exec true", baseline.exec(cid, "true"))
                await timed(ours, "exec python3 -c pass", runtime.run(box.id, py_req))
                await timed(
                    raw, "exec python3 -c pass", baseline.exec(cid, "python3", "-c", "pass")
                )
            for op, argv in (("20k os.stat (python)", SYSCALLS), ("100 fork+exec (sh)", FORKS)):
                done = await timed(ours, op, runtime.run(box.id, ExecRequest(argv=argv)))
                assert done.exit_code == 0, done
                await timed(raw, op, baseline.exec(cid, *argv))
            await timed(ours, "destroy", runtime.destroy(box.id))
            await timed(raw, "destroy", baseline.destroy(cid))
        await snapshots(runtime, ours, max(2, rounds // 5))
        suite = await test_suite(runtime, rootfs, Path(tmp), suite_runs)
    await runtime.close()
    remove_cgroup_parent("airlock-raw")
    print(
        f"\ngvisor, runsc platform {runtime.platform} ({runtime.runsc_version}, image "
        f"{info.digest[:19]}), {rounds} sandboxes, {len(ours['exec true'])} execs of each kind"
    )
    airlock = (
        Column("airlock p50", "ms", Better.LOWER, width=12),
        Column("p95", "ms", Better.LOWER, width=9, key="airlock p95"),
    )
    against_raw = report.table(
        f"gvisor {runtime.platform}: airlock against raw runsc",
        Label("operation", 22),
        *airlock,
        Column("raw runsc p50", "ms", Better.LOWER, width=15),
        Column("p95", "ms", Better.LOWER, width=9, key="raw runsc p95"),
        Column("ratio p50", "x", Better.LOWER, width=10, format=".2f", suffix="x"),
        Column("ratio p95", "x", Better.LOWER, width=10, format=".2f", suffix="x"),
    )
    against_raw.heading()
    for op in OPS[: OPS.index("checkpoint")]:
        a50, a95 = statistics.median(ours[op]), pct(ours[op], 0.95)
        r50, r95 = statistics.median(raw[op]), pct(raw[op], 0.95)
        against_raw.row(op, a50, a95, r50, r95, a50 / r50, a95 / r95)
    # printed under the table above, without raw figures: runsc has no such operation
    snapshot = report.table(
        f"gvisor {runtime.platform}: checkpoint and restore", Label("operation", 22), *airlock
    )
    for op in ("checkpoint", "restore"):
        snapshot.row(op, statistics.median(ours[op]), pct(ours[op], 0.95))
    ours["test suite"] = suite["sandbox"]
    s50, n50 = statistics.median(suite["sandbox"]), statistics.median(suite["native"])
    report.tables["test suite"].record(runtime.platform, s50, n50, s50 / n50)
    print(
        f"test suite ({workload.TOTAL} pytest tests in {workload.FILES} files, "
        f"{len(suite['sandbox'])} runs each, alternated): sandbox p50 {s50:.0f} ms, "
        f"native p50 {n50:.0f} ms, {s50 / n50:.2f}x native"
    )
    return {op: statistics.median(ours[op]) for op in OPS}


def print_side_by_side(medians: dict[str, dict[str, float]], report: Report) -> None:
    names = list(medians)
    print("\nairlock p50 (ms) per platform")
    columns = [Column(n, "ms", Better.LOWER, width=10) for n in names]
    if len(names) == 2:
        # which platform should be the faster is no goal of Airlock's: context
        ratio = f"{names[1]}/{names[0]}"
        columns.append(Column(ratio, "x", Better.NEITHER, width=17, format=".2f", suffix="x"))
    table = report.table("airlock p50 per platform", Label("operation", 22), *columns)
    table.heading()
    for op in OPS:
        figures = [medians[n][op] for n in names]
        if len(names) == 2:
            figures.append(medians[names[1]][op] / medians[names[0]][op])
        table.row(op, *figures)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--execs", type=int, default=30)
    parser.add_argument("--state-dir", type=Path, default=Path(".airlock"))
    parser.add_argument("--platforms", default="ptrace,systrap")
    parser.add_argument("--vcpus", type=float, default=1.0)
    parser.add_argument("--suite-runs", type=int, default=3)
    json_argument(parser)
    args = parser.parse_args()
    report = Report("runtime", args)
    report.table(
        "test suite",
        Label("runsc platform", 0),
        Column("sandbox p50 ms", "ms", Better.LOWER, format=".0f"),
        # the host's own run, outside Airlock: context for the ratio
        Column("native p50 ms", "ms", Better.NEITHER, format=".0f"),
        Column("sandbox / native", "x", Better.LOWER, format=".2f"),
    )
    global SPEC
    SPEC = msgspec.structs.replace(SPEC, vcpus=args.vcpus)
    print(f"sandboxes: {SPEC.vcpus:g} vCPU, {SPEC.memory_mib} MiB, {SPEC.pids} pids")
    state_dir = args.state_dir.resolve()
    probe = await select.probe_boxlite(state_dir)
    if probe.ok:
        print("boxlite: probe VM boots; BoxLite latency bench not written yet")
    else:
        first = probe.diagnosis.splitlines()[0] if probe.diagnosis else "probe failed"
        print(f"boxlite: skipped, cannot boot a VM here ({first})")
    runsc = shutil.which("runsc")
    if runsc is None:
        sys.exit("runsc not found on PATH")
    offered = platform.offered(runsc)
    medians = {}
    for name in args.platforms.split(","):
        if name not in offered:
            print(f"\ngvisor, runsc platform {name}: skipped, {runsc} offers {', '.join(offered)}")
            continue
        medians[name] = await bench_gvisor(
            state_dir, args.rounds, args.execs, name, args.suite_runs, report
        )
    report.platform = ",".join(medians) or None
    if len(medians) > 1:
        print_side_by_side(medians, report)
    report.write()


if __name__ == "__main__":
    asyncio.run(main())
