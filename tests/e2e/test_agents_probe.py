"""airlock-agents against the contract the OpenAI Agents SDK's own sandbox backends keep (its
`BaseSandboxSession`): commands, file reads and writes, patches, listing, the workspace's
confinement (`..`, absolute paths, and symlinks resolved inside the sandbox), the workspace as
a tar, and a session resumed on its running sandbox. Backend-neutral checks, each on its own,
run on one sandbox of a real server on gVisor (made once for the module, deleted at its end).
"""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import tarfile
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from agents.editor import ApplyPatchOperation
from agents.sandbox import Manifest
from agents.sandbox.errors import (
    ExecTimeoutError,
    InvalidManifestPathError,
    WorkspaceArchiveWriteError,
    WorkspaceReadNotFoundError,
)
from agents.sandbox.session import SandboxSession
from airlock_agents import AirlockSandboxClient, AirlockSandboxClientOptions

from tests.e2e.conftest import Airlock

REPO = Path(__file__).resolve().parents[2]
# Outside the workspace (/work) but in the sandbox's own filesystem, where a link can point.
OUTSIDE = "/tmp/outside"

Check = Callable[[SandboxSession], Awaitable[None]]
CHECKS: dict[str, Check] = {}


def check(fn: Check) -> Check:
    CHECKS[fn.__name__] = fn
    return fn


@dataclass(frozen=True)
class Probed:
    client: AirlockSandboxClient
    session: SandboxSession
    key: str


@pytest.fixture(scope="module")
async def probed(airlock: Airlock) -> AsyncIterator[Probed]:
    tenant = await airlock.tenant()
    client = AirlockSandboxClient(url=airlock.server.url, api_key=tenant.key)
    options = AirlockSandboxClientOptions(ttl=900, env={"PROBE_GREETING": "hello"})
    session = await client.create(manifest=Manifest(root="/work"), options=options)
    tenant.sandboxes.append(session.state.sandbox_id)
    async with session:  # its end deletes the sandbox
        made = await session.exec(f"mkdir -p {OUTSIDE} && echo secret > {OUTSIDE}/secret")
        assert made.ok(), made.stderr
        yield Probed(client, session, tenant.key)


async def sh(session: SandboxSession, command: str) -> str:
    done = await session.exec(command)
    assert done.ok(), (command, done.exit_code, done.stderr)
    return done.stdout.decode()


async def absent(session: SandboxSession, path: str) -> bool:
    return (await session.exec(f"test ! -e {path} && test ! -L {path}")).ok()


async def text(session: SandboxSession, path: str) -> str:
    return (await session.read(Path(path))).read().decode()


@asynccontextmanager
async def links(session: SandboxSession, **targets: str) -> AsyncIterator[None]:
    """Symlinks in the workspace, by name, for the time of one check (a workspace that keeps a
    link out of it is not one the SDK restores from a tar)."""
    made = " && ".join(f"ln -sfn {target} {name}" for name, target in targets.items())
    await sh(session, made)
    try:
        yield
    finally:
        await sh(session, "rm -f " + " ".join(targets))


# -- commands ------------------------------------------------------------------------------


@check
async def exec_returns_stdout_and_exit_code(s: SandboxSession) -> None:
    done = await s.exec("echo out; echo err >&2; exit 3")
    assert (done.stdout, done.stderr, done.exit_code, done.ok()) == (b"out\n", b"err\n", 3, False)


@check
async def exec_without_a_shell_passes_argv_as_is(s: SandboxSession) -> None:
    done = await s.exec("printf", "[%s]", "a b", "$HOME", shell=False)
    assert done.stdout == b"[a b][$HOME]"


@check
async def exec_runs_in_the_workspace_with_the_session_env(s: SandboxSession) -> None:
    assert await sh(s, 'pwd; echo "$PROBE_GREETING"') == "/work\nhello\n"


@check
async def exec_past_its_timeout_raises_exec_timeout(s: SandboxSession) -> None:
    with pytest.raises(ExecTimeoutError):
        await s.exec("sleep 30", timeout=1)


