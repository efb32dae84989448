"""Warm pool fixtures: the app with its jobs on gVisor, an operator template, a pool of it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import bindparam, text

from service.db.session import make_engine
from service.runtime.gvisor import destroy_left
from tests.conftest import Api
from tests.templates.conftest import (
    build_template,
    eventually,
    new_state,
    own_database,
    serve,
    unique,
)


@pytest.fixture(scope="module")
def pool_state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return new_state(tmp_path_factory, "pool-state")


@pytest.fixture(scope="module")
async def papi(pool_state: Path, own_database: str) -> AsyncIterator[Api]:
    try:
        async with serve(pool_state, own_database) as api:
            yield api
    finally:
        await destroy_left(pool_state, snapshots=True, strict=True)


async def sql(url: str, statement: str, **params: Any) -> list[Any]:
    """`statement`'s rows, on either database (a list parameter is expanded: `IN :ids`)."""
    query = text(statement).bindparams(
        *(bindparam(name, expanding=True) for name, v in params.items() if isinstance(v, list))
    )
    engine = make_engine(url)
    try:
        async with engine.connect() as conn:
            return list((await conn.execute(query, params)).all())
    finally:
        await engine.dispose()


async def pool_status(api: Api, template: str, size: str = "small") -> dict[str, Any]:
    r = await api.client.get("/v1/pool", headers=api.operator)
    assert r.status_code == 200, r.text
    return next(p for p in r.json()["pools"] if p["template"] == template and p["size"] == size)


async def set_target(api: Api, template: str, target: int) -> None:
    r = await api.client.put(
        f"/v1/pool/{template}", json={"size": "small", "target": target}, headers=api.operator
    )
    assert r.status_code == 200, r.text


async def wait_ready(api: Api, template: str, count: int) -> dict[str, Any]:
    async def ready() -> dict[str, Any] | None:
        status = await pool_status(api, template)
        return status if status["ready"] == count and status["starting"] == 0 else None

    return await eventually(ready, bound_s=180)


async def shared_template(api: Api, setup: list[list[str]] | None = None) -> str:
    name = unique("pool")
    built = await build_template(api, api.operator, name, setup)
    assert built["state"] == "ready", built
    return name


__all__ = ["eventually", "own_database"]
