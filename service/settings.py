"""One typed settings object, built once from `AIRLOCK_*` variables and passed explicitly."""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Mapping
from enum import StrEnum
from pathlib import Path

import msgspec

from service.errors import ConfigurationError
from service.variables import database_url_with_driver, decode, env_name, wanted

# A registry host (with an optional port) and optional repository path: `ghcr.io/acme`.
_REGISTRY_ENTRY = re.compile(
    r"[a-zA-Z0-9](?:[a-zA-Z0-9.-]*[a-zA-Z0-9])?(?::[0-9]{1,5})?(?:/[a-z0-9._-]+)*"
)

# The offload key is written into the proxy's configuration: nothing nginx would read as syntax.
_OFFLOAD_KEY = re.compile(r"[A-Za-z0-9_-]{32,}")

# AIRLOCK_POOL_TARGETS: `name[:size]=count`, comma-separated.
_POOL_TARGET = re.compile(r"[^\s:=,]+(:[a-z0-9-]+)?=[0-9]+")

# An absolute cgroup path below the root: no empty, `.` or `..` segment, nothing a shell or
# a systemd unit name would read differently.
_CGROUP_PATH = re.compile(r"(/(?!\.\.?(/|$))[A-Za-z0-9._@:-]+)+")

# A node id: a path segment of /v1/nodes/{id} and a name an operator reads; a Kubernetes node
# name (a DNS subdomain, such as ip-10-0-0-5.ec2.internal) is one.
_NODE_ID = re.compile(r"[a-z0-9]([a-z0-9.-]{0,198}[a-z0-9])?")


class Environment(StrEnum):
    DEVELOPMENT = "development"
    PRODUCTION = "production"


class Role(StrEnum):
    """What a process is (AIRLOCK_ROLE)."""

    ALL = "all"  # the API with this host's node in the same process, the one-machine default
    API = "api"  # a stateless replica: places sandboxes on nodes, routes every sandbox call
    NODE = "node"  # this host's sandboxes, serving only the API replicas


