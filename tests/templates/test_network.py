"""Templates with a network policy, on the real gVisor runtime: the setup steps run under the
template's policy (an allowed test host answers, one not on the list is refused at once and
the build log says so), and sandboxes started from a template take their own policy. The test
hosts live in network namespaces these tests create (10.250.x.x); nothing outside the machine
is contacted."""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import Api, Tenant
from tests.network.hosts import Peer, file_host, left_behind, made_networks, plain_host
from tests.runtime.test_network import BLOCKED, METADATA, PROBE

from .conftest import build_template, create_sandbox, delete_sandbox, eventually, run, unique

# The test hosts are on private addresses: tenants reach them only where the operator granted.
PEERS = ["10.250.0.0/16"]

__all__ = ["made_networks"]  # the fixture, used by name

PACKAGE = "airlock-package-" + secrets.token_hex(8)


@pytest.fixture(scope="module")
def hosts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Peer, Peer]]:
    """`files` serves a package file on 8080 (and nothing on 8081); `other` serves 8080."""
    directory = tmp_path_factory.mktemp("served")
    (directory / "package.txt").write_text(PACKAGE + "\n")
    base = 4 + secrets.randbelow(120) * 2
    with file_host(base, 8080, directory) as files, plain_host(base + 1, (8080,)) as other:
        yield files, other


def fetch(url: str, dest: str) -> list[str]:
    return [
        "python3",
        "-c",
        f"import urllib.request; urllib.request.urlretrieve({url!r}, {dest!r})",
    ]


async def probe(api: Api, tenant: Tenant, sandbox_id: str, *targets: str) -> list[str]:
    ex = await run(api, tenant, sandbox_id, ["python3", "-c", PROBE, json.dumps(list(targets))])
    assert ex["exit_code"] == 0, ex
    return list(json.loads(ex["stdout"]))


async def test_setup_fetches_from_an_allowed_host_and_sandboxes_have_the_file(
    tapi: Api, hosts: tuple[Peer, Peer], made_networks: list[str]
) -> None:
    files, _ = hosts
    tenant = await tapi.tenant(network_private_cidrs=PEERS)
    name = unique("fetch")
    url = f"http://{files.address}:8080/package.txt"
    built = await build_template(
        tapi,
        tenant.headers,
        name,
        setup=[fetch(url, "/work/package.txt"), ["cat", "/work/package.txt"]],
        network={"mode": "allowlist", "allow": [f"{files.address}:8080"]},
    )
    assert built["state"] == "ready", built["versions"][0]["build_log"]
    version = built["versions"][0]
    assert version["network"] == {"mode": "allowlist", "allow": [f"{files.address}:8080"]}
    assert version["start_mode"] == "snapshot"
    assert (
        PACKAGE in version["build_log"]
        and f"allowlist {files.address}:8080" in version["build_log"]
    )
    # The build sandbox had a network; it is gone with everything it had on the host.
    assert made_networks and left_behind(made_networks) == []

    # Without a network (the default): restored from the snapshot, with the file, only `lo`.
    box = await create_sandbox(tapi, tenant, template=name)
    assert box["network"]["mode"] == "none" and box["started_from"] == "snapshot"
    got = await run(tapi, tenant, box["id"], ["sh", "-c", "cat /work/package.txt /proc/net/dev"])
    assert got["stdout"].startswith(PACKAGE + "\n")
    assert [line.split(":")[0].strip() for line in got["stdout"].splitlines()[3:]] == ["lo"]
    await delete_sandbox(tapi, tenant, box["id"])


async def test_setup_reaching_a_host_not_on_the_list_fails_the_build(
    tapi: Api, hosts: tuple[Peer, Peer], made_networks: list[str]
) -> None:
    files, other = hosts
    tenant = await tapi.tenant(network_private_cidrs=PEERS)
    name = unique("blocked")
    built = await build_template(
        tapi,
        tenant.headers,
        name,
        setup=[fetch(f"http://{other.address}:8080/", "/work/index.html")],
        network={"mode": "allowlist", "allow": [f"{files.address}:8080"]},
    )
    assert built["state"] == "failed" and built["version"] is None
    version = built["versions"][0]
    assert "setup step 1" in version["error"]
    log = version["build_log"]
    assert "Connection refused" in log, log  # refused at once, not a timeout
    assert "build failed: setup step 1" in log
    assert made_networks and left_behind(made_networks) == []


