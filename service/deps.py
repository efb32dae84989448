"""Named dependencies every controller takes (provided app-wide in `app.py`)."""

from __future__ import annotations

from typing import Annotated

from litestar.di import NamedDependency
from litestar.params import HeaderParameter, QueryParameter
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from service.audit.recorder import AuditContext
from service.auth.principal import Principal
from service.contexts.service import Contexts
from service.execs.runner import ExecRunner
from service.flows.resume import Resumes
from service.nodes.local import LocalNode
from service.pagination import DEFAULT_LIMIT, MAX_LIMIT
from service.runtime.holder import RuntimeHolder
from service.sandboxes.waking import Wake
from service.settings import Settings

AppSettings = NamedDependency[Settings]
DbSession = NamedDependency[AsyncSession]
# For services that keep transactions short around runtime calls and open their own sessions.
Db = NamedDependency[async_sessionmaker[AsyncSession]]
Runtimes = NamedDependency[RuntimeHolder]
# What this process is, and its node's id and ratios when it runs one.
ThisNode = NamedDependency[LocalNode]
# Resumes a paused sandbox before a call that needs it running (service.flows.resume.Resumes.wake).
Waker = NamedDependency[Wake]
# Resumes a paused sandbox on request (service.flows.resume).
ResumesDep = NamedDependency[Resumes]
ExecRunnerDep = NamedDependency[ExecRunner]
# The execution contexts this process holds (service.contexts).
ContextsDep = NamedDependency[Contexts]
CurrentPrincipal = NamedDependency[Principal]
Audit = NamedDependency[AuditContext]
Limit = Annotated[
    int, QueryParameter(ge=1, le=MAX_LIMIT, description=f"Page size (default {DEFAULT_LIMIT})")
]
IdempotencyKey = Annotated[
    str | None,
    HeaderParameter(
        name="Idempotency-Key",
        min_length=1,
        max_length=200,
        description="A retry with the same key returns the first result and starts nothing new",
    ),
]
