"""A local cluster on this machine: N nodes and M API replicas sharing one PostgreSQL database.

Run through scripts/cluster.sh, which prepares the Python environment, PostgreSQL and the
runtime first. Everything lives in one directory (default .airlock-cluster):

    shared/            the keys every process shares: keys/ (token signing), audit.key,
                       secrets.key, operator_key, offload_key (the proxies' mark)
    node-<i>/          a node's state dir (its runtime state, its sandboxes; images linked in)
    api-<j>/           a replica's state dir (nothing of value)
    proxy-<j>/         the nginx in front of replica j: its configuration (made from the
                       chart's helm/airlock/files) and its pid file
    <name>.log         each process's log; <name>.pid its pid
    cluster.json       what `start` made: URLs, node ids, pids, the database URL

Node i listens on port+10+i with the sandbox network range 10.(200+i).0.0/16; replica j on
port+j, and the nginx in front of it (as the chart deploys it) on port+20+j. The proxy reaches
its replica from 127.0.0.2, the one address whose X-Forwarded-For the replica takes, and marks
what it sends with the offload key, so that downloads through it are fetched from the node by
nginx (service/nodes/offload.py); a client that calls the replica directly is served by the
replica alone. AIRLOCK_* variables set by the caller reach every process
(AIRLOCK_NODE_LEASE_S, ...), and so do OTEL_* ones (OTEL_EXPORTER_OTLP_ENDPOINT: every process
sends its spans there).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import http.client
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import asyncpg
from sqlalchemy.engine import make_url

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
AIRLOCK = REPO / ".venv/bin/airlock"
PROXY_FILES = REPO / "helm/airlock/files"  # nginx.conf and proxy.conf
PROXY_ADDRESS = "127.0.0.2"  # where each nginx connects to its replica from
READY_TIMEOUT_S = 180.0
STOP_TIMEOUT_S = 30.0
# What a process sets for itself; the rest of AIRLOCK_* comes from the caller.
_OWN = (
    "AIRLOCK_ROLE",
    "AIRLOCK_STATE_DIR",
    "AIRLOCK_NODE_ID",
    "AIRLOCK_NODE_ADDRESS",
    "AIRLOCK_SANDBOX_NETWORK_RANGE",
    "AIRLOCK_PORT",
    "AIRLOCK_HOST",
    "AIRLOCK_TRUSTED_PROXIES",
)


def say(message: str) -> None:
    print(f"cluster: {message}", file=sys.stderr, flush=True)


async def ensure_database(admin_url: str, name: str) -> str:
    conn = await asyncpg.connect(admin_url)
    try:
        exists = await conn.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", name)
        if not exists:
            await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    url = make_url(admin_url).set(drivername="postgresql+asyncpg", database=name)
    return url.render_as_string(hide_password=False)


def shared_keys(shared: Path, env: dict[str, str]) -> dict[str, str]:
    """The deployment's keys, made once; the variables that point every process at them."""
    shared.mkdir(parents=True, exist_ok=True, mode=0o700)
    for name in ("audit.key", "secrets.key"):
        if not (shared / name).exists():
            write_private(shared / name, os.urandom(32), exclusive=True)
    operator, offload = shared / "operator_key", shared / "offload_key"
    for path, prefix in ((operator, "alo_"), (offload, "")):
        if not path.exists():
            key = prefix + secrets.token_urlsafe(32) + "\n"
            write_private(path, key.encode(), exclusive=True)
    keys = shared / "keys"
    if not (keys.is_dir() and any(p.suffix == ".pem" for p in keys.iterdir())):
        subprocess.run(
            [str(AIRLOCK), "keys", "rotate"],
            env={**env, "AIRLOCK_JWT_KEYS_DIR": str(keys)},
            check=True,
            stdout=subprocess.DEVNULL,
        )
    return {
        "AIRLOCK_JWT_KEYS_DIR": str(keys),
        "AIRLOCK_AUDIT_KEY_FILE": str(shared / "audit.key"),
        "AIRLOCK_SECRETS_KEY_FILE": str(shared / "secrets.key"),
        "AIRLOCK_OPERATOR_KEY": operator.read_text().strip(),
        # What the proxies send and the replicas check (nodes never hand anything over).
        "AIRLOCK_OFFLOAD_KEY": offload.read_text().strip(),
    }


def write_private(path: Path, data: bytes, exclusive: bool = False) -> None:
    """A file only this user reads (mode 0600 from the start); `exclusive`: never over one."""
    flags = os.O_WRONLY | os.O_CREAT | (os.O_EXCL if exclusive else os.O_TRUNC)
    fd = os.open(path, flags, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)


