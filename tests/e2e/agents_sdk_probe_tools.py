"""The workspace, manifest and probe tools of tests/e2e/test_agents_sdk_probe.py: what the
scripted model calls, each a named step that checks the session it is bound to."""

from __future__ import annotations

import io
import tarfile
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path

from agents import function_tool
from agents.editor import ApplyPatchOperation
from agents.sandbox.capabilities import Capability
from agents.sandbox.entries import (
    AzureBlobMount,
    Dir,
    File,
    GCSMount,
    GitRepo,
    InContainerMountStrategy,
    LocalDir,
    LocalFile,
    R2Mount,
    RcloneMountPattern,
    S3Mount,
)
from agents.sandbox.errors import (
    ApplyPatchPathError,
    InvalidManifestPathError,
    WorkspaceReadNotFoundError,
)
from agents.sandbox.files import EntryKind
from agents.sandbox.manifest import Manifest
from agents.sandbox.session.base_sandbox_session import BaseSandboxSession
from agents.sandbox.workspace_paths import SandboxPathGrant
from agents.tool import Tool

ENTRY_TYPES = {"file", "dir", "local_file", "local_dir", "git_repo"} | {
    f"{kind}_mount" for kind in ("s3", "gcs", "r2", "azure_blob")
}
MANIFEST_TEXTS = {
    "inline.txt": "inline file v1\n",
    "delete_me.txt": "delete me v1\n",
    "tree/nested.txt": "nested file v1\n",
    "copied_file.txt": "local file source v1\n",
    "copied_dir/child.txt": "local dir child v1\n",
    "copied_dir/nested/grandchild.txt": "local dir grandchild v1\n",
    "repo/README.md": "mock git repo readme v1\n",
    "repo/pkg/module.py": "VALUE = 'mock git module v1'\n",
}
EPHEMERAL_TEXTS = {"tree/ephemeral.txt": "ephemeral file v1\n"}
MOUNT_TEXTS = {
    f"mounts/{m}/.mock-rclone-mounted": "mock rclone mount\n" for m in ("s3", "gcs", "r2", "azure")
}
ARCHIVE_TEXTS = {"archive_dir/hello.txt": "hello from tar archive\n"}
RUNTIME_TEXTS = {"runtime_note.txt": "runtime note v1\n"}
PATCHED_TEXTS = {"inline.txt": "inline file v2\n", "created_by_patch.txt": "created by patch"}
TREE_DIRS = {
    "archive_dir",
    "copied_dir",
    "copied_dir/nested",
    "mounts",
    "repo",
    "repo/pkg",
    "tree",
} | {f"mounts/{m}" for m in ("s3", "gcs", "r2", "azure")}
TREE_FILES = (
    set(MANIFEST_TEXTS) - {"delete_me.txt"}
    | set(EPHEMERAL_TEXTS)
    | set(MOUNT_TEXTS)
    | set(ARCHIVE_TEXTS)
    | set(RUNTIME_TEXTS)
    | set(PATCHED_TEXTS)
    | {"bundle.tar"}
)
# Where the SDK's rclone pattern keeps a live mount's config; it is left out of snapshots.
RCLONE_CONFIG_DIR = ".sandbox-rclone-config"

