"""Hooks for the schemathesis run of test_openapi_fuzz: archive uploads are sent as raw bytes,
and each request that carries a valid Idempotency-Key gets a key of its own (a key names one
request: the same key with another body is refused with 422 by design, which a generator that
reuses one value for every case would otherwise report as valid data refused)."""

from __future__ import annotations

import secrets
from typing import Any

import schemathesis
from schemathesis.generation import GenerationMode
from schemathesis.transport.requests import binary_serializer


@schemathesis.serializer("application/x-tar")
def tar_serializer(ctx: schemathesis.SerializationContext, value: Any) -> dict[str, Any]:
    return binary_serializer(ctx, value)


@schemathesis.hook
def before_call(ctx: schemathesis.HookContext, case: schemathesis.Case, **kwargs: Any) -> None:
    # Only valid cases: a negative case's headers are what it is about (one left out, say).
    meta = case._meta  # schemathesis has no public accessor for how a case was generated
    if meta is None or meta.generation.mode is not GenerationMode.POSITIVE:
        return
    if case.headers and "Idempotency-Key" in case.headers:
        case.headers["Idempotency-Key"] = f"fuzz-{secrets.token_hex(8)}"
