"""create_app(settings) -> Litestar: wiring only."""

from __future__ import annotations

import functools
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

from service import VERSION
from service.api.apikeys import ApiKeyController
from service.api.audit import AuditController
from service.api.contexts import ContextController
from service.api.execs import ExecController
from service.api.files import FileController
from service.api.health import healthz, readyz
from service.api.internal import clean_up, export_snapshot
from service.api.nodes import NodeController
from service.api.pool import PoolController
from service.api.ports import PortLinkController, proxy_port, proxy_port_socket
from service.api.reviews import ReviewController
from service.api.sandboxes import SandboxController
from service.api.secrets import SecretController
from service.api.templates import TemplateController
from service.api.tenants import TenantController
from service.api.tokens import TokenController, jwks
from service.auth.authenticate import Authenticator
from service.auth.cache import AuthCache, AuthListener
from service.auth.keyring import KeyRing
from service.auth.tokens import TokenCodec
from service.background import Parts, role_jobs
from service.bootstrap import prepare
from service.context import provide_audit_context, provide_principal
from service.contexts.service import Contexts
from service.db.migrate import ensure_migrated
from service.db.pg import is_postgres
from service.db.session import dispose, make_engine, make_sessionmaker, provide_db_session
from service.errors import EXCEPTION_HANDLERS
from service.execs.runner import ExecRunner
from service.flows import placing
from service.flows.resume import Resumes, add_woke_header
from service.inputs import DEFAULT_BODY_LIMIT, InputPolicy
from service.mcp import McpEndpoint
from service.middleware.auth import (
    PUBLIC_PATHS,
    BearerAuthMiddleware,
    authorize,
    settle_options_answers,
)
from service.middleware.routing import RoutingMiddleware
from service.nodes.credentials import NodeCredentials
from service.nodes.local import LocalNode
from service.nodes.offload import ProxyHeaders
from service.nodes.owners import Owners
from service.nodes.routing import NodeRouter
from service.nodes.snapshots import FetchingRuntime, SnapshotFetcher
from service.openapi import correct_allow_header, document_problems
from service.pool.service import WarmPool
from service.ports.hosts import PreviewHosts
from service.ports.links import PreviewLinks
from service.ratelimit.limiter import (
    RateLimitMiddleware,
    RefusedAgainMiddleware,
    RequestLimiter,
)
from service.ratelimit.rates import TenantRates
from service.ratelimit.running import RunningWork, RunningWorkMiddleware
from service.requestid import add_request_id_header
from service.runtime import RuntimeUnavailable, SandboxRuntime, SandboxRuntimeError
from service.runtime.config import RuntimeConfig
from service.runtime.holder import RuntimeHolder
from service.runtime.problems import runtime_error_handler
from service.runtime.select import open_runtime
from service.settings import Role, Settings
from service.telemetry import (
    MetricsController,
    otel_plugin,
    prometheus_config,
    tracer_provider,
    use_tracer,
)


