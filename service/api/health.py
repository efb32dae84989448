from __future__ import annotations

from typing import Any

import msgspec
from litestar import Request, Response, get
from sqlalchemy import text


class Health(msgspec.Struct):
    status: str
    checks: dict[str, str] = msgspec.field(default_factory=dict)


@get("/healthz", operation_id="get_health", opt={"public": True}, tags=["ops"])
async def healthz() -> Health:
    """The process is up."""
    return Health(status="ok")


@get("/readyz", operation_id="get_readiness", opt={"public": True}, tags=["ops"])
async def readyz(request: Request[Any, Any, Any]) -> Response[Health]:
    """The service can serve: the database answers."""
    try:
        async with request.app.state.engine.connect() as conn:
            await conn.execute(text("SELECT 1"))
    except Exception as exc:  # any failure to reach the database means not ready
        return Response(
            Health(status="unavailable", checks={"database": type(exc).__name__}), status_code=503
        )
    return Response(Health(status="ok", checks={"database": "ok"}))
