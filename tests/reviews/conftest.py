"""Reviews end to end: the app with its review runner on the real gVisor runtime, its own
PostgreSQL database and state dir (the runner and the start-up reconciler act on every row
of their database), local git repositories made here, and a small OpenAI-compatible model
server started here and reached through the real `openai` client.

The model server answers by the model name a review asks for, so one server plays several
reviewers: `approver`, `rejecter`, `rambler` (no JSON), `flaky` (one 503 first).
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import subprocess
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import AsyncTestClient

from service.app import create_app
from service.db import migrate
from service.runtime import images
from service.runtime.gvisor import destroy_left
from service.settings import Settings
from tests.conftest import OPERATOR_KEY, Api, Tenant, create_pg_database
from tests.reviews import git_https
from tests.reviews.git_https import GitHost

REPO_ROOT = Path(__file__).resolve().parents[2]
LLM_KEY = "sk-review-canary-" + secrets.token_hex(8)
HOST_CANARY = "host-canary-" + secrets.token_hex(8)

# The seed's example: a correct add_tax, then a change to `amount + rate`.
BILLING = (
    "def add_tax(amount, rate):\n"
    '    """Add tax to amount. rate is a fraction, e.g. 0.1 for 10%."""\n'
    "    return amount + amount * rate\n"
)
BROKEN_BILLING = (
    "def add_tax(amount, rate):\n"
    '    """Add tax to amount. rate is a fraction, e.g. 0.1 for 10%."""\n'
    '    # PR change: an "optimization" that introduces a bug\n'
    "    return amount + rate\n"
)
TESTS = (
    "from billing import add_tax\n\n"
    "def test_ten_percent():\n"
    "    assert add_tax(100, 0.1) == 110.0\n\n"
    "def test_zero_rate():\n"
    "    assert add_tax(50, 0) == 50\n"
)


# --- the model server -----------------------------------------------------------------------


@dataclass
class ModelServer:
    port: int
    requests: list[dict[str, Any]] = field(default_factory=list)
    flaky_failures: int = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def chats(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if r["path"].endswith("/chat/completions")]

    def chats_about(self, head_commit: str) -> list[dict[str, Any]]:
        return [r for r in self.chats() if head_commit in json.dumps(r["body"])]


def _answer(server: ModelServer, body: dict[str, Any]) -> tuple[int, str]:
    model = body.get("model")
    if model == "flaky" and server.flaky_failures == 0:
        server.flaky_failures += 1
        return 503, json.dumps({"error": {"message": "overloaded", "type": "server_error"}})
    if model in ("approver", "flaky"):
        content = json.dumps({"verdict": "APPROVE", "reasoning": "The change is correct."})
    elif model == "rejecter":
        content = json.dumps(
            {"verdict": "REQUEST_CHANGES", "reasoning": "The change drops a needed check."}
        )
    elif model == "rambler":
        content = "Looks great to me, ship it! APPROVE"
    else:
        return 404, json.dumps({"error": {"message": f"no model {model}", "type": "invalid"}})
    completion = {
        "id": "chatcmpl-" + secrets.token_hex(6),
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }
    return 200, json.dumps(completion)


@pytest.fixture(scope="package")
def model_server() -> Iterator[ModelServer]:
    server_state = ModelServer(port=0)

    class Handler(BaseHTTPRequestHandler):
        def _record(self) -> dict[str, Any]:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = {"raw": raw.decode(errors="replace")}
            entry = {"method": self.command, "path": self.path, "body": body,
                     "authorization": self.headers.get("Authorization")}  # fmt: skip
            server_state.requests.append(entry)
            return entry

        def _send(self, status: int, text: str) -> None:
            data = text.encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:
            entry = self._record()
            if self.path.endswith("/chat/completions"):
                self._send(*_answer(server_state, entry["body"]))
            else:
                self._send(404, "{}")

        def do_GET(self) -> None:
            self._record()
            self._send(404, "{}")

        def log_message(self, *args: Any) -> None:
            pass

    # On every address: were the sandbox able to reach the host, it would reach this.
    httpd = ThreadingHTTPServer(("0.0.0.0", 0), Handler)  # noqa: S104
    server_state.port = httpd.server_address[1]
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield server_state
    httpd.shutdown()


# --- git repositories -----------------------------------------------------------------------


def git(repo: Path, *args: str) -> str:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(repo.parent),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "contributor",
        "GIT_AUTHOR_EMAIL": "contributor@example.com",
        "GIT_COMMITTER_NAME": "contributor",
        "GIT_COMMITTER_EMAIL": "contributor@example.com",
    }
    done = subprocess.run(
        ["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def make_repo(
    root: Path, base: dict[str, str], change: dict[str, str], branch: str = "pr-42"
) -> Path:
    """A repository whose `main` holds `base` and whose `branch` adds `change` on top."""
    repo = root / f"repo-{secrets.token_hex(4)}"
    repo.mkdir(parents=True)
    git(repo, "init", "--quiet", "--initial-branch=main")
    _commit(repo, base, "base")
    git(repo, "checkout", "--quiet", "-b", branch)
    _commit(repo, change, f"{branch}: the change")
    git(repo, "checkout", "--quiet", "main")
    return repo


def _commit(repo: Path, files: dict[str, str], message: str) -> None:
    for name, text in files.items():
        path = repo / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    git(repo, "add", "--all")
    git(repo, "commit", "--quiet", "--allow-empty", "-m", message)


# --- the app ---------------------------------------------------------------------------------


@asynccontextmanager
async def migrated_database(name: str) -> AsyncIterator[str]:
    """A new PostgreSQL database with the schema, dropped at the end."""
    url, drop = await create_pg_database(name)
    await asyncio.to_thread(migrate.upgrade, url)
    yield url
    await drop()


@asynccontextmanager
async def own_state(
    review_state: Path, tmp_path_factory: pytest.TempPathFactory, name: str
) -> AsyncIterator[Path]:
    """A state dir of its own sharing `review_state`'s images; its leftovers destroyed at the
    end."""
    state = tmp_path_factory.mktemp(name)
    (state / "images").symlink_to((review_state / "images").resolve())
    yield state
    await destroy_left(state, strict=True)


@asynccontextmanager
async def serving(state: Path, database: str, **settings: Any) -> AsyncIterator[Api]:
    """The app on gVisor with its review runner, local repositories allowed, in-process, for
    the length of the block; `settings` adds to these (a model endpoint, say)."""
    built = Settings.from_env(
        {},
        state_dir=state,
        database_url=database,
        operator_key=OPERATOR_KEY,
        runtime="gvisor",
        review_allow_local_repos=True,
        **settings,
    )
    async with AsyncTestClient(app=create_app(built), timeout=600) as client:
        yield Api(client=client, settings=built)


@pytest.fixture(scope="package")
def review_state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    shared = REPO_ROOT / ".airlock"
    images.build_default_image(shared)  # instant when already built
    state = tmp_path_factory.mktemp("reviews-state")
    (state / "images").symlink_to(images.images_dir(shared).resolve())
    return state


@pytest.fixture(scope="package")
async def review_database() -> AsyncIterator[str]:
    async with migrated_database("airlock_reviews") as url:
        yield url


@pytest.fixture(scope="package")
async def rapi(
    review_state: Path, review_database: str, model_server: ModelServer
) -> AsyncIterator[Api]:
    """The app with its jobs running, local repositories enabled and the model server set."""
    os.environ["AIRLOCK_REVIEW_TEST_CANARY"] = HOST_CANARY  # the service's own environment
    model = {"llm_base_url": model_server.base_url, "llm_api_key": LLM_KEY,
             "llm_model": "approver", "llm_timeout_s": 20}  # fmt: skip
    try:
        async with serving(review_state, review_database, **model) as api:
            yield api
    finally:
        os.environ.pop("AIRLOCK_REVIEW_TEST_CANARY", None)
        await destroy_left(review_state, strict=True)


@pytest.fixture
async def rtenant(rapi: Api) -> Tenant:
    return await rapi.tenant()


async def review(api: Api, tenant: Tenant, bound_s: float = 300.0, **body: Any) -> dict[str, Any]:
    """POST a review and wait for its report; the bound only keeps a broken run finite."""
    r = await api.client.post("/v1/reviews", json=body, headers=tenant.headers)
    assert r.status_code == 202, r.text
    return await wait_for(api, tenant, r.json()["id"], bound_s)


async def wait_for(api: Api, tenant: Tenant, review_id: str, bound_s: float = 300.0) -> Any:
    """A review's report once it has ended; the bound only keeps a broken run finite."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + bound_s
    while True:
        got = await api.client.get(f"/v1/reviews/{review_id}", headers=tenant.headers)
        if got.status_code == 429:  # many waiting at once: as a client should, it waits
            await asyncio.sleep(float(got.headers["Retry-After"]))
            continue
        assert got.status_code == 200, got.text
        if got.json()["state"] in ("finished", "failed"):
            return dict(got.json())
        if loop.time() > deadline:
            pytest.fail(f"review {review_id} not done within {bound_s} s: {got.json()}")
        await asyncio.sleep(0.3)


