"""Every hand-written SQL statement of the exec records, by name: `PG_*` sent to asyncpg
(service.execs.records_pg, parameters `$n`), `LITE_*` run on the SQLite writer connection
(service.execs.records_sqlite, parameters `?` or `:name`). Each result column has a name, and
rows are read by it.

On PostgreSQL a start and a finish are each one statement appending to the audit chain by
compare-and-swap (service.audit.queries.pg_append_sql): every write in it happens only
`WHERE EXISTS (SELECT 1 FROM head)`, that is exactly when the event is appended.
"""

from __future__ import annotations

from service.audit.queries import pg_append_sql, pg_casts, pg_params
from service.db.models import Exec as ExecTable
from service.execs.quotas import QUOTA_RULES
from service.execs.recording import FINISH_COLUMNS, START_COLUMNS

# Every column of the start row, quoted ("user" is a keyword).
_START_NAMES = ", ".join(f'"{c}"' for c in START_COLUMNS)
_START_CASTS = pg_casts(ExecTable.__table__, START_COLUMNS)
# The columns of a sealed secret value's row and of an output chunk's, in the order written.
SECRET_VALUE_COLUMNS = ("tenant_id", "sandbox_id", "key_id", "nonce", "ciphertext", "created_at")
CHUNK_COLUMNS = ("exec_id", "seq", "stream", "data")


def _numbered(count: int) -> str:
    return ", ".join(f"${i + 1}" for i in range(count))


# ---- PostgreSQL

# The sandbox a start is for, what its checks count, and the head of the tenant's chain
# (unlocked: the start's event extends it next). $1 the tenant, $2 the sandbox, $3 the first
# rate bucket summed (recording.rate_second), $4 the sandbox a bound token is limited to.
PG_FACTS = """
SELECT s.id, s.state, s.runtime_id, s.failure_reason, s.env, s.network, t.quotas,
  r.recent, r.oldest, n.running, h.seq AS head_seq, h.hash AS head_hash
FROM sandboxes s JOIN tenants t ON t.id = s.tenant_id
CROSS JOIN LATERAL (
  SELECT coalesce(sum(b.starts), 0) AS recent, min(b.second) AS oldest FROM exec_start_buckets b
  WHERE b.tenant_id = $1 AND b.second >= $3
) r
CROSS JOIN LATERAL (
  SELECT count(*) AS running FROM execs e WHERE e.tenant_id = $1 AND e.state = 'running'
) n
LEFT JOIN audit_chain_heads h ON h.chain = s.tenant_id
WHERE s.tenant_id = $1 AND s.id = $2 AND ($4::varchar IS NULL OR s.id = $4)
"""

# The exec (id, request_hash) an earlier request started with this Idempotency-Key:
# $1 the tenant, $2 the sandbox, $3 the key.
PG_REPLAY = """
SELECT id, request_hash FROM execs
WHERE tenant_id = $1 AND sandbox_id = $2 AND idempotency_key = $3
"""


def _insert_start(first: int) -> str:
    """The start row, its parameters numbered from $`first`, written when the event is."""
    params = ", ".join(pg_params(START_COLUMNS, _START_CASTS, first).values())
    return (
        f"INSERT INTO execs ({_START_NAMES}) "  # noqa: S608 (fixed names)
        f"SELECT {params} WHERE EXISTS (SELECT 1 FROM head)"
    )


def _count_start(tenant: str, second: str) -> str:
    """The start counted into its tenant's bucket of `second` (recording.rate_second), when
    the start is written."""
    return (
        "INSERT INTO exec_start_buckets AS b (tenant_id, second, starts) "  # noqa: S608 (fixed)
        f"SELECT {tenant}, {second}::bigint, 1 WHERE EXISTS (SELECT 1 FROM head) "
        "ON CONFLICT (tenant_id, second) DO UPDATE SET starts = b.starts + 1"
    )


