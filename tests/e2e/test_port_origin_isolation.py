"""A sandbox's web server cannot take the API's origin: on the path route (the API's own
origin) its answers come under a `Content-Security-Policy: sandbox` policy (the page gets an
opaque origin), without the headers that would widen a browser's trust in that origin, and a
service worker's script is never served there; on a preview host (the port's own origin)
only what reaches past that origin is dropped."""

from __future__ import annotations

import asyncio

from tests.e2e.conftest import PREVIEW_DOMAIN, Airlock, Tenant
from tests.port_servers import WIDENING

PORT = 8000
OUR_POLICY = "sandbox allow-scripts allow-forms allow-popups allow-modals allow-downloads"
# What the sandbox's server sends that must never reach a browser on the API's origin.
ORIGIN_WIDE = (
    "service-worker-allowed",
    "access-control-allow-origin",
    "access-control-allow-credentials",
    "access-control-allow-private-network",
    "clear-site-data",
    "strict-transport-security",
    "alt-svc",
    "nel",
    "report-to",
    "timing-allow-origin",
    "cross-origin-resource-policy",
    "www-authenticate",
    "link",
    "origin-agent-cluster",
)
# Dropped on a preview host too: they act beyond the port's own origin.
BEYOND_ORIGIN = ("clear-site-data", "alt-svc")


async def serve_widening(airlock: Airlock, tenant: Tenant) -> str:
    """A sandbox whose server on PORT answers every path with the widening headers."""
    sandbox = await airlock.sandbox(tenant)
    async with airlock.http(tenant.key) as http:
        r = await http.put(f"/v1/sandboxes/{sandbox.id}/files/work/w.py", content=WIDENING)
        assert r.status_code in (200, 201), r.text
        body = {"cmd": ["python3", "/work/w.py", str(PORT)], "wait": False, "timeout_s": 600}
        r = await http.post(f"/v1/sandboxes/{sandbox.id}/execs", json=body)
        assert r.status_code in (201, 202), r.text
        for _ in range(100):
            up = await http.get(f"/v1/sandboxes/{sandbox.id}/ports/{PORT}/")
            if up.status_code == 200:
                return sandbox.id
            await asyncio.sleep(0.1)
    raise AssertionError(f"the server did not start: {up.text}")


async def test_service_worker_scope_from_a_sandbox_never_reaches_the_api_origin(
    airlock: Airlock, tenant: Tenant
) -> None:
    sandbox_id = await serve_widening(airlock, tenant)
    sw = f"/v1/sandboxes/{sandbox_id}/ports/{PORT}/sw.js"
    async with airlock.http(tenant.key) as http:
        # What a browser sends for `navigator.serviceWorker.register(...)`: refused.
        for asked in ({"Service-Worker": "script"}, {"Sec-Fetch-Dest": "serviceworker"}):
            r = await http.get(sw, headers=asked)
            assert r.status_code == 403, (asked, r.status_code, r.headers)
            assert r.json()["code"] == "service_worker_refused"
            assert "service-worker-allowed" not in r.headers

        # Any other request for it: answered, without what widens the origin's trust, and
        # under a policy that gives the page an opaque origin.
        r = await http.get(sw)
        assert r.status_code == 200, r.text
        leaked = sorted(name for name in ORIGIN_WIDE if name in r.headers)
        assert leaked == [], leaked
        assert r.headers["x-app"] == "kept"
        policies = r.headers.get_list("content-security-policy")
        assert OUR_POLICY in policies, policies
        assert "sandbox allow-same-origin allow-scripts" in policies  # its own, beside ours

        # On the port's own host name (its own origin) the server's choices are its own,
        # except what acts past that origin.
        on_host = {"Host": f"{PORT}-{sandbox_id}.{PREVIEW_DOMAIN}", "Service-Worker": "script"}
        r = await http.get("/sw.js", headers=on_host)
        assert r.status_code == 200, r.text
        assert r.headers["service-worker-allowed"] == "/"
        assert r.headers["access-control-allow-origin"] == "https://evil.example"
        assert OUR_POLICY not in r.headers.get_list("content-security-policy")
        assert [name for name in BEYOND_ORIGIN if name in r.headers] == []
