"""Reviews: accepted here (checked, recorded, queued), run by `job.ReviewRunner`."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterable
from typing import Any, get_args

import msgspec
from sqlalchemy.ext.asyncio import AsyncSession

from service.audit.recorder import AuditContext, record
from service.auth.principal import Principal
from service.db.base import utcnow
from service.db.models import Review as ReviewRow
from service.db.models import ReviewBundle, Tenant
from service.errors import Forbidden, MissingScope, NotFound, Unprocessable
from service.files.service import CappedBody, refuse_declared
from service.files.target import MIB
from service.ids import new_id
from service.pagination import decode_cursor, page_of
from service.reviews.repository import BUNDLE_PIECE, ReviewRepository
from service.reviews.schemas import (
    Bundle,
    DiffStat,
    Review,
    ReviewAccepted,
    ReviewCreate,
    ReviewCredentials,
    ReviewGate,
    ReviewPage,
    ReviewState,
    ReviewSummary,
    Stage,
)
from service.reviews.source import check_ref, parse
from service.sandboxes.queues import check_bundles, check_queued
from service.sandboxes.schemas import SandboxNetwork
from service.sandboxes.service import check_network_names
from service.secrets import service as secrets
from service.settings import Settings
from service.templates.repository import TemplateRepository
from service.tenants.repository import lock_tenant
from service.tenants.service import quotas_of

STATES = get_args(ReviewState)
BUNDLE_HEADERS = (b"# v2 git bundle\n", b"# v3 git bundle\n")
HEADER_BYTES = len(BUNDLE_HEADERS[0])


def to_schema(row: ReviewRow) -> Review:
    return Review(
        id=row.id,
        state=row.state,  # type: ignore[arg-type]
        repo=row.repo,
        base=row.base,
        head=row.head,
        base_commit=row.base_commit,
        head_commit=row.head_commit,
        template=row.template,
        size=row.size,
        install=row.install,
        test=row.test,
        timeout_s=row.timeout_s,
        network=msgspec.convert(row.network, SandboxNetwork),
        credentials=(
            msgspec.convert(row.credentials, ReviewCredentials) if row.credentials else None
        ),
        stages=[msgspec.convert(s, Stage, strict=False) for s in row.stages],
        sandbox_id=row.sandbox_id,
        diff=msgspec.convert(row.diff_stat, DiffStat) if row.diff_stat else None,
        install_exit_code=row.install_exit_code,
        install_outcome=row.install_outcome,
        test_exit_code=row.test_exit_code,
        test_outcome=row.test_outcome,
        test_output=row.test_output,
        gate=_gate_of(row.stages),
        verdict=row.verdict,
        reasoning=row.reasoning,
        model=row.model_used,
        model_verdict=row.model_verdict,
        error=row.error,
        created_at=row.created_at,
        started_at=row.started_at,
        finished_at=row.finished_at,
    )


def _gate_of(stages: list[dict[str, Any]]) -> ReviewGate | None:
    """The gate's findings, kept in the entry of the latest run's `gate` stage."""
    found = None
    for entry in stages:
        if entry.get("name") == "fetch":
            found = None  # a new run began (a restart's cut-off run stays as history)
        elif entry.get("name") == "gate" and isinstance(entry.get("gate"), dict):
            found = entry["gate"]
    return msgspec.convert(found, ReviewGate) if found is not None else None


def summary(row: ReviewRow) -> ReviewSummary:
    return ReviewSummary(
        id=row.id,
        state=row.state,  # type: ignore[arg-type]
        repo=row.repo,
        base=row.base,
        head=row.head,
        verdict=row.verdict,
        test_exit_code=row.test_exit_code,
        created_at=row.created_at,
        finished_at=row.finished_at,
    )


async def create_review(
    session: AsyncSession,
    settings: Settings,
    principal: Principal,
    ctx: AuditContext,
    data: ReviewCreate,
    *,
    allow_local: bool | None = None,
    claimed: bool = False,
) -> ReviewAccepted:
    """Check everything that can be checked without fetching, then record and queue it.

    `claimed`: the caller runs it itself (the command line), so no runner takes it."""
    tenant_id = secrets.tenant_of(principal)
    local = settings.review_allow_local_repos if allow_local is None else allow_local
    source = parse(data.repo, allow_local=local)
    if data.credentials is not None and not source.location.startswith("https://"):
        # Never in clear text, never to a file or bundle.
        raise Unprocessable("credentials are for an https:// repository URL only")
    check_ref(data.base, "base")
    check_ref(data.head, "head")
    repo = ReviewRepository(session, tenant_id)
    if source.kind == "bundle" and not await repo.has_bundle(source.location):
        raise NotFound(f"no bundle {source.location}")
    # A cheap early refusal here; the count that decides is taken again under the tenant's
    # lock just before the insert, so the row is not held while this request resolves names.
    tenant = await session.get(Tenant, tenant_id)
    assert tenant is not None
    quotas = quotas_of(tenant)
    if not claimed:
        check_queued("max_queued_reviews", quotas.max_queued_reviews, await repo.queued())
    if data.timeout_s > quotas.max_exec_timeout_s:
        raise Unprocessable(
            f"timeout_s {data.timeout_s} exceeds this tenant's maximum of "
            f"{quotas.max_exec_timeout_s}",
            extra={"max_timeout_s": quotas.max_exec_timeout_s},
        )
    await check_network_names(data.network, quotas)
    if data.template is not None:
        if await TemplateRepository(session, tenant_id).resolve(data.template) is None:
            raise NotFound(f"no template {data.template}")
        if data.network.mode != "none":
            raise Unprocessable("sandboxes from templates take no network for now")
    if data.credentials is not None:
        await _check_credentials(session, principal, tenant_id, data.credentials, data.repo)
    if data.model is not None and not settings.llm_base_url:
        raise Forbidden("no model endpoint is configured on this server (AIRLOCK_LLM_BASE_URL)")
    if not claimed:
        quotas = quotas_of(await lock_tenant(session, tenant_id))
        check_queued("max_queued_reviews", quotas.max_queued_reviews, await repo.queued())
    now = utcnow()
    row = ReviewRow(
        id=new_id("rev"),
        tenant_id=tenant_id,
        created_by=ctx.actor,
        state="running" if claimed else "queued",
        repo=data.repo,
        base=data.base,
        head=data.head,
        template=data.template,
        size=data.size,
        install=list(data.install) if data.install else None,
        test=list(data.test),
        timeout_s=data.timeout_s,
        network=msgspec.to_builtins(data.network),
        model=data.model,
        credentials=msgspec.to_builtins(data.credentials) if data.credentials else None,
        attempts=1 if claimed else 0,
        stages=[],
        created_at=now,
        started_at=now if claimed else None,
    )
    repo.add(row)
    await session.flush()
    await record(
        session,
        ctx,
        chain=tenant_id,
        action="review.create",
        target=row.id,
        details={
            "repo": data.repo,
            "source": source.kind,
            "base": data.base,
            "head": data.head,
            "template": data.template,
            "install": data.install,
            "test": data.test,
            "timeout_s": data.timeout_s,
            "network": row.network,
            "model": data.model,
            "credentials": row.credentials,
        },
    )
    return ReviewAccepted(id=row.id, state=row.state)  # type: ignore[arg-type]


async def _check_credentials(
    session: AsyncSession,
    principal: Principal,
    tenant_id: str,
    credentials: ReviewCredentials,
    repo: str,
) -> None:
    """The secret goes to the host the URL names, so only a caller who may see the tenant's
    secrets may name one, and only for a host the secret allows."""
    if not credentials.username.isprintable():
        # The schema keeps ':' and control characters out; this also catches a final newline.
        raise Unprocessable("the username holds characters a Basic auth header cannot carry")
    if not principal.has_scope("secrets:read"):
        raise MissingScope(
            "fetching with a tenant secret requires the 'secrets:read' scope",
            extra={"required_scope": "secrets:read"},
        )
    # Only to the hosts the secret's owner named: the caller does not choose where it goes.
    await secrets.check_usable(session, tenant_id, credentials.secret, repo)


async def get_review(session: AsyncSession, principal: Principal, review_id: str) -> Review:
    row = await ReviewRepository(session, secrets.tenant_of(principal)).get(review_id)
    if row is None:
        raise NotFound(f"no review {review_id}")
    return to_schema(row)


async def list_reviews(
    session: AsyncSession,
    principal: Principal,
    *,
    limit: int,
    cursor: str | None,
    states: list[str],
) -> ReviewPage:
    unknown = set(states) - set(STATES)
    if unknown:
        raise Unprocessable(f"unknown states: {', '.join(sorted(unknown))}")
    after = decode_cursor(cursor, str)
    rows = await ReviewRepository(session, secrets.tenant_of(principal)).list(
        limit=limit + 1, after_id=after, states=states
    )
    items, next_cursor = page_of(rows, limit, key=lambda r: r.id)
    return ReviewPage(items=[summary(r) for r in items], next_cursor=next_cursor)


async def upload_bundle(
    session: AsyncSession,
    principal: Principal,
    ctx: AuditContext,
    body: AsyncIterable[bytes],
    content_length: int | None,
) -> Bundle:
    """Store a git bundle (checked by git only when a review fetches from it, on the host,
    with the same safe options as any fetch).

    The body goes to the database in pieces as it arrives, never whole in memory; the bundle's
    row is written first (its pieces reference it) and completed at the end. Nothing of it is
    visible before the request's transaction commits, and a refusal rolls all of it back."""
    tenant_id = secrets.tenant_of(principal)
    repo = ReviewRepository(session, tenant_id)
    tenant = await session.get(Tenant, tenant_id)
    assert tenant is not None
    quotas = quotas_of(tenant)
    check_bundles(quotas.max_bundles, await repo.bundles())  # early; decided again below
    limit = quotas.max_upload_mib * MIB
    refuse_declared(content_length, limit)
    row = ReviewBundle(
        id=new_id("bdl"), tenant_id=tenant_id, size=0, sha256="", created_at=utcnow()
    )
    repo.add(row)
    await session.flush()
    row.size, row.sha256 = await _store_pieces(repo, row.id, CappedBody(body, limit))
    # Counted under the tenant's lock, taken only now that the body is in: racing uploads
    # are decided one at a time, each seeing the bundles committed before it.
    quotas = quotas_of(await lock_tenant(session, tenant_id))
    check_bundles(quotas.max_bundles, await repo.bundles(besides=row.id))
    await session.flush()
    await record(
        session,
        ctx,
        chain=tenant_id,
        action="review.bundle",
        target=row.id,
        details={"size": row.size, "sha256": row.sha256},
    )
    return Bundle(id=row.id, size=row.size, sha256=row.sha256, created_at=row.created_at)


async def _store_pieces(
    repo: ReviewRepository, bundle_id: str, body: CappedBody
) -> tuple[int, str]:
    """Write the body as pieces of BUNDLE_PIECE bytes; its size and sha256."""
    digest = hashlib.sha256()
    pending = bytearray()
    size = seq = 0
    checked = False

    async def write(piece: bytes) -> None:
        nonlocal size, seq
        await repo.add_piece(bundle_id, seq, piece)
        digest.update(piece)
        size, seq = size + len(piece), seq + 1

    async for chunk in body:
        pending += chunk
        if not checked and len(pending) >= HEADER_BYTES:
            _check_header(pending)  # refused on its first bytes, before the rest is read
            checked = True
        while len(pending) >= BUNDLE_PIECE:
            await write(bytes(pending[:BUNDLE_PIECE]))
            del pending[:BUNDLE_PIECE]
    body.check()
    if not checked:
        _check_header(pending)
    if pending:
        await write(bytes(pending))
    return size, digest.hexdigest()


def _check_header(start: bytearray) -> None:
    if not bytes(start[:HEADER_BYTES]).startswith(BUNDLE_HEADERS):
        raise Unprocessable("the body is not a git bundle (`git bundle create`)")
