"""The Helm chart's wiring on a real container runtime: the pods of `helm template`'s Deployment
(the API replica and its nginx sidecar, one network namespace), DaemonSet (a node on each of
two hosts, each with its own node name, pod IP and host state dir) and migrations Job run in
podman exactly as their specs say (tests/images/pods.py), against PostgreSQL in a container.
Through nginx's port the README's walk-throughs work as written, and a sandbox on each node
runs a command."""

from __future__ import annotations

import secrets
import socket
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from functools import partial
from pathlib import Path

import httpx
import pytest

from tests.images.conftest import Images, Podman, free_port, volume
from tests.images.pods import (
    Network,
    Placement,
    Pod,
    network,
    one,
    probe_target,
    render,
    secrets_of,
)
from tests.readme_walkthrough import run_walkthroughs

NODES = ("host-a", "host-b")
STATE_DIR = "/var/lib/airlock"


# What node-entrypoint.sh makes by default (AIRLOCK_LOOP_DEVICES).
LOOP_DEVICES = 256


def test_the_charts_pods_serve_the_readme_and_sandboxes_on_two_nodes(
    podman: Podman, images: Images, capsys: pytest.CaptureFixture[str]
) -> None:
    with ExitStack() as stack:
        files = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="airlock-deploy-")))
        net = stack.enter_context(network(podman, "airlock-test-deploy"))
        # Each node's host state dir (a hostPath): a volume of its own, as on a host of its own.
        host_dirs = {
            node: stack.enter_context(volume(podman, f"airlock-test-{node}-state"))
            for node in NODES
        }
        names = stack.enter_context(removed(podman))
        database = postgres(podman, images, net, files, names)
        docs = render(
            f"image.tag={images.version}",
            f"image.api.repository={repository(images.api)}",
            f"image.node.repository={repository(images.node)}",
            f"image.proxy.repository={repository(images.proxy)}",
            f"database.url={database}",
        )
        secrets = secrets_of(docs)

        def pod(kind: str, placement: Placement) -> Pod:
            return Pod(one(docs, kind)["spec"]["template"]["spec"], secrets, placement, files)

        # The migrations Job first (a pre-install hook), to completion.
        migrate = pod("Job", Placement("airlock-test-migrate", NODES[0], net.address(9)))
        names.append(migrate.placement.pod)
        podman(*migrate.create_args(net))
        migrated = podman("run", *migrate.run_args("migrate"))
        assert "at head" in migrated.stdout + migrated.stderr

        # Then the DaemonSet's pod on each host and one replica of the Deployment, together.
        pods = {
            node: pod(
                "DaemonSet",
                Placement(
                    f"airlock-test-{node}", node, net.address(4 + n), {STATE_DIR: host_dirs[node]}
                ),
            )
            for n, node in enumerate(NODES)
        }
        pods["api"] = pod("Deployment", Placement("airlock-test-api", NODES[0], net.address(3)))
        names += [p.placement.pod for p in pods.values()]
        port = free_port()
        http = next(p for p in pods["api"].container("proxy")["ports"] if p["name"] == "http")
        publish = {"api": [f"--publish=127.0.0.1:{port}:{http['containerPort']}"]}

        def launch(name: str) -> float:
            return start(podman, net, pods[name], *publish.get(name, []))

        with ThreadPoolExecutor(len(pods)) as pool:
            started = dict(zip(pods, pool.map(launch, pods), strict=True))
            ready = dict(
                zip(pods, pool.map(partial(wait_ready, podman), pods.values()), strict=True)
            )

        url = f"http://127.0.0.1:{port}"
        operator_key = secrets["airlock-keys"]["operator-key"].decode()
        operator = {"Authorization": f"Bearer {operator_key}"}
        with httpx.Client(base_url=url, timeout=120) as client:
            listed = client.get("/v1/nodes", headers=operator)
            assert listed.status_code == 200, listed.text
            addresses = {n["id"]: n["address"] for n in listed.json()["items"]}
            assert addresses == {node: node_address(pods[node]) for node in NODES}
            first_exec = sandbox_on_each_node(client, operator)
        # A privileged container's /dev holds the loop devices the host had when it started;
        # the node's entrypoint makes the rest, so sandbox disks past those still mount.
        loops = podman(
            "exec", f"{pods[NODES[0]].placement.pod}-node", "sh", "-c", "ls -d /dev/loop[0-9]*"
        ).stdout.split()
        assert len(loops) >= LOOP_DEVICES, loops
        with capsys.disabled():
            for node in NODES:
                print(
                    f"\n{node}: podman run -> ready {ready[node] - started[node]:.1f} s, "
                    f"-> first sandbox exec {first_exec[node] - started[node]:.1f} s"
                )

        # Through nginx, as clients reach a replica.
        run_walkthroughs(url, operator_key, files)


def node_address(pod: Pod) -> str:
    """Where the API reaches a node: its pod IP and container port."""
    (port,) = pod.container("node")["ports"]
    return f"http://{pod.placement.ip}:{port['containerPort']}"


