"""The secret values any exec of a sandbox was given, kept for the sandbox's life.

A secret an exec receives lives on in the sandbox after that exec: in `/proc/<pid>/environ` of
whatever it left running, in a file it wrote. Another exec of the same sandbox, perhaps started
with a narrower token, can print it from there. So every exec of a sandbox masks every value
any exec of that sandbox was given, in its output (streamed and stored) and in its record.

The values are kept in `sandbox_secret_values`, sealed with the deployment's secrets key
(`service.secrets.crypto`, the tenant and the sandbox bound in), and deleted with the sandbox's
row; never in clear in the database, a log or the disk. An exec's new values are written with
its start, before its process starts: no process holds a value the table lacks. A fork's rows
are copies of its parent's, written with the child's row.

The process that runs a sandbox's execs (its node) holds the set in memory, read from the table
the first time it sees the sandbox (after a restart, on the node it resumed on) and then kept:
only execs of the sandbox add to it, and they all run on its node. A sandbox that moved to
another node and back was re-created there (a new runtime id), so a set read for another
runtime sandbox is read again. Sets are keyed by tenant and sandbox, and added to only once an
exec's start is recorded (the sandbox is the caller's), so a request about another tenant's
sandbox, or a token bound to another sandbox, changes nothing. Sets of sandboxes that ended
are dropped by a sweep. A sandbox holds at most `MAX_VALUES` distinct values of `MAX_BYTES` in
all (what one exec may bring): past it, an exec bringing new values is refused before anything
is written.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import and_, select
from sqlalchemy.ext.asyncio import AsyncSession

from service.db.base import utcnow
from service.db.models import Sandbox, SandboxSecretValue
from service.db.session import Db
from service.errors import Conflict
from service.execs.masking import SecretValues
from service.sandboxes.states import LIVE
from service.secrets.crypto import Sealed, SecretBox, Undecryptable, box_for

log = logging.getLogger("airlock.execs")

MAX_VALUES = 256
MAX_BYTES = 64 * 65_536  # 64 secrets of the largest size: one exec's most
SWEEP_EVERY_S = 300.0

Key = tuple[str, str]  # tenant, sandbox


class SandboxSecretsFull(Conflict):
    code, title = "sandbox_secrets_full", "This sandbox holds as many secrets as it may"


class SandboxSecretsUnreadable(Conflict):
    code, title = "sandbox_secrets_unreadable", "This sandbox's secrets do not decrypt"


@dataclass
class _Held:
    """A sandbox's set, and the runtime sandbox it was read for (None: it had none then)."""

    values: SecretValues = field(default_factory=SecretValues)
    runtime_id: str | None = None


