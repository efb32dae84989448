"""`sbx cp`: files and directories in either direction, with cp's rules for targets: a target
that ends in `/` or names an existing directory receives the source under its own name."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path, PurePosixPath

import click

from .. import errors
from ..sandbox import Sandbox
from .base import Context, Failure, context_of, json_option, main


def _remote(spec: str) -> tuple[str, str] | None:
    """`ID:/path` (or `ID:relative/to/work`) → (id, path); a local path → None."""
    head, sep, tail = spec.partition(":")
    if sep and head and "/" not in head and not Path(spec).exists():
        return head, tail or "/work"
    return None


@main.command()
@click.argument("source")
@click.argument("target")
@json_option
@click.pass_context
def cp(ctx: click.Context, source: str, target: str, as_json: bool) -> None:
    """Copy files or directories: `sbx cp ./dir ID:/work/dir`, `sbx cp ID:/work/out ./out`.
    A target ending in `/` or naming an existing directory gets the source inside it, under
    its own name (as cp and scp do)."""
    c = context_of(ctx, as_json)
    src, dst = _remote(source), _remote(target)
    if (src is None) == (dst is None):
        raise click.UsageError("one side must be ID:/path in a sandbox, the other a local path")
    started = time.monotonic()
    try:
        if dst is not None:
            kind, size = _upload(c, source, *dst)
        else:
            assert src is not None
            kind, size = _download(c, *src, target)
    except OSError as exc:  # the local side: missing, not a directory, not allowed...
        raise Failure(f"{exc.filename or source}: {(exc.strerror or str(exc)).lower()}") from exc
    took = time.monotonic() - started
    if c.as_json:
        c.emit({"event": "copied", "kind": kind, "source": source, "target": target, "bytes": size})
    else:
        # Both directions count what crossed the wire: a file's bytes, a directory's tar archive.
        c.progress(f"copied {kind} {source} → {target}: {size} bytes in {took:.1f} s")


def _upload(c: Context, source: str, sandbox_id: str, remote: str) -> tuple[str, int]:
    local = Path(source)
    if not local.exists():
        raise Failure(f"{source}: no such file or directory")
    with contextlib.closing(c.sandbox(sandbox_id)) as sandbox:
        remote = _into(sandbox, remote, local.resolve().name, f"{sandbox_id}:{remote}")
        if local.is_dir():
            c.progress(f"uploading {local}/ to {sandbox_id}:{remote}…")
            return "directory", sandbox.files.upload_dir(local, remote)
        return "file", sandbox.files.upload(local, remote)


def _download(c: Context, sandbox_id: str, remote: str, target: str) -> tuple[str, int]:
    with contextlib.closing(c.sandbox(sandbox_id)) as sandbox:
        kind = _kind(sandbox, remote)
        if kind is None:
            raise Failure(f"{sandbox_id}:{remote}: no such file or directory")
        local = Path(target)
        if target.endswith("/") or local.is_dir():
            if not local.is_dir():
                raise Failure(f"{target}: no such directory")
            local = local / (PurePosixPath(remote).name or "root")
        if kind == "dir":
            c.progress(f"downloading {sandbox_id}:{remote} to {local}/…")
            return "directory", sandbox.files.download_dir(remote, local)
        return "file", sandbox.files.download(remote, local)


def _into(sandbox: Sandbox, remote: str, name: str, shown: str) -> str:
    """Where in the sandbox a source called `name` goes for the target `remote`."""
    kind = _kind(sandbox, remote)
    if remote.endswith("/"):
        if kind is None:
            raise Failure(f"{shown}: no such directory")
        if kind != "dir":
            raise Failure(f"{shown}: not a directory")
    if kind == "dir":
        return f"{remote.rstrip('/')}/{name}"
    return remote


def _kind(sandbox: Sandbox, remote: str) -> str | None:
    """`dir` for a directory of the sandbox, `other` for anything else there, None if nothing."""
    try:
        sandbox.files.list(remote)
        return "dir"
    except errors.NotFound:
        return None
    except (errors.ValidationFailed, errors.Conflict):
        return "other"