def stages(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {stage["name"]: stage for stage in report["stages"]}


async def assert_sandbox_gone(api: Api, tenant: Tenant, report: dict[str, Any]) -> None:
    assert report["sandbox_id"], report
    r = await api.client.get(f"/v1/sandboxes/{report['sandbox_id']}", headers=tenant.headers)
    assert r.status_code == 200, r.text
    assert r.json()["state"] == "stopped", r.json()
    assert stages(report)["cleanup"]["outcome"] == "ok"


# --- a private git host -----------------------------------------------------------------------

# The scan inside the sandbox (test_private.py) looks for this prefix, which it builds from
# parts so that the repository never holds it.
PRIVATE_PASSWORD = "airlock-private-repo-token-" + secrets.token_urlsafe(24)


@pytest.fixture(scope="package")
def git_host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GitHost]:
    """An HTTPS git host that wants `x-access-token:PRIVATE_PASSWORD`; its CA is given to the
    service's git through GIT_SSL_CAINFO, as an operator with a private CA would."""
    host, httpd = git_https.start(
        tmp_path_factory.mktemp("git-host") / "srv", "x-access-token", PRIVATE_PASSWORD
    )
    previous = os.environ.get("GIT_SSL_CAINFO")
    os.environ["GIT_SSL_CAINFO"] = str(host.ca_file)
    try:
        yield host
    finally:
        httpd.shutdown()
        if previous is None:
            os.environ.pop("GIT_SSL_CAINFO", None)
        else:
            os.environ["GIT_SSL_CAINFO"] = previous
