"""The secret values any exec of a sandbox was given, kept for the sandbox's life.

A secret an exec receives lives on in the sandbox after that exec: in `/proc/<pid>/environ` of
whatever it left running, in a file it wrote. Another exec of the same sandbox, perhaps started
with a narrower token, can print it from there. So every exec of a sandbox masks every value
any exec of that sandbox was given, in its output (streamed and stored) and in its record.

The values are held here, in memory, by the process that runs the sandbox's execs (its node),
and nowhere else: never written to the database, a log or the disk. They are keyed by tenant
and sandbox, and added only once an exec's start is recorded (the sandbox is the caller's), so
a request about another tenant's sandbox, or a token bound to another sandbox, changes nothing.
Sets of sandboxes that ended are dropped by a sweep. A sandbox holds at most `MAX_VALUES`
values of `MAX_BYTES` in all (what one exec may bring): past it, an exec bringing new values is
refused before anything is written.
"""

from __future__ import annotations

import asyncio
import logging
import time

from sqlalchemy import select

from service.db.models import Sandbox
from service.db.session import Db
from service.errors import Conflict
from service.execs.masking import SecretValues
from service.sandboxes.states import LIVE

log = logging.getLogger("airlock.execs")

MAX_VALUES = 256
MAX_BYTES = 64 * 65_536  # 64 secrets of the largest size: one exec's most
SWEEP_EVERY_S = 300.0

Key = tuple[str, str]  # tenant, sandbox


class SandboxSecretsFull(Conflict):
    code, title = "sandbox_secrets_full", "This sandbox holds as many secrets as it may"


class SandboxSecrets:
    def __init__(self, db: Db) -> None:
        self.db = db
        self._sets: dict[Key, SecretValues] = {}
        self._swept = time.monotonic()
        self._sweep: asyncio.Task[None] | None = None

    def known(self, tenant_id: str, sandbox_id: str) -> SecretValues:
        """What the sandbox's execs were given so far (an empty set for none)."""
        return self._sets.get((tenant_id, sandbox_id)) or SecretValues()

    def check(self, tenant_id: str, sandbox_id: str, values: list[str]) -> None:
        """SandboxSecretsFull when `values` would take the sandbox past its limits."""
        held = self.known(tenant_id, sandbox_id)
        new = held.new_of(values)
        count, size = len(held) + len(new), held.size + sum(len(v) for v in new)
        if count > MAX_VALUES or size > MAX_BYTES:
            raise SandboxSecretsFull(
                f"the execs of sandbox {sandbox_id} would have been given {count} distinct "
                f"secret values ({size} bytes); a sandbox holds at most {MAX_VALUES} "
                f"({MAX_BYTES} bytes), masked in every exec's output for its life: use a "
                "new sandbox",
                extra={"limit": MAX_VALUES, "limit_bytes": MAX_BYTES},
            )

    def add(self, tenant_id: str, sandbox_id: str, values: list[str]) -> SecretValues:
        """The sandbox's set, now holding `values`: the same object for every exec of the
        sandbox, so a masker sees values added after its exec started."""
        key = (tenant_id, sandbox_id)
        held = self._sets.get(key)
        if held is None:
            held = self._sets[key] = SecretValues()
            self._sweep_soon()
        held.add(held.new_of(values))
        return held

    def inherit(self, tenant_id: str, parent_id: str, child_id: str) -> None:
        """A fork's processes hold what its parent's held: the child masks the parent's values
        from its start (on the parent's node, where the fork is made)."""
        held = self._sets.get((tenant_id, parent_id))
        if held is not None and len(held):
            self.add(tenant_id, child_id, [v.decode() for v in held.ordered])

    def _sweep_soon(self) -> None:
        if self._sweep is not None or time.monotonic() - self._swept < SWEEP_EVERY_S:
            return
        self._sweep = asyncio.create_task(self._drop_ended(), name="sweep-sandbox-secrets")

    async def _drop_ended(self) -> None:
        try:
            keys = list(self._sets)
            live = await self._live(keys)
            for key in keys:
                if key not in live:
                    self._sets.pop(key, None)
        except Exception:  # kept until the next sweep: masking more is never a leak
            log.exception("sweeping the secrets of ended sandboxes failed")
        finally:
            self._swept = time.monotonic()
            self._sweep = None

    async def _live(self, keys: list[Key]) -> set[Key]:
        live: set[Key] = set()
        states = [state.value for state in LIVE]
        for at in range(0, len(keys), 500):
            ids = [sandbox_id for _, sandbox_id in keys[at : at + 500]]
            async with self.db() as session:
                rows = await session.execute(
                    select(Sandbox.tenant_id, Sandbox.id).where(
                        Sandbox.id.in_(ids), Sandbox.state.in_(states)
                    )
                )
            live.update((tenant_id, sandbox_id) for tenant_id, sandbox_id in rows)
        return live
