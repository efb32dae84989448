"""Templates are built in the background, snapshotted, and sandboxes start from the snapshot."""

from __future__ import annotations

from tests.conftest import Api

from .conftest import (
    PROBE,
    build_template,
    create_sandbox,
    delete_sandbox,
    run,
    unique,
)


async def test_a_sandbox_from_a_template_has_what_setup_installed(tapi: Api) -> None:
    tenant = await tapi.tenant()
    name = unique("py")
    built = await build_template(tapi, tenant.headers, name, env={"FROM_TEMPLATE": "yes"})
    assert built["state"] == "ready", built
    assert built["version"] == 1 and built["shared"] is False
    version = built["versions"][0]
    assert version["start_mode"] == "snapshot"
    assert built["snapshot_bytes"] > 0
    assert "installed" in version["build_log"]  # the setup's own output is kept

    box = await create_sandbox(tapi, tenant, template=name, env={"MINE": "tenant"})
    assert box["template"] == name and box["template_version"] == 1
    assert box["started_from"] == "snapshot"
    assert (await run(tapi, tenant, box["id"], PROBE))["stdout"] == "42\n"
    # the setup ran once, at build time, not again for this sandbox
    runs = await run(tapi, tenant, box["id"], ["cat", "/home/sandbox/setup-runs"])
    assert runs["stdout"] == "run\n"
    env = await run(tapi, tenant, box["id"], ["sh", "-c", 'echo "$FROM_TEMPLATE $MINE"'])
    assert env["stdout"] == "yes tenant\n"
    await delete_sandbox(tapi, tenant, box["id"])


async def test_a_failing_setup_fails_the_build_with_its_log(tapi: Api) -> None:
    tenant = await tapi.tenant()
    name = unique("bad")
    built = await build_template(
        tapi, tenant.headers, name, setup=[["sh", "-c", "echo about to fail; exit 3"]]
    )
    assert built["state"] == "failed" and built["version"] is None
    version = built["versions"][0]
    assert "setup step 1" in version["error"]
    assert "about to fail" in version["build_log"]
    r = await tapi.client.post("/v1/sandboxes", json={"template": name}, headers=tenant.headers)
    assert r.status_code == 409, r.text


async def test_a_rebuild_makes_a_new_version_that_new_sandboxes_record(tapi: Api) -> None:
    tenant = await tapi.tenant()
    name = unique("ver")
    first = await build_template(tapi, tenant.headers, name, setup=[["true"]])
    old = await create_sandbox(tapi, tenant, template=name)
    second = await build_template(
        tapi, tenant.headers, name, setup=[["sh", "-c", "echo two > /home/sandbox/v"]]
    )
    assert (first["version"], second["version"]) == (1, 2)
    assert [v["version"] for v in second["versions"]] == [2, 1]
    new = await create_sandbox(tapi, tenant, template=name)
    assert (old["template_version"], new["template_version"]) == (1, 2)
    assert (await run(tapi, tenant, new["id"], ["cat", "/home/sandbox/v"]))["stdout"] == "two\n"
    for box in (old, new):
        await delete_sandbox(tapi, tenant, box["id"])


async def test_tenant_templates_are_private_and_operator_ones_shared(tapi: Api) -> None:
    alice, bob = await tapi.tenant(), await tapi.tenant()
    private = unique("mine")
    await build_template(tapi, alice.headers, private, setup=[["true"]])
    assert (
        await tapi.client.get(f"/v1/templates/{private}", headers=bob.headers)
    ).status_code == 404
    r = await tapi.client.post("/v1/sandboxes", json={"template": private}, headers=bob.headers)
    assert r.status_code == 404, r.text

    shared = unique("shared")
    built = await build_template(tapi, tapi.operator, shared, setup=[["true"]])
    assert built["shared"] is True and built["state"] == "ready"
    for tenant in (alice, bob):
        names = {
            t["name"]
            for t in (await tapi.client.get("/v1/templates", headers=tenant.headers)).json()[
                "items"
            ]
        }
        assert shared in names
        assert (private in names) is (tenant is alice)
    # a tenant cannot delete the operator's template
    r = await tapi.client.delete(f"/v1/templates/{shared}", headers=alice.headers)
    assert r.status_code == 403, r.text


async def test_scopes_and_audit(tapi: Api) -> None:
    tenant = await tapi.tenant()
    reader = await tapi.key(tenant, ["templates:read"])
    r = await tapi.client.post(
        "/v1/templates", json={"name": unique("x")}, headers=tapi.bearer(reader)
    )
    assert r.status_code == 403 and r.json()["code"] == "missing_scope"
    name = unique("audited")
    await build_template(tapi, tenant.headers, name, setup=[["true"]])
    r = await tapi.client.delete(f"/v1/templates/{name}", headers=tenant.headers)
    assert r.status_code == 204, r.text
    events = (await tapi.client.get("/v1/audit", headers=tenant.headers)).json()["items"]
    actions = {e["action"]: e for e in events}
    assert {"template.create", "template.build", "template.delete"} <= set(actions)
    assert actions["template.build"]["outcome"] == "ready"


async def test_deleting_a_template_in_use_is_refused_unless_forced(tapi: Api) -> None:
    tenant = await tapi.tenant()
    name = unique("busy")
    await build_template(tapi, tenant.headers, name, setup=[["true"]])
    box = await create_sandbox(tapi, tenant, template=name)
    r = await tapi.client.delete(f"/v1/templates/{name}", headers=tenant.headers)
    assert r.status_code == 409, r.text
    assert r.json()["sandboxes"] == 1
    r = await tapi.client.delete(f"/v1/templates/{name}?force=true", headers=tenant.headers)
    assert r.status_code == 204, r.text
    assert (
        await tapi.client.get(f"/v1/templates/{name}", headers=tenant.headers)
    ).status_code == 404
    # the sandbox already started from it keeps working
    assert (await run(tapi, tenant, box["id"], ["echo", "alive"]))["stdout"] == "alive\n"
    await delete_sandbox(tapi, tenant, box["id"])


async def test_the_build_log_is_capped(tapi: Api) -> None:
    tenant = await tapi.tenant()
    loud = ["sh", "-c", "head -c 40000 /dev/zero | tr '\\0' x"]
    built = await build_template(tapi, tenant.headers, unique("loud"), setup=[loud] * 6)
    assert built["state"] == "ready"
    log = built["versions"][0]["build_log"]
    assert "[output cut]" in log and log.rstrip().endswith("[build log cut]")
    assert len(log.encode()) < 70_000


async def test_one_owner_cannot_fill_the_build_queue(tapi: Api) -> None:
    tenant = await tapi.tenant()
    slow = {"setup": [["sleep", "3"]]}
    answers = [
        await tapi.client.post(
            "/v1/templates", json={"name": unique("queued"), **slow}, headers=tenant.headers
        )
        for _ in range(4)
    ]
    assert [r.status_code for r in answers[:3]] == [202, 202, 202]
    assert answers[3].status_code == 429, answers[3].text
    assert answers[3].headers["retry-after"]
    # Another tenant is not held back by this one's queue.
    other = await tapi.tenant()
    r = await tapi.client.post(
        "/v1/templates", json={"name": unique("other"), **slow}, headers=other.headers
    )
    assert r.status_code == 202
