"""Settings from `AIRLOCK_*`, and what the service does with them when it starts."""

from __future__ import annotations

import asyncio
import stat
from pathlib import Path

import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient
from sqlalchemy import text

from service.app import create_app
from service.auth.keyring import create_key
from service.db import migrate
from service.db.session import make_engine
from service.errors import ConfigurationError
from service.runtime.config import RuntimeConfig
from service.settings import Environment, Settings
from tests.conftest import database_kind, pg_admin_url

STRONG_KEY = "alo_" + "k3y" * 16


def start(environ: dict[str, str]) -> Litestar:
    """What `airlock serve` does first: build settings from the environment, then the app."""
    return create_app(Settings.from_env(environ), check_migrations=False, run_jobs=False)


@pytest.fixture
def production(tmp_path: Path) -> dict[str, str]:
    """A production environment that starts; each refusal test breaks one thing in it."""
    keys = tmp_path / "keys"
    create_key(keys)
    return {
        "AIRLOCK_ENV": "production",
        "AIRLOCK_STATE_DIR": str(tmp_path / "state"),
        "AIRLOCK_OPERATOR_KEY": STRONG_KEY,
        "AIRLOCK_JWT_KEYS_DIR": str(keys),
        "AIRLOCK_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'prod.db'}",
    }


def test_values_are_parsed_into_their_types(tmp_path: Path) -> None:
    s = Settings.from_env(
        {
            "AIRLOCK_PORT": "9090",
            "AIRLOCK_HOST": "0.0.0.0",  # noqa: S104
            "AIRLOCK_STATE_DIR": str(tmp_path / "state"),
            "AIRLOCK_JWT_KEYS_DIR": str(tmp_path / "keys"),
            "AIRLOCK_AUDIT_RETENTION_DAYS": "30",
            "AIRLOCK_RETENTION_INTERVAL_S": "2.5",
            "AIRLOCK_RUNTIME": "gvisor",
            "AIRLOCK_ENV": "development",
            "AIRLOCK_JWT_ISSUER": "https://airlock.example",
            "UNRELATED": "ignored",
        }
    )
    assert s.port == 9090
    assert s.host == "0.0.0.0"  # noqa: S104
    assert s.state_dir == tmp_path / "state"
    assert isinstance(s.state_dir, Path)
    assert s.keys_dir == tmp_path / "keys"
    assert s.audit_retention_days == 30
    assert s.retention_interval_s == 2.5
    assert s.runtime == "gvisor"
    assert s.env is Environment.DEVELOPMENT
    assert s.jwt_issuer == "https://airlock.example"


def test_defaults_and_empty_values() -> None:
    s = Settings.from_env({"AIRLOCK_PORT": "", "AIRLOCK_ENV": ""})
    assert s.port == 8080
    assert s.host == "127.0.0.1"
    assert s.env is Environment.DEVELOPMENT
    assert s.keys_dir == s.state_dir / "keys"
    assert s.otel_traces_exporter == "none"


def test_production_env_value_is_read(production: dict[str, str]) -> None:
    assert Settings.from_env(production).is_production


def test_explicit_overrides_win_over_the_environment() -> None:
    s = Settings.from_env({"AIRLOCK_PORT": "9090"}, port=7000, host=None)
    assert s.port == 7000
    assert s.host == "127.0.0.1"


def test_otel_exporter_follows_the_standard_variables() -> None:
    assert Settings.from_env({"OTEL_TRACES_EXPORTER": "console"}).otel_traces_exporter == "console"
    endpoint = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}
    assert Settings.from_env(endpoint).otel_traces_exporter == "otlp"
    assert (
        Settings.from_env({**endpoint, "OTEL_TRACES_EXPORTER": "none"}).otel_traces_exporter
        == "none"
    )


