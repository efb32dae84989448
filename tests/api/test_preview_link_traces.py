"""A request span records the URL with its query: a preview link in it is shown as `***`."""

from __future__ import annotations

import pytest
from litestar.testing import AsyncTestClient
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from service.app import create_app
from service.settings import Settings
from tests.conftest import Api

pytestmark = pytest.mark.sqlite

# Shaped like a link (a JWT); whether it is valid does not matter to what a span records.
LINK = "eyJhbGciOiJFZERTQSJ9.eyJzdWIiOiJrZXkifQ.c2lnbmF0dXJlLW9mLXRoZS1saW5r"


async def test_a_span_shows_a_preview_link_redacted(api: Api, settings: Settings) -> None:
    exporter = InMemorySpanExporter()
    app = create_app(settings, run_jobs=False, span_processor=SimpleSpanProcessor(exporter))
    async with AsyncTestClient(app=app) as client:
        r = await client.get(f"/v1/sandboxes/sbx_x/ports/8000/a?airlock_preview={LINK}&page=1")
        assert r.status_code == 401, r.text
    spans = exporter.get_finished_spans()
    recorded = [str(dict(span.attributes or {})) for span in spans]
    assert any("airlock_preview=***&page=1" in text for text in recorded), recorded
    assert not any(LINK in text or LINK.split(".")[2] in text for text in recorded), recorded
