"""Airlock's load scenarios: each a locust user class that drives the API over HTTP as a real
client would. `loadtests/run.py` starts the server, prepares what the users need (tenants, a
template, the warm pool, a git bundle) into a setup file, and runs locust with it.

    AgentSession   an agent's session: create from a template, 20 execs with small outputs,
                   a file round trip, delete
    SaasChurn      a SaaS product's end users: many tenants, a sandbox each (some with a
                   network), short TTLs left to expire under load
    ExecStream     long execs followed over server-sent events to their exit
    PoolBurst      50 creates at once from the warm-pooled template, then deletes
    Reviewer       pull-request reviews arriving while the rest runs
    ExecRate       `true` exec'd back to back (the sustained exec rate)
    CreateRate     the smallest sandbox created and deleted back to back (the create rate)

A request that does not answer as the API documents counts as a failure, with what came back.
"""

from __future__ import annotations

import json
import os
import random
import secrets
import time
from itertools import count
from typing import Any

import gevent
from gevent.pool import Group
from locust import FastHttpUser, between, constant, events, task
from locust.exception import StopUser

SETUP: dict[str, Any] = {}
_ids = count()


@events.init.add_listener
def _load_setup(environment: Any, **_: Any) -> None:
    path = os.environ.get("AIRLOCK_LOAD_SETUP")
    if not path:
        raise SystemExit("AIRLOCK_LOAD_SETUP names the setup file loadtests/run.py writes")
    with open(path) as fh:
        SETUP.update(json.load(fh))


class _Airlock(FastHttpUser):
    abstract = True
    # Creates and long execs take seconds; a stuck one fails rather than hangs the run.
    network_timeout = 120.0
    connection_timeout = 10.0
    tenant_pool = "agents"

    def on_start(self) -> None:
        tenants = SETUP["tenants"][self.tenant_pool]
        self.key = tenants[next(_ids) % len(tenants)]
        self.auth = {"Authorization": f"Bearer {self.key}"}

    def call(self, method: str, path: str, name: str, expect: tuple[int, ...], **kw: Any) -> Any:
        """One request; a failure unless its status is in `expect`. Returns the JSON answer
        (None for an empty body, or on failure)."""
        headers = {**self.auth, **kw.pop("headers", {})}
        with self.client.request(
            method, path, name=name, headers=headers, catch_response=True, **kw
        ) as r:
            if r.status_code not in expect:
                r.failure(f"{r.status_code}: {(r.text or '')[:300]}")
                return None
            r.success()  # an expected 4xx/5xx (a 503 for no room) is not a failure
            if not r.content or not r.headers.get("content-type", "").startswith(
                "application/json"
            ):
                return r.content
            return r.json()

    def create(self, name: str = "/v1/sandboxes", **body: Any) -> str | None:
        made = self.call("POST", "/v1/sandboxes", name, (201,), json=body)
        return made["id"] if made else None

    def delete(self, sandbox_id: str) -> None:
        self.call("DELETE", f"/v1/sandboxes/{sandbox_id}", "/v1/sandboxes/[id]", (204, 404))

    def exec(self, sandbox_id: str, cmd: list[str], **body: Any) -> Any:
        done = self.call(
            "POST",
            f"/v1/sandboxes/{sandbox_id}/execs",
            "/v1/sandboxes/[id]/execs",
            (200, 202),
            json={"cmd": cmd, **body},
        )
        return done


class AgentSession(_Airlock):
    wait_time = between(0.5, 2.0)

    @task
    def session(self) -> None:
        sandbox = self.create("/v1/sandboxes (template)", template=SETUP["template"], ttl_s=300)
        if sandbox is None:
            return
        try:
            for i in range(20):
                done = self.exec(sandbox, ["python3", "-c", f"print({i} * {i})"])
                if done is not None and done.get("stdout") != f"{i * i}\n":
                    self._wrong("exec output", done)
            payload = secrets.token_bytes(16 * 1024)
            path = f"/v1/sandboxes/{sandbox}/files/work/round.bin"
            name = "/v1/sandboxes/[id]/files/[path]"
            headers = {"Content-Type": "application/octet-stream"}
            self.call("PUT", path, name, (201,), data=payload, headers=headers)
            back = self.call("GET", path, name, (200,))
            if back is not None and back != payload:
                self._wrong("file round trip", {"sent": len(payload), "got": len(back)})
        finally:
            self.delete(sandbox)

    def _wrong(self, what: str, got: Any) -> None:
        events.request.fire(
            request_type="CHECK",
            name=what,
            response_time=0,
            response_length=0,
            exception=AssertionError(f"{what}: {str(got)[:300]}"),
        )


class SaasChurn(_Airlock):
    """Each user is one end user of a SaaS product: a sandbox of its own for a short while,
    a few execs, then gone (half deleted, half left to their TTL)."""

    wait_time = between(1.0, 3.0)
    tenant_pool = "saas"

    @task
    def end_user(self) -> None:
        networked = random.random() < 0.25
        # The smallest sandbox: what a product gives each of its users.
        body: dict[str, Any] = {
            "ttl_s": 20,
            "memory_mib": 128,
            "disk_mib": 64,
            "labels": {"end_user": f"u{random.randrange(10**6)}"},
        }
        if networked:  # one public address allowed: a netns, a veth pair, iptables chains
            body["network"] = {"mode": "allowlist", "allow": ["93.184.215.14/32"]}
        sandbox = self.create("/v1/sandboxes (churn)", **body)
        if sandbox is None:
            return
        for _ in range(2):
            self.exec(sandbox, ["sh", "-c", "echo hello; ls /work"])
        if random.random() < 0.5:
            self.delete(sandbox)


