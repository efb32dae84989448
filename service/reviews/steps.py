"""The stages that run in the review's sandboxes, in the order that keeps the head's code from
speaking for itself:

  checkout  both trees (head in /work/repo, base in /work/base), the merge base
  diff      stat, patch, changed paths, the shared config files' and changed Python files' two
            versions — all from git, before any code of the repository has run in the sandbox
  baseline  the results plugin installed by root; the base's install and tests, results read:
            in a second sandbox at the same time as the head's steps, or first in the head's
            sandbox when there is no second one, or not at all when a kept baseline matches.
            With an install step on a runtime that forks, the base's install runs once, in the
            head's sandbox (`dependencies`), which is then forked: the base's tests run in the
            fork while the head's install (on top of what the base's put there) and tests run
            in the original
  install   the head's install
  test      the head's tests with the same plugin, results read

Results come from the plugin's file (`results.parse`), never from the exit code or the output;
between steps every process is killed, so nothing one step left running acts on the next.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from service.errors import AppError
from service.execs.schemas import Exec
from service.reviews import baselines, gate, inside, reaches, results
from service.reviews.claimed import Job
from service.reviews.fetch import HEAD_REF
from service.reviews.results import TestRun
from service.reviews.runs import Run
from service.reviews.stages import StageFailed, Stages, error_text
from service.runtime import SandboxRuntimeError

TEST_OUTPUT_CAP = 64 << 10


@dataclass
class Inside:
    """What ran in the sandbox, as the verdict needs it."""

    install: Run | None = None
    tests: Run | None = None
    base: TestRun | None = None
    head: TestRun | None = None
    infrastructure: list[str] = field(default_factory=list)
    # What the change's Python code newly reaches into (the runner, exits, imports ...).
    reaches: list[str] = field(default_factory=list)
    base_ended: bool = False  # the base's run is over, its result kept if trusted


@dataclass(frozen=True)
class Boxes:
    """Where the review's two runs happen. The base's run goes in a sandbox of its own, at the
    same time as the head's, when the tenant's quota allowed a second one; otherwise in the
    head's sandbox, before any of the head's code runs there. A baseline kept from an earlier
    review of the same base (`baselines.py`) means no base run at all. With `fork`, the base's
    install runs once, in the head's sandbox, and the base's tests in a fork of it."""

    head: inside.Box
    base: inside.Box | None
    key: str
    kept: tuple[TestRun, str] | None = None
    fork: Callable[[], Awaitable[inside.Box]] | None = None


async def run_inside(job: Job, stages: Stages, boxes: Boxes) -> Inside:
    done = Inside()
    apart: list[asyncio.Task[None]] = []  # the base's run in a sandbox of its own
    if boxes.kept is not None:
        done.base, source = boxes.kept
        await stages.skipped("baseline", f"kept from review {source}: {_summary(done.base)}")
    elif boxes.base is not None:
        apart.append(asyncio.create_task(_baseline_apart(job, stages, boxes, boxes.base, done)))
    try:
        await _head(job, stages, boxes, done, apart)
    except BaseException:
        for task in apart:
            task.cancel()
        await asyncio.gather(*apart, return_exceptions=True)
        raise
    for task in apart:
        await task
    await _base_ended(job, stages, boxes, done)
    return done


async def _base_ended(job: Job, stages: Stages, boxes: Boxes, done: Inside) -> None:
    """The base's result kept for the next review of the same base as soon as the base's run
    is over (a run with any problem is not), and a review waiting for it told."""
    if done.base_ended:
        return
    done.base_ended = True
    try:
        if boxes.kept is None and done.base is not None:
            await baselines.keep(stages.db, job.tenant_id, boxes.key, job.id, done.base)
    finally:
        baselines.end(job.id)


async def _head(
    job: Job, stages: Stages, boxes: Boxes, done: Inside, apart: list[asyncio.Task[None]]
) -> None:
    box = boxes.head
    merge_base = await _checkout(stages, box)
    done.infrastructure, done.reaches = await _diff(job, stages, box, merge_base)
    if boxes.kept is not None or boxes.base is not None:
        plugin = await box.install_plugin(job.test)
    elif boxes.fork is not None and job.install:
        plugin = await _dependencies(job, stages, boxes, done, apart)
    else:
        plugin = await _baseline(job, stages, boxes, done)
    if job.install:
        async with stages.timed("install") as clock:
            result = await box.run(job.install, timeout_s=job.timeout_s)
            await box.kill_all()
            done.install = Run(result.exit_code, result.outcome, job.timeout_s)
            job.facts["install"] = {
                "exit_code": result.exit_code,
                "outcome": result.outcome,
                "output_tail": inside.output_of(result, 4 << 10),
            }
            clock.note(
                "ok" if done.install.passed else _outcome(result.outcome),
                _described(result, done.install.passed),
                install_exit_code=result.exit_code,
                install_outcome=result.outcome,
            )
    else:
        await stages.skipped("install", "no install step given")
    if done.install is not None and not done.install.passed:
        await stages.skipped("test", "the install failed")
        return
    async with stages.timed("test") as clock:
        result, done.head = await _tests(job, box, plugin, inside.REPO_DIR)
        done.tests = Run(result.exit_code, result.outcome, job.timeout_s)
        output = inside.output_of(result, TEST_OUTPUT_CAP)
        if result.outcome == "timeout":
            output += f"\n[the test run was cut at its {job.timeout_s} s deadline]\n"
        job.facts["tests"] = {"exit_code": result.exit_code, "outcome": result.outcome}
        job.facts["test_output"] = output
        clock.note(
            _outcome(result.outcome) if result.outcome != "exited" else _stage_outcome(done.head),
            f"{_summary(done.head)}; the process: {inside.describe(result)}",
            test_exit_code=result.exit_code,
            test_outcome=result.outcome,
            test_output=output,
        )


async def _checkout(stages: Stages, box: inside.Box) -> str:
    async with stages.timed("checkout") as clock:
        result = await box.checkout()
        lines = (result.stdout or "").split()
        if not inside.ended_ok(result) or len(lines) != 2:
            raise StageFailed(
                f"checkout {inside.describe(result)}: {inside.output_of(result, 800).strip()}"
            )
        head, merge_base = lines
        clock.note(detail=f"{head[:12]}, merge base {merge_base[:12]}")
    return merge_base


async def _diff(
    job: Job, stages: Stages, box: inside.Box, merge_base: str
) -> tuple[list[str], list[str]]:
    async with stages.timed("diff") as clock:
        numstat = await box.numstat()
        patch = await box.patch()
        paths = await box.changed_paths()
        if not all(inside.ended_ok(r) and not r.stdout_truncated for r in (numstat, paths)):
            raise StageFailed(f"git diff {inside.describe(numstat)} / {inside.describe(paths)}")
        if not inside.ended_ok(patch):
            raise StageFailed(f"git diff {inside.describe(patch)}")
        files, plus, minus, text = inside.parse_numstat(numstat.stdout or "")
        diff = {"files": files, "insertions": plus, "deletions": minus, "text": text}
        job.facts.update(diff_stat=diff, diff=patch.stdout or "")
        if patch.stdout_truncated:
            job.facts["diff"] += "\n[diff capped]\n"
        changed = [p for p in (paths.stdout or "").split("\0") if p]
        configs = {}
        for path in changed:
            if path.rsplit("/", 1)[-1] in gate.SECTIONED:
                configs[path] = await _versions(box, merge_base, path)
        infra = gate.infrastructure(changed, configs)
        reached = await _reaches(box, merge_base, changed)
        clock.note(
            detail=f"{files} files, +{plus} -{minus}; test infrastructure changed: "
            f"{', '.join(infra) or 'none'}; reaches: {'; '.join(reached) or 'none'}",
            diff_stat=diff,
        )
    return infra, reached


async def _reaches(box: inside.Box, merge_base: str, changed: list[str]) -> list[str]:
    """What the changed Python files newly reach into (`reaches.py`), read in one exec."""
    python = [path for path in changed if path.endswith((".py", ".pyw"))]
    unreadable = [path for path in python if "\n" in path]
    python = [path for path in python if path not in unreadable]
    found = [f"{path}: a path this review cannot read" for path in unreadable]
    if not python:
        return found
    names = [f"{rev}:{path}" for path in python for rev in (merge_base, HEAD_REF)]
    result = await box.blobs(names)
    try:
        if not inside.ended_ok(result) or result.stdout_truncated:
            raise ValueError(inside.describe(result))
        blobs = inside.parse_blobs(result.stdout or "", len(names))
    except ValueError as exc:
        size = inside.RESULTS_CAP * 3 // 4 >> 20
        return [
            *found,
            f"the changed Python files could not be read whole ({exc}; at most {size} MiB)",
        ]
    sources = [
        reaches.Source(path, blobs[2 * i], blobs[2 * i + 1])
        for i, path in enumerate(python)
        if blobs[2 * i + 1] is not None  # deleted at the head
    ]
    return found + reaches.findings(sources)


async def _versions(box: inside.Box, merge_base: str, path: str) -> gate.Versions | None:
    texts = []
    for rev in (merge_base, HEAD_REF):
        result = await box.show_file(rev, path)
        if result.stdout_truncated or result.outcome != "exited":
            return None
        texts.append(result.stdout if result.exit_code == 0 else None)
    return texts[0], texts[1]


async def _baseline(job: Job, stages: Stages, boxes: Boxes, done: Inside) -> str:
    """The base's tests (after its install) with the plugin, in the head's sandbox before any
    of the head's code runs there: the tests the head must keep."""
    box = boxes.head
    async with stages.timed("baseline") as clock:
        plugin = await box.install_plugin(job.test)
        await _base_run(job, box, plugin, done)
        clock.note("ok" if done.base and done.base.trusted else "failed", _summary(done.base))
    await _base_ended(job, stages, boxes, done)
    return plugin


