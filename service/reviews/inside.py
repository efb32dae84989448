"""The steps that run inside the review's sandbox, through the exec and files services (so
the tenant's quotas, the audit log and the sandbox's network policy apply to each of them).

Every step has its own deadline; a non-zero exit is data, never an exception.

Order matters, since whatever the head's code runs can change the sandbox after it: the two
trees are checked out and everything git says about the change (diff, changed paths, the config
files' two versions) is read before any code of the repository runs; the base's tests run
before the head's; between steps and before results are read, every process but the agent is
killed (by root), so nothing an install or a test left running acts on a later step.
"""

from __future__ import annotations

import asyncio
import base64
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from service.audit.recorder import AuditContext
from service.auth.principal import Principal
from service.execs import service as execs
from service.execs.runner import ExecRunner
from service.execs.schemas import Exec, ExecCreate
from service.files import service as files
from service.reviews.fetch import BASE_REF, HEAD_REF
from service.runtime.holder import RuntimeHolder

BUNDLE_PATH = "/work/.airlock-review.bundle"
REPO_DIR = "/work/repo"
BASE_DIR = "/work/base"
# Written by root: the tests (uid 1000) can read the plugin but never replace it.
PLUGIN_DIR = "/run/airlock-review"
PLUGIN_SOURCE = Path(__file__).with_name("results_plugin.py")
UNITTEST_SOURCE = Path(__file__).with_name("results_unittest.py")
RESULTS_CAP = 8 << 20
CONFIG_CAP = 256 << 10
ROOT = "0:0"
STEP_TIMEOUT_S = 120.0
PATCH_CAP = 256 << 10
OUTPUT_CAP = 1 << 20
CHUNK = 1 << 20
# The environment of every step: the process otherwise gets none of the host's.
ENV = {"HOME": "/home/sandbox", "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1"}

# $1: the bundle. A fresh repository, the two refs from the bundle, the head checked out.
CHECKOUT_SCRIPT = f"""set -e
git init --quiet --initial-branch=review {REPO_DIR}
cd {REPO_DIR}
git fetch --quiet --no-tags "$1" '+refs/review/*:refs/review/*'
rm -f -- "$1"
git -c advice.detachedHead=false checkout --quiet --detach {HEAD_REF}
git -c advice.detachedHead=false worktree add --quiet --detach {BASE_DIR} {BASE_REF}
git rev-parse '{HEAD_REF}^{{commit}}'
git merge-base {BASE_REF} {HEAD_REF} || git rev-parse '{BASE_REF}^{{commit}}'
"""
# As root: end every process but the agent (PID 1), which survives it.
KILL_ALL = "kill -9 -1 2>/dev/null; exit 0"
# As root, every other process killed first: the results file, if it is a plain file.
READ_RESULTS = """kill -9 -1 2>/dev/null
if [ -f "$1" ] && [ ! -L "$1" ]; then exec /bin/cat -- "$1"; fi
"""
INSTALL_PLUGIN = f"""umask 022
/bin/mkdir -p {PLUGIN_DIR}
/bin/cat > "{PLUGIN_DIR}/$1.py"
"""
# stdin: one `rev:path` a line. Every blob's bytes, in git's batch format, as base64 text.
READ_BLOBS = """f=$(mktemp) || exit 1
git cat-file --batch >"$f" && base64 -w0 "$f"
status=$?
rm -f -- "$f"
exit $status
"""
RANGE = f"{BASE_REF}...{HEAD_REF}"
DIFF_OPTIONS = ["--no-ext-diff", "--no-textconv", "--no-color"]


