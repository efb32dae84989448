"""Hooks for the schemathesis run of test_openapi_fuzz: archive uploads are sent as raw bytes."""

from __future__ import annotations

from typing import Any

import schemathesis
from schemathesis.transport.requests import binary_serializer


@schemathesis.serializer("application/x-tar")
def tar_serializer(ctx: schemathesis.SerializationContext, value: Any) -> dict[str, Any]:
    return binary_serializer(ctx, value)