async def _baseline_apart(
    job: Job,
    stages: Stages,
    boxes: Boxes,
    box: inside.Box,
    done: Inside,
    plugin: str | None = None,
) -> None:
    """The same, in a sandbox of its own, while the head's steps run in theirs; given the
    plugin, the sandbox is a fork with the base checked out and installed already."""
    async with stages.timed("baseline") as clock:
        if plugin is None:
            result = await box.checkout()
            if not inside.ended_ok(result):
                raise StageFailed(f"checkout of the base {inside.describe(result)}")
            plugin = await box.install_plugin(job.test)
            await _base_run(job, box, plugin, done)
        else:
            _, done.base = await _tests(job, box, plugin, inside.BASE_DIR)
        clock.note(
            "ok" if done.base and done.base.trusted else "failed",
            f"in its own sandbox ({box.sandbox_id}): {_summary(done.base)}",
        )
    await _base_ended(job, stages, boxes, done)


async def _dependencies(
    job: Job, stages: Stages, boxes: Boxes, done: Inside, apart: list[asyncio.Task[None]]
) -> str:
    """The base's install, once, in the head's sandbox (before any of the head's code runs
    there); then a fork of that sandbox runs the base's tests while the head's install, with
    the dependencies in place already, and its tests run here. When no fork can be had (the
    tenant's quota, the runtime), the base's tests run here first, as with one sandbox."""
    assert boxes.fork is not None and job.install is not None
    box = boxes.head
    async with stages.timed("dependencies") as clock:
        plugin = await box.install_plugin(job.test)
        result = await box.run(job.install, timeout_s=job.timeout_s, cwd=inside.BASE_DIR)
        await box.kill_all()
        how = inside.describe(result)
        said = f"the base's install {how}"
        if not inside.ended_ok(result):
            done.base = results.unreadable(f"the install failed at the base ({how})")
            clock.note("failed", f"the base's install {_described(result, False)}")
            await stages.skipped("baseline", "the install failed at the base")
            await _base_ended(job, stages, boxes, done)
            return plugin
        try:
            forked: inside.Box | None = await boxes.fork()
        except (AppError, SandboxRuntimeError) as exc:
            forked = None
            clock.note("ok", f"{said}; no fork ({error_text(exc)}): the base's tests here, first")
        else:
            clock.note("ok", f"{said}; forked into {forked.sandbox_id} for the base's tests")
    if forked is not None:
        apart.append(asyncio.create_task(_baseline_apart(job, stages, boxes, forked, done, plugin)))
        return plugin
    async with stages.timed("baseline") as clock:
        _, done.base = await _tests(job, box, plugin, inside.BASE_DIR)
        clock.note("ok" if done.base.trusted else "failed", _summary(done.base))
    await _base_ended(job, stages, boxes, done)
    return plugin


