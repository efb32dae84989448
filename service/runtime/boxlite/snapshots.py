"""BoxLite snapshots: exports (a flattened disk archive, `<home>-snapshots/snap-*.boxlite`
beside a JSON record); a sandbox from one is an import of that archive. Files carry over,
running processes do not (see README.md for why not the other BoxLite primitives)."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import Any

import msgspec

from .. import records
from ..errors import InvalidSpec, SandboxBusy, SandboxRuntimeError, SnapshotNotFound
from ..types import SandboxInfo, SandboxSpec, SnapshotInfo
from .core import Core, Sandbox
from .errors import typed_error
from .native import bounded

ARCHIVE_TIMEOUT_S = 600.0  # export (snapshot) and import (sandbox from a snapshot)


class Snapshots(Core):
    archive_timeout_s: float

    def _snapshot_paths(self, snapshot_id: str) -> tuple[Path, Path]:
        base = self.snapshots_dir / records.check_snapshot_id(snapshot_id)
        return base.with_suffix(".json"), base.with_suffix(".boxlite")

    def _snapshot_info(self, meta: dict[str, Any], archive: Path) -> SnapshotInfo:
        return records.snapshot_info(meta, self.name, archive.stat().st_size)

    async def snapshot(self, sandbox_id: str) -> SnapshotInfo:
        """Export the box's disk (BoxLite pauses the VM for the flatten, then resumes it).

        Refused while an exec runs (SandboxBusy); work arriving meanwhile waits for it.
        """
        sandbox = self._sandbox(sandbox_id)
        async with sandbox.lock:
            sandbox.ready.clear()
            try:
                if sandbox.busy:
                    raise SandboxBusy(f"sandbox {sandbox_id} has running execs")
                return await self._export(sandbox)
            finally:
                sandbox.ready.set()

    async def _export(self, sandbox: Sandbox) -> SnapshotInfo:
        snapshot_id = records.new_snapshot_id()
        record, archive = self._snapshot_paths(snapshot_id)
        self.snapshots_dir.mkdir(parents=True, exist_ok=True)
        try:
            await bounded(sandbox.box.export(dest=str(archive)), self.archive_timeout_s)
        except BaseException as exc:
            archive.unlink(missing_ok=True)
            if isinstance(exc, TimeoutError):
                raise SandboxRuntimeError(
                    f"boxlite export of {sandbox.info.id} did not finish within "
                    f"{self.archive_timeout_s:g} s"
                ) from None
            if isinstance(exc, Exception):
                raise typed_error(exc, "export", sandbox_id=sandbox.info.id) from exc
            raise
        info = sandbox.info
        meta = {
            "id": snapshot_id,
            "sandbox_id": info.id,
            "image": info.image,
            "image_digest": info.image_digest,
            "spec": msgspec.to_builtins(info.spec),
            "created_at": time.time(),
        }
        records.write_json(record, meta)
        return self._snapshot_info(meta, archive)

    def _load_snapshot(self, snapshot_id: str) -> tuple[dict[str, Any], Path]:
        record, archive = self._snapshot_paths(snapshot_id)
        meta = records.read_snapshot(record, snapshot_id)
        if not archive.is_file():
            raise SnapshotNotFound(snapshot_id)
        return meta, archive

    async def _import(self, snapshot_id: str) -> Any:
        """A new, stopped box from the snapshot's archive (its own flattened disk)."""
        _, archive = self._load_snapshot(snapshot_id)
        try:
            return await bounded(
                self._runtime.import_box(str(archive), None), self.archive_timeout_s
            )
        except TimeoutError:
            raise SandboxRuntimeError(
                f"boxlite import of {snapshot_id} did not finish within "
                f"{self.archive_timeout_s:g} s"
            ) from None
        except Exception as exc:
            raise typed_error(exc, "import", snapshot_id=snapshot_id) from exc

    async def create_from_snapshot(
        self, snapshot_id: str, private: list[str] | None = None
    ) -> SandboxInfo:
        meta, _ = self._load_snapshot(snapshot_id)
        spec = msgspec.convert(meta["spec"], SandboxSpec)
        if private is not None and spec.network != "none" and private != spec.network_private:
            # An imported box keeps the network options it was made with.
            raise InvalidSpec(
                "the boxlite runtime cannot start a networked sandbox from a snapshot with "
                "private ranges other than those granted when it was taken"
            )
        box = await self._import(snapshot_id)
        await self._start_box(box)
        info = SandboxInfo(
            id=box.id,
            runtime=self.name,
            image=meta["image"],
            image_digest=meta["image_digest"],
            spec=spec,
            state="running",
            created_at=time.time(),
            from_snapshot=snapshot_id,
        )
        return self._track(box, info).info

    async def list_snapshots(self) -> list[SnapshotInfo]:
        found = []
        for record in sorted(self.snapshots_dir.glob(f"{records.SNAPSHOT_PREFIX}*.json")):
            with contextlib.suppress(SnapshotNotFound, KeyError, OSError, ValueError):
                meta, archive = self._load_snapshot(record.stem)
                found.append(self._snapshot_info(meta, archive))
        return found

    async def delete_snapshot(self, snapshot_id: str) -> None:
        record, archive = self._snapshot_paths(snapshot_id)
        record.unlink(missing_ok=True)
        archive.unlink(missing_ok=True)
