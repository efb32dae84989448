"""The node image as the all-in-one service on SQLite: started by podman with the privileges
that container/README.md states (not --privileged), it serves, and its baked default image
runs sandboxes, with and without a network."""

from __future__ import annotations

import httpx

from tests.images.conftest import (
    NODE_PRIVILEGES,
    OPERATOR_KEY,
    Images,
    Podman,
    free_port,
    serving,
    volume,
)


def operator() -> dict[str, str]:
    return {"Authorization": f"Bearer {OPERATOR_KEY}"}


def exec_in(client: httpx.Client, key: str, sandbox: str, *cmd: str) -> dict:
    done = client.post(
        f"/v1/sandboxes/{sandbox}/execs",
        headers={"Authorization": f"Bearer {key}"},
        json={"cmd": list(cmd), "timeout_s": 60},
    )
    assert done.status_code == 200, done.text
    return done.json()


def test_node_image_runs_sandboxes_with_the_stated_privileges(
    podman: Podman, images: Images
) -> None:
    port = free_port()
    with volume(podman, "airlock-test-node-state") as state:
        migrated = podman(
            "run",
            "--rm",
            "--network=none",
            f"--volume={state}:/var/lib/airlock",
            "--env=AIRLOCK_ROLE=all",
            images.node,
            "migrate",
        )
        assert "at head" in migrated.stdout + migrated.stderr
        with (
            serving(
                podman,
                "airlock-test-node",
                f"http://127.0.0.1:{port}",
                *NODE_PRIVILEGES,
                f"--volume={state}:/var/lib/airlock",
                f"--publish=127.0.0.1:{port}:8080",
                "--env=AIRLOCK_ROLE=all",
                f"--env=AIRLOCK_OPERATOR_KEY={OPERATOR_KEY}",
                images.node,
            ) as node,
            node.client() as client,
        ):
            listed = podman("exec", node.name, "airlock", "image", "list").stdout
            assert listed.split()[0] == "default"

            tenant = client.post("/v1/tenants", headers=operator(), json={"name": "images"})
            assert tenant.status_code == 201, tenant.text
            key = tenant.json()["api_key"]
            headers = {"Authorization": f"Bearer {key}"}

            created = client.post("/v1/sandboxes", headers=headers, json={"ttl_s": 600})
            assert created.status_code == 201, created.text
            assert created.json()["state"] == "running"
            sandbox = created.json()["id"]
            hi = exec_in(client, key, sandbox, "echo", "hi")
            assert (hi["exit_code"], hi["stdout"]) == (0, "hi\n")
            # The image's own tools, statx included (`ls -l` of a path).
            listing = exec_in(client, key, sandbox, "ls", "-l", "/work")
            assert listing["exit_code"] == 0, listing
            written = exec_in(client, key, sandbox, "sh", "-c", "echo 42 > /work/x && cat /work/x")
            assert written["stdout"] == "42\n", written

            # A sandbox with a network: a veth pair and filter rules in the node's namespace.
            networked = client.post(
                "/v1/sandboxes",
                headers=headers,
                json={"ttl_s": 600, "network": {"mode": "allowlist", "allow": ["93.184.216.34"]}},
            )
            assert networked.status_code == 201, networked.text
            route = exec_in(client, key, networked.json()["id"], "cat", "/proc/net/route")
            destinations = [line.split()[1] for line in route["stdout"].splitlines()[1:]]
            assert "00000000" in destinations, route  # a default route out of the sandbox

            for made in (sandbox, networked.json()["id"]):
                gone = client.delete(f"/v1/sandboxes/{made}", headers=headers)
                assert gone.status_code == 204, gone.text