def base_env(database_url: str) -> dict[str, str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin"),
        "HOME": os.environ.get("HOME", "/root"),
        "LANG": "C.UTF-8",
        "PYTHONUNBUFFERED": "1",
    }
    # The caller's AIRLOCK_* settings, and the standard OTEL_* ones (where spans go).
    env.update(
        {
            k: v
            for k, v in os.environ.items()
            if (k.startswith("AIRLOCK_") and k not in _OWN) or k.startswith("OTEL_")
        }
    )
    env["AIRLOCK_DATABASE_URL"] = database_url
    return env


def spawn(directory: Path, name: str, argv: list[str], env: dict[str, str]) -> int:
    state = directory / name
    log = (directory / f"{name}.log").open("ab")
    proc = subprocess.Popen(
        argv,
        env=env,
        cwd=state,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # `stop` signals the process group: runsc children too
    )
    (directory / f"{name}.pid").write_text(f"{proc.pid}\n")
    return proc.pid


def start_process(directory: Path, spec: dict, env: dict[str, str]) -> int:
    """(Re)start one process of the cluster as cluster.json describes it."""
    (directory / spec["name"]).mkdir(parents=True, exist_ok=True, mode=0o700)
    if spec["role"] == "proxy":  # nginx needs none of the cluster's settings or keys
        argv = proxy_command(directory, spec, env)
        return spawn(directory, spec["name"], argv, {"PATH": env["PATH"]})
    own = {"AIRLOCK_ROLE": spec["role"], "AIRLOCK_STATE_DIR": str(directory / spec["name"])}
    if spec["role"] == "node":  # the offload key is the replicas' and the proxies' alone
        env = {k: v for k, v in env.items() if k != "AIRLOCK_OFFLOAD_KEY"}
        own |= {
            "AIRLOCK_NODE_ID": spec["node_id"],
            "AIRLOCK_NODE_ADDRESS": spec["url"],
            "AIRLOCK_SANDBOX_NETWORK_RANGE": spec["network_range"],
        }
    else:
        own["AIRLOCK_TRUSTED_PROXIES"] = PROXY_ADDRESS
    argv = [str(AIRLOCK), "serve", "--host", "127.0.0.1", "--port", str(spec["port"])]
    return spawn(directory, spec["name"], argv, {**env, **own})


def proxy_command(directory: Path, spec: dict, env: dict[str, str]) -> list[str]:
    """nginx in the foreground, configured from the chart's files."""
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    prefix = directory / spec["name"]
    server = (
        (PROXY_FILES / "proxy.conf")
        .read_text()
        .replace("@LISTEN@", f"127.0.0.1:{spec['port']}")
        .replace("@API@", spec["api"].removeprefix("http://"))
        .replace("@BIND@", PROXY_ADDRESS)
        .replace("@KEY@", env["AIRLOCK_OFFLOAD_KEY"])
        .replace("@REAL_IP_FROM@", "")  # clients connect to it directly
    )
    write_private(prefix / "server.conf", server.encode())  # it holds the offload key
    conf = prefix / "nginx.conf"
    conf.write_text(
        (PROXY_FILES / "nginx.conf")
        .read_text()
        .replace("@WORKERS@", "1")
        .replace("@RUN@", str(prefix))
        .replace("@SERVER@", str(prefix / "server.conf"))
    )
    return [nginx, "-p", f"{prefix}/", "-c", str(conf), "-e", "stderr", "-g", "daemon off;"]


def ready(url: str) -> bool:
    """A process not yet listening is not ready, whatever answers on its port meanwhile: a probe
    whose ephemeral port is the port it dials connects to itself and reads its own request back
    (an `http.client.HTTPException`)."""
    try:
        with urllib.request.urlopen(f"{url}/readyz", timeout=2) as response:  # noqa: S310 (loopback)
            return response.status == 200
    except (urllib.error.URLError, http.client.HTTPException, OSError):
        return False


def free_base(offsets: list[int]) -> int:
    """A base port whose every offset is free now, below the kernel's ephemeral range: a port in
    that range can be taken meanwhile by any outgoing connection, the readiness probe's own
    included (which then connects to itself)."""
    ephemeral = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    for _ in range(100):
        base = 20000 + secrets.randbelow(max(ephemeral - 20000 - 30, 1000))
        try:
            for offset in offsets:
                with socket.socket() as s:
                    s.bind(("127.0.0.1", base + offset))
        except OSError:
            continue
        return base
    raise SystemExit("cluster: no free range of ports below the ephemeral ones")


