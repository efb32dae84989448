"""OpenTelemetry tracing (exporter chosen by the standard `OTEL_*` variables) and Prometheus."""

from __future__ import annotations

import hmac
from typing import Any

from litestar.connection import ASGIConnection
from litestar.handlers.base import BaseRouteHandler
from litestar.plugins.opentelemetry import OpenTelemetryConfig, OpenTelemetryPlugin
from litestar.plugins.prometheus import PrometheusConfig, PrometheusController
from opentelemetry import propagate, trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter

from service.errors import Unauthenticated
from service.redaction import redact
from service.settings import Settings


class _Tracing:
    """The tracer of this process's app: a no-op one until an app that traces is made
    (`use_tracer`; in a process with several apps, the last that traces)."""

    tracer: trace.Tracer = trace.NoOpTracer()


def use_tracer(provider: TracerProvider) -> None:
    _Tracing.tracer = provider.get_tracer("airlock")


def span(
    name: str, attributes: dict[str, Any], kind: trace.SpanKind = trace.SpanKind.INTERNAL
) -> Any:
    """A span inside the current request's (a child of its server span): for what a request
    asks of the runtime, and of another node."""
    return _Tracing.tracer.start_as_current_span(name, kind=kind, attributes=attributes)


def trace_headers() -> dict[str, str]:
    """The W3C trace context of the current span, for a request to another node (empty when
    nothing is traced)."""
    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    return carrier


def tracer_provider(settings: Settings, extra: SpanProcessor | None = None) -> TracerProvider:
    # Resource.create() reads OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES.
    provider = TracerProvider(resource=Resource.create({"service.name": "airlock"}))
    if settings.otel_traces_exporter == "otlp":
        # Reads OTEL_EXPORTER_OTLP_* for endpoint, headers and timeouts.
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    elif settings.otel_traces_exporter == "console":
        provider.add_span_processor(BatchSpanProcessor(ConsoleSpanExporter()))
    if extra is not None:
        provider.add_span_processor(extra)
    return provider


def otel_plugin(provider: TracerProvider) -> OpenTelemetryPlugin:
    return OpenTelemetryPlugin(
        OpenTelemetryConfig(
            tracer_provider=provider,
            exclude=["/healthz", "/metrics"],
            # One span per request, not one more per ASGI message (an event stream sends
            # thousands); the request span keeps the status and timing.
            exclude_spans=["receive", "send"],
            server_request_hook_handler=hide_preview_links,
        )
    )


def hide_preview_links(span: trace.Span, _scope: Any) -> None:
    """A request span's URL attributes (`http.url`, `url.query`) hold the query, where a
    preview link travels: its value is replaced before the span is exported."""
    attributes = getattr(span, "attributes", None) or {}
    hidden = {key: redact(value) for key, value in attributes.items() if isinstance(value, str)}
    span.set_attributes({key: value for key, value in hidden.items() if value != attributes[key]})


def metrics_token_guard(
    connection: ASGIConnection[Any, Any, Any, Any], _handler: BaseRouteHandler
) -> None:
    """With AIRLOCK_METRICS_TOKEN set, /metrics answers only `Authorization: Bearer <it>`
    (no tenant credential, not even the operator key: a scraper holds this one alone)."""
    expected = connection.app.state.settings.metrics_token
    if expected is None:
        return
    scheme, _, given = (connection.headers.get("authorization") or "").partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(
        given.strip().encode(), expected.encode()
    ):
        raise Unauthenticated("/metrics requires the metrics token as a bearer credential")


class MetricsController(PrometheusController):
    path = "/metrics"
    opt = {"public": True}  # to the tenant authentication; metrics_token_guard decides
    guards = [metrics_token_guard]
    include_in_schema = False


def prometheus_config() -> PrometheusConfig:
    return PrometheusConfig(
        app_name="airlock",
        prefix="airlock",
        group_path=True,
        exclude=["/metrics"],
    )
