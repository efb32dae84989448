"""A suspended tenant's running work stops on the node that runs it (service.tenants.suspension
has the rest: queued work, and why nothing comes back).

Every `interval_s` each runner of this node is asked to stop what it runs for a tenant that is
suspended now: the template builder its build, the review runner its reviews, and the execs
this process runs are killed. Each says why in its record (`cancelled: the tenant was
suspended`). A pass where nothing runs asks the database nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from typing import Any, Protocol

from sqlalchemy import Row, select

from service.audit.recorder import AuditContext, record
from service.db.models import Exec, Sandbox
from service.db.session import Db
from service.execs.runner import ExecRunner
from service.periodic import PeriodicJob
from service.runtime import SandboxRuntimeError
from service.sandboxes.states import State
from service.tenants.suspension import REASON, suspended_tenants

log = logging.getLogger("airlock.jobs.suspended")

SYSTEM = AuditContext(actor="system:suspension", request_id=None, client=None)
# How long a pass waits for a killed exec to be recorded as ended.
KILL_WAIT_S = 10.0


class Stoppable(Protocol):
    async def stop_suspended(self) -> None:
        """Stop what runs here for tenants suspended now, recording why."""
        ...


class SuspendedWork(PeriodicJob):
    name = "suspended-work"

    def __init__(self, runners: Sequence[Stoppable], interval_s: float = 1.0) -> None:
        super().__init__(interval_s)
        self.runners = runners

    async def run_once(self) -> bool:
        for runner in self.runners:
            try:
                await runner.stop_suspended()
            except Exception:  # one runner's failure does not keep the others running
                log.exception("stopping the suspended tenants' work of %s failed", runner)
        return False


class SuspendedExecs:
    """The execs this process runs, killed when their tenant is suspended."""

    def __init__(self, db: Db, runner: ExecRunner) -> None:
        self.db = db
        self.runner = runner

    async def stop_suspended(self) -> None:
        if not self.runner.live:
            return
        async with self.db() as session:
            found = await session.execute(
                select(Exec.id, Exec.tenant_id, Exec.sandbox_id, Exec.runtime_exec_id,
                       Sandbox.runtime_id)
                .join(Sandbox, Sandbox.id == Exec.sandbox_id)
                .where(
                    Exec.id.in_(list(self.runner.live)),
                    Exec.state == "running",
                    Exec.tenant_id.in_(suspended_tenants()),
                    # A paused sandbox's execs are frozen: nothing of them runs to stop.
                    Sandbox.state == State.RUNNING.value,
                )
            )  # fmt: skip
            doomed = found.all()
        await asyncio.gather(*(self._kill(row) for row in doomed))

    async def _kill(self, row: Row[Any]) -> None:
        """Kill a running exec of a row read above, by its columns."""
        exec_id, tenant_id, sandbox_id = row.id, row.tenant_id, row.sandbox_id
        runtime_exec_id, runtime_id = row.runtime_exec_id, row.runtime_id
        async with self.db() as session, session.begin():
            await record(
                session, SYSTEM, chain=tenant_id, action="exec.kill", target=exec_id,
                details={"sandbox_id": sandbox_id, "reason": REASON},
            )  # fmt: skip
        if runtime_exec_id is not None and runtime_id is not None:
            with contextlib.suppress(SandboxRuntimeError):
                await self.runner.kill(exec_id, runtime_id, runtime_exec_id, reason=REASON)
        with contextlib.suppress(TimeoutError):  # one that outlives its kill: the next pass
            await asyncio.wait_for(self.runner.wait(exec_id), KILL_WAIT_S)
