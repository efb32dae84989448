"""create_app(settings) -> Litestar: wiring only."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

from litestar import Litestar
from litestar.config.app import AppConfig
from litestar.datastructures import State
from litestar.di import Provide
from litestar.middleware import DefineMiddleware
from litestar.openapi import OpenAPIConfig
from litestar.openapi.plugins import JsonRenderPlugin
from opentelemetry.sdk.trace import SpanProcessor

from service.apikeys.controller import ApiKeyController
from service.audit.controller import AuditController
from service.auth.authenticate import Authenticator
from service.auth.keyring import KeyRing
from service.auth.middleware import BearerAuthMiddleware, authorize
from service.auth.tokens import TokenCodec
from service.bootstrap import prepare
from service.context import provide_audit_context, provide_principal
from service.db.migrate import ensure_migrated
from service.db.session import make_engine, make_sessionmaker, provide_db_session
from service.errors import EXCEPTION_HANDLERS
from service.health.controller import healthz, readyz
from service.jobs.retention import RetentionJob
from service.requestid import add_request_id_header
from service.settings import Settings
from service.telemetry import MetricsController, otel_plugin, prometheus_config, tracer_provider
from service.tenants.controller import TenantController
from service.tokens.controller import TokenController, jwks

log = logging.getLogger("airlock")

VERSION = "0.1.0"


def create_app(
    settings: Settings,
    *,
    check_migrations: bool = True,
    run_jobs: bool = True,
    span_processor: SpanProcessor | None = None,
) -> Litestar:
    secrets = prepare(settings, announce=True)
    engine = make_engine(settings.effective_database_url)
    keyring = KeyRing(settings.keys_dir)
    keyring.signer()  # fail now, not on the first request, if the keys are unreadable
    codec = TokenCodec(keyring, issuer=settings.jwt_issuer, audience=settings.jwt_audience)
    sessionmaker = make_sessionmaker(engine)
    state = State(
        {
            "settings": settings,
            "engine": engine,
            "sessionmaker": sessionmaker,
            "keyring": keyring,
            "token_codec": codec,
            "authenticator": Authenticator(sessionmaker, codec, secrets.operator_key),
        }
    )

    @asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        if check_migrations:
            await ensure_migrated(engine, settings.effective_database_url)
        jobs: Sequence[Any] = [RetentionJob(sessionmaker, settings)] if run_jobs else []
        for job in jobs:
            job.start()
        try:
            yield
        finally:
            for job in jobs:
                await job.stop()
            await engine.dispose()

    prometheus = prometheus_config()
    return Litestar(
        route_handlers=[
            TenantController,
            ApiKeyController,
            TokenController,
            AuditController,
            jwks,
            healthz,
            readyz,
            MetricsController,
        ],
        state=state,
        lifespan=[lifespan],
        dependencies={
            "db_session": Provide(provide_db_session),
            "settings": Provide(lambda: settings, sync_to_thread=False),
            "principal": Provide(provide_principal, sync_to_thread=False),
            "audit_ctx": Provide(provide_audit_context, sync_to_thread=False),
        },
        middleware=[
            prometheus.middleware,
            DefineMiddleware(BearerAuthMiddleware, exclude_from_auth_key="public"),
        ],
        guards=[authorize],
        exception_handlers=EXCEPTION_HANDLERS,  # type: ignore[arg-type]
        before_send=[add_request_id_header],
        plugins=[otel_plugin(tracer_provider(settings, span_processor))],
        openapi_config=OpenAPIConfig(
            title="Airlock",
            version=VERSION,
            description="Run untrusted code in disposable sandboxes.",
            path="/schema",
            render_plugins=[JsonRenderPlugin()],
        ),
        on_app_init=[_security_scheme],
        debug=False,
    )


def _security_scheme(config: AppConfig) -> AppConfig:
    from litestar.openapi.spec import Components, SecurityScheme

    if config.openapi_config is not None:
        config.openapi_config.components = Components(
            security_schemes={
                "bearer": SecurityScheme(
                    type="http",
                    scheme="bearer",
                    description="An API key (`alk_…`), a token from POST /v1/tokens, or the "
                    "operator key",
                )
            }
        )
        config.openapi_config.security = [{"bearer": []}]
    return config
