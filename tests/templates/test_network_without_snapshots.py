"""A template with a network where snapshots are off: every sandbox from it runs the setup
again under the template's policy, and still gets only the network it asked for."""

from __future__ import annotations

import json
import secrets

import pytest

from service.runtime.gvisor import destroy_left
from tests.conftest import Api
from tests.network.hosts import file_host, left_behind, made_networks, plain_host
from tests.runtime.test_network import BLOCKED, PROBE

from .conftest import (
    build_template,
    create_sandbox,
    delete_sandbox,
    new_state,
    run,
    serve,
    unique,
)

PEERS = ["10.250.0.0/16"]  # the test hosts are private: granted to the tenants
__all__ = ["made_networks"]  # the fixture, used by name


async def test_image_starts_run_setup_under_the_templates_policy(
    tmp_path_factory: pytest.TempPathFactory, own_database: str, made_networks: list[str]
) -> None:
    served = tmp_path_factory.mktemp("served")
    (served / "package.txt").write_text("from the allowed host\n")
    base = 4 + secrets.randbelow(120) * 2
    state = new_state(tmp_path_factory, "net-nosnap")
    with file_host(base, 8080, served) as files, plain_host(base + 1, (8080,)) as other:
        try:
            async with serve(state, own_database, template_snapshots="off") as api:
                tenant = await api.tenant(network_private_cidrs=PEERS)
                name = unique("netimage")
                url = f"http://{files.address}:8080/package.txt"
                fetch = f"import urllib.request; urllib.request.urlretrieve({url!r}, '/work/p')"
                built = await build_template(
                    api,
                    tenant.headers,
                    name,
                    setup=[["python3", "-c", fetch]],
                    network={"mode": "allowlist", "allow": [f"{files.address}:8080"]},
                )
                assert built["state"] == "ready", built["versions"][0]["build_log"]
                assert built["versions"][0]["start_mode"] == "image"

                plain = await create_sandbox(api, tenant, template=name)
                assert plain["started_from"] == "image"
                got = await run(api, tenant, plain["id"], ["sh", "-c", "cat /work/p /proc/net/dev"])
                lines = got["stdout"].splitlines()
                assert lines[0] == "from the allowed host"
                assert [line.split(":")[0].strip() for line in lines[3:]] == ["lo"]

                wanted = {"mode": "allowlist", "allow": [f"{other.address}:8080"]}
                networked = await create_sandbox(api, tenant, template=name, network=wanted)
                got = await run(api, tenant, networked["id"], ["cat", "/work/p"])
                assert got["stdout"] == "from the allowed host\n"
                targets = [f"{other.address}:8080", f"{files.address}:8080"]
                ex = await run(
                    api, tenant, networked["id"], ["python3", "-c", PROBE, json.dumps(targets)]
                )
                outcomes = json.loads(ex["stdout"])
                assert outcomes[0] == "open" and outcomes[1] in BLOCKED, outcomes
                for box in (plain, networked):
                    await delete_sandbox(api, tenant, box["id"])
        finally:
            await destroy_left(state, snapshots=True, strict=True)
    assert made_networks and left_behind(made_networks) == []


async def test_a_start_does_not_run_the_setup_open_after_open_was_revoked(
    tmp_path_factory: pytest.TempPathFactory, own_database: str
) -> None:
    """Without a snapshot each start runs the template's setup again under the template's
    network: a birth under its owner's rules of now. Once the operator took `open` away, a
    sandbox from the tenant's `open` template is refused instead of running it open."""
    state = new_state(tmp_path_factory, "open-nosnap")
    try:
        async with serve(state, own_database, template_snapshots="off") as api:
            tenant = await api.tenant()
            await allow_open(api, tenant.id, True)
            name = unique("openimage")
            built = await build_template(
                api, tenant.headers, name, setup=[["true"]], network={"mode": "open"}
            )
            assert built["state"] == "ready", built["versions"][0]["build_log"]
            box = await create_sandbox(api, tenant, template=name)  # while it is allowed
            await delete_sandbox(api, tenant, box["id"])
            await allow_open(api, tenant.id, False)
            r = await api.client.post(
                "/v1/sandboxes", json={"template": name}, headers=tenant.headers
            )
            if r.status_code == 201:
                await delete_sandbox(api, tenant, r.json()["id"])
            assert r.status_code == 403, r.text
            assert "open network" in r.json()["detail"], r.text
    finally:
        await destroy_left(state, snapshots=True, strict=True)


async def allow_open(api: Api, tenant_id: str, allowed: bool) -> None:
    r = await api.client.patch(
        f"/v1/tenants/{tenant_id}",
        json={"quotas": {"network_open_allowed": allowed}},
        headers=api.operator,
    )
    assert r.status_code == 200, r.text
