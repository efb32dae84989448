"""The base of a repository of one tenant's rows: every statement it makes goes through
`_scoped`, so no statement can reach another tenant's."""

from __future__ import annotations

from typing import Any, ClassVar, Generic, TypeVar

from sqlalchemy import Select, select
from sqlalchemy.ext.asyncio import AsyncSession

Row = TypeVar("Row")


class TenantScoped(Generic[Row]):
    model: ClassVar[type[Any]]  # a table with a `tenant_id` column
    what: ClassVar[str]  # what a row is, for the refusal of another tenant's

    def __init__(self, session: AsyncSession, tenant_id: str) -> None:
        self.session = session
        self.tenant_id = tenant_id

    def _scoped(self, stmt: Select[tuple[Row]]) -> Select[tuple[Row]]:
        return stmt.where(self.model.tenant_id == self.tenant_id)

    def _rows(self) -> Select[tuple[Row]]:
        """Every row of the tenant's."""
        return self._scoped(select(self.model))

    def add(self, row: Row) -> None:
        if row.tenant_id != self.tenant_id:  # type: ignore[attr-defined]
            raise ValueError(f"{self.what} belongs to another tenant")
        self.session.add(row)
