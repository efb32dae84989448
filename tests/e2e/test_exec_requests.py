"""What an exec request asks for is what the command gets: user, cwd, env, stdin."""

from __future__ import annotations

from tests.e2e.conftest import Airlock, Tenant, run_exec


async def test_cwd_env_stdin_and_numeric_user(airlock: Airlock, tenant: Tenant) -> None:
    sandbox = await airlock.sandbox(tenant, env={"FROM_SANDBOX": "s"})
    _, ex = await run_exec(
        tenant.client,
        sandbox.id,
        cmd=["sh", "-c", 'echo "$(id -u):$(pwd):$FROM_SANDBOX:$FROM_EXEC"; cat'],
        cwd="/tmp",
        env={"FROM_EXEC": "e"},
        stdin="from stdin\n",
        user="1234",
    )
    assert ex is not None and ex.exit_code == 0, ex
    assert ex.stdout == "1234:/tmp:s:e\nfrom stdin\n"
    _, default = await run_exec(tenant.client, sandbox.id, cmd=["id", "-u"])
    assert default is not None and default.stdout.strip() != "0", "runs as root by default"


async def test_large_stdin_and_output(airlock: Airlock, tenant: Tenant) -> None:
    sandbox = await airlock.sandbox(tenant)
    data = "".join(f"{i:07d}\n" for i in range(125_000))  # 1 MB
    _, ex = await run_exec(
        tenant.client,
        sandbox.id,
        cmd=["sh", "-c", "cat; cat >&2 < /dev/null"],
        stdin=data,
        max_output_bytes=2 << 20,
    )
    assert ex is not None and ex.exit_code == 0
    assert ex.stdout_bytes == len(data) and not ex.stdout_truncated
    assert ex.stdout == data


async def test_user_by_name(airlock: Airlock, tenant: Tenant) -> None:
    """A name either runs as that user or is refused up front; never an accepted failure."""
    sandbox = await airlock.sandbox(tenant)
    async with airlock.http(tenant.key) as http:
        r = await http.post(
            f"/v1/sandboxes/{sandbox.id}/execs", json={"cmd": ["id", "-un"], "user": "nobody"}
        )
    if r.status_code != 422:
        assert r.status_code == 200, r.text
        ex = r.json()
        assert (ex["state"], ex["exit_code"], ex["stdout"]) == ("finished", 0, "nobody\n"), ex


async def test_a_field_of_the_wrong_json_type_starts_nothing(
    airlock: Airlock, tenant: Tenant
) -> None:
    """A JSON 0 is no bool, "5" no number and 4096.5 no int: the exec is refused, not
    started."""
    sandbox = await airlock.sandbox(tenant)
    path = f"/v1/sandboxes/{sandbox.id}/execs"
    wrong = [
        ({"wait": 0}, "wait"),
        ({"max_output_bytes": "4096"}, "max_output_bytes"),
        ({"max_output_bytes": 4096.5}, "max_output_bytes"),
        ({"timeout_s": "5"}, "timeout_s"),
    ]
    async with airlock.http(tenant.key) as http:
        for fields, key in wrong:
            r = await http.post(path, json={"cmd": ["true"], **fields})
            assert r.status_code == 422, (fields, r.text)
            problem = r.json()
            assert problem["code"] == "validation_failed"
            assert [e.get("key") for e in problem["errors"]] == [key], problem
        assert (await http.get(path)).json()["items"] == []
        r = await http.post(
            path, json={"cmd": ["true"], "wait": False, "timeout_s": 5, "max_output_bytes": 4096.0}
        )
        assert r.status_code == 202, r.text
