"""The warm pool claim's own SQL (service.pool.claim), one statement each, named here and read
by column: on PostgreSQL the read and the write; on SQLite the read and the four writes of its
one transaction. A tenant's usage is counted as `SandboxRepository.active_usage` counts it."""

from __future__ import annotations

from service.audit.queries import pg_append_sql, pg_casts, pg_params
from service.db.models import Sandbox, SandboxTransition
from service.sandboxes.queries import held_by_builds, held_by_sandboxes

# The columns of the new sandbox's row a claim writes (with the member's runtime and its id).
SANDBOX_COLUMNS = (
    "id",
    "tenant_id",
    "node_id",
    "state",
    "image",
    "template",
    "template_id",
    "template_version",
    "started_from",
    "size",
    "cpus",
    "memory_mib",
    "disk_mib",
    "network",
    "env",
    "labels",
    "ttl_s",
    "idempotency_key",
    "request_hash",
    "created_at",
    "updated_at",
    "expires_at",
    "idle_timeout_s",
    "last_activity_at",
)
SQLITE_SANDBOX_COLUMNS = (*SANDBOX_COLUMNS, "runtime", "runtime_id")

# What a claim is decided on (service.pool.claiming.ClaimFacts, by column name) and the head of
# the tenant's audit chain (head_seq, head_hash): no row when no such template or ready build
# is visible. $1 tenant, $2 template name, $3 operator, $4 start of the fair share window,
# $5 Idempotency-Key.
PG_READ = f"""
WITH tpl AS (
  SELECT id, owner, name FROM templates
  WHERE name = $2 AND owner IN ($1, $3) ORDER BY (owner = $1) DESC LIMIT 1
), ver AS (
  SELECT v.id, v.version, v.size, v.cpus, v.memory_mib, v.disk_mib, v.image
  FROM template_versions v JOIN tpl ON v.template_id = tpl.id
  WHERE v.state = 'ready' ORDER BY v.version DESC LIMIT 1
)
SELECT tpl.id AS template_id, tpl.owner AS owner, tpl.name AS template_name,
  ver.id AS version_id, ver.version, ver.size, ver.cpus, ver.memory_mib, ver.disk_mib,
  ver.image, pt.id AS pool_id, pt.target,
  (SELECT count(DISTINCT r.tenant_id) FROM pool_requests r
     WHERE r.pool_id = pt.id AND r.at >= $4 AND r.tenant_id <> $1) AS others,
  (SELECT count(*) FROM pool_requests r
     WHERE r.pool_id = pt.id AND r.tenant_id = $1 AND r.claimed AND r.at >= $4) AS mine,
  t.quotas, u.sandboxes + b.sandboxes AS used_sandboxes, u.cpus + b.cpus AS used_cpus,
  u.memory_mib + b.memory_mib AS used_memory_mib, u.disk_mib + b.disk_mib AS used_disk_mib,
  (SELECT s.id FROM sandboxes s WHERE s.tenant_id = $1 AND s.idempotency_key = $5)
    AS replay_id,
  h.seq AS head_seq, h.hash AS head_hash
FROM tpl JOIN ver ON true JOIN tenants t ON t.id = $1
CROSS JOIN LATERAL ({held_by_sandboxes("$1")}) u
CROSS JOIN LATERAL ({held_by_builds("$1")}) b
LEFT JOIN pool_targets pt ON pt.template_id = tpl.id AND pt.size = ver.size
LEFT JOIN audit_chain_heads h ON h.chain = $1
"""  # noqa: S608 (fixed names)

# The write's parameters: $1 pool id, $2 version id, $3 host, $4 now; the sandbox's columns,
# then the event's.
PG_SANDBOX = pg_params(SANDBOX_COLUMNS, pg_casts(Sandbox.__table__, SANDBOX_COLUMNS), 5)
_TRANSITION_CAST = pg_casts(SandboxTransition.__table__, ("to_state",))[0]

# The oldest ready member of the pool's build on this host, claimed for the new sandbox.
_PG_MEMBER = """member AS (
  UPDATE pool_members SET state = 'claimed', claimed_at = $4, sandbox_id = {sandbox_id}
  WHERE id = (
    SELECT id FROM pool_members
    WHERE pool_id = $1 AND version_id = $2 AND host = $3 AND state = 'ready'
    ORDER BY ready_at LIMIT 1 FOR UPDATE SKIP LOCKED
  ) AND state = 'ready'
  RETURNING runtime_id, runtime
)""".format(sandbox_id=PG_SANDBOX["id"])  # noqa: S608 (fixed names)