def alive(pid: int) -> bool:
    """Running: a process killed but not yet reaped by its parent (a zombie) is not."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def wait_ready(directory: Path, processes: list[dict]) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    waiting = list(processes)
    while waiting:
        for spec in list(waiting):
            pid = int((directory / f"{spec['name']}.pid").read_text())
            if not alive(pid):
                tail = (directory / f"{spec['name']}.log").read_text(errors="replace")[-3000:]
                raise SystemExit(f"cluster: {spec['name']} exited:\n{tail}")
            if ready(spec["url"]):
                waiting.remove(spec)
        if waiting and time.monotonic() > deadline:
            names = ", ".join(s["name"] for s in waiting)
            raise SystemExit(f"cluster: not ready after {READY_TIMEOUT_S:.0f} s: {names}")
        time.sleep(0.2)


def wait_registered(api_url: str, operator_key: str, node_ids: list[str]) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    request = urllib.request.Request(  # noqa: S310 (loopback)
        f"{api_url}/v1/nodes", headers={"Authorization": f"Bearer {operator_key}"}
    )
    while True:
        with urllib.request.urlopen(request, timeout=5) as response:  # noqa: S310
            nodes = {n["id"]: n["state"] for n in json.load(response)["items"]}
        if all(nodes.get(i) == "ready" for i in node_ids):
            return
        if time.monotonic() > deadline:
            raise SystemExit(f"cluster: nodes not all ready after {READY_TIMEOUT_S:.0f} s: {nodes}")
        time.sleep(0.2)


def start(args: argparse.Namespace) -> int:
    directory = args.dir.resolve()
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    if (directory / "cluster.json").exists() and any(
        p.get("pid") and alive(p["pid"])
        for p in json.loads((directory / "cluster.json").read_text())["processes"]
    ):
        raise SystemExit(f"cluster: already running in {directory} (scripts/cluster.sh stop)")
    if args.port == 0:
        args.port = free_base(
            [*range(1, args.apis + 1), *range(11, 11 + args.nodes), *range(21, 21 + args.apis)]
        )
    database_url = asyncio.run(ensure_database(args.admin_url, args.database))
    env = base_env(database_url)
    env |= shared_keys(directory / "shared", env)
    say(f"database {make_url(database_url).render_as_string(hide_password=True)}")
    subprocess.run(
        [str(AIRLOCK), "migrate"],
        env={**env, "AIRLOCK_STATE_DIR": str(directory / "shared")},
        check=True,
    )
    processes: list[dict] = []
    for i in range(1, args.nodes + 1):
        port = args.port + 10 + i
        name = f"node-{i}"
        state = directory / name
        state.mkdir(parents=True, exist_ok=True, mode=0o700)
        if not (state / "images").exists():
            (state / "images").symlink_to(args.images.resolve())
        processes.append(
            {
                "name": name,
                "role": "node",
                "node_id": name,
                "port": port,
                "url": f"http://127.0.0.1:{port}",
                "state_dir": str(state),
                "network_range": f"10.{200 + i}.0.0/16",
            }
        )
    for j in range(1, args.apis + 1):
        port = args.port + j
        processes.append(
            {
                "name": f"api-{j}",
                "role": "api",
                "port": port,
                "url": f"http://127.0.0.1:{port}",
                "state_dir": str(directory / f"api-{j}"),
            }
        )
    for j in range(1, args.apis + 1):
        port = args.port + 20 + j
        processes.append(
            {
                "name": f"proxy-{j}",
                "role": "proxy",
                "port": port,
                "url": f"http://127.0.0.1:{port}",
                "api": f"http://127.0.0.1:{args.port + j}",
            }
        )
    info = {
        "database_url": database_url,
        "operator_key_file": str(directory / "shared" / "operator_key"),
        "env": env,
        "processes": processes,
    }

    def launch(specs: list[dict]) -> None:
        for spec in specs:
            spec["pid"] = start_process(directory, spec, env)
            say(f"started {spec['name']} ({spec['role']}) pid {spec['pid']} on {spec['url']}")
        write_private(directory / "cluster.json", (json.dumps(info, indent=2) + "\n").encode())
        wait_ready(directory, specs)

    # The proxies once their replicas answer (until then each would log every refused check).
    launch([p for p in processes if p["role"] != "proxy"])
    launch([p for p in processes if p["role"] == "proxy"])
    apis = [p for p in processes if p["role"] == "api"]
    nodes = [p["node_id"] for p in processes if p["role"] == "node"]
    if apis and nodes:
        wait_registered(apis[0]["url"], env["AIRLOCK_OPERATOR_KEY"], nodes)
    print(f"API (nginx):  {' '.join(p['url'] for p in processes if p['role'] == 'proxy')}")
    print(f"API replicas: {' '.join(p['url'] for p in apis)}")
    print(f"nodes:        {' '.join(p['url'] for p in processes if p['role'] == 'node')}")
    print(f"operator key: {info['operator_key_file']}")
    print(f"logs:         {directory}/*.log   stop: scripts/cluster.sh stop --dir {args.dir}")
    return 0


def stop(args: argparse.Namespace) -> int:
    directory = args.dir.resolve()
    pids = []
    for pidfile in sorted(directory.glob("*.pid")):
        pid = int(pidfile.read_text())
        # The whole group, even when its leader is already gone (killed, not yet reaped):
        # its runsc children may still run.
        try:
            os.killpg(pid, signal.SIGTERM)
        except ProcessLookupError:
            continue
        pids.append((pidfile, pid))
    deadline = time.monotonic() + STOP_TIMEOUT_S
    for pidfile, pid in pids:
        while alive(pid) and time.monotonic() < deadline:
            _reap(pid)
            time.sleep(0.1)
        if alive(pid):
            say(f"{pidfile.stem} did not stop in {STOP_TIMEOUT_S:.0f} s: killed")
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
        say(f"stopped {pidfile.stem}")
    for pidfile in directory.glob("*.pid"):
        pidfile.unlink()
    if args.clean:
        from service.runtime.gvisor import destroy_left  # the runtime only when it is needed

        for state in sorted(directory.glob("node-*")):
            if state.is_dir():
                destroyed = asyncio.run(destroy_left(state))
                say(f"{state.name}: destroyed {destroyed} sandboxes")
    return 0


def status(args: argparse.Namespace) -> int:
    directory = args.dir.resolve()
    try:
        info = json.loads((directory / "cluster.json").read_text())
    except FileNotFoundError:
        print(f"no cluster in {directory}")
        return 1
    down = 0
    for spec in info["processes"]:
        pidfile = directory / f"{spec['name']}.pid"
        pid = int(pidfile.read_text()) if pidfile.exists() else None
        state = (
            "ready"
            if pid and alive(pid) and ready(spec["url"])
            else ("starting" if pid and alive(pid) else "stopped")
        )
        down += state != "ready"
        print(f"{spec['name']:8} {spec['role']:5} {spec['url']:24} pid {pid or '-':>7}  {state}")
    return 1 if down else 0


def restart(args: argparse.Namespace) -> int:
    """Start one process again (after a crash a test caused), as `start` made it."""
    directory = args.dir.resolve()
    info = json.loads((directory / "cluster.json").read_text())
    spec = next(p for p in info["processes"] if p["name"] == args.name)
    if spec.get("pid") and alive(spec["pid"]):
        # Its port is still taken, and the readiness check would see the old process answer.
        say(f"{spec['name']} (pid {spec['pid']}) is still running: stop or kill it first")
        return 1
    spec["pid"] = start_process(directory, spec, info["env"])
    write_private(directory / "cluster.json", (json.dumps(info, indent=2) + "\n").encode())
    wait_ready(directory, [spec])
    say(f"restarted {spec['name']} pid {spec['pid']}")
    return 0


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="scripts/cluster.sh",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--dir", type=Path, default=REPO / ".airlock-cluster")
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser(
        "start", parents=[common], help="start the database, the nodes and the replicas"
    )
    up.add_argument("--nodes", type=int, default=2)
    up.add_argument("--apis", type=int, default=2)
    up.add_argument(
        "--port",
        type=int,
        default=8100,
        help="replica j on PORT+j, node i on PORT+10+i, replica j's nginx on PORT+20+j "
        "(0: a free range below the kernel's ephemeral ports)",
    )
    up.add_argument("--database", default="airlock_cluster")
    up.add_argument(
        "--admin-url", required=True, help="a PostgreSQL admin URL (scripts/postgres.sh)"
    )
    up.add_argument("--images", type=Path, default=REPO / ".airlock" / "images")
    up.set_defaults(func=start)
    down = sub.add_parser("stop", parents=[common], help="stop every process")
    down.add_argument(
        "--clean",
        action="store_true",
        help="also destroy the sandboxes the nodes hold (stopped nodes leave them running, "
        "as a restart would find them)",
    )
    down.set_defaults(func=stop)
    sub.add_parser(
        "status", parents=[common], help="each process and whether it is ready"
    ).set_defaults(func=status)
    again = sub.add_parser("restart", parents=[common], help="start one stopped process again")
    again.add_argument("name", help="node-<i>, api-<j> or proxy-<j>")
    again.set_defaults(func=restart)
    args = parser.parse_args(argv)
    if getattr(args, "nodes", 1) < 1 or getattr(args, "apis", 1) < 1:
        parser.error("--nodes and --apis must be at least 1")
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