@dataclass(frozen=True)
class Box:
    """A running sandbox of the review, and what is needed to act in it as the tenant."""

    db: files.Db
    holder: RuntimeHolder
    runner: ExecRunner
    principal: Principal
    ctx: AuditContext
    sandbox_id: str
    # The tenant's longest exec: the fixed steps' deadline never exceeds it.
    max_timeout_s: float = STEP_TIMEOUT_S

    @property
    def step_timeout_s(self) -> float:
        return min(STEP_TIMEOUT_S, self.max_timeout_s)

    async def run(
        self,
        argv: list[str],
        *,
        timeout_s: float,
        cwd: str = REPO_DIR,
        output_cap: int = OUTPUT_CAP,
        env: dict[str, str] | None = None,
        user: str | None = None,
        stdin: str | None = None,
    ) -> Exec:
        data = ExecCreate(
            cmd=argv,
            cwd=cwd,
            env={**ENV, **(env or {})},
            timeout_s=timeout_s,
            max_output_bytes=output_cap,
            user=user,
            stdin=stdin,
        )
        result, _ = await execs.create_exec(
            self.db, self.runner, self.principal, self.ctx, self.sandbox_id, data, None
        )
        return result

    async def upload(self, bundle: Path, size: int) -> None:
        await files.upload_file(
            self.db,
            self.holder,
            self.runner.wake,
            self.principal,
            self.ctx,
            self.sandbox_id,
            BUNDLE_PATH,
            _chunks(bundle),
            content_length=size,
            mode=0o600,
        )

    async def checkout(self) -> Exec:
        argv = ["/bin/sh", "-c", CHECKOUT_SCRIPT, "sh", BUNDLE_PATH]
        return await self.run(argv, timeout_s=self.step_timeout_s, cwd="/work")

    async def numstat(self) -> Exec:
        argv = ["git", "diff", *DIFF_OPTIONS, "--numstat", RANGE]
        return await self.run(argv, timeout_s=self.step_timeout_s)

    async def patch(self) -> Exec:
        argv = ["git", "diff", *DIFF_OPTIONS, RANGE]
        return await self.run(argv, timeout_s=self.step_timeout_s, output_cap=PATCH_CAP)

    async def changed_paths(self) -> Exec:
        """Every path the change touches, a rename as its two paths, NUL-separated."""
        argv = ["git", "diff", *DIFF_OPTIONS, "--no-renames", "--name-only", "-z", RANGE]
        return await self.run(argv, timeout_s=self.step_timeout_s, output_cap=RESULTS_CAP)

    async def show_file(self, rev: str, path: str) -> Exec:
        """One file's content at `rev` (a non-zero exit when it has none there)."""
        argv = ["git", "cat-file", "blob", f"{rev}:{path}"]
        return await self.run(argv, timeout_s=self.step_timeout_s, output_cap=CONFIG_CAP)

    async def blobs(self, names: list[str]) -> Exec:
        """Many files' content at once (`rev:path` each), read by `parse_blobs`."""
        argv = ["/bin/sh", "-c", READ_BLOBS]
        stdin = "".join(f"{name}\n" for name in names)
        return await self.run(
            argv, timeout_s=self.step_timeout_s, output_cap=RESULTS_CAP, stdin=stdin
        )

    async def kill_all(self) -> Exec:
        argv = ["/bin/sh", "-c", KILL_ALL]
        return await self.run(argv, timeout_s=self.step_timeout_s, cwd="/", user=ROOT)

    async def install_plugin(self, test: list[str]) -> str:
        """The results plugin, under a name the repository cannot know; returns the name. For a
        `python -m unittest` command, the unittest runner that writes the same records too,
        as `<name>_unittest`."""
        name = f"airlock_results_{secrets.token_hex(8)}"
        sources = [(name, PLUGIN_SOURCE)]
        if unittest_argv(test, name) is not None:
            sources.append((f"{name}_unittest", UNITTEST_SOURCE))
        for module, path in sources:
            source = await asyncio.to_thread(path.read_text)
            argv = ["/bin/sh", "-c", INSTALL_PLUGIN, "sh", module]
            result = await self.run(
                argv, timeout_s=self.step_timeout_s, cwd="/", user=ROOT, stdin=source
            )
            if not ended_ok(result):
                raise RuntimeError(f"installing the results plugin: {describe(result)}")
        return name

    async def run_tests(
        self, argv: list[str], *, plugin: str, cwd: str, timeout_s: float
    ) -> tuple[Exec, Exec]:
        """The test command with the plugin loaded, and then (as root, every process of the
        run killed first) its results file read out."""
        results = f"/tmp/airlock-results-{secrets.token_hex(12)}.jsonl"  # noqa: S108
        env = {
            "PYTHONPATH": PLUGIN_DIR,
            "PYTEST_ADDOPTS": f"-p {plugin}",
            "AIRLOCK_REVIEW_RESULTS": results,
        }
        argv = unittest_argv(argv, plugin) or argv
        result = await self.run(argv, timeout_s=timeout_s, cwd=cwd, env=env)
        read = ["/bin/sh", "-c", READ_RESULTS, "sh", results]
        found = await self.run(
            read, timeout_s=self.step_timeout_s, cwd="/", user=ROOT, output_cap=RESULTS_CAP
        )
        return result, found