@check
async def exec_as_a_named_user_runs_as_its_uid(s: SandboxSession) -> None:
    assert (await s.exec("id -u", user="nobody")).stdout == b"65534\n"


@check
async def pty_exec_gives_a_terminal(s: SandboxSession) -> None:
    assert s.supports_pty()
    update = await s.pty_exec_start("tty", tty=True, yield_time_s=5)
    assert "/dev/pts/" in update.output.decode(), update


# -- files ---------------------------------------------------------------------------------


@check
async def write_then_read_gives_the_same_bytes(s: SandboxSession) -> None:
    payload = bytes(range(256)) * 4
    await s.write(Path("bytes.bin"), io.BytesIO(payload))
    assert (await s.read(Path("bytes.bin"))).read() == payload
    assert await sh(s, "wc -c < bytes.bin") == "1024\n"  # the file commands see


@check
async def write_makes_missing_directories(s: SandboxSession) -> None:
    await s.write(Path("deep/er/file.txt"), io.BytesIO(b"deep\n"))
    assert await sh(s, "cat deep/er/file.txt") == "deep\n"


@check
async def relative_and_absolute_workspace_paths_are_one_file(s: SandboxSession) -> None:
    await s.write(Path("same.txt"), io.BytesIO(b"one\n"))
    assert await text(s, "/work/same.txt") == "one\n"


@check
async def reading_a_missing_file_raises_not_found(s: SandboxSession) -> None:
    with pytest.raises(WorkspaceReadNotFoundError):
        await s.read(Path("no/such/file"))


@check
async def ls_mkdir_mv_rm_act_in_the_workspace(s: SandboxSession) -> None:
    await s.mkdir(Path("tree/a"), parents=True)
    await s.write(Path("tree/a/x.txt"), io.BytesIO(b"x"))
    await s.mv(Path("tree/a/x.txt"), Path("tree/y.txt"))
    names = {Path(e.path).name: e.is_dir() for e in await s.ls(Path("tree"))}
    assert names == {"a": True, "y.txt": False}
    await s.rm(Path("tree"), recursive=True)
    assert await absent(s, "/work/tree")


# -- patches -------------------------------------------------------------------------------


@check
async def apply_patch_creates_updates_and_deletes(s: SandboxSession) -> None:
    await s.apply_patch(ApplyPatchOperation(type="create_file", path="p.txt", diff="+one\n+two\n"))
    assert (await text(s, "p.txt")).splitlines() == ["one", "two"]
    update = "@@\n one\n-two\n+three\n"
    await s.apply_patch(ApplyPatchOperation(type="update_file", path="p.txt", diff=update))
    assert (await text(s, "p.txt")).splitlines() == ["one", "three"]
    await s.apply_patch(ApplyPatchOperation(type="delete_file", path="p.txt"))
    assert await absent(s, "/work/p.txt")


# -- confinement ---------------------------------------------------------------------------


@check
async def dot_dot_out_of_the_workspace_is_refused(s: SandboxSession) -> None:
    with pytest.raises(InvalidManifestPathError):
        await s.read(Path("../tmp/outside/secret"))
    with pytest.raises(InvalidManifestPathError):
        await s.write(Path("../tmp/outside/new"), io.BytesIO(b"x"))


@check
async def absolute_paths_outside_the_workspace_are_refused(s: SandboxSession) -> None:
    with pytest.raises(InvalidManifestPathError):
        await s.read(Path(f"{OUTSIDE}/secret"))
    with pytest.raises(InvalidManifestPathError):
        await s.write(Path(f"{OUTSIDE}/new"), io.BytesIO(b"x"))


@check
async def reading_through_a_symlink_out_of_the_workspace_is_refused(s: SandboxSession) -> None:
    async with links(s, out_r=OUTSIDE, secret_r=f"{OUTSIDE}/secret"):
        for path in ("out_r/secret", "secret_r"):
            with pytest.raises(InvalidManifestPathError):
                await s.read(Path(path))