async def test_a_sandbox_from_a_template_gets_its_own_allowlist(
    tapi: Api, hosts: tuple[Peer, Peer], made_networks: list[str]
) -> None:
    files, other = hosts
    tenant = await tapi.tenant(network_private_cidrs=PEERS)
    name = unique("allow")
    url = f"http://{files.address}:8080/package.txt"
    built = await build_template(
        tapi,
        tenant.headers,
        name,
        setup=[fetch(url, "/home/sandbox/package.txt")],
        network={"mode": "allowlist", "allow": [f"{files.address}:8080"]},
    )
    assert built["state"] == "ready", built["versions"][0]["build_log"]
    made_networks.clear()

    wanted = {"mode": "allowlist", "allow": [f"{other.address}:8080"]}
    box = await create_sandbox(tapi, tenant, template=name, network=wanted)
    assert box["network"] == wanted and box["template"] == name
    got = await run(tapi, tenant, box["id"], ["cat", "/home/sandbox/package.txt"])
    assert got["stdout"] == PACKAGE + "\n"
    outcomes = await probe(
        tapi,
        tenant,
        box["id"],
        f"{other.address}:8080:http",  # its own allowlist
        f"{files.address}:8080",  # the template's, not the sandbox's
        f"{METADATA}:80",
    )
    assert outcomes[0] == "http 200" and {outcomes[1], outcomes[2]} <= BLOCKED, outcomes
    assert made_networks  # the sandbox got a namespace of its own
    await delete_sandbox(tapi, tenant, box["id"])
    assert left_behind(made_networks) == []


async def test_a_template_without_network_serves_a_networked_sandbox(
    tapi: Api, hosts: tuple[Peer, Peer]
) -> None:
    files, _ = hosts
    tenant = await tapi.tenant(network_private_cidrs=PEERS)
    name = unique("plain")
    setup = [["sh", "-c", "echo baked > /work/baked"]]
    assert (await build_template(tapi, tenant.headers, name, setup=setup))["state"] == "ready"
    wanted = {"mode": "allowlist", "allow": [f"{files.address}:8080"]}
    box = await create_sandbox(tapi, tenant, template=name, network=wanted)
    assert (await run(tapi, tenant, box["id"], ["cat", "/work/baked"]))["stdout"] == "baked\n"
    assert await probe(tapi, tenant, box["id"], f"{files.address}:8080") == ["open"]
    await delete_sandbox(tapi, tenant, box["id"])


@pytest.mark.parametrize(
    ("network", "status"),
    [
        ({"mode": "allowlist", "allow": ["not a host"]}, 422),
        ({"mode": "allowlist", "allow": ["host.example:99999"]}, 422),
        ({"mode": "none", "allow": ["10.0.0.0/8"]}, 422),
        ({"mode": "wide"}, 422),
        ({"mode": "open"}, 403),  # not enabled for this tenant
    ],
)
async def test_bad_or_forbidden_template_policies_are_refused(
    tapi: Api, network: dict[str, object], status: int
) -> None:
    tenant = await tapi.tenant(network_private_cidrs=PEERS)
    name = unique("refused")
    r = await tapi.client.post(
        "/v1/templates", json={"name": name, "network": network}, headers=tenant.headers
    )
    assert r.status_code == status, r.text
    assert (
        await tapi.client.get(f"/v1/templates/{name}", headers=tenant.headers)
    ).status_code == 404


