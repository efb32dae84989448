"""One review, start to end: fetch on the host, test in a fresh sandbox, ask the model, decide.

Each stage is recorded as it ends (outcome, duration, detail) with a `review.<stage>` audit
event, in its own short transaction: no transaction is open while git, the runtime or the
model works. The sandbox is destroyed in every case, failure, deadline and cancellation
included, before the model is asked (the model needs only the facts, not the sandbox).
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import itertools
import logging
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from service.db.base import utcnow
from service.db.session import Db
from service.errors import AppError
from service.execs.runner import ExecRunner
from service.flows import create as sandbox_create
from service.flows import fork as sandbox_fork
from service.nodes.local import LocalNode
from service.reviews import baselines, gate, inside, model
from service.reviews.claimed import Job, load
from service.reviews.confine import FetchLimits
from service.reviews.fetch import FetchFailed, HttpAuth, fetch
from service.reviews.repository import ReviewRepository
from service.reviews.source import check_local, parse, pin_addresses
from service.reviews.stages import StageFailed, Stages, error_text
from service.reviews.steps import Boxes, Inside, run_inside
from service.reviews.verdict import decide
from service.runtime import SandboxRuntimeError
from service.runtime.holder import RuntimeHolder
from service.sandboxes import service as sandboxes
from service.sandboxes.schemas import Sandbox, SandboxCreate, SandboxFork, SandboxNetwork
from service.secrets.crypto import Undecryptable
from service.secrets.service import reveal
from service.settings import Settings

log = logging.getLogger("airlock.reviews")

# Time for the fixed steps (upload, checkout, diff) on top of the install and test deadlines
# (each run twice: at the base for the baseline, then at the head).
SANDBOX_MARGIN_S = 600
# Every sandbox of a review carries its id under this label.
LABEL = "airlock.review"


@dataclass
class Deps:
    db: Db
    holder: RuntimeHolder
    runner: ExecRunner
    settings: Settings
    # Local paths are accepted from the command line even when the API refuses them.
    allow_local: bool | None = None

    @property
    def local_allowed(self) -> bool:
        if self.allow_local is not None:
            return self.allow_local
        return self.settings.review_allow_local_repos


async def run_review(deps: Deps, review_id: str) -> str:
    """Run a claimed review to its end; returns its final state."""
    job = await load(deps.db, review_id)
    if job is None:
        return "gone"
    stages = Stages(deps.db, job)
    sandbox_ids: list[str] = []
    try:
        # A restart may have cut an earlier attempt off: its sandboxes go first.
        for leftover in await _leftovers(deps, job):
            await _destroy(deps, job, leftover)
        scratch = deps.settings.state_dir / "tmp"
        scratch.mkdir(parents=True, exist_ok=True, mode=0o700)
        with tempfile.TemporaryDirectory(prefix="review-", dir=scratch) as tmp:
            fetched = await _fetch(deps, job, stages, Path(tmp))
            boxes = await _boxes(deps, job, stages, fetched.base_commit, sandbox_ids)
            async with stages.timed("upload") as clock:
                on = [boxes.head] + ([boxes.base] if boxes.base else [])
                try:
                    await asyncio.gather(*(box.upload(fetched.bundle, fetched.size) for box in on))
                except (AppError, SandboxRuntimeError) as exc:
                    raise StageFailed(f"copying the bundle in failed: {error_text(exc)}") from exc
                clock.note(detail=f"{fetched.size} bytes, into {len(on)} sandboxes")
        ran = await run_inside(job, stages, boxes)
    except StageFailed as exc:
        await _cleanup(deps, job, stages, sandbox_ids)
        await _finish(stages, "failed", error=str(exc))
        return "failed"
    except asyncio.CancelledError:
        await asyncio.shield(_cleanup(deps, job, stages, sandbox_ids))
        raise
    except (AppError, SandboxRuntimeError) as exc:
        await _cleanup(deps, job, stages, sandbox_ids)
        await _finish(stages, "failed", error=error_text(exc))
        return "failed"
    except Exception as exc:
        log.exception("review %s failed", review_id)
        await _cleanup(deps, job, stages, sandbox_ids)
        await _finish(stages, "failed", error=f"internal error: {type(exc).__name__}")
        return "failed"
    finally:
        baselines.end(job.id)  # a review waiting for this one's run of the base goes on
    await _cleanup(deps, job, stages, sandbox_ids)
    return await _judge(deps, job, stages, ran)


async def _fetch(deps: Deps, job: Job, stages: Stages, tmp: Path) -> Any:
    async with stages.timed("fetch") as clock:
        try:
            source = parse(job.repo, allow_local=deps.local_allowed)
            location = source.location
            if source.kind == "local":
                await check_local(source)
            elif source.kind == "url":
                source = await pin_addresses(source, allow_private=deps.local_allowed)
            else:
                location = str(await _bundle_file(deps.db, job, tmp))
            auth = await _auth(deps, job)
            limits = FetchLimits.from_settings(deps.settings)
            fetched = await fetch(source, job.base, job.head, tmp, location, auth, limits)
        except (FetchFailed, AppError) as exc:
            raise StageFailed(f"fetch: {error_text(exc)}") from exc
        job.facts.update(base_commit=fetched.base_commit, head_commit=fetched.head_commit)
        clock.note(
            detail=f"{fetched.base_commit[:12]}...{fetched.head_commit[:12]}, "
            f"bundle {fetched.size} bytes",
            base_commit=fetched.base_commit,
            head_commit=fetched.head_commit,
        )
    return fetched


async def _auth(deps: Deps, job: Job) -> HttpAuth | None:
    """The review's secret, read on the host just before the fetch that sends it."""
    if job.credentials is None:
        return None
    name = job.credentials["secret"]
    async with deps.db() as session:
        try:
            value = await reveal(
                session, deps.settings.secrets_key_path, job.tenant_id, name, url=job.repo
            )
        except Undecryptable as exc:
            raise StageFailed(f"fetch: the secret {name!r} cannot be decrypted: {exc}") from None
    if value is None:
        raise StageFailed(f"fetch: the secret {name!r} does not exist (it was deleted)")
    return HttpAuth(job.credentials["username"], value)


