"""The service's own file commands in a sandbox ignore the sandbox's environment: a tenant
PATH that puts its own `cat` and `find` first changes nothing the host reads or writes."""

from __future__ import annotations

from tests.e2e.conftest import Airlock, Tenant, run_exec

FAKES = r"""
mkdir -p /work/bin
for tool in cat find mv chmod; do
  printf '#!/bin/sh\necho forged-by-%s\n' "$tool" > "/work/bin/$tool"
  chmod 0755 "/work/bin/$tool"
done
/bin/echo genuine > /work/real.txt
"""


async def test_file_routes_do_not_run_the_tenants_tools(airlock: Airlock, tenant: Tenant) -> None:
    sandbox = await airlock.sandbox(tenant, env={"PATH": "/work/bin:/usr/bin:/bin"})
    _, ex = await run_exec(tenant.client, sandbox.id, cmd=["/bin/sh", "-c", FAKES])
    assert ex is not None and ex.exit_code == 0, ex
    base = f"/v1/sandboxes/{sandbox.id}/files"
    async with airlock.http(tenant.key) as http:
        read = await http.get(f"{base}/work/real.txt")
        assert (read.status_code, read.content) == (200, b"genuine\n")

        listing = await http.get(base, params={"dir": "/work"})
        assert listing.status_code == 200, listing.text
        names = {entry["name"] for entry in listing.json()["items"]}
        assert names == {"bin", "real.txt"}

        put = await http.put(f"{base}/work/uploaded.txt", content=b"sent by the client")
        assert put.status_code == 201, put.text
    _, check = await run_exec(tenant.client, sandbox.id, cmd=["/bin/cat", "/work/uploaded.txt"])
    assert check is not None and check.stdout == "sent by the client"