async def test_open_templates_need_the_operators_flag(tapi: Api, hosts: tuple[Peer, Peer]) -> None:
    files, _ = hosts
    tenant = await tapi.tenant(network_private_cidrs=PEERS)
    r = await tapi.client.patch(
        f"/v1/tenants/{tenant.id}",
        json={"quotas": {"network_open_allowed": True}},
        headers=tapi.operator,
    )
    assert r.status_code == 200, r.text
    built = await build_template(
        tapi, tenant.headers, unique("open"), setup=[["true"]], network={"mode": "open"}
    )
    assert built["state"] == "ready", built["versions"][0]["build_log"]
    # "open" is the public address space: a private host is out of it, even one granted.
    url = f"http://{files.address}:8080/package.txt"
    built = await build_template(
        tapi,
        tenant.headers,
        unique("open"),
        setup=[fetch(url, "/work/p")],
        network={"mode": "open"},
    )
    assert built["state"] == "failed", built["versions"][0]["build_log"]


async def test_the_pool_serves_only_creates_without_network(
    tapi: Api, hosts: tuple[Peer, Peer]
) -> None:
    """Pool members are restored from the snapshot without network: a create with a network
    never takes one, it starts on its own with the snapshot's files."""
    from tests.pool.conftest import set_target, wait_ready

    files, _ = hosts
    name = unique("pooled")
    url = f"http://{files.address}:8080/package.txt"
    built = await build_template(
        tapi,
        tapi.operator,
        name,
        setup=[fetch(url, "/work/package.txt")],
        network={"mode": "allowlist", "allow": [f"{files.address}:8080"]},
    )
    assert built["state"] == "ready", built["versions"][0]["build_log"]
    await set_target(tapi, name, 1)
    await wait_ready(tapi, name, 1)
    tenant = await tapi.tenant(network_private_cidrs=PEERS)
    wanted = {"mode": "allowlist", "allow": [f"{files.address}:8080"]}
    networked = await create_sandbox(tapi, tenant, template=name, network=wanted)
    assert networked["started_from"] != "pool" and networked["network"] == wanted
    assert await probe(tapi, tenant, networked["id"], f"{files.address}:8080") == ["open"]
    pooled = await create_sandbox(tapi, tenant, template=name)
    assert pooled["started_from"] == "pool" and pooled["network"]["mode"] == "none"
    for box in (networked, pooled):
        got = await run(tapi, tenant, box["id"], ["cat", "/work/package.txt"])
        assert got["stdout"] == PACKAGE + "\n"
        await delete_sandbox(tapi, tenant, box["id"])
    await set_target(tapi, name, 0)


async def test_a_build_queued_before_open_was_revoked_does_not_run_open(tapi: Api) -> None:
    """A build's sandbox is born when the build runs, not when it was asked for: the operator
    took `open` away while it waited, so it fails, saying why, instead of running its setup
    with an open network."""
    other, tenant = await tapi.tenant(), await tapi.tenant()
    r = await tapi.client.patch(
        f"/v1/tenants/{tenant.id}",
        json={"quotas": {"network_open_allowed": True}},
        headers=tapi.operator,
    )
    assert r.status_code == 200, r.text
    # Another tenant's build holds the builder's one slot meanwhile.
    busy = unique("busy")
    r = await tapi.client.post(
        "/v1/templates", json={"name": busy, "setup": [["sleep", "5"]]}, headers=other.headers
    )
    assert r.status_code == 202, r.text

    async def building() -> bool:
        got = await tapi.client.get(f"/v1/templates/{busy}", headers=other.headers)
        return bool(got.json()["versions"][0]["state"] == "building")

    await eventually(building)
    name = unique("open")
    r = await tapi.client.post(
        "/v1/templates",
        json={"name": name, "setup": [["true"]], "network": {"mode": "open"}},
        headers=tenant.headers,
    )
    assert r.status_code == 202, r.text
    r = await tapi.client.patch(
        f"/v1/tenants/{tenant.id}",
        json={"quotas": {"network_open_allowed": False}},
        headers=tapi.operator,
    )
    assert r.status_code == 200, r.text

    async def finished() -> dict[str, Any] | None:
        got = await tapi.client.get(f"/v1/templates/{name}", headers=tenant.headers)
        version = got.json()["versions"][0]
        return version if version["state"] in ("ready", "failed") else None

    version = await eventually(finished)
    assert version["state"] == "failed", version["build_log"]
    assert "open network is not enabled" in version["error"], version