async def _base_run(job: Job, box: inside.Box, plugin: str, done: Inside) -> None:
    if job.install:
        result = await box.run(job.install, timeout_s=job.timeout_s, cwd=inside.BASE_DIR)
        await box.kill_all()
        if not inside.ended_ok(result):
            why = f"the install failed at the base ({inside.describe(result)})"
            done.base = results.unreadable(why)
            return
    _, done.base = await _tests(job, box, plugin, inside.BASE_DIR)


async def _tests(job: Job, box: inside.Box, plugin: str, cwd: str) -> tuple[Exec, TestRun]:
    result, found = await box.run_tests(job.test, plugin=plugin, cwd=cwd, timeout_s=job.timeout_s)
    return result, _read(result, found)


def _read(result: Exec, found: Exec) -> TestRun:
    if not inside.ended_ok(found) or found.stdout_truncated:
        return results.unreadable(f"the results file could not be read ({inside.describe(found)})")
    run = results.parse(found.stdout or "", exit_code=result.exit_code)
    if result.outcome != "exited":
        run.problems.insert(0, f"the test run {inside.describe(result)}")
    return run


def _described(result: Exec, passed: bool) -> str:
    """How a step ended and, when it failed, the end of what it printed (the stage's detail
    holds 1,000 characters)."""
    if passed:
        return inside.describe(result)
    return f"{inside.describe(result)}; its output ends:\n{inside.output_of(result, 700)}"


def _summary(run: TestRun | None) -> str:
    if run is None:
        return "no results"
    counts = ", ".join(f"{n} {name}" for name, n in run.counts().items() if n)
    text = counts or "no tests"
    if run.problems:
        text += f"; not trusted: {'; '.join(run.problems)}"
    return text


def _stage_outcome(run: TestRun) -> str:
    return "ok" if run.trusted and not run.with_outcome(results.FAILED, results.ERROR) else "failed"


def _outcome(outcome: str | None) -> str:
    return "timeout" if outcome == "timeout" else "failed"