async def _chunks(path: Path) -> AsyncIterator[bytes]:
    with path.open("rb") as handle:
        while True:
            chunk = await asyncio.to_thread(handle.read, CHUNK)
            if not chunk:
                return
            yield chunk


def unittest_argv(argv: list[str], plugin: str) -> list[str] | None:
    """`python -m unittest ARGS` as the review runs it (`python -m <plugin>_unittest ARGS`),
    or None for any other command."""
    if (
        len(argv) >= 3
        and Path(argv[0]).name.startswith("python")
        and argv[1:3]
        == [
            "-m",
            "unittest",
        ]
    ):
        return [argv[0], "-m", f"{plugin}_unittest", *argv[3:]]
    return None


def parse_blobs(text: str, count: int) -> list[bytes | None]:
    """The `count` blobs `READ_BLOBS` printed, None for a name git did not find."""
    data = base64.b64decode(text, validate=True)
    found: list[bytes | None] = []
    at = 0
    while len(found) < count:
        end = data.index(b"\n", at)
        header = data[at:end].split(b" ")
        if header[-1] == b"missing" or len(header) != 3:
            found.append(None)
            at = end + 1
            continue
        size = int(header[2])
        found.append(data[end + 1 : end + 1 + size])
        at = end + 1 + size + 1
    return found


def ended_ok(result: Exec) -> bool:
    return result.outcome == "exited" and result.exit_code == 0


def describe(result: Exec) -> str:
    if result.outcome is None:
        return f"did not run: {result.error or result.state}"
    if result.outcome != "exited":
        return f"ended {result.outcome}"
    return f"exit code {result.exit_code}"


def output_of(result: Exec, cap: int) -> str:
    """stdout then stderr, keeping the end when it is too long (the end of a test run is
    its summary)."""
    text = result.stdout or ""
    if result.stderr:
        text += ("" if text.endswith("\n") or not text else "\n") + result.stderr
    if result.stdout_truncated or result.stderr_truncated:
        text += "\n[output capped by the sandbox]\n"
    data = text.encode()
    if len(data) > cap:
        cut = len(data) - cap
        text = f"[first {cut} bytes cut]\n" + data[cut:].decode(errors="ignore")
    return text


def parse_numstat(text: str, cap: int = 8000) -> tuple[int, int, int, str]:
    """(files, insertions, deletions, `path +N -M` lines) from `git diff --numstat`."""
    files = insertions = deletions = 0
    lines = []
    for line in text.splitlines():
        parts = line.split("\t", 2)
        if len(parts) != 3:
            continue
        added, removed, path = parts
        files += 1
        if added.isdigit() and removed.isdigit():
            insertions += int(added)
            deletions += int(removed)
            lines.append(f"{path} +{added} -{removed}")
        else:
            lines.append(f"{path} (binary)")
    stat = "\n".join(lines)
    if len(stat) > cap:
        stat = stat[:cap] + "\n[cut]"
    return files, insertions, deletions, stat