@pytest.mark.parametrize(
    "environ",
    [
        {"AIRLOCK_PORT": "eighty"},
        {"AIRLOCK_PORT": "80.5"},
        {"AIRLOCK_AUDIT_RETENTION_DAYS": "0"},
        {"AIRLOCK_AUDIT_RETENTION_DAYS": "ninety"},
        {"AIRLOCK_RETENTION_INTERVAL_S": "hourly"},
        {"AIRLOCK_ENV": "staging"},
        {"AIRLOCK_ENV": "Production"},
        {"AIRLOCK_RUNTIME": "docker"},
        {"OTEL_TRACES_EXPORTER": "zipkin"},
        {"AIRLOCK_OPERATOR_KEY": "short-key"},
        {"AIRLOCK_PORT": "70000"},
        {"AIRLOCK_PORT": "-5"},
        {"AIRLOCK_RETENTION_INTERVAL_S": "0"},
        {"AIRLOCK_AUDIT_RETENTION_DAYS": "4000"},
        {"AIRLOCK_LOG_LEVEL": "LOUD"},
        {"AIRLOCK_POOL_REFILL_AFTER_CLAIM_S": "-1"},
        {"AIRLOCK_POOL_REFILL_AFTER_CLAIM_S": "soon"},
        {"AIRLOCK_SANDBOX_NETWORK_RANGE": "10.231.0.0/29"},
        {"AIRLOCK_SANDBOX_NETWORK_RANGE": "8.8.0.0/16"},
        {"AIRLOCK_SANDBOX_NETWORK_RANGE": "10.231.0.1/16"},
        {"AIRLOCK_SANDBOX_NETWORK_RANGE": "fd00::/64"},
        {"AIRLOCK_IMAGE_REGISTRIES": "https://ghcr.io"},
        {"AIRLOCK_IMAGE_REGISTRIES": "ghcr.io/Acme"},
        {"AIRLOCK_TRUSTED_PROXIES": "nginx"},
        {"AIRLOCK_TRUSTED_PROXIES": "127.0.0.1,10.0.0.0/8"},
        {"AIRLOCK_OFFLOAD_KEY": "too-short-to-be-a-secret"},
    ],
    ids=lambda env: ",".join(f"{k}={v}" for k, v in env.items()),
)
def test_invalid_values_are_configuration_errors(environ: dict[str, str]) -> None:
    with pytest.raises(ConfigurationError):
        Settings.from_env(environ)


def test_image_registries_are_a_list_of_prefixes() -> None:
    assert Settings.from_env({}).image_registry_list == ()
    got = Settings.from_env({"AIRLOCK_IMAGE_REGISTRIES": " ghcr.io/acme/, localhost:5000 ,"})
    assert got.image_registry_list == ("ghcr.io/acme", "localhost:5000")
    assert Settings.from_env({"AIRLOCK_IMAGE_REGISTRIES": "*"}).image_registry_list == ("*",)


def test_configuration_error_names_the_variable() -> None:
    with pytest.raises(ConfigurationError, match="AIRLOCK_AUDIT_RETENTION_DAYS"):
        Settings.from_env({"AIRLOCK_AUDIT_RETENTION_DAYS": "0"})
    with pytest.raises(ConfigurationError, match="AIRLOCK_OPERATOR_KEY"):
        Settings.from_env({"AIRLOCK_OPERATOR_KEY": "short"})


def test_a_complete_production_configuration_starts(production: dict[str, str]) -> None:
    app = start(production)
    assert isinstance(app, Litestar)
    # Production generated nothing of its own.
    assert not (Path(production["AIRLOCK_STATE_DIR"]) / "operator_key").exists()
    assert not (Path(production["AIRLOCK_STATE_DIR"]) / "keys").exists()


def test_production_refuses_without_an_operator_key(production: dict[str, str]) -> None:
    del production["AIRLOCK_OPERATOR_KEY"]
    with pytest.raises(ConfigurationError, match="AIRLOCK_OPERATOR_KEY is required"):
        start(production)
    assert not (Path(production["AIRLOCK_STATE_DIR"]) / "operator_key").exists()


def test_production_refuses_a_short_operator_key(production: dict[str, str]) -> None:
    production["AIRLOCK_OPERATOR_KEY"] = "x" * 31
    with pytest.raises(ConfigurationError, match="at least 32 characters"):
        start(production)


@pytest.mark.parametrize(
    "weak",
    ["changeme" * 4, "CHANGEME" * 4, "0" * 32, "change-me-change-me-change-me-change-me"],
)
def test_production_refuses_a_known_default_operator_key(
    production: dict[str, str], weak: str
) -> None:
    production["AIRLOCK_OPERATOR_KEY"] = weak
    with pytest.raises(ConfigurationError, match="default value"):
        start(production)


def test_production_refuses_the_development_generated_key(
    production: dict[str, str], tmp_path: Path
) -> None:
    state = production["AIRLOCK_STATE_DIR"]
    start({"AIRLOCK_STATE_DIR": state})  # a development run generates a key into the state dir
    generated = (Path(state) / "operator_key").read_text().strip()
    production["AIRLOCK_OPERATOR_KEY"] = generated
    with pytest.raises(ConfigurationError, match="development key"):
        start(production)