# The external tools the manifest's git and mount entries run inside the sandbox (`session.exec`
# of `git clone …`, `sh -lc 'command -v rclone'`, `rclone mount REMOTE DEST …`, `fusermount3 -u`),
# faked by one script: it logs its call and makes what the real tool would have left behind. The
# fake `git clone` writes the checkout, so the SDK's own `cp -R` and `rm -rf` run for real.
MOCK_TOOLS = ("git", "rclone", "fusermount3", "blobfuse2", "mount-s3")
TOOL_LOG = "/tmp/probe-tool-calls.log"
MOCK_TOOL = f"""#!/bin/sh
tool=$(basename "$0")
echo "$tool $*" >> {TOOL_LOG}
for dest in "$@"; do :; done
case "$tool $1" in
  "git clone")
    mkdir -p "$dest/pkg"
    printf '%s\\n' 'mock git repo readme v1' > "$dest/README.md"
    printf '%s\\n' "VALUE = 'mock git module v1'" > "$dest/pkg/module.py" ;;
  "rclone mount")
    printf '%s\\n' 'mock rclone mount' > "$3/.mock-rclone-mounted" ;;
esac
"""
# Run as root: /usr/local/bin is on the PATH of every exec and of the login shells (`sh -lc`)
# the mount pattern uses, as if the image had the tools.
INSTALL_MOCK_TOOLS = f"""set -e
cat > /usr/local/bin/probe-tool <<'EOF'
{MOCK_TOOL}EOF
chmod 755 /usr/local/bin/probe-tool
for t in {" ".join(MOCK_TOOLS)}; do ln -sf probe-tool /usr/local/bin/$t; done
: > {TOOL_LOG}
chmod 666 {TOOL_LOG}
"""


def local_sources(tmp_path: Path) -> Path:
    root = tmp_path / "manifest-sources"
    (root / "local-dir" / "nested").mkdir(parents=True)
    (root / "local-file.txt").write_text(MANIFEST_TEXTS["copied_file.txt"])
    (root / "local-dir" / "child.txt").write_text(MANIFEST_TEXTS["copied_dir/child.txt"])
    (root / "local-dir" / "nested" / "grandchild.txt").write_text(
        MANIFEST_TEXTS["copied_dir/nested/grandchild.txt"]
    )
    return root


def every_entry_type(root: str, sources: Path) -> Manifest:
    def rclone() -> InContainerMountStrategy:
        return InContainerMountStrategy(pattern=RcloneMountPattern())

    def text(path: str, *, ephemeral: bool = False) -> File:
        return File(
            content={**MANIFEST_TEXTS, **EPHEMERAL_TEXTS}[path].encode(), ephemeral=ephemeral
        )

    return Manifest(
        root=root,
        extra_path_grants=(SandboxPathGrant(path=str(sources)),),
        entries={
            "inline.txt": text("inline.txt"),
            "delete_me.txt": text("delete_me.txt"),
            "tree": Dir(
                children={
                    "nested.txt": text("tree/nested.txt"),
                    "ephemeral.txt": text("tree/ephemeral.txt", ephemeral=True),
                }
            ),
            "copied_file.txt": LocalFile(src=sources / "local-file.txt"),
            "copied_dir": LocalDir(src=sources / "local-dir"),
            "repo": GitRepo(repo="openai/mock-sandbox-fixture", ref="main"),
            "mounts/s3": S3Mount(bucket="s3-bucket", mount_strategy=rclone()),
            "mounts/gcs": GCSMount(bucket="gcs-bucket", mount_strategy=rclone()),
            "mounts/r2": R2Mount(
                bucket="r2-bucket", account_id="r2-account-id", mount_strategy=rclone()
            ),
            "mounts/azure": AzureBlobMount(
                account="azure-account", container="azure-container", mount_strategy=rclone()
            ),
        },
    )


@asynccontextmanager
async def step(name: str) -> AsyncIterator[None]:
    """A failing check (or an error of the SDK or the client) names the probe step it is in."""
    try:
        yield
    except Exception as exc:
        if "probe step " in str(exc):
            raise  # already named by the step inside
        raise AssertionError(f"probe step {name!r}: {type(exc).__name__}: {exc}") from exc


async def read_text(session: BaseSandboxSession, path: str) -> str:
    payload = (await session.read(Path(path))).read()
    return payload.decode() if isinstance(payload, bytes) else str(payload)


async def texts_are(session: BaseSandboxSession, expected: Mapping[str, str]) -> None:
    found = {path: await read_text(session, path) for path in expected}
    assert found == dict(expected)


async def missing(session: BaseSandboxSession, path: str) -> None:
    try:
        await read_text(session, path)
    except WorkspaceReadNotFoundError:
        return
    raise AssertionError(f"{path} is still in the workspace")