def _within_quotas(first: int) -> str:
    """The rules of QUOTA_RULES on the row of `facts`: $`first` the exec's timeout, then the
    default of each rule's quota in their order (for a tenant that stored none of its own)."""
    checks = []
    for n, rule in enumerate(QUOTA_RULES, start=first + 1):
        own = rule.measure == "timeout_s"
        measure = f"${first}::{rule.cast}" if own else f"facts.{rule.measure}"
        limit = f"coalesce((facts.quotas->>'{rule.quota}')::{rule.cast}, ${n})"
        checks.append(f"{measure} {'<=' if rule.inclusive else '<'} {limit}")
    return " AND ".join(checks)


# The facts, the checks and the start row in one statement, once the chain's head is known
# from an earlier append: $1-$4 as in PG_FACTS, $5 the exec's timeout, $6-$8 the defaults of
# the quotas of QUOTA_RULES, $9 the start's rate bucket, then the start row and the event. Its
# row is PG_FACTS's, with `appended` (the start was written) and `allowed` (the checks passed).
# When a check fails nothing is written and the caller checks the facts returned, which raises
# the refusal. When the head moved nothing is written either: the checks counted rows as of a
# head that is no longer the last, so the statement runs again with the head it read (and then
# with the head locked), never an insert without them. Every start of a tenant moves its head,
# so two starts racing for the last place cannot both be written.
PG_FACTS_AND_START = pg_append_sql(
    10 + len(START_COLUMNS),
    before=f"""facts AS ({PG_FACTS}), allowed AS (
      SELECT 1 FROM facts WHERE facts.state = 'running' AND facts.runtime_id IS NOT NULL
        AND {_within_quotas(5)})""",  # noqa: S608
    guard="EXISTS (SELECT 1 FROM allowed)",
    action=_insert_start(10),
    more={"rate_write": _count_start("$1", "$9")},
    result=(
        "SELECT facts.*, (SELECT count(*) FROM head) AS appended, "
        "(SELECT count(*) FROM allowed) AS allowed FROM facts"
    ),
)

# The start row (parameters from $1), counted in the rate bucket of
# $`len(START_COLUMNS) + 1`, with its event; `appended` when it was written.
PG_START = pg_append_sql(
    len(START_COLUMNS) + 2,
    action=_insert_start(1),
    more={
        "rate_write": _count_start(
            pg_params(START_COLUMNS, _START_CASTS, 1)["tenant_id"], f"${len(START_COLUMNS) + 1}"
        )
    },
    result="SELECT count(*) AS appended FROM head",
)

# The end of running exec $1 (a finished one is left as it is), FINISH_COLUMNS from $2.
_UPDATE_FINISH = (
    "UPDATE execs SET "  # noqa: S608 (fixed names)
    + ", ".join(f"{c} = ${i + 2}" for i, c in enumerate(FINISH_COLUMNS))
    + " WHERE id = $1 AND state = 'running' AND EXISTS (SELECT 1 FROM head)"
    + " RETURNING tenant_id, stored_bytes"
)
# The exec's stored output counted into its tenant's in the finish's own statement (and only
# when it stored some: an exec that printed nothing does not touch the usage row).
_COUNT_FINISH = (
    "INSERT INTO tenant_usage AS u (tenant_id, stored_output_bytes) "
    "SELECT tenant_id, stored_bytes FROM action_write WHERE stored_bytes > 0 "
    "ON CONFLICT (tenant_id) DO UPDATE "
    "SET stored_output_bytes = u.stored_output_bytes + excluded.stored_output_bytes "
    "RETURNING stored_output_bytes"
)
# The finish with its event: `appended`, and the tenant's `stored_output_bytes` after when
# this exec added to it.
PG_FINISH = pg_append_sql(
    len(FINISH_COLUMNS) + 2,
    action=_UPDATE_FINISH,
    more={"usage_write": _COUNT_FINISH},
    result=(
        "SELECT (SELECT count(*) FROM head) AS appended, "
        "(SELECT stored_output_bytes FROM usage_write) AS stored_output_bytes"
    ),
)

# An event on its own (a call with no row of its own, such as a context's run), its
# parameters from $1; `appended` when it was.
PG_APPEND = pg_append_sql(1, result="SELECT count(*) AS appended FROM head")