class _OwnSandbox(_Airlock):
    """A user with one sandbox of its own for the whole run."""

    abstract = True
    SANDBOX: dict[str, Any] = {}

    def on_start(self) -> None:
        super().on_start()
        self.sandbox = self.create(ttl_s=3600, **self.SANDBOX)
        if self.sandbox is None:
            raise StopUser()

    def on_stop(self) -> None:
        if getattr(self, "sandbox", None):
            self.delete(self.sandbox)


class ExecStream(_OwnSandbox):
    wait_time = between(0.5, 1.5)
    tenant_pool = "streams"
    LINES = 20

    @task
    def follow(self) -> None:
        script = f"for i in $(seq {self.LINES}); do echo line $i; sleep 0.25; done"
        started = self.exec(self.sandbox, ["sh", "-c", script], wait=False)
        if started is None:
            return
        path = f"/v1/sandboxes/{self.sandbox}/execs/{started['id']}/events"
        t0 = time.perf_counter()
        with self.client.get(
            path,
            name="/v1/sandboxes/[id]/execs/[id]/events",
            headers={**self.auth, "Accept": "text/event-stream"},
            stream=True,
            catch_response=True,
        ) as r:
            if r.status_code != 200:
                r.failure(f"{r.status_code}: {(r.text or '')[:300]}")
                return
            chunks = [
                c.decode(errors="replace") if isinstance(c, bytes) else c
                for c in r.iter_content(8192)
            ]
            body = "".join(chunks)
            lines = body.count("line ")
            if "event: exit" not in body or lines < self.LINES:
                r.failure(f"stream ended after {lines} lines, exit seen: {'event: exit' in body}")
            else:
                r.success()
        events.request.fire(
            request_type="STREAM",
            name="exec followed to its exit",
            response_time=(time.perf_counter() - t0) * 1000,
            response_length=len(body),
            exception=None,
        )


class PoolBurst(_Airlock):
    wait_time = between(5.0, 10.0)
    tenant_pool = "bursts"
    BURST = int(os.environ.get("AIRLOCK_LOAD_BURST", "50"))

    @task
    def burst(self) -> None:
        made: list[str] = []
        group = Group()

        def one() -> None:
            # No room on the host is an answer the API documents (503, Retry-After), not an
            # error: the burst reports how many got in.
            got = self.call(
                "POST",
                "/v1/sandboxes",
                "/v1/sandboxes (burst)",
                (201, 503),
                json={"template": SETUP["pool_template"], "ttl_s": 300},
            )
            if got and got.get("id"):
                made.append(got["id"])

        t0 = time.perf_counter()
        for _ in range(self.BURST):
            group.spawn(one)
        group.join()
        events.request.fire(
            request_type="BURST",
            name=f"{self.BURST} creates at once",
            response_time=(time.perf_counter() - t0) * 1000,
            response_length=len(made),  # the sandboxes admitted
            exception=None,
        )
        deletes = Group()
        for sandbox in made:
            deletes.spawn(self.delete, sandbox)
        deletes.join()


class Reviewer(_Airlock):
    wait_time = between(5.0, 15.0)
    tenant_pool = "reviews"
    DEADLINE_S = 300.0

    @task
    def review(self) -> None:
        with open(SETUP["bundle"], "rb") as fh:
            bundle = fh.read()
        uploaded = self.call(
            "POST",
            "/v1/reviews/bundles",
            "/v1/reviews/bundles",
            (201,),
            data=bundle,
            headers={"Content-Type": "application/octet-stream"},
        )
        if uploaded is None:
            return
        body = {"repo": uploaded["id"], "base": "main", "head": "change"}
        queued = self.call("POST", "/v1/reviews", "/v1/reviews", (202,), json=body)
        if queued is None:
            return
        t0 = time.perf_counter()
        state = queued.get("state")
        while time.perf_counter() - t0 < self.DEADLINE_S:
            got = self.call("GET", f"/v1/reviews/{queued['id']}", "/v1/reviews/[id]", (200,))
            state = got.get("state") if got else None
            if state in ("finished", "failed"):
                break
            gevent.sleep(2.0)
        events.request.fire(
            request_type="REVIEW",
            name="review to its verdict",
            response_time=(time.perf_counter() - t0) * 1000,
            response_length=0,
            exception=None if state == "finished" else RuntimeError(f"review ended {state}"),
        )


class ExecRate(_OwnSandbox):
    """Execs back to back in a sandbox of its own: the sustained exec rate."""

    wait_time = constant(0)
    tenant_pool = "agents"
    SANDBOX = {"memory_mib": 128, "disk_mib": 64}

    @task
    def run_true(self) -> None:
        self.exec(self.sandbox, ["true"])


class CreateRate(_Airlock):
    """The smallest sandbox created and deleted back to back: the sustained create rate."""

    wait_time = constant(0)
    tenant_pool = "saas"

    @task
    def create_delete(self) -> None:
        sandbox = self.create(ttl_s=300, memory_mib=128, disk_mib=64)
        if sandbox is not None:
            self.delete(sandbox)