async def refused(name: str, attempt: object, *kinds: type[Exception]) -> None:
    try:
        await attempt  # type: ignore[misc]
    except kinds:
        return
    raise AssertionError(f"{name} was not refused")


async def escapes_refused(session: BaseSandboxSession, path: str) -> None:
    where = f"{path!r}"
    await refused(f"read of {where}", read_text(session, path), InvalidManifestPathError)
    write = session.write(Path(path), io.BytesIO(b"outside write\n"))
    await refused(f"write of {where}", write, InvalidManifestPathError)
    patch = session.apply_patch(
        ApplyPatchOperation(type="create_file", path=path, diff="+outside patch\n")
    )
    await refused(f"patch of {where}", patch, ApplyPatchPathError, InvalidManifestPathError)


async def symlink_escape_refused(session: BaseSandboxSession) -> None:
    """A link in the workspace to a file beside it (upstream writes both on the host; here they
    are made in the sandbox: the target as root, since the workspace's parent is `/`, and the
    link as the sandbox's user, who owns the workspace)."""
    root = Path(session.state.manifest.root)
    outside, link = root.parent / "symlink-outside.txt", root / "symlink_escape.txt"
    made = await session.exec(f"echo 'outside symlink target' > {outside}", user="root")
    assert made.ok(), made.stderr
    try:
        linked = await session.exec("ln", "-s", str(outside), str(link), shell=False)
        assert linked.ok(), linked.stderr
        await escapes_refused(session, "symlink_escape.txt")
        assert await read_outside(session, outside) == "outside symlink target\n"
    finally:
        await session.exec("rm", "-f", str(link), shell=False)
        await session.exec("rm", "-f", str(outside), shell=False, user="root")


async def read_outside(session: BaseSandboxSession, path: Path) -> str:
    return (await session.exec("cat", str(path), shell=False)).stdout.decode()


async def workspace_tree(session: BaseSandboxSession) -> tuple[set[str], set[str]]:
    root = Path(session.state.manifest.root)
    dirs: set[str] = set()
    files: set[str] = set()

    async def walk(path: Path) -> None:
        for entry in await session.ls(path):
            rel = Path(entry.path)
            rel = rel.relative_to(root) if rel.is_absolute() else rel
            name = rel.as_posix()
            if entry.kind == EntryKind.DIRECTORY:
                if name.split("/")[0] != RCLONE_CONFIG_DIR:
                    dirs.add(name)
                    await walk(rel)
            else:
                assert entry.kind == EntryKind.FILE, (name, entry.kind)
                files.add(name)

    await walk(Path("."))
    return dirs, files


def tar_of(members: Mapping[str, str]) -> io.BytesIO:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for name, body in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(body.encode())
            tar.addfile(info, io.BytesIO(body.encode()))
    out.seek(0)
    return out


class Bound(Capability):
    def __init__(self, kind: str) -> None:
        super().__init__(type=kind)

    def bound(self) -> BaseSandboxSession:
        assert self.session is not None, f"{self.type} is not bound to a session"
        return self.session


class FileTools(Bound):
    """`write_file` / `read_file`: the workspace as the model sees it."""

    def __init__(self) -> None:
        super().__init__("probe-files")

    def tools(self) -> list[Tool]:
        @function_tool(failure_error_function=None)
        async def write_file(path: str, content: str) -> str:
            await self.bound().write(Path(path), io.BytesIO(content.encode()))
            return f"wrote {path}"

        @function_tool(failure_error_function=None)
        async def read_file(path: str) -> str:
            return await read_text(self.bound(), path)

        return [write_file, read_file]