def test_production_refuses_without_a_keys_dir(production: dict[str, str]) -> None:
    del production["AIRLOCK_JWT_KEYS_DIR"]
    with pytest.raises(ConfigurationError, match="AIRLOCK_JWT_KEYS_DIR is required"):
        start(production)
    assert not (Path(production["AIRLOCK_STATE_DIR"]) / "keys").exists()


@pytest.mark.parametrize("layout", ["empty", "missing", "no-pem-files"])
def test_production_refuses_a_keys_dir_without_keys(
    production: dict[str, str], tmp_path: Path, layout: str
) -> None:
    keys = tmp_path / "other-keys"
    if layout != "missing":
        keys.mkdir()
    if layout == "no-pem-files":
        (keys / "README.txt").write_text("keys go here\n")
    production["AIRLOCK_JWT_KEYS_DIR"] = str(keys)
    with pytest.raises(ConfigurationError, match="no signing keys"):
        start(production)
    # Production never generates a key to get past the problem.
    assert not keys.exists() or not any(p.suffix == ".pem" for p in keys.iterdir())


async def test_development_generates_an_operator_key_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    state = tmp_path / "state"
    environ = {"AIRLOCK_STATE_DIR": str(state)}
    start(environ)
    first = capsys.readouterr().err
    key_file = state / "operator_key"
    key = key_file.read_text().strip()
    assert key.startswith("alo_") and len(key) >= 32
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert key in first  # shown once, on the run that made it
    assert "generated signing key" in first
    pems = sorted((state / "keys").glob("*.pem"))
    assert len(pems) == 1
    assert stat.S_IMODE(pems[0].stat().st_mode) == 0o600

    app = start(environ)
    second = capsys.readouterr().err
    assert key_file.read_text().strip() == key
    assert sorted((state / "keys").glob("*.pem")) == pems
    assert key not in second
    assert "generated" not in second

    # The key it printed is the operator's credential.
    await asyncio.to_thread(migrate.upgrade, Settings.from_env(environ).effective_database_url)
    async with AsyncTestClient(app=app) as client:
        r = await client.get("/v1/tenants", headers={"Authorization": f"Bearer {key}"})
        assert r.status_code == 200, r.text
        r = await client.get("/v1/tenants", headers={"Authorization": f"Bearer {key}x"})
        assert r.status_code == 401


