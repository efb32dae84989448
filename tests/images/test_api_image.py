"""The API image as a replica: not root, on a read-only root filesystem (as the chart runs it),
its migrations and records in PostgreSQL."""

from __future__ import annotations

from tests.conftest import create_pg_database
from tests.images.conftest import OPERATOR_KEY, Images, Podman, free_port, serving, volume


async def test_api_image_serves_from_postgresql_as_non_root(podman: Podman, images: Images) -> None:
    url, drop = await create_pg_database("airlock_image_api")
    port = free_port()
    try:
        database = f"--env=AIRLOCK_DATABASE_URL={url}"
        migrated = podman("run", "--rm", "--network=host", database, images.api, "migrate")
        assert "at head" in migrated.stdout + migrated.stderr
        with (
            volume(podman, "airlock-test-api-state") as state,
            serving(
                podman,
                "airlock-test-api",
                f"http://127.0.0.1:{port}",
                "--network=host",
                "--read-only",
                "--tmpfs=/tmp",
                f"--volume={state}:/var/lib/airlock",
                database,
                f"--env=AIRLOCK_PORT={port}",
                f"--env=AIRLOCK_OPERATOR_KEY={OPERATOR_KEY}",
                images.api,
            ) as api,
            api.client() as client,
        ):
            assert podman("exec", api.name, "id", "-u").stdout.strip() == "10001"
            ready = client.get("/readyz")
            assert ready.json()["checks"]["database"] == "ok"
            tenant = client.post(
                "/v1/tenants",
                headers={"Authorization": f"Bearer {OPERATOR_KEY}"},
                json={"name": "replica"},
            )
            assert tenant.status_code == 201, tenant.text
            # No node has registered: a sandbox cannot be placed, and the replica says so.
            key = tenant.json()["api_key"]
            refused = client.post(
                "/v1/sandboxes", headers={"Authorization": f"Bearer {key}"}, json={}
            )
            assert refused.status_code == 503, refused.text
    finally:
        await drop()
