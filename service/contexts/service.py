"""Execution contexts: a Python interpreter per context, kept running in the sandbox between
runs, held by the process that owns the sandbox (its routes are routed there). See README.md.

Each call looks the sandbox up for the caller (tenant and token binding) and, to create or run,
needs it running (a paused one is woken first, and its contexts go on from where they were).
A context is the tenant's for as long as its interpreter runs: it ends when deleted, when its
sandbox stops, when this process stops, or when a run overruns its deadline.
"""

from __future__ import annotations

import asyncio
import importlib.resources
import time
from dataclasses import dataclass

from service.contexts.live import ContextFacts, LiveContext, RunOutcome
from service.contexts.records import ContextRecords
from service.contexts.schemas import Context, ContextCreate, ContextList, Run, RunCreate, RunError
from service.contexts.schemas import RunResult as Shown
from service.db.base import utcnow
from service.errors import Conflict, NotFound, Unprocessable
from service.execs.records import ExecRecords
from service.files.target import SandboxCall, while_running
from service.ids import new_id
from service.runtime import ExecRequest
from service.runtime.holder import RuntimeHolder

# Live contexts of one sandbox, at most; and ended ones kept to be read, at most.
MAX_LIVE = 8
MAX_ENDED = 16
# How long an ended context stays readable (its sandbox may be gone: nothing else forgets it).
ENDED_KEPT_S = 600.0
# How long the interpreter may take to start.
READY_WAIT_S = 30.0
# The interpreter lives as long as its sandbox (the runtime's deadline only stops it beyond).
KERNEL_LIFETIME_S = 366 * 86_400.0
# What the runtime keeps of the interpreter's output where it cannot stream it.
KERNEL_OUTPUT_CAP = 64 << 20


def kernel_source() -> str:
    return importlib.resources.files("service.contexts").joinpath("kernel.py").read_text()


class ContextsFull(Conflict):
    code, title = "sandbox_contexts_full", "The sandbox has as many contexts as it may"


class ContextGone(Conflict):
    code, title = "context_gone", "The context's interpreter has ended"


class ContextNotStarted(Unprocessable):
    code, title = "context_not_started", "The interpreter did not start"


@dataclass(frozen=True, slots=True)
class ContextCall:
    """A call on one context of the sandbox a request names."""

    call: SandboxCall
    context_id: str