# The claim itself: a member claimed and, only if there was one and the tenant's chain head is
# still the one read, the sandbox, its two transitions, the pool request and the audit event.
# Its row: the member's runtime_id and runtime (NULL: no ready member).
PG_WRITE = pg_append_sql(
    5 + len(SANDBOX_COLUMNS),
    before=_PG_MEMBER,
    guard="EXISTS (SELECT 1 FROM member WHERE runtime_id IS NOT NULL)",
    action=f"""
  INSERT INTO sandboxes ({", ".join(SANDBOX_COLUMNS)}, runtime, runtime_id)
  SELECT {", ".join(PG_SANDBOX.values())}, m.runtime, m.runtime_id
  FROM member m WHERE EXISTS (SELECT 1 FROM head)""",  # noqa: S608 (fixed names)
    more={
        "transitions": f"""
  INSERT INTO sandbox_transitions (sandbox_id, from_state, to_state, reason, at)
  SELECT {PG_SANDBOX["id"]}, v.from_state, v.to_state, v.reason, $4
  FROM (VALUES
    (1, NULL::{_TRANSITION_CAST}, 'creating'::{_TRANSITION_CAST}, NULL::{_TRANSITION_CAST}),
    (2, 'creating', 'running', 'claimed from the warm pool')
  ) AS v(n, from_state, to_state, reason)
  WHERE EXISTS (SELECT 1 FROM head) ORDER BY v.n""",  # noqa: S608 (fixed names)
        "request": f"""
  INSERT INTO pool_requests (pool_id, tenant_id, claimed, at)
  SELECT $1, {PG_SANDBOX["tenant_id"]}, true, $4
  WHERE EXISTS (SELECT 1 FROM head)""",  # noqa: S608 (fixed names)
    },
    # A member claimed while the chain's head moved (the append did not happen) must not stay
    # claimed: dividing by the empty `head` fails the statement, and with it the claim.
    result="""SELECT (SELECT runtime_id FROM member) AS runtime_id,
  (SELECT runtime FROM member) AS runtime,
  CASE WHEN EXISTS (SELECT 1 FROM member) THEN 1 / (SELECT count(*) FROM head)::int END
    AS appended""",
)

# What a claim is decided on, as PG_READ has it but for the chain head (SQLite's claim holds
# the write lock instead). :tenant, :name (the template's), :operator, :since (start of the
# fair share window), :key (Idempotency-Key).
SQLITE_READ = f"""
WITH tpl AS (
  SELECT id, owner, name FROM templates
  WHERE name = :name AND owner IN (:tenant, :operator) ORDER BY (owner = :tenant) DESC LIMIT 1
), ver AS (
  SELECT v.id, v.version, v.size, v.cpus, v.memory_mib, v.disk_mib, v.image
  FROM template_versions v JOIN tpl ON v.template_id = tpl.id
  WHERE v.state = 'ready' ORDER BY v.version DESC LIMIT 1
)
SELECT tpl.id AS template_id, tpl.owner AS owner, tpl.name AS template_name,
  ver.id AS version_id, ver.version AS version, ver.size AS size, ver.cpus AS cpus,
  ver.memory_mib AS memory_mib, ver.disk_mib AS disk_mib, ver.image AS image,
  pt.id AS pool_id, pt.target AS target,
  (SELECT count(DISTINCT r.tenant_id) FROM pool_requests r
     WHERE r.pool_id = pt.id AND r.at >= :since AND r.tenant_id <> :tenant) AS others,
  (SELECT count(*) FROM pool_requests r
     WHERE r.pool_id = pt.id AND r.tenant_id = :tenant AND r.claimed AND r.at >= :since)
    AS mine,
  t.quotas AS quotas, u.sandboxes + b.sandboxes AS used_sandboxes, u.cpus + b.cpus AS used_cpus,
  u.memory_mib + b.memory_mib AS used_memory_mib, u.disk_mib + b.disk_mib AS used_disk_mib,
  (SELECT s.id FROM sandboxes s WHERE s.tenant_id = :tenant AND s.idempotency_key = :key)
    AS replay_id
FROM tpl JOIN ver JOIN tenants t ON t.id = :tenant
JOIN ({held_by_sandboxes(":tenant")}) u
JOIN ({held_by_builds(":tenant")}) b
LEFT JOIN pool_targets pt ON pt.template_id = tpl.id AND pt.size = ver.size
"""  # noqa: S608 (fixed names)

# The oldest ready member of the pool's build on this host, claimed for the new sandbox: its
# runtime_id (NULL: a member with no runtime sandbox) and runtime; no row when none is ready.
# Parameters: claimed_at, sandbox id, pool id, version id, host.
SQLITE_MEMBER = """
UPDATE pool_members SET state = 'claimed', claimed_at = ?, sandbox_id = ?
WHERE id = (
  SELECT id FROM pool_members
  WHERE pool_id = ? AND version_id = ? AND host = ? AND state = 'ready'
  ORDER BY ready_at LIMIT 1
)
RETURNING runtime_id, runtime
"""

# The claimed sandbox's row, its values in SQLITE_SANDBOX_COLUMNS' order.
SQLITE_INSERT_SANDBOX = "INSERT INTO sandboxes ({}) VALUES ({})".format(  # noqa: S608
    ", ".join(f'"{c}"' for c in SQLITE_SANDBOX_COLUMNS),
    ", ".join("?" for _ in SQLITE_SANDBOX_COLUMNS),
)

# Its two transitions, creating and running: sandbox id and time, twice.
SQLITE_TRANSITIONS = """
INSERT INTO sandbox_transitions (sandbox_id, from_state, to_state, reason, at)
VALUES (?, NULL, 'creating', NULL, ?), (?, 'creating', 'running', 'claimed from the warm pool', ?)
"""

# The claimed ask, for fair shares and the claim figures: pool id, tenant id, time.
SQLITE_REQUEST = "INSERT INTO pool_requests (pool_id, tenant_id, claimed, at) VALUES (?, ?, 1, ?)"
