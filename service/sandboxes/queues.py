"""Queued background work: the cap on what one owner may have waiting, and the fair order in
which runners take it.

Runners (reviews, template builds) have few slots shared by every tenant. A claim takes the
oldest queued job of the owner with the fewest jobs running, and among those the owner served
longest ago (the latest start of its jobs; never served first): owners take turns, so one
owner's backlog delays only its own jobs."""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, Select, Subquery, case, func

from service.sandboxes.quotas import over


def check_queued(quota: str, limit: int, queued: int) -> None:
    """429 once an owner has `limit` jobs of a kind waiting."""
    if queued >= limit:
        raise over(
            quota,
            limit,
            queued,
            f"{queued} jobs are already waiting for this tenant (limit {limit})",
            retry_after_s=30,
        )


def check_bundles(limit: int, held: int) -> None:
    """429 once a tenant holds `limit` review bundles (each up to max_upload_mib, stored
    until `bundle_retention_days`)."""
    if held >= limit:
        raise over(
            "max_bundles",
            limit,
            held,
            f"the tenant holds {held} review bundles (limit {limit}); older ones expire",
            retry_after_s=3600,
        )


def owner_turns(
    stmt: Select[Any],
    owner: ColumnElement[Any],
    state: ColumnElement[Any],
    started_at: ColumnElement[Any],
    running: str,
) -> Subquery:
    """Per owner with work queued: its running jobs and its latest start. `stmt` selects from
    the jobs (joined to where the owner is) and is grouped here."""
    return (
        stmt.add_columns(
            owner.label("owner"),
            func.count(case((state == running, 1))).label("running"),
            func.max(started_at).label("last_started"),
        )
        .group_by(owner)
        .subquery("turns")
    )


def fair_order(turns: Subquery, created_at: ColumnElement[Any]) -> list[Any]:
    return [turns.c.running, turns.c.last_started.asc().nulls_first(), created_at]