class SandboxSecrets:
    def __init__(self, db: Db, key_file: Path | None = None) -> None:
        self.db = db
        self.key_file = key_file  # None: nothing sealed (values are held in memory only)
        self._sets: dict[Key, _Held] = {}
        self._swept = time.monotonic()
        self._sweep: asyncio.Task[None] | None = None

    def known(self, tenant_id: str, sandbox_id: str) -> SecretValues:
        """What the sandbox's execs were given so far, as far as this process has read or
        added (an empty set for none; `load` reads the rest)."""
        held = self._sets.get((tenant_id, sandbox_id))
        return held.values if held is not None else SecretValues()

    async def load(self, tenant_id: str, sandbox_id: str) -> SecretValues:
        """The sandbox's set, read from the table the first time this process asks (a sandbox
        that never had a secret is remembered as such: no further read)."""
        held = self._sets.get((tenant_id, sandbox_id))
        if held is None:
            held = await self._read(tenant_id, sandbox_id)
        return held.values

    async def settle(self, tenant_id: str, sandbox_id: str, runtime_id: str | None) -> None:
        """Read the set again when it was read for another runtime sandbox than the one that
        runs the sandbox now (it moved away and back: execs elsewhere may have added)."""
        held = self._sets.get((tenant_id, sandbox_id))
        if held is None or runtime_id is None or held.runtime_id == runtime_id:
            return
        if held.runtime_id is not None:
            await self._read(tenant_id, sandbox_id)
        held.runtime_id = runtime_id

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

    def sealed(
        self, tenant_id: str, sandbox_id: str, values: list[str], now: datetime
    ) -> list[dict[str, Any]]:
        """The rows to write with the exec's start for those of `values` the sandbox does not
        hold yet."""
        new = self.known(tenant_id, sandbox_id).new_of(values)
        if not new or self.key_file is None:
            return []
        box = box_for(self.key_file)
        return [
            _row(tenant_id, sandbox_id, box.seal_held(tenant_id, sandbox_id, v.decode()), now)
            for v in sorted(new)
        ]

    def add(self, tenant_id: str, sandbox_id: str, values: list[str]) -> SecretValues:
        """The sandbox's set, now holding `values`: the same object for every exec of the
        sandbox, so a masker sees values added after its exec started."""
        held = self._held(tenant_id, sandbox_id)
        held.values.add(held.values.new_of(values))
        return held.values

    async def copy(
        self, session: AsyncSession, tenant_id: str, parent_id: str, child_id: str
    ) -> None:
        """A fork's processes hold what its parent's held: the child's rows, sealed for it,
        written in `session` (with the child's row), so its execs mask the parent's values."""
        if self.key_file is None:
            return
        rows = await session.execute(
            select(
                SandboxSecretValue.key_id, SandboxSecretValue.nonce, SandboxSecretValue.ciphertext
            )
            .where(
                SandboxSecretValue.tenant_id == tenant_id,
                SandboxSecretValue.sandbox_id == parent_id,
            )
            .order_by(SandboxSecretValue.id)
        )
        box, now = self._box(), utcnow()
        values = _opened(box, tenant_id, parent_id, [Sealed(*row) for row in rows])
        session.add_all(
            SandboxSecretValue(
                **_row(tenant_id, child_id, box.seal_held(tenant_id, child_id, v), now)
            )
            for v in dict.fromkeys(values)
        )

    def _box(self) -> SecretBox:
        assert self.key_file is not None
        return box_for(self.key_file)

    def _held(self, tenant_id: str, sandbox_id: str) -> _Held:
        key = (tenant_id, sandbox_id)
        held = self._sets.get(key)
        if held is None:
            held = self._sets[key] = _Held()
            self._sweep_soon()
        return held

    async def _read(self, tenant_id: str, sandbox_id: str) -> _Held:
        """The table's values merged into the sandbox's set (never replacing it: maskers and
        execs that started meanwhile hold that object)."""
        async with self.db() as session:
            result = await session.execute(
                select(
                    Sandbox.runtime_id,
                    SandboxSecretValue.key_id,
                    SandboxSecretValue.nonce,
                    SandboxSecretValue.ciphertext,
                )
                .outerjoin(
                    SandboxSecretValue,
                    and_(
                        SandboxSecretValue.sandbox_id == Sandbox.id,
                        SandboxSecretValue.tenant_id == Sandbox.tenant_id,
                    ),
                )
                .where(Sandbox.tenant_id == tenant_id, Sandbox.id == sandbox_id)
                .order_by(SandboxSecretValue.id)
            )
            rows = result.all()
        if not rows:  # not the tenant's sandbox: nothing to remember
            return _Held()
        runtime_id = rows[0].runtime_id
        found = [Sealed(r.key_id, r.nonce, r.ciphertext) for r in rows if r.key_id is not None]
        values = _opened(self._box(), tenant_id, sandbox_id, found) if found else []
        held = self._held(tenant_id, sandbox_id)
        held.values.add(held.values.new_of(values))
        held.runtime_id = runtime_id
        return held

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


def _row(tenant_id: str, sandbox_id: str, sealed: Sealed, now: datetime) -> dict[str, Any]:
    return {
        "tenant_id": tenant_id,
        "sandbox_id": sandbox_id,
        "key_id": sealed.key_id,
        "nonce": sealed.nonce,
        "ciphertext": sealed.ciphertext,
        "created_at": now,
    }


def _opened(box: SecretBox, tenant_id: str, sandbox_id: str, found: list[Sealed]) -> list[str]:
    """The values of a sandbox's rows; a row that does not open refuses the sandbox's execs
    (one that runs without masking it could print it)."""
    try:
        return [box.open_held(tenant_id, sandbox_id, sealed) for sealed in found]
    except Undecryptable as exc:
        raise SandboxSecretsUnreadable(
            f"a secret value given to an earlier exec of sandbox {sandbox_id} does not decrypt "
            f"({exc}): was the deployment's secrets key changed? Its execs are refused, as they "
            "could not mask it"
        ) from None