def repository(image: str) -> str:
    return image.rsplit(":", 1)[0]


def sandbox_on_each_node(client: httpx.Client, operator: dict[str, str]) -> dict[str, float]:
    """Create sandboxes until each node holds one (placement takes the freer node) and run a
    command in each; when each node's first command answered."""
    tenant = client.post("/v1/tenants", headers=operator, json={"name": "two-nodes"})
    assert tenant.status_code == 201, tenant.text
    tenant_key = {"Authorization": f"Bearer {tenant.json()['api_key']}"}
    answered: dict[str, float] = {}
    for _ in range(2 * len(NODES)):
        created = client.post("/v1/sandboxes", headers=tenant_key, json={"ttl_s": 600})
        assert created.status_code == 201, created.text
        sandbox = created.json()
        if sandbox["node_id"] in answered:
            continue
        done = client.post(
            f"/v1/sandboxes/{sandbox['id']}/execs",
            headers=tenant_key,
            json={"cmd": ["sh", "-c", "echo hi from $(hostname)"], "timeout_s": 60},
        )
        assert done.status_code == 200, done.text
        assert (done.json()["exit_code"], done.json()["stdout"][:8]) == (0, "hi from "), done.text
        answered[sandbox["node_id"]] = time.monotonic()
        if len(answered) == len(NODES):
            break
    assert set(answered) == set(NODES), f"sandboxes landed on {sorted(answered)} only"
    return answered


def postgres(podman: Podman, images: Images, net: Network, files: Path, names: list[str]) -> str:
    """PostgreSQL in a container on the network; its SQLAlchemy URL once it takes connections."""
    password = files / "postgres" / "password"
    password.parent.mkdir(mode=0o755)
    password.write_text(secrets.token_hex(16))
    password.chmod(0o644)
    name = "airlock-test-postgres"
    names.append(name)
    podman(
        "run", "--detach", f"--name={name}", f"--network={net.name}", f"--ip={net.address(2)}",
        f"--volume={password.parent}:/run/secrets/postgres:ro",
        "--env=POSTGRES_PASSWORD_FILE=/run/secrets/postgres/password", images.postgres,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while podman("exec", name, "pg_isready", "-q", "-h", "127.0.0.1", check=False).returncode:
        if time.monotonic() > deadline:
            pytest.fail(f"PostgreSQL never took connections:\n{logs(podman, name)}")
        time.sleep(0.2)
    return f"postgresql+asyncpg://airlock:{password.read_text()}@{net.address(2)}:5432/airlock"


def start(podman: Podman, net: Network, pod: Pod, *create: str) -> float:
    """Create the pod and run its containers, as the kubelet does; when that began."""
    began = time.monotonic()
    podman(*pod.create_args(net, *create))
    for container in pod.spec["containers"]:
        podman("run", "--detach", *pod.run_args(container["name"]))
    return began


def wait_ready(podman: Podman, pod: Pod) -> float:
    """Wait for every container's startup probe, then its readiness probe, as declared; when
    the last one passed."""
    for container in pod.spec["containers"]:
        name = f"{pod.placement.pod}-{container['name']}"
        for probe in ("startupProbe", "readinessProbe"):
            if probe not in container:
                continue
            spec = container[probe]
            deadline = time.monotonic() + spec.get("periodSeconds", 10) * spec.get(
                "failureThreshold", 3
            )
            target = probe_target(container, probe, pod.placement.ip)
            while not passes(*target):
                running = podman("inspect", "--format", "{{.State.Running}}", name).stdout
                if running.strip() != "true" or time.monotonic() > max(deadline, 60):
                    pytest.fail(f"{name}'s {probe} {target} never passed:\n{logs(podman, name)}")
                time.sleep(0.2)
    return time.monotonic()


def passes(ip: str, port: int, path: str | None) -> bool:
    """An HTTP probe passes on a status from 200 to 399, a TCP probe on a connection."""
    try:
        if path is None:
            socket.create_connection((ip, port), timeout=2).close()
            return True
        return 200 <= httpx.get(f"http://{ip}:{port}{path}", timeout=2).status_code < 400
    except (OSError, httpx.HTTPError):
        return False


def logs(podman: Podman, name: str) -> str:
    done = podman("logs", name, check=False)
    return (done.stdout + done.stderr)[-4000:]


@contextmanager
def removed(podman: Podman) -> Iterator[list[str]]:
    """The pods and containers named in the list are removed on the way out; on a failure
    every container's log is printed first."""
    names: list[str] = []
    try:
        yield names
    except BaseException:
        listed = podman("ps", "--all", "--format", "{{.Names}}", check=False).stdout.split()
        for container in listed:
            if any(container.startswith(name) for name in names):
                print(f"--- {container}\n{logs(podman, container)}")
        raise
    finally:
        for name in reversed(names):
            podman("pod", "rm", "--force", "--time", "5", name, check=False)
            podman("rm", "--force", "--volumes", "--time", "5", name, check=False)