def create_app(
    settings: Settings,
    *,
    check_migrations: bool = True,
    run_jobs: bool = True,
    span_processor: SpanProcessor | None = None,
    runtime: SandboxRuntime | None = None,
) -> Litestar:
    secrets = prepare(settings, announce=True)
    engine = make_engine(settings.effective_database_url, settings.database_pool_size)
    keyring = KeyRing(settings.keys_dir)
    keyring.signer()  # fail now, not on the first request, if the keys are unreadable
    codec = TokenCodec(keyring, issuer=settings.jwt_issuer, audience=settings.jwt_audience)
    sessionmaker = make_sessionmaker(engine)
    node = LocalNode.of(settings)
    local_node = node.id
    node_credentials = NodeCredentials(keyring, issuer=settings.jwt_issuer, node_id=local_node)
    fetcher: SnapshotFetcher | None = None
    if local_node is None:
        runtimes = RuntimeHolder(_no_runtime_on_replicas)
    else:
        fetcher = SnapshotFetcher(sessionmaker, node_credentials, local_node)

        async def open_node_runtime() -> SandboxRuntime:
            opened = runtime or await open_runtime(RuntimeConfig.from_settings(settings))
            return FetchingRuntime(opened, fetcher)  # type: ignore[return-value]

        runtimes = RuntimeHolder(open_node_runtime)
    # Which node holds a sandbox: one cache, told by the flow that moves sandboxes.
    owners = Owners(engine)
    asked = functools.partial(placing.asked, sessionmaker)
    router = NodeRouter(sessionmaker, node, node_credentials, asked=asked, owners=owners)
    resumes = Resumes(sessionmaker, runtimes, node, owners)
    wake = resumes.wake
    exec_runner = ExecRunner(sessionmaker, engine, runtimes, settings.secrets_key_path, wake=wake)
    contexts = Contexts(runtimes, exec_runner.records)
    pool = WarmPool(settings, node)
    # Tracing costs a span per request: only when something receives the spans.
    provider = (
        tracer_provider(settings, span_processor)
        if settings.otel_traces_exporter != "none" or span_processor is not None
        else None
    )
    if provider is not None:
        use_tracer(provider)
    auth_cache = AuthCache()
    if not is_postgres(engine):  # one process: every change reaches the cache at its commit
        auth_cache.turn(True)
    # Tenants' quotas as read at most a few seconds ago: one cache for rates and caps.
    quotas = TenantRates(engine)
    limiter = RequestLimiter.of(settings, engine, quotas)
    running = RunningWork.of(settings, engine, quotas)
    # A node hears its callers inside the replicas' tokens: it looks no credential up.
    auth_listener = (
        AuthListener(engine, auth_cache)
        if is_postgres(engine) and settings.role != Role.NODE
        else None
    )
    state = State(
        {
            "settings": settings,
            "engine": engine,
            "sessionmaker": sessionmaker,
            "keyring": keyring,
            "token_codec": codec,
            "authenticator": Authenticator(engine, codec, secrets.operator_key, auth_cache),
            "auth_listener": auth_listener,
            "runtimes": runtimes,
            "wake": wake,
            "node_credentials": node_credentials,
            "exec_runner": exec_runner,
            "contexts": contexts,
            "pool": pool,
            "preview_links": PreviewLinks(keyring, issuer=settings.jwt_issuer),
            "limiter": limiter,
        }
    )

    # The MCP tools at /mcp, on the processes that serve tenants (not on a node alone).
    mcp = McpEndpoint() if settings.role != Role.NODE else None

    @asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        if check_migrations:
            await ensure_migrated(engine, settings.effective_database_url)
        jobs: Sequence[Any] = []
        if run_jobs:
            parts = Parts(
                settings, sessionmaker, runtimes, wake, pool, exec_runner, local_node, fetcher,
                owners,
            )  # fmt: skip
            jobs = await role_jobs(parts)
        for job in jobs:
            job.start()
        if auth_listener is not None:
            auth_listener.start()
        try:
            yield
        finally:
            if auth_listener is not None:
                await auth_listener.stop()
            for job in jobs:
                await job.stop()
            await exec_runner.shutdown()
            await contexts.shutdown()
            await router.close()
            await runtimes.close()
            await dispose(engine)

    prometheus = prometheus_config()
    app = Litestar(
        route_handlers=[
            TenantController,
            NodeController,
            ApiKeyController,
            TokenController,
            AuditController,
            SandboxController,
            ExecController,
            FileController,
            ContextController,
            TemplateController,
            PoolController,
            ReviewController,
            SecretController,
            PortLinkController,
            proxy_port,
            proxy_port_socket,
            jwks,
            healthz,
            readyz,
            MetricsController,
            export_snapshot,
            clean_up,
            *([mcp.route()] if mcp is not None else []),
        ],
        state=state,
        lifespan=[
            lifespan,
            *([mcp.lifespan] if mcp is not None else []),
            *([limiter.lifespan] if limiter is not None else []),
            *([running.lifespan] if running is not None else []),
        ],
        dependencies={
            "db_session": Provide(provide_db_session),
            "db": Provide(lambda: sessionmaker, sync_to_thread=False),
            "runtimes": Provide(lambda: runtimes, sync_to_thread=False),
            "exec_runner": Provide(lambda: exec_runner, sync_to_thread=False),
            "contexts": Provide(lambda: contexts, sync_to_thread=False),
            "wake": Provide(lambda: wake, sync_to_thread=False),
            "resumes": Provide(lambda: resumes, sync_to_thread=False),
            "node": Provide(lambda: node, sync_to_thread=False),
            "pool": Provide(lambda: pool, sync_to_thread=False),
            "settings": Provide(lambda: settings, sync_to_thread=False),
            "principal": Provide(provide_principal, sync_to_thread=False),
            "audit_ctx": Provide(provide_audit_context, sync_to_thread=False),
        },
        middleware=[
            InputPolicy,
            prometheus.middleware,
            *([RefusedAgainMiddleware(limiter, PUBLIC_PATHS)] if limiter else []),
            DefineMiddleware(
                BearerAuthMiddleware, exclude_from_auth_key="public", exclude=PUBLIC_PATHS
            ),
            # Before a call goes on to its node: the replica that took it counts it.
            *([RateLimitMiddleware(limiter)] if limiter else []),
            # Transfers and port connections hold a slot until they end, on the same replica.
            *([RunningWorkMiddleware(running)] if running else []),
            DefineMiddleware(RoutingMiddleware, router=router),
        ],
        guards=[authorize],
        exception_handlers={  # type: ignore[arg-type]
            **EXCEPTION_HANDLERS,
            SandboxRuntimeError: runtime_error_handler,
        },
        before_send=[add_request_id_header, add_woke_header],
        plugins=[otel_plugin(provider)] if provider is not None else [],
        openapi_config=OpenAPIConfig(
            title="Airlock",
            version=VERSION,
            description="Run untrusted code in disposable sandboxes.",
            path="/schema",
            render_plugins=[JsonRenderPlugin()],
        ),
        on_app_init=[_security_scheme],
        # Each route's body limit (InputPolicy enforces it before anything reads the body).
        request_max_body_size=DEFAULT_BODY_LIMIT,
        debug=False,
        # Logging is the process's (`airlock serve` configures it once): Litestar's own
        # set-up would replace it with a queue listener bound to the stderr of the moment.
        logging_config=None,
    )
    if settings.role != Role.NODE:  # before routing: a preview host is put under the port route
        app.asgi_handler = PreviewHosts(app.asgi_handler, settings.preview_domain)
    # Outermost: the client's address and the offload mark before anything reads them, and no
    # answer's headers that would send a proxy in front elsewhere.
    offload_key = settings.offload_key if settings.role == Role.API else None
    app.asgi_handler = ProxyHeaders(app.asgi_handler, settings.trusted_proxy_list, offload_key)
    document_problems(app)
    correct_allow_header(app)
    settle_options_answers(app)
    return app


async def _no_runtime_on_replicas() -> SandboxRuntime:
    raise RuntimeUnavailable(
        "none", "this process is an API replica (AIRLOCK_ROLE=api): sandboxes run on the nodes"
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
