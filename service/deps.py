"""Named dependencies every controller takes (provided app-wide in `app.py`)."""

from __future__ import annotations

from typing import Annotated

from litestar.di import NamedDependency
from litestar.params import QueryParameter
from sqlalchemy.ext.asyncio import AsyncSession

from service.audit.recorder import AuditContext
from service.auth.principal import Principal
from service.pagination import DEFAULT_LIMIT, MAX_LIMIT
from service.settings import Settings

AppSettings = NamedDependency[Settings]
DbSession = NamedDependency[AsyncSession]
CurrentPrincipal = NamedDependency[Principal]
Audit = NamedDependency[AuditContext]
Limit = Annotated[
    int, QueryParameter(ge=1, le=MAX_LIMIT, description=f"Page size (default {DEFAULT_LIMIT})")
]
Cursor = Annotated[str | None, QueryParameter(description="`next_cursor` of the previous page")]