@check
async def writing_through_a_symlink_out_of_the_workspace_is_refused(s: SandboxSession) -> None:
    async with links(s, out_w=OUTSIDE, secret_w=f"{OUTSIDE}/secret"):
        with pytest.raises(InvalidManifestPathError):
            await s.write(Path("out_w/new"), io.BytesIO(b"x"))
        with pytest.raises(InvalidManifestPathError):
            await s.write(Path("secret_w"), io.BytesIO(b"overwritten\n"))
    assert await absent(s, f"{OUTSIDE}/new")
    assert await sh(s, f"cat {OUTSIDE}/secret") == "secret\n"


@check
async def patching_through_a_symlink_out_of_the_workspace_is_refused(s: SandboxSession) -> None:
    create = ApplyPatchOperation(type="create_file", path="out_p/patched", diff="+x\n")
    update = ApplyPatchOperation(
        type="update_file", path="out_p/secret", diff="@@\n-secret\n+own\n"
    )
    async with links(s, out_p=OUTSIDE):
        for operation in (create, update):
            with pytest.raises(InvalidManifestPathError):
                await s.apply_patch(operation)
    assert await absent(s, f"{OUTSIDE}/patched")
    assert await sh(s, f"cat {OUTSIDE}/secret") == "secret\n"


@check
async def symlinks_within_the_workspace_are_followed(s: SandboxSession) -> None:
    await sh(
        s, "mkdir -p real && echo inside > real/f && ln -sfn real alias && ln -sfn ../real real/up"
    )
    assert await text(s, "alias/f") == "inside\n"
    await s.write(Path("alias/g"), io.BytesIO(b"via alias\n"))
    assert await sh(s, "cat real/g") == "via alias\n"
    assert await text(s, "real/up/f") == "inside\n"


# -- the workspace as a tar, and resuming --------------------------------------------------


@check
async def persisted_workspace_hydrates_back(s: SandboxSession) -> None:
    await s.write(Path("kept/k.txt"), io.BytesIO(b"kept\n"))
    archive = (await s.persist_workspace()).read()
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        assert any(n.removeprefix("./") == "kept/k.txt" for n in tar.getnames())
    await sh(s, "rm -r kept")
    await s.hydrate_workspace(io.BytesIO(archive))
    assert await text(s, "kept/k.txt") == "kept\n"


@check
async def hydrating_an_escaping_tar_is_refused(s: SandboxSession) -> None:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        member = tarfile.TarInfo("../escaped.txt")
        member.size = 1
        tar.addfile(member, io.BytesIO(b"x"))
    with pytest.raises(WorkspaceArchiveWriteError):
        await s.hydrate_workspace(io.BytesIO(out.getvalue()))
    assert await absent(s, "/escaped.txt")


@pytest.mark.parametrize("name", sorted(CHECKS))
async def test_sandbox_contract(probed: Probed, name: str) -> None:
    await CHECKS[name](probed.session)


async def test_resume_reattaches_to_the_running_sandbox(probed: Probed) -> None:
    client, s = probed.client, probed.session
    await s.write(Path("before-resume.txt"), io.BytesIO(b"still here\n"))
    saved = client.serialize_session_state(s.state)
    assert probed.key not in str(saved)  # the credential stays with the client
    resumed = await client.resume(client.deserialize_session_state(saved))
    try:
        assert resumed.state.sandbox_id == s.state.sandbox_id
        assert await resumed.running()
        assert (await resumed.read(Path("before-resume.txt"))).read() == b"still here\n"
    finally:  # only the connection: the sandbox is the module's session's to delete
        await resumed._inner.sandbox.close()


def readme_example() -> str:
    readme = (REPO / "clients/agents/README.md").read_text()
    return re.findall(r"```python\n(.*?)```", readme, re.DOTALL)[0]


def test_the_readme_example_runs(airlock: Airlock, probed: Probed) -> None:
    env = {**os.environ, "AIRLOCK_URL": airlock.server.url, "AIRLOCK_API_KEY": probed.key}
    done = subprocess.run(
        [sys.executable, "-c", readme_example()],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "hello from airlock\n"