def test_configured_operator_key_is_used_and_nothing_is_generated(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    state = tmp_path / "state"
    start({"AIRLOCK_STATE_DIR": str(state), "AIRLOCK_OPERATOR_KEY": STRONG_KEY})
    assert not (state / "operator_key").exists()
    assert STRONG_KEY not in capsys.readouterr().err


def test_default_database_is_sqlite_in_the_state_dir(tmp_path: Path) -> None:
    state = tmp_path / "state"
    s = Settings.from_env({"AIRLOCK_STATE_DIR": str(state)})
    assert s.effective_database_url == f"sqlite+aiosqlite:///{state.resolve() / 'airlock.db'}"
    state.mkdir()
    migrate.upgrade(s.effective_database_url)
    assert (state / "airlock.db").is_file()

    configured = "postgresql+asyncpg://u:p@db.example/airlock"
    s = Settings.from_env({"AIRLOCK_STATE_DIR": str(state), "AIRLOCK_DATABASE_URL": configured})
    assert s.effective_database_url == configured


async def test_configured_retention_is_the_default_for_new_tenants(
    tmp_path: Path, database_url: str
) -> None:
    settings = Settings.from_env(
        {"AIRLOCK_AUDIT_RETENTION_DAYS": "7"},
        state_dir=tmp_path,
        database_url=database_url,
        operator_key=STRONG_KEY,
    )
    app = create_app(settings, run_jobs=False)
    operator = {"Authorization": f"Bearer {STRONG_KEY}"}
    async with AsyncTestClient(app=app) as client:
        r = await client.post("/v1/tenants", json={"name": "seven-days"}, headers=operator)
        assert r.status_code == 201, r.text
        assert r.json()["tenant"]["quotas"]["audit_retention_days"] == 7
        body = {"name": "thirty-days", "quotas": {"audit_retention_days": 30}}
        r = await client.post("/v1/tenants", json=body, headers=operator)
        assert r.status_code == 201, r.text
        assert r.json()["tenant"]["quotas"]["audit_retention_days"] == 30


def test_a_production_node_needs_no_operator_key() -> None:
    """A node answers node tokens only; the API still requires the key."""
    env = {
        "AIRLOCK_ENV": "production",
        "AIRLOCK_DATABASE_URL": "postgresql+asyncpg://airlock@db/airlock",
        "AIRLOCK_JWT_KEYS_DIR": "/etc/airlock/jwt",
    }
    assert Settings.from_env({**env, "AIRLOCK_ROLE": "node"}).operator_key is None
    with pytest.raises(ConfigurationError, match="AIRLOCK_OPERATOR_KEY is required"):
        Settings.from_env({**env, "AIRLOCK_ROLE": "api"})


def test_the_cluster_roles_need_postgresql() -> None:
    with pytest.raises(ConfigurationError, match="PostgreSQL"):
        Settings.from_env({"AIRLOCK_ROLE": "api"})


@pytest.mark.parametrize("scheme", ["postgresql", "postgres", "postgresql+asyncpg"])
def test_a_postgresql_url_without_a_driver_is_taken_through_asyncpg(scheme: str) -> None:
    """CloudNativePG's app Secret (`uri`), Heroku-style platforms and libpq write
    `postgresql://` or `postgres://`: SQLAlchemy would load psycopg2 for those, which the
    service does not have."""
    given = f"{scheme}://app:s3cr%40t@airlock-db-rw.apps:5432/app?ssl=require"
    settings = Settings.from_env({"AIRLOCK_DATABASE_URL": given, "AIRLOCK_ROLE": "api"})
    assert settings.database_url == (
        "postgresql+asyncpg://app:s3cr%40t@airlock-db-rw.apps:5432/app?ssl=require"
    )
    assert settings.effective_database_url == settings.database_url
    embedded = Settings.from_env({"AIRLOCK_DATABASE_URL": "sqlite:////var/lib/airlock/a.db"})
    assert embedded.database_url == "sqlite+aiosqlite:////var/lib/airlock/a.db"
    # libpq's name for the TLS mode, which asyncpg calls ssl.
    managed = Settings.from_env(
        {"AIRLOCK_DATABASE_URL": f"{scheme}://u:p@db.example.com/app?sslmode=require&x=1"}
    )
    assert managed.database_url == "postgresql+asyncpg://u:p@db.example.com/app?ssl=require&x=1"


@pytest.mark.parametrize(
    "url",
    [
        "postgresql+psycopg2://airlock@db/airlock",
        "postgresql+psycopg://airlock@db/airlock",
        "mysql://airlock@db/airlock",
        "sqlite+pysqlite:///airlock.db",
        "db.example.com:5432/airlock",
    ],
)
def test_a_database_driver_the_service_does_not_have_is_refused(url: str) -> None:
    with pytest.raises(ConfigurationError, match="AIRLOCK_DATABASE_URL") as refused:
        Settings.from_env({"AIRLOCK_DATABASE_URL": url})
    assert "postgresql+asyncpg://" in str(refused.value)


async def test_a_libpq_style_url_reaches_postgresql() -> None:
    """The URL as CloudNativePG and libpq write it (the test server's admin URL is one)
    opens a connection, as the service's engine makes it."""
    if database_kind() != "postgresql":
        pytest.skip("needs the PostgreSQL server of the test command")
    url = pg_admin_url()
    assert url.startswith(("postgresql://", "postgres://"))
    # (The test server speaks no TLS: sslmode=disable is what libpq would need too.)
    for given in (url, f"{url}?sslmode=disable"):
        settings = Settings.from_env({"AIRLOCK_DATABASE_URL": given})
        engine = make_engine(settings.effective_database_url)
        try:
            async with engine.connect() as connection:
                assert (await connection.execute(text("SELECT 1"))).scalar() == 1
        finally:
            await engine.dispose()


@pytest.mark.parametrize("value", ["/airlock", "self", "/system.slice/airlock.slice", "/a/b@1:x"])
def test_the_sandboxes_cgroup_parent_reaches_the_runtime(value: str) -> None:
    settings = Settings.from_env({"AIRLOCK_CGROUP_PARENT": value})
    assert RuntimeConfig.from_settings(settings).cgroup_parent == value
    assert Settings.from_env({}).cgroup_parent == "/airlock"


@pytest.mark.parametrize("value", ["airlock", "/", "/airlock/", "/a//b", "/a/../b", "/a b", "SELF"])
def test_a_cgroup_parent_that_is_not_self_or_an_absolute_path_is_refused(value: str) -> None:
    with pytest.raises(ConfigurationError, match="AIRLOCK_CGROUP_PARENT"):
        Settings.from_env({"AIRLOCK_CGROUP_PARENT": value})