class Settings(msgspec.Struct, frozen=True, kw_only=True):
    env: Environment = Environment.DEVELOPMENT
    state_dir: Path = Path(".airlock")
    database_url: str = ""
    # PostgreSQL connections a process keeps open once it needed them (10 more for a burst,
    # closed after it): each new one costs its backend's start and its statements' plans.
    database_pool_size: int = 30
    jwt_issuer: str = "airlock"
    jwt_audience: str = "airlock-api"
    # Directory of Ed25519 private keys in PEM, one file per key id; defaults to <state_dir>/keys.
    jwt_keys_dir: Path | None = None
    # The keys every process of one deployment shares (the audit chain's HMAC key, the key
    # secrets are sealed with); default <state_dir>/audit.key and <state_dir>/secrets.key.
    audit_key_file: Path | None = None
    secrets_key_file: Path | None = None
    operator_key: str | None = None
    # When set, GET /metrics requires `Authorization: Bearer <it>`; unset, /metrics is public.
    metrics_token: str | None = None
    host: str = "127.0.0.1"
    port: int = 8080
    audit_retention_days: int = 90
    retention_interval_s: float = 3600.0
    ttl_reaper_interval_s: float = 5.0
    # How often each node looks for sandboxes idle past their idle_timeout_s.
    idle_check_interval_s: float = 5.0
    # Copies of each paused sandbox's checkpoint kept on other nodes (so it outlives its node),
    # and how often each node looks for checkpoints to copy or drop.
    pause_copies: int = 1
    pause_copies_interval_s: float = 5.0
    runtime: str = "auto"
    runsc_platform: str | None = None
    log_level: str = "INFO"
    # Warm pool: `name:size=N,...` targets for the operator's templates (PUT /v1/pool wins),
    # how often the refiller looks, and whether template builds snapshot ("off": pool members
    # are pre-started from the image instead).
    pool_targets: str = ""
    # Where sandboxes with a network get their addresses (an IPv4 /28 or larger, private).
    sandbox_network_range: str = "10.231.0.0/16"
    # Where a tenant's `image` may be pulled from (runtimes that pull: BoxLite), as a comma
    # list of registries or repository prefixes (`ghcr.io/acme`, `docker.io/library`; `*`: any).
    # Empty: only the local image store.
    image_registries: str = ""
    # On gVisor, the memory (MiB) the sandboxes of this host may be promised in total: each
    # counts its memory cap (its writable space is on the node's disk). None: 3/4 of MemTotal.
    host_memory_mib: int | None = None
    # On gVisor, a sandbox's kernel counts `ceil(cpus)` CPUs (`nproc`); false: at least 2, as
    # runsc does from the quota alone, which makes 1-vCPU sandboxes start and exec faster.
    exact_nproc: bool = True
    # On gVisor, the cgroup this host's sandboxes go below: an absolute path of the host's
    # cgroup tree, or `self`: below the cgroup this process runs in, so what contains the
    # node (a pod, a systemd unit, a container) contains and accounts its sandboxes too.
    cgroup_parent: str = "/airlock"
    pool_refill_interval_s: float = 2.0
    # How often a node sums what each tenant's sandboxes use, for /metrics.
    usage_sample_interval_s: float = 15.0
    # This host's node: its id (default: the host name and a hash of the state dir), the
    # address the API reaches it at (default: this server's), how long its lease lasts and how
    # often it is renewed (a node silent for a lease is lost).
    node_id: str | None = None
    node_address: str | None = None
    # What this process is: `all` (the API with this host's node in the same process, the
    # one-machine default), `api` (a stateless replica that places sandboxes on nodes and
    # routes every sandbox call to its node) or `node` (this host's sandboxes, serving only
    # the API replicas). More than one process shares PostgreSQL.
    role: Role = Role.ALL
    # Placement promises a node's CPUs up to this many times over, and its memory (which a
    # sandbox cannot give back) up to this ratio.
    cpu_overcommit: float = 8.0
    memory_overcommit: float = 1.0
    node_lease_s: float = 15.0
    node_heartbeat_s: float = 5.0
    # A claim rings the refiller this much later, so the restore that replaces the member does
    # not take the CPU from the claimer's first commands.
    pool_refill_after_claim_s: float = 1.0
    template_snapshots: str = "auto"
    # Reviews: whether a repository may be a path or file:// URL on this host (and a git host on
    # a private address), and the OpenAI-compatible endpoint that gives the verdict (none: a
    # change whose tests pass is a COMMENT, never an APPROVE).
    review_allow_local_repos: bool = False
    # The review fetch's git (service/reviews/confine.py): the disk its repository may take,
    # each git process's address space, and the uid it runs as when the service is root.
    review_fetch_max_mib: int = 2048
    review_fetch_memory_mib: int = 2048
    review_fetch_uid: int = 65534
    llm_base_url: str = ""
    llm_api_key: str | None = None
    llm_model: str = ""
    llm_timeout_s: float = 60.0
    otel_traces_exporter: str = "none"
    # Ports of sandboxes on host names of their own: `{port}-{sandbox id}.<this domain>` (a
    # wildcard DNS name pointing at the API). Empty: only the path route
    # /v1/sandboxes/{id}/ports/{port}/ serves them.
    preview_domain: str = ""
    # Addresses of reverse proxies in front of this process (comma list of IPs): a request
    # from one of them is taken to be from the address its X-Forwarded-For names. Empty: the
    # peer's own address is the client's.
    trusted_proxies: str = ""
    # A secret shared with the nginx in front of an API replica (helm/airlock/files/proxy.conf
    # sends it as `Airlock-Offload`): a download asked with it is answered with an internal
    # redirect (X-Accel-Redirect) to the sandbox's node, which nginx follows, so its bytes never
    # pass through this process. None: the replica serves every download itself.
    offload_key: str | None = None
    # Requests a second each tenant may make, by class of route (its quotas), and each source
    # address without a tenant's credential may make (a 429 `rate_limited` past it); false:
    # no request is counted (execs_per_minute and the other quotas still hold).
    rate_limits: bool = True
    anonymous_requests_per_s: int = 100

    @property
    def is_production(self) -> bool:
        return self.env is Environment.PRODUCTION

    @property
    def image_registry_list(self) -> tuple[str, ...]:
        return tuple(e.strip().rstrip("/") for e in self.image_registries.split(",") if e.strip())

    @property
    def trusted_proxy_list(self) -> tuple[str, ...]:
        return tuple(e.strip() for e in self.trusted_proxies.split(",") if e.strip())

    @property
    def audit_key_path(self) -> Path:
        return self.audit_key_file or self.state_dir / "audit.key"

    @property
    def secrets_key_path(self) -> Path:
        return self.secrets_key_file or self.state_dir / "secrets.key"

    @property
    def runs_node(self) -> bool:
        """Whether this process owns this host's sandboxes (a runtime, its jobs)."""
        return self.role != Role.API

    @property
    def keys_dir(self) -> Path:
        return self.jwt_keys_dir or self.state_dir / "keys"

    @property
    def effective_database_url(self) -> str:
        embedded = (self.state_dir / "airlock.db").resolve()
        return self.database_url or f"sqlite+aiosqlite:///{embedded}"

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: object) -> Settings:
        """Build settings from `AIRLOCK_*` variables (and the standard `OTEL_*` exporter choice)."""
        env = os.environ if environ is None else environ
        raw: dict[str, object] = {}
        for field in msgspec.structs.fields(cls):
            if field.name in ("otel_traces_exporter",):
                continue
            value = env.get(f"AIRLOCK_{field.name.upper()}")
            if value not in (None, ""):
                raw[field.name] = value
        exporter = env.get("OTEL_TRACES_EXPORTER")
        if exporter is None and env.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
            exporter = "otlp"
        if exporter:
            raw["otel_traces_exporter"] = exporter
        raw.update({k: v for k, v in overrides.items() if v is not None})
        if raw.get("role") not in (None, *Role):
            raise ConfigurationError("AIRLOCK_ROLE must be one of all, api, node")
        if isinstance(raw.get("database_url"), str):
            raw["database_url"] = database_url_with_driver(raw["database_url"])
        kinds = {field.name: field.type for field in msgspec.structs.fields(cls)}
        for name, value in raw.items():
            try:
                msgspec.convert(value, kinds[name], strict=False, dec_hook=decode)
            except msgspec.ValidationError as exc:
                must = wanted(kinds[name])
                raise ConfigurationError(f"{env_name(name)}: {value!r} is not {must}") from exc
        settings = msgspec.convert(raw, cls, strict=False, dec_hook=decode)
        settings.validate()
        return settings

    def validate(self) -> None:
        if not 1 <= self.audit_retention_days <= 3650:
            raise ConfigurationError("AIRLOCK_AUDIT_RETENTION_DAYS must be between 1 and 3650")
        if not 1 <= self.port <= 65535:
            raise ConfigurationError("AIRLOCK_PORT must be between 1 and 65535")
        if self.retention_interval_s <= 0 or self.ttl_reaper_interval_s <= 0:
            raise ConfigurationError(
                "AIRLOCK_RETENTION_INTERVAL_S and AIRLOCK_TTL_REAPER_INTERVAL_S must be positive"
            )
        if self.log_level.upper() not in ("CRITICAL", "ERROR", "WARNING", "INFO", "DEBUG"):
            raise ConfigurationError(
                "AIRLOCK_LOG_LEVEL must be one of CRITICAL, ERROR, WARNING, INFO, DEBUG"
            )
        if self.template_snapshots not in ("auto", "off"):
            raise ConfigurationError("AIRLOCK_TEMPLATE_SNAPSHOTS must be auto or off")
        try:
            network_range = ipaddress.IPv4Network(self.sandbox_network_range)
        except ValueError as exc:
            raise ConfigurationError(
                f"AIRLOCK_SANDBOX_NETWORK_RANGE must be an IPv4 network such as 10.231.0.0/16: "
                f"{exc}"
            ) from exc
        if network_range.prefixlen > 28 or not network_range.is_private:
            raise ConfigurationError(
                "AIRLOCK_SANDBOX_NETWORK_RANGE must be a private IPv4 network of /28 or larger"
            )
        for entry in self.image_registry_list:
            if entry != "*" and not _REGISTRY_ENTRY.fullmatch(entry):
                raise ConfigurationError(
                    f"AIRLOCK_IMAGE_REGISTRIES: {entry!r} is not a registry or repository prefix "
                    "(such as ghcr.io/acme) or *"
                )
        if self.host_memory_mib is not None and self.host_memory_mib < 256:
            raise ConfigurationError("AIRLOCK_HOST_MEMORY_MIB must be at least 256")
        if self.cgroup_parent != "self" and not _CGROUP_PATH.fullmatch(self.cgroup_parent):
            raise ConfigurationError(
                "AIRLOCK_CGROUP_PARENT must be self or an absolute cgroup path below the root "
                "such as /airlock (segments of letters, digits, '.', '_', '-', '@', ':')"
            )
        if not 1 <= self.database_pool_size <= 500:
            raise ConfigurationError("AIRLOCK_DATABASE_POOL_SIZE must be between 1 and 500")
        for entry in filter(None, (e.strip() for e in self.pool_targets.split(","))):
            if not _POOL_TARGET.fullmatch(entry):
                raise ConfigurationError(
                    f"AIRLOCK_POOL_TARGETS: {entry!r} is not name[:size]=count (python:small=2)"
                )
        if self.pool_refill_interval_s <= 0:
            raise ConfigurationError("AIRLOCK_POOL_REFILL_INTERVAL_S must be positive")
        if not 0 <= self.pause_copies <= 5 or self.pause_copies_interval_s <= 0:
            raise ConfigurationError(
                "AIRLOCK_PAUSE_COPIES must be 0 to 5 and AIRLOCK_PAUSE_COPIES_INTERVAL_S positive"
            )
        if self.usage_sample_interval_s <= 0:
            raise ConfigurationError("AIRLOCK_USAGE_SAMPLE_INTERVAL_S must be positive")
        if self.node_id is not None and not _NODE_ID.fullmatch(self.node_id):
            raise ConfigurationError(
                "AIRLOCK_NODE_ID must be 1-200 lowercase letters, digits, dots and dashes, "
                "starting and ending with a letter or digit"
            )
        if self.preview_domain and not _NODE_ID.fullmatch(self.preview_domain):
            raise ConfigurationError(
                "AIRLOCK_PREVIEW_DOMAIN must be a lowercase DNS name such as preview.example.com"
            )
        for address in self.trusted_proxy_list:
            try:
                ipaddress.ip_address(address)
            except ValueError as exc:
                raise ConfigurationError(
                    f"AIRLOCK_TRUSTED_PROXIES: {address!r} is not an IP address"
                ) from exc
        if not 1 <= self.anonymous_requests_per_s <= 1_000_000:
            raise ConfigurationError("AIRLOCK_ANONYMOUS_REQUESTS_PER_S must be within 1-1000000")
        if self.database_url:
            database_url_with_driver(self.database_url)
        if self.role != Role.ALL and not self.database_url.startswith("postgresql"):
            raise ConfigurationError(
                f"AIRLOCK_ROLE={self.role} shares its records with other processes: set "
                "AIRLOCK_DATABASE_URL to a PostgreSQL database (postgresql+asyncpg://...)"
            )
        if not 1 <= self.cpu_overcommit <= 64 or not 0.1 <= self.memory_overcommit <= 4:
            raise ConfigurationError(
                "AIRLOCK_CPU_OVERCOMMIT must be within 1-64 and AIRLOCK_MEMORY_OVERCOMMIT "
                "within 0.1-4"
            )
        if not 0 < self.node_heartbeat_s < self.node_lease_s <= 3600:
            raise ConfigurationError(
                "AIRLOCK_NODE_HEARTBEAT_S must be positive and below AIRLOCK_NODE_LEASE_S "
                "(at most 3600)"
            )
        if not 0 <= self.pool_refill_after_claim_s <= 60:
            raise ConfigurationError("AIRLOCK_POOL_REFILL_AFTER_CLAIM_S must be within 0-60")
        if not 1 <= self.review_fetch_max_mib <= 1 << 20:
            raise ConfigurationError("AIRLOCK_REVIEW_FETCH_MAX_MIB must be within 1-1048576")
        if not 256 <= self.review_fetch_memory_mib <= 1 << 20:
            raise ConfigurationError("AIRLOCK_REVIEW_FETCH_MEMORY_MIB must be within 256-1048576")
        if not 1 <= self.review_fetch_uid < (1 << 32) - 1:
            raise ConfigurationError("AIRLOCK_REVIEW_FETCH_UID must be a uid other than 0")
        if self.llm_timeout_s <= 0:
            raise ConfigurationError("AIRLOCK_LLM_TIMEOUT_S must be positive")
        if self.llm_base_url and not self.llm_base_url.startswith(("http://", "https://")):
            raise ConfigurationError("AIRLOCK_LLM_BASE_URL must be an http:// or https:// URL")
        if self.runtime not in ("auto", "boxlite", "gvisor"):
            raise ConfigurationError("AIRLOCK_RUNTIME must be one of auto, boxlite, gvisor")
        if self.otel_traces_exporter not in ("none", "otlp", "console"):
            raise ConfigurationError("OTEL_TRACES_EXPORTER must be one of none, otlp, console")
        if self.operator_key is not None and len(self.operator_key) < 32:
            raise ConfigurationError("AIRLOCK_OPERATOR_KEY must be at least 32 characters")
        if self.offload_key is not None and not _OFFLOAD_KEY.fullmatch(self.offload_key):
            raise ConfigurationError(
                "AIRLOCK_OFFLOAD_KEY must be at least 32 letters, digits, '-' or '_' (it is "
                "written into the proxy's configuration)"
            )
        if self.metrics_token is not None and len(self.metrics_token) < 32:
            raise ConfigurationError("AIRLOCK_METRICS_TOKEN must be at least 32 characters")
        if self.is_production:
            if self.operator_key is None and self.role != Role.NODE:
                raise ConfigurationError(
                    "AIRLOCK_OPERATOR_KEY is required when AIRLOCK_ENV=production"
                )
            if self.operator_key is not None and self.operator_key.lower() in WEAK_OPERATOR_KEYS:
                raise ConfigurationError("AIRLOCK_OPERATOR_KEY is a default value; set a real one")
            if self.jwt_keys_dir is None:
                raise ConfigurationError(
                    "AIRLOCK_JWT_KEYS_DIR is required when AIRLOCK_ENV=production "
                    "(create a key with `airlock keys rotate`)"
                )


def variable_names() -> list[str]:
    """The environment variable of each setting."""
    return [env_name(field.name) for field in msgspec.structs.fields(Settings)]


# Values that appear in examples and must never guard a production deployment.
WEAK_OPERATOR_KEYS = frozenset(
    {
        "changeme" * 4,
        "change-me-change-me-change-me-change-me",
        "0" * 32,
        "a" * 32,
        "operator-key-operator-key-operator-key",
        "dev-operator-key-dev-operator-key",
    }
)