# A chunk of an exec's output, CHUNK_COLUMNS in order.
PG_INSERT_CHUNK = f"INSERT INTO exec_chunks ({', '.join(CHUNK_COLUMNS)}) VALUES ({_numbered(4)})"  # noqa: S608

# A sealed secret value an exec brings its sandbox, SECRET_VALUE_COLUMNS in order.
PG_INSERT_SECRET_VALUE = (
    f"INSERT INTO sandbox_secret_values ({', '.join(SECRET_VALUE_COLUMNS)}) "  # noqa: S608
    f"VALUES ({_numbered(len(SECRET_VALUE_COLUMNS))})"
)


# ---- SQLite


def _placeholders(names: tuple[str, ...]) -> str:
    return ", ".join("?" for _ in names)


def _quoted(names: tuple[str, ...]) -> str:
    return ", ".join(f'"{n}"' for n in names)


# The sandbox a start is for and what its checks count: :tenant, :sandbox, :since the first
# rate bucket summed, :only the sandbox a bound token is limited to.
LITE_FACTS = """
SELECT s.id, s.state, s.runtime_id, s.failure_reason, s.env, s.network, t.quotas,
  (SELECT coalesce(sum(b.starts), 0) FROM exec_start_buckets b
    WHERE b.tenant_id = :tenant AND b.second >= :since) AS recent,
  (SELECT min(b.second) FROM exec_start_buckets b
    WHERE b.tenant_id = :tenant AND b.second >= :since) AS oldest,
  (SELECT count(*) FROM execs e WHERE e.tenant_id = :tenant AND e.state = 'running') AS running
FROM sandboxes s JOIN tenants t ON t.id = s.tenant_id
WHERE s.tenant_id = :tenant AND s.id = :sandbox AND (:only IS NULL OR s.id = :only)
"""

# The exec (id, request_hash) an earlier request started with this Idempotency-Key:
# the tenant, the sandbox, the key.
LITE_REPLAY = """
SELECT id, request_hash FROM execs
WHERE tenant_id = ? AND sandbox_id = ? AND idempotency_key = ?
"""

# The start row, START_COLUMNS in order.
LITE_INSERT_START = (
    f"INSERT INTO execs ({_quoted(START_COLUMNS)}) VALUES ({_placeholders(START_COLUMNS)})"  # noqa: S608
)

# The start counted into its tenant's rate bucket: the tenant, the second.
LITE_COUNT_START = """
INSERT INTO exec_start_buckets (tenant_id, second, starts) VALUES (?, ?, 1)
ON CONFLICT (tenant_id, second) DO UPDATE SET starts = starts + 1
"""

# The end of a running exec (a finished one is left as it is): FINISH_COLUMNS, then its id.
LITE_UPDATE_FINISH = (
    "UPDATE execs SET "  # noqa: S608 (fixed names)
    + ", ".join(f'"{c}" = ?' for c in FINISH_COLUMNS)
    + " WHERE id = ? AND state = 'running'"
)

# The exec's stored output counted into its tenant's, in the finish's transaction: the tenant,
# the bytes; the tenant's `stored_output_bytes` after.
LITE_COUNT_FINISH = """
INSERT INTO tenant_usage (tenant_id, stored_output_bytes) VALUES (?, ?)
ON CONFLICT (tenant_id) DO UPDATE
SET stored_output_bytes = stored_output_bytes + excluded.stored_output_bytes
RETURNING stored_output_bytes
"""

# A chunk of an exec's output, CHUNK_COLUMNS in order.
LITE_INSERT_CHUNK = (
    f"INSERT INTO exec_chunks ({_quoted(CHUNK_COLUMNS)}) VALUES ({_placeholders(CHUNK_COLUMNS)})"  # noqa: S608
)

# A sealed secret value an exec brings its sandbox, SECRET_VALUE_COLUMNS in order.
LITE_INSERT_SECRET_VALUE = (
    f"INSERT INTO sandbox_secret_values ({_quoted(SECRET_VALUE_COLUMNS)}) "  # noqa: S608
    f"VALUES ({_placeholders(SECRET_VALUE_COLUMNS)})"
)
