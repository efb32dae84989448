"""The OpenAPI document tells the truth: schemathesis, with every check, over every operation of
a real `airlock serve` on gVisor, finds nothing (no 5xx, no status, header, content type or body
the document does not declare, no invalid input accepted, no route open without a credential).

Bounded: a few examples per operation, a fixed seed, one worker. Tenant routes run with a tenant's
key (every scope), the operator's routes with the operator key.

What the document cannot state is said in `schemathesis.toml` beside this file (raw bodies
whose format is checked beyond the schema) and `schemathesis_hooks.py` (a fresh
Idempotency-Key per valid case); the fuzzed tenant's quotas are the document's bounds.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from pathlib import Path

import httpx

from service.sandboxes.schemas import MAX_TTL_S
from service.tenants.schemas import MAX_LIFETIME_S
from service.tokens.schemas import TOKEN_TTL_HARD_CAP_S
from tests.e2e.conftest import REPO, Airlock

# The operator's own routes; every other operation runs with a tenant's key.
OPERATOR_PATHS = r"^/v1/(tenants|pool)"
REQUEST_TIMEOUT_S = 60
MAX_EXAMPLES = int(os.environ.get("AIRLOCK_FUZZ_EXAMPLES", "6"))  # AIRLOCK_FUZZ_SEED: default 1


def _schemathesis(
    airlock: Airlock, key: str, selection: list[str], report: Path
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            str(REPO / ".venv/bin/schemathesis"),
            "--config-file",
            str(Path(__file__).with_name("schemathesis.toml")),
            "run",
            f"{airlock.server.url}/schema/openapi.json",
            "--checks",
            "all",
            # `all` also holds every response to 10 s, a wall-clock assertion that a busy machine
            # breaks (packing a sandbox's whole root took 14 s in one run). The only time limit
            # kept is the request timeout, which catches a call that hangs.
            "--max-response-time",
            str(REQUEST_TIMEOUT_S),
            "--phases",
            "examples,coverage,fuzzing",
            "--max-examples",
            str(MAX_EXAMPLES),
            "--seed",
            os.environ.get("AIRLOCK_FUZZ_SEED", "1"),
            "--workers",
            "1",
            "--request-timeout",
            str(REQUEST_TIMEOUT_S),
            "--continue-on-failure",
            "--header",
            f"Authorization: Bearer {key}",
            "--report",
            "ndjson",
            "--report-ndjson-path",
            str(report),
            "--no-color",
            *selection,
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env={**os.environ, "SCHEMATHESIS_HOOKS": "tests.e2e.schemathesis_hooks"},
        cwd=REPO,
    )


def _operations(airlock: Airlock) -> list[str]:
    doc = httpx.get(f"{airlock.server.url}/schema/openapi.json").json()
    return [
        f"{method.upper()} {path}"
        for path, item in doc["paths"].items()
        for method in item
        if method in {"get", "put", "post", "patch", "delete"}
    ]


async def test_every_operation_conforms_to_the_document(airlock: Airlock, tmp_path: Path) -> None:
    # Quotas are per tenant and lower than the document's bounds by default (the longest
    # TTL, exec deadline, token lifetime): the fuzzed tenant may use all the document allows.
    tenant = await airlock.tenant(
        max_token_ttl_s=TOKEN_TTL_HARD_CAP_S,
        max_sandbox_ttl_s=MAX_TTL_S,
        max_lifetime_s=MAX_LIFETIME_S,
        max_exec_timeout_s=86_400,
        max_idle_timeout_s=604_800,
    )
    runs = {
        "tenant": (tenant.key, ["--exclude-path-regex", OPERATOR_PATHS]),
        "operator": (airlock.operator_key, ["--include-path-regex", OPERATOR_PATHS]),
    }
    tested: set[str] = set()
    for name, (key, selection) in runs.items():
        report = tmp_path / f"{name}.ndjson"
        done = await asyncio.to_thread(_schemathesis, airlock, key, selection, report)
        print(done.stdout[-2500:])  # the run's summary: operations, test cases, checks, time
        assert done.returncode == 0, done.stdout + done.stderr[-4000:]
        tested |= _tested_operations(report)
    assert tested == set(_operations(airlock))


def _tested_operations(report: Path) -> set[str]:
    """The operations schemathesis reports having run test cases on, from its event stream."""
    seen: set[str] = set()
    for line in report.read_text().splitlines():
        scenario = json.loads(line).get("ScenarioFinished")
        if scenario is not None and scenario["status"] != "skip":
            seen.add(scenario["recorder"]["label"])
    return seen
