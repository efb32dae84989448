"""`airlock review`: the same pipeline as `POST /v1/reviews`, run in this process, report printed.

It acts for a tenant of the configured database (`--tenant`, created when missing) so quotas,
the audit log and the sandbox records are the same as through the API. Whoever runs it can
already read this machine's disk, so a local path is accepted as the repository whatever
`AIRLOCK_REVIEW_ALLOW_LOCAL_REPOS` says (that setting guards the API from tenants).

Exit status: 0 APPROVE, 1 REQUEST_CHANGES, 3 no verdict (the review failed), 4 COMMENT (the
tests passed and no model judged the change).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import shlex
import sys
from pathlib import Path
from typing import Any

import msgspec

from service.inputs import readable
from service.settings import Settings

EXIT = {"APPROVE": 0, "REQUEST_CHANGES": 1, "COMMENT": 4}
NO_VERDICT = 3


def add_commands(subparsers: Any) -> None:
    review = subparsers.add_parser(
        "review", help="review a pull request: fetch, test in a fresh sandbox, judge"
    )
    review.add_argument("--repo", required=True, help="a path, file:// or https:// git URL")
    review.add_argument("--base", default="main", help="the branch the change goes into")
    review.add_argument("--head", required=True, help="the change: a ref, commit or pull/N/head")
    review.add_argument("--tenant", default="local", help="the tenant to act for (default local)")
    review.add_argument("--template", help="start the sandbox from this template")
    review.add_argument("--install", help="install command, e.g. 'pip install -e .'")
    review.add_argument("--test", help="test command (default 'python -m pytest -q')")
    review.add_argument("--timeout-s", type=int, default=None, help="deadline of install and tests")
    review.add_argument("--model", help="the model to ask (default AIRLOCK_LLM_MODEL)")
    review.add_argument("--json", action="store_true", help="print the report as JSON")
    review.set_defaults(func=_review)


def _review(args: argparse.Namespace, settings: Settings) -> int:
    from service.reviews.schemas import ReviewCreate

    body: dict[str, Any] = {
        "repo": _repo(args.repo),
        "base": args.base,
        "head": args.head,
        "template": args.template,
        "model": args.model,
    }
    if args.install:
        body["install"] = shlex.split(args.install)
    if args.test:
        body["test"] = shlex.split(args.test)
    if args.timeout_s is not None:
        body["timeout_s"] = args.timeout_s
    try:
        data = msgspec.convert({k: v for k, v in body.items() if v is not None}, ReviewCreate)
    except msgspec.ValidationError as exc:
        print(f"airlock review: {readable(exc)}", file=sys.stderr)
        return 2
    return asyncio.run(_run(settings, args.tenant, data, as_json=args.json))


def _repo(repo: str) -> str:
    """A relative path means one in the current directory."""
    if "://" in repo or repo.startswith("bdl_"):
        return repo
    return str(Path(repo).resolve())


async def _run(settings: Settings, tenant_name: str, data: Any, *, as_json: bool) -> int:
    from service.audit.recorder import AuditContext
    from service.auth.principal import SCOPES, Principal, PrincipalKind
    from service.bootstrap import load_audit_key
    from service.db.migrate import ensure_migrated
    from service.db.session import make_engine, make_sessionmaker
    from service.errors import AppError
    from service.execs.runner import ExecRunner
    from service.flows.resume import Resumes
    from service.nodes.local import LocalNode
    from service.nodes.owners import Owners
    from service.reviews import service
    from service.reviews.pipeline import Deps, run_review
    from service.runtime.config import RuntimeConfig
    from service.runtime.holder import RuntimeHolder
    from service.runtime.select import open_runtime

    settings.state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    load_audit_key(settings)
    engine = make_engine(settings.effective_database_url, settings.database_pool_size)
    db = make_sessionmaker(engine)
    holder = RuntimeHolder(lambda: open_runtime(RuntimeConfig.from_settings(settings)))
    # No node of its own: starts check no room.
    wake = Resumes(db, holder, LocalNode(), Owners(engine)).wake
    runner = ExecRunner(db, engine, holder, settings.secrets_key_path, wake=wake)
    ctx = AuditContext(actor="cli", request_id=None, client=None)
    try:
        await ensure_migrated(engine, settings.effective_database_url)
        tenant_id = await _tenant(db, ctx, settings, tenant_name)
        principal = Principal(
            kind=PrincipalKind.API_KEY, actor="cli", tenant_id=tenant_id, scopes=frozenset(SCOPES)
        )
        try:
            async with db() as session, session.begin():
                accepted = await service.create_review(
                    session, settings, principal, ctx, data, allow_local=True, claimed=True
                )
        except AppError as exc:
            print(f"airlock review: {exc.detail}", file=sys.stderr)
            return 2
        print(f"airlock review: {accepted.id} started", file=sys.stderr)
        await run_review(Deps(db, holder, runner, settings, allow_local=True), accepted.id)
        async with db() as session:
            report = await service.get_review(session, principal, accepted.id)
    finally:
        await runner.shutdown()
        with contextlib.suppress(Exception):
            await holder.close()
        await engine.dispose()
    if as_json:
        print(json.dumps(msgspec.to_builtins(report), indent=2))
    else:
        print(render(report))
    return EXIT.get(report.verdict or "", NO_VERDICT)


async def _tenant(db: Any, ctx: Any, settings: Settings, name: str) -> str:
    from service.db.models import Tenant
    from service.errors import Conflict
    from service.tenants.repository import TenantRepository
    from service.tenants.schemas import Quotas, TenantCreate
    from service.tenants.service import create_tenant

    try:
        async with db() as session, session.begin():
            found: Tenant | None = await TenantRepository(session).get_by_name(name)
            if found is not None:
                return found.id
            defaults = Quotas(audit_retention_days=settings.audit_retention_days)
            created = await create_tenant(session, ctx, TenantCreate(name=name), defaults)
            return created.tenant.id
    except Conflict:
        pass  # another process made it meanwhile (its transaction is rolled back, not ours)
    async with db() as session:
        again = await TenantRepository(session).get_by_name(name)
        assert again is not None
        return again.id


def _gate_lines(gate: Any) -> list[str]:
    """The test gate: counts at the base and the head, and what stands in the way."""
    if gate is None:
        return []

    def counts(side: Any) -> str:
        if side is None:
            return "no trusted results"
        found = msgspec.to_builtins(side)
        return ", ".join(f"{n} {name}" for name, n in found.items() if n) or "no tests"

    lines = [
        "--- test gate ---",
        f"base: {counts(gate.base)}",
        f"head: {counts(gate.head)}",
        f"approvable: {'yes' if gate.approvable else 'no'}",
    ]
    lines += [f"  {r.test}: {r.base} at the base, {r.head} at the head" for r in gate.regressions]
    lines += [f"  test infrastructure: {item}" for item in gate.infrastructure]
    lines += [f"  reaches: {item}" for item in gate.reaches]
    return lines


def render(report: Any) -> str:
    """The report as text: what ran and how long it took, the tests' output, the verdict."""
    lines = [
        f"review {report.id}: {report.state}",
        f"repository {report.repo}  {report.base} ({(report.base_commit or '?')[:12]})"
        f" ... {report.head} ({(report.head_commit or '?')[:12]})",
        f"sandbox {report.sandbox_id or '-'}",
        "",
        f"{'stage':<10} {'outcome':<8} {'ms':>8}  detail",
    ]
    for stage in report.stages:
        lines.append(
            f"{stage.name:<10} {stage.outcome:<8} {stage.duration_ms:>8}  {stage.detail or ''}"
        )
    total = sum(stage.duration_ms for stage in report.stages)
    lines.append(f"{'total':<10} {'':<8} {total:>8}")
    if report.diff is not None:
        lines += [
            "",
            f"diff: {report.diff.files} files, +{report.diff.insertions} -{report.diff.deletions}",
            report.diff.text,
        ]
    if report.install_exit_code is not None or report.install_outcome is not None:
        lines.append(f"install: {report.install_outcome} exit {report.install_exit_code}")
    if report.test_outcome is not None:
        lines += [
            f"tests: {report.test_outcome} exit {report.test_exit_code}",
            "--- test output ---",
            (report.test_output or "").rstrip(),
        ]
    lines += _gate_lines(report.gate)
    lines += ["--- review ---", f"verdict: {report.verdict or 'none'}"]
    if report.model:
        lines.append(f"model: {report.model} (said {report.model_verdict or 'nothing usable'})")
    if report.reasoning:
        lines.append(report.reasoning)
    if report.error:
        lines.append(f"error: {report.error}")
    return "\n".join(lines)