async def _bundle_file(db: Db, job: Job, tmp: Path) -> Path:
    """The uploaded bundle, written to a file a piece at a time (one short transaction per
    piece, never the whole bundle in memory) and checked against its stored size and sha256."""
    async with db() as session:
        bundle = await ReviewRepository(session, job.tenant_id).bundle(job.repo)
        if bundle is None:
            raise StageFailed(f"fetch: no bundle {job.repo}")
        expected = (bundle.size, bundle.sha256)
    path = tmp / "upload.bundle"
    digest, size = hashlib.sha256(), 0
    with path.open("wb") as out:
        for seq in itertools.count():
            async with db() as session:
                piece = await ReviewRepository(session, job.tenant_id).piece(job.repo, seq)
            if piece is None:
                break
            await asyncio.to_thread(out.write, piece)
            digest.update(piece)
            size += len(piece)
    if (size, digest.hexdigest()) != expected:
        raise StageFailed(f"fetch: the bundle {job.repo} was deleted while it was read")
    return path


async def _boxes(
    deps: Deps, job: Job, stages: Stages, base_commit: str, sandbox_ids: list[str]
) -> Boxes:
    """The head's sandbox, and where the base's tests will run: a kept baseline (one a review
    running here may keep first is waited for); or, with an install step on a runtime that
    forks, a fork of the head's sandbox made once the base's install ran there; or else a
    second sandbox when quotas allow one (or the base runs in the head's sandbox, first)."""
    async with stages.timed("sandbox") as clock:
        try:
            head = await _create(deps, job)
        except (AppError, SandboxRuntimeError) as exc:
            raise StageFailed(f"sandbox: {error_text(exc)}") from exc
        sandbox_ids.append(head.id)
        key = baselines.key_of(job, base_commit, head)
        # Before any of the head's code runs here: the base may still run in this sandbox.
        kept, waited = await baselines.kept_or_awaited(
            deps.db, job.tenant_id, key, job.id, job.timeout_s
        )
        base, share = None, None
        where = f"the base's tests: kept from review {kept[1]}" if kept else ""
        if kept is None and job.install and sandbox_fork.forkable(await deps.holder.get()):
            share = functools.partial(_fork, deps, job, head.id, sandbox_ids)
            where = "the base's install once, here; the base's tests in a fork of this sandbox"
        elif kept is None:
            try:
                second = await _create(deps, job)
            except (AppError, SandboxRuntimeError) as exc:
                where = (
                    f"the base's tests in the same sandbox, first (no second: {error_text(exc)})"
                )
            else:
                sandbox_ids.append(second.id)
                base = _box(deps, job, second.id)
                where = f"the base's tests at the same time in {second.id}"
        if waited:
            where += f", {waited}" if kept else f" ({waited}, which kept nothing)"
        clock.note(
            detail=f"{head.id} from {head.template or head.image} "
            f"({head.started_from}, {head.runtime}); {where}",
            sandbox_id=head.id,
        )
    return Boxes(head=_box(deps, job, head.id), base=base, key=key, kept=kept, fork=share)


def _ttl(job: Job) -> int:
    """Room for the base's and the head's install and tests, each within the timeout, and for
    a wait of the same length for another review's run of the same base."""
    return min(job.max_ttl_s, 5 * job.timeout_s + SANDBOX_MARGIN_S)


async def _create(deps: Deps, job: Job) -> Sandbox:
    ttl = _ttl(job)
    request = SandboxCreate(
        template=job.template,
        size=None if job.template else job.size,  # type: ignore[arg-type]
        ttl_s=ttl,
        network=msgspec.convert(job.network, SandboxNetwork),
        labels={LABEL: job.id},
    )
    # pool=None: a review's sandbox is always started for it, never a warm member.
    sandbox, _ = await sandbox_create.create_sandbox(
        deps.db,
        deps.holder,
        job.principal,
        job.ctx,
        request,
        None,
        pool=None,
        node=LocalNode.unchecked(deps.settings),
    )
    return sandbox


