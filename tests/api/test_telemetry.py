"""What an operator's monitoring sees: Prometheus metrics, traces, health and readiness."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from litestar.testing import AsyncTestClient
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind
from prometheus_client.parser import text_string_to_metric_families

from service.app import create_app
from service.settings import Settings
from tests.conftest import OPERATOR_KEY, Api, Tenant

pytestmark = pytest.mark.sqlite


async def request_count(api: Api, method: str, path: str, status: int) -> float:
    r = await api.client.get("/metrics")
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/plain")
    for family in text_string_to_metric_families(r.text):
        if family.name != "airlock_requests":
            continue
        for sample in family.samples:
            labels = sample.labels
            if (
                sample.name == "airlock_requests_total"
                and labels["method"] == method
                and labels["path"] == path
                and labels["status_code"] == str(status)
            ):
                return sample.value
    return 0.0


async def test_metrics_count_requests_by_route_and_status(api: Api, tenant: Tenant) -> None:
    path = "/v1/tenants/{tenant_id}"
    ok_before = await request_count(api, "GET", path, 200)
    missing_before = await request_count(api, "GET", path, 404)
    for _ in range(3):
        r = await api.client.get(f"/v1/tenants/{tenant.id}", headers=api.operator)
        assert r.status_code == 200
    r = await api.client.get("/v1/tenants/ten_missing", headers=api.operator)
    assert r.status_code == 404
    assert await request_count(api, "GET", path, 200) == ok_before + 3
    assert await request_count(api, "GET", path, 404) == missing_before + 1

    text = (await api.client.get("/metrics")).text
    # Routes are labelled by template, so ids never become label values.
    assert tenant.id not in text
    assert "# TYPE airlock_requests_total counter" in text


async def test_metrics_need_no_credential(api: Api) -> None:
    r = await api.client.get("/metrics")
    assert r.status_code == 200
    assert "airlock_requests_total" in r.text


def server_spans(exporter: InMemorySpanExporter) -> list[ReadableSpan]:
    return [s for s in exporter.get_finished_spans() if s.kind is SpanKind.SERVER]


async def test_tenant_request_span_carries_the_tenant_id(
    api: Api, settings: Settings, tenant: Tenant
) -> None:
    exporter = InMemorySpanExporter()
    app = create_app(settings, run_jobs=False, span_processor=SimpleSpanProcessor(exporter))
    async with AsyncTestClient(app=app) as client:
        r = await client.get("/v1/audit", headers=tenant.headers)
        assert r.status_code == 200, r.text
        r = await client.get("/v1/audit")
        assert r.status_code == 401

    spans = server_spans(exporter)
    assert len(spans) == 2, [s.name for s in spans]
    ok, unauthenticated = spans
    assert ok.attributes is not None and unauthenticated.attributes is not None
    assert ok.attributes["airlock.tenant_id"] == tenant.id
    assert ok.attributes["airlock.principal.kind"] == "api_key"
    assert ok.attributes["http.status_code"] == 200
    assert "airlock.tenant_id" not in unauthenticated.attributes
    assert unauthenticated.attributes["http.status_code"] == 401
    # The credential itself is never recorded in a span.
    for span in exporter.get_finished_spans():
        assert tenant.key not in str(dict(span.attributes or {}))


async def test_operator_span_has_no_tenant(api: Api, settings: Settings) -> None:
    exporter = InMemorySpanExporter()
    app = create_app(settings, run_jobs=False, span_processor=SimpleSpanProcessor(exporter))
    async with AsyncTestClient(app=app) as client:
        r = await client.get("/v1/tenants", headers={"Authorization": f"Bearer {OPERATOR_KEY}"})
        assert r.status_code == 200, r.text
    (span,) = server_spans(exporter)
    assert span.attributes is not None
    assert span.attributes["airlock.principal.kind"] == "operator"
    assert "airlock.tenant_id" not in span.attributes


async def test_healthz_and_readyz(api: Api) -> None:
    r = await api.client.get("/healthz")
    assert r.status_code == 200
    assert r.json()["status"] == "ok"
    r = await api.client.get("/readyz")
    assert r.status_code == 200
    assert r.json() == {"status": "ok", "checks": {"database": "ok"}}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("kind", ["postgresql", "sqlite"])
async def test_readyz_is_503_when_the_database_is_unreachable(tmp_path: Path, kind: str) -> None:
    if kind == "postgresql":
        url = f"postgresql+asyncpg://airlock@127.0.0.1:{free_port()}/airlock"
    else:
        url = f"sqlite+aiosqlite:///{tmp_path / 'no' / 'such' / 'dir' / 'airlock.db'}"
    settings = Settings.from_env(
        {}, state_dir=tmp_path / "state", database_url=url, operator_key=OPERATOR_KEY
    )
    app = create_app(settings, check_migrations=False, run_jobs=False)
    async with AsyncTestClient(app=app) as client:
        r = await client.get("/readyz")
        assert r.status_code == 503, r.text
        body = r.json()
        assert body.get("status") == "unavailable" or body.get("code") == "unavailable"
        assert body["checks"]["database"] != "ok"
        # The process itself is alive: liveness stays green, so it is not restarted in a loop.
        r = await client.get("/healthz")
        assert r.status_code == 200


async def test_openapi_document_is_readable(api: Api, tenant: Tenant) -> None:
    # Public, like /.well-known/jwks.json: the generated client is built from it.
    r = await api.client.get("/schema/openapi.json")
    assert r.status_code == 200, r.text
    operations = {
        op["operationId"]
        for path in r.json()["paths"].values()
        for op in path.values()
        if isinstance(op, dict) and "operationId" in op
    }
    assert {"create_tenant", "list_audit_events", "verify_audit_chain"} <= operations
