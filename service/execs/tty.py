"""Execs under a pseudo-terminal (`tty`): refused before anything is written where the sandbox
cannot give one; resized through the API (`POST …/execs/{id}/resize`), which changes the
window and sends its foreground processes SIGWINCH."""

from __future__ import annotations

from service.errors import Conflict, NotFound
from service.execs.recording import Lookup
from service.execs.records import ExecRecords
from service.runtime import SandboxRuntime, TtyUnsupported
from service.sandboxes import service as sandboxes


class TtyNotEnabled(Conflict):
    code, title = "tty_not_enabled", "This exec has no terminal"


class ExecNotRunning(Conflict):
    code, title = "exec_not_running", "This exec is not running"


async def require_tty(
    records: ExecRecords,
    runtime: SandboxRuntime,
    facts: Lookup,
) -> None:
    """Refuse (a 422 `tty_unsupported`) an exec with a terminal in a sandbox that cannot give
    it one; `facts` as `RecordTx.facts` takes them."""
    async with records.unit() as tx:
        sandbox = await tx.facts(*facts)
    if sandbox is None:
        raise NotFound(f"no sandbox {facts.sandbox_id}")
    sandboxes.require_running(sandbox)
    if sandbox.runtime_id is None or not await runtime.tty_available(sandbox.runtime_id):
        raise TtyUnsupported(
            f"execs in this sandbox cannot have a terminal on the {runtime.name} runtime "
            "(on gVisor, terminals need python3 in the image for the exec agent)"
        )