class LifecycleTools(Bound):
    """The probe's checks, one tool each; a tool's name is its step's name."""

    def __init__(self) -> None:
        super().__init__("probe-lifecycle")

    def tools(self) -> list[Tool]:
        return [
            function_tool(check, failure_error_function=None)
            for check in (
                self.assert_manifest_materialized,
                self.apply_lifecycle_patch,
                self.assert_workspace_escape_blocked,
                self.extract_lifecycle_archive,
                self.start_lifecycle_pty,
                self.assert_restored_lifecycle_state,
            )
        ]

    async def assert_manifest_materialized(self) -> str:
        """Every built-in entry type is in the manifest and materialized in the workspace."""
        async with step("assert_manifest_materialized"):
            session = self.bound()
            assert {entry.type for _, entry in session.state.manifest.iter_entries()} == ENTRY_TYPES
            await texts_are(session, {**MANIFEST_TEXTS, **EPHEMERAL_TEXTS, **MOUNT_TEXTS})
        return "manifest materialized"

    async def apply_lifecycle_patch(self) -> str:
        """An update, a create and a delete in one apply_patch."""
        async with step("apply_lifecycle_patch"):
            session = self.bound()
            done = await session.apply_patch(
                [
                    ApplyPatchOperation(
                        type="update_file",
                        path="inline.txt",
                        diff="@@\n-inline file v1\n+inline file v2\n",
                    ),
                    ApplyPatchOperation(
                        type="create_file", path="created_by_patch.txt", diff="+created by patch\n"
                    ),
                    ApplyPatchOperation(type="delete_file", path="delete_me.txt"),
                ]
            )
            assert done == "Done!", done
            await patched(session)
        return "lifecycle patch applied"

    async def assert_workspace_escape_blocked(self) -> str:
        """`..`, an absolute path outside and a symlink out: read, write and patch refused."""
        async with step("assert_workspace_escape_blocked"):
            session = self.bound()
            for path in ("../outside.txt", "/tmp/sandbox-outside.txt"):
                await escapes_refused(session, path)
            await symlink_escape_refused(session)
        return "workspace escape blocked"

    async def extract_lifecycle_archive(self) -> str:
        async with step("extract_lifecycle_archive"):
            session = self.bound()
            await session.extract("bundle.tar", tar_of(ARCHIVE_TEXTS))
            await texts_are(session, ARCHIVE_TEXTS)
        return "archive extracted"

    async def start_lifecycle_pty(self) -> str:
        """A command on a terminal says it is ready, then echoes what its stdin is given."""
        async with step("start_lifecycle_pty"):
            session = self.bound()
            echo = (
                "printf 'ready\\n'; while IFS= read -r line; do printf 'got:%s\\n' \"$line\"; done"
            )
            started = await session.pty_exec_start(
                "sh", "-c", echo, shell=False, tty=True, yield_time_s=0.25
            )
            assert started.process_id is not None, started
            assert lines(started.output) == "ready\n"
            fed = await session.pty_write_stdin(
                session_id=started.process_id, chars="hello pty\n", yield_time_s=0.25
            )
            # The terminal echoes the line typed, then the command answers it.
            assert lines(fed.output) == "hello pty\ngot:hello pty\n"
            assert (fed.process_id, fed.exit_code) == (started.process_id, None)
        return "pty started and echoed stdin"

    async def assert_restored_lifecycle_state(self) -> str:
        """After the resume: the patched workspace, the archive, the ephemeral file and mounts,
        and exactly the expected tree."""
        async with step("assert_restored_lifecycle_state"):
            session = self.bound()
            assert {entry.type for _, entry in session.state.manifest.iter_entries()} == ENTRY_TYPES
            await patched(session)
            await texts_are(session, {**ARCHIVE_TEXTS, **EPHEMERAL_TEXTS, **MOUNT_TEXTS})
            dirs, files = await workspace_tree(session)
            assert sorted(dirs) == sorted(TREE_DIRS)
            assert sorted(files) == sorted(TREE_FILES)
        return "restored lifecycle state verified"


async def patched(session: BaseSandboxSession) -> None:
    kept = {p: t for p, t in MANIFEST_TEXTS.items() if p != "delete_me.txt"}
    await texts_are(session, {**kept, **RUNTIME_TEXTS, **PATCHED_TEXTS})
    await missing(session, "delete_me.txt")


def lines(output: bytes) -> str:
    return output.decode(errors="replace").replace("\r\n", "\n")
