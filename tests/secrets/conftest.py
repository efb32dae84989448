from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from tests.conftest import Api, Tenant

PutSecret = Callable[..., Awaitable[Any]]


def secret_value() -> str:
    """A value easy to look for anywhere it must not be."""
    return "sv-" + secrets.token_urlsafe(24)


@pytest.fixture
def put(api: Api) -> PutSecret:
    async def call(  # type: ignore[no-untyped-def]
        tenant: Tenant,
        name: str,
        value: str,
        headers: dict[str, str] | None = None,
        allowed_hosts: list[str] | None = None,
    ):
        body: dict[str, Any] = {"value": value}
        if allowed_hosts is not None:
            body["allowed_hosts"] = allowed_hosts
        return await api.client.put(
            f"/v1/secrets/{name}", json=body, headers=headers or tenant.headers
        )

    return call
