"""`sbx cp`: files and directories in either direction."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

import click

from .. import errors
from .base import context_of, json_option, main


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
    """Copy files or directories: `sbx cp ./dir ID:/work/dir`, `sbx cp ID:/work/out ./out`."""
    c = context_of(ctx, as_json)
    src, dst = _remote(source), _remote(target)
    if (src is None) == (dst is None):
        raise click.UsageError("one side must be ID:/path in a sandbox, the other a local path")
    started = time.monotonic()
    if dst is not None:
        with contextlib.closing(c.sandbox(dst[0])) as sandbox:
            local = Path(source)
            if local.is_dir():
                c.progress(f"uploading {local}/ to {dst[0]}:{dst[1]}…")
                size = sandbox.files.upload_dir(local, dst[1])
                kind = "directory"
            else:
                size = sandbox.files.upload(local, dst[1])
                kind = "file"
    else:
        assert src is not None
        with contextlib.closing(c.sandbox(src[0])) as sandbox:
            local = Path(target)
            try:
                sandbox.files.list(src[1])
                is_dir = True
            except (errors.NotFound, errors.ValidationFailed, errors.Conflict):
                is_dir = False
            if is_dir:
                c.progress(f"downloading {src[0]}:{src[1]} to {local}/…")
                sandbox.files.download_dir(src[1], local)
                size = sum(p.stat().st_size for p in local.rglob("*") if p.is_file())
                kind = "directory"
            else:
                if local.is_dir():
                    local = local / Path(src[1]).name
                size = sandbox.files.download(src[1], local)
                kind = "file"
    took = time.monotonic() - started
    if c.as_json:
        c.emit({"event": "copied", "kind": kind, "source": source, "target": target, "bytes": size})
    else:
        c.progress(f"copied {kind} {source} → {target}: {size} bytes in {took:.1f} s")