def _box(deps: Deps, job: Job, sandbox_id: str) -> inside.Box:
    return inside.Box(
        deps.db,
        deps.holder,
        deps.runner,
        job.principal,
        job.ctx,
        sandbox_id,
        max_timeout_s=job.max_timeout_s,
    )


async def _fork(deps: Deps, job: Job, sandbox_id: str, sandbox_ids: list[str]) -> inside.Box:
    """A fork of the review's sandbox (its labels, so a restart's cleanup finds it too)."""
    child = await sandbox_fork.fork_sandbox(
        deps.db,
        deps.holder,
        job.principal,
        job.ctx,
        sandbox_id,
        SandboxFork(ttl_s=_ttl(job)),
        node=LocalNode.unchecked(deps.settings),
        wake=deps.runner.wake,
        secrets=deps.runner.secrets,
    )
    sandbox_ids.append(child.id)
    return _box(deps, job, child.id)


async def _destroy(deps: Deps, job: Job, sandbox_id: str) -> None:
    async with deps.db() as session:
        row = await sandboxes.repository(session, job.principal).get(sandbox_id)
        gone = row is None or row.state in ("stopped", "failed")
    if not gone:
        await sandboxes.delete_sandbox(deps.db, deps.holder, job.principal, job.ctx, sandbox_id)


async def _leftovers(deps: Deps, job: Job) -> list[str]:
    if job.attempts <= 1:
        return []
    async with deps.db() as session:
        rows = await sandboxes.repository(session, job.principal).list(
            limit=100,
            after_id=None,
            states=["creating", "running"],
            labels={LABEL: job.id},
        )
    return [row.id for row in rows]


async def _cleanup(deps: Deps, job: Job, stages: Stages, sandbox_ids: list[str]) -> None:
    """The sandboxes go in every case; a failure to destroy one is recorded (the TTL reaper
    still ends it)."""
    if not sandbox_ids:
        return

    async def destroy() -> None:
        async with stages.timed("cleanup") as clock:
            failed = []
            for sandbox_id in sandbox_ids:
                try:
                    await _destroy(deps, job, sandbox_id)
                except (AppError, SandboxRuntimeError) as exc:
                    failed.append(f"{sandbox_id}: {error_text(exc)}")
            if failed:
                clock.note("failed", f"{'; '.join(failed)}; the TTL reaper will end them")
            else:
                clock.note(detail=f"{', '.join(sandbox_ids)} destroyed")

    await asyncio.shield(destroy())


async def _judge(deps: Deps, job: Job, stages: Stages, ran: Inside) -> str:
    decided = None
    if ran.tests is not None:
        decided = await _gate(stages, job, ran)
    config = model.ModelConfig.of(deps.settings, job.model)
    answer: model.Answer | None = None
    error: str | None = None
    if config is None:
        await stages.skipped("model", "no model is configured")
    else:
        async with stages.timed("model") as clock:
            facts = {"repo": job.repo, "base": job.base, "head": job.head, **job.facts}
            try:
                answer = await model.ask(config, facts)
            except model.ModelFailed as exc:
                error = str(exc)
                clock.note("error", error, model_used=config.model)
            else:
                clock.note(
                    detail=answer.verdict, model_used=config.model, model_verdict=answer.verdict
                )
    decision = decide(
        ran.install,
        decided,
        model_configured=config is not None,
        model_verdict=answer.verdict if answer else None,
        model_reasoning=answer.reasoning if answer else None,
        model_error=error,
    )
    state = "finished" if decision.verdict else "failed"
    await _finish(
        stages, state, verdict=decision.verdict, reasoning=decision.reasoning, error=decision.error
    )
    return state


async def _gate(stages: Stages, job: Job, ran: Inside) -> gate.Gate:
    """Whether the tests allow an approval, decided and recorded before the model is asked."""
    assert ran.tests is not None
    async with stages.timed("gate") as clock:
        decided = gate.evaluate(ran.infrastructure, ran.base, ran.head, ran.tests, ran.reaches)
        document = decided.document()
        job.facts["gate"] = document
        clock.note(
            "ok" if decided.approvable else "failed",
            " ".join(decided.findings) or "approvable: no finding",
        )
        clock.record(gate=document)
    return decided


async def _finish(
    stages: Stages,
    state: str,
    *,
    verdict: str | None = None,
    reasoning: str | None = None,
    error: str | None = None,
) -> None:
    await stages.update(
        {
            "state": state,
            "verdict": verdict,
            "reasoning": reasoning,
            "error": error[:1000] if error else None,
            "finished_at": utcnow(),
        },
        action="review.finish",
        outcome=state,
        details={"verdict": verdict, "error": error[:500] if error else None},
    )