class Contexts:
    """Every context this process holds, by id."""

    def __init__(self, holder: RuntimeHolder, records: ExecRecords) -> None:
        self.holder = holder
        # Read and recorded as execs are: no ORM session on a run's way.
        self.records = ContextRecords(records)
        self.live: dict[str, LiveContext] = {}
        self._kernel = kernel_source()

    async def create(self, call: SandboxCall, data: ContextCreate) -> Context:
        target = await call.target(self.records.running)
        self._forget_ended()
        self._prune(target.sandbox_id)
        if len(self._of(target.sandbox_id, live_only=True)) >= MAX_LIVE:
            raise ContextsFull(f"sandbox {target.sandbox_id} has {MAX_LIVE} live contexts")
        facts = ContextFacts(
            id=new_id("ctx"),
            tenant_id=target.tenant_id,
            sandbox_id=target.sandbox_id,
            runtime_id=target.runtime_id,
            language=data.language,
            created_at=utcnow(),
        )
        context = LiveContext(facts)
        request = ExecRequest(
            argv=["python3", "-c", self._kernel],
            cwd=data.cwd,
            env=data.env,
            user=data.user,
            stdin=context.requests(),
            timeout_s=KERNEL_LIFETIME_S,
            output_cap=KERNEL_OUTPUT_CAP,
            stream=True,
        )
        runtime = await self.holder.get()
        async with while_running(call.db, target):
            context.started(await runtime.exec(target.runtime_id, request))
        if not await context.wait_ready(READY_WAIT_S):
            why = context.why_not_started()
            await context.close(why)
            await self.records.audit(call.ctx, facts, "context.create", "error", reason=why)
            raise ContextNotStarted(f"the Python interpreter did not start: {why}")
        self.live[facts.id] = context
        await self.records.audit(call.ctx, facts, "context.create", context_id=facts.id)
        return _schema(context)

    async def list(self, call: SandboxCall) -> ContextList:
        sandbox_id = (await self.records.sandbox(call.principal, call.sandbox_id)).id
        self._forget_ended()
        found = sorted(self._of(sandbox_id), key=lambda c: (c.facts.created_at, c.facts.id))
        return ContextList(items=[_schema(c) for c in found])

    async def get(self, at: ContextCall) -> Context:
        sandbox_id = (await self.records.sandbox(at.call.principal, at.call.sandbox_id)).id
        return _schema(self._find(sandbox_id, at.context_id))

    async def run(self, at: ContextCall, data: RunCreate) -> Run:
        target = await at.call.target(self.records.running)
        if data.timeout_s > target.max_exec_timeout_s:
            raise Unprocessable(
                f"timeout_s {data.timeout_s} exceeds this tenant's maximum of "
                f"{target.max_exec_timeout_s}",
                extra={"max_timeout_s": target.max_exec_timeout_s},
            )
        context = self._find(target.sandbox_id, at.context_id)
        if context.gone is not None:
            raise ContextGone(f"context {context.facts.id} is gone: {context.gone}")
        outcome = await context.run(data.code, data.timeout_s)
        await self._audit_run(at.call, context, outcome)
        return _run_schema(context, outcome)

    async def delete(self, at: ContextCall) -> None:
        sandbox_id = (await self.records.sandbox(at.call.principal, at.call.sandbox_id)).id
        context = self._find(sandbox_id, at.context_id)
        self.live.pop(context.facts.id, None)
        await context.close()
        await self.records.audit(
            at.call.ctx, context.facts, "context.delete", context_id=context.facts.id
        )

    async def _audit_run(
        self, call: SandboxCall, context: LiveContext, outcome: RunOutcome
    ) -> None:
        await self.records.audit(
            call.ctx,
            context.facts,
            "context.run",
            "ok" if outcome.ok else "error",
            context_id=context.facts.id,
            execution_count=outcome.execution_count,
            timed_out=outcome.timed_out,
            context_lost=outcome.context_lost,
            error=outcome.error["name"] if outcome.error else None,
        )

    async def shutdown(self) -> None:
        contexts, self.live = list(self.live.values()), {}
        await asyncio.gather(
            *(c.close("the service stopped") for c in contexts), return_exceptions=True
        )

    def _of(self, sandbox_id: str, *, live_only: bool = False) -> list[LiveContext]:
        return [
            c
            for c in self.live.values()
            if c.facts.sandbox_id == sandbox_id and not (live_only and c.gone is not None)
        ]

    def _forget_ended(self) -> None:
        """Drop the contexts that ended more than ENDED_KEPT_S ago, of every sandbox."""
        before = time.monotonic() - ENDED_KEPT_S
        for context in list(self.live.values()):
            if context.ended_at is not None and context.ended_at < before:
                self.live.pop(context.facts.id, None)

    def _find(self, sandbox_id: str, context_id: str) -> LiveContext:
        context = self.live.get(context_id)
        if context is None or context.facts.sandbox_id != sandbox_id:
            raise NotFound(f"no context {context_id} in sandbox {sandbox_id}")
        return context

    def _prune(self, sandbox_id: str) -> None:
        """Forget the oldest ended contexts of the sandbox past MAX_ENDED."""
        ended = [c for c in self._of(sandbox_id) if c.gone is not None]
        ended.sort(key=lambda c: c.facts.created_at)
        for context in ended[: max(0, len(ended) - MAX_ENDED + 1)]:
            self.live.pop(context.facts.id, None)


def _state(context: LiveContext) -> str:
    if context.gone is not None:
        return "gone"
    return "busy" if context.busy else "ready"


def _schema(context: LiveContext) -> Context:
    facts = context.facts
    return Context(
        id=facts.id,
        sandbox_id=facts.sandbox_id,
        language="python",
        state=_state(context),  # type: ignore[arg-type]
        created_at=facts.created_at,
        runs=context.runs,
        python=context.python,
        gone_reason=context.gone,
    )


def _run_schema(context: LiveContext, outcome: RunOutcome) -> Run:
    error = outcome.error
    return Run(
        context_id=context.facts.id,
        ok=outcome.ok and not outcome.context_lost,
        timed_out=outcome.timed_out,
        context_lost=outcome.context_lost,
        execution_count=outcome.execution_count,
        duration_ms=outcome.duration_ms,
        stdout="".join(outcome.stdout),
        stderr="".join(outcome.stderr),
        stdout_truncated=outcome.truncated("stdout"),
        stderr_truncated=outcome.truncated("stderr"),
        results=[Shown(data=data) for data in outcome.results],
        results_dropped=outcome.results_dropped,
        error=RunError(**error) if error is not None else None,
    )
