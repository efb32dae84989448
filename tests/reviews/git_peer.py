"""A git host that sees who calls it: for each request, the process at the other end of the
connection (found through /proc/net/tcp and the socket's inode, as `ss -p` does), its uids and
its rlimits. The fetch's git runs on this machine, so this is the process the fetch started."""

from __future__ import annotations

import os
import ssl
import threading
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from pathlib import Path

from tests.reviews import git_https
from tests.reviews.git_https import GitHost


@dataclass
class Peer:
    pid: int
    command: str
    uids: list[int]
    limits: dict[str, str]


@dataclass
class WatchedHost(GitHost):
    peers: list[Peer | None] = field(default_factory=list)


def _socket_inode(client_port: int, server_port: int) -> str | None:
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as handle:
            next(handle)
            for line in handle:
                fields = line.split()
                local, remote, inode = fields[1], fields[2], fields[9]
                if int(local.rsplit(":", 1)[1], 16) == client_port and (
                    int(remote.rsplit(":", 1)[1], 16) == server_port
                ):
                    return inode
    return None


def _owner(inode: str) -> int | None:
    wanted = f"socket:[{inode}]"
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                if os.readlink(f"/proc/{pid}/fd/{fd}") == wanted:
                    return int(pid)
        except OSError:
            continue
    return None


def peer_of(client_port: int, server_port: int) -> Peer | None:
    inode = _socket_inode(client_port, server_port)
    pid = _owner(inode) if inode else None
    if pid is None or pid == os.getpid():
        return None
    status = Path(f"/proc/{pid}/status").read_text()
    uids = next(line for line in status.splitlines() if line.startswith("Uid:")).split()[1:]
    limits = {}
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines()[1:]:
        name, soft = line[:26].strip(), line[26:47].strip()
        limits[name] = soft
    command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode()
    return Peer(pid=pid, command=command, uids=[int(u) for u in uids], limits=limits)


def start(
    root: Path, like: GitHost, username: str, password: str
) -> tuple[WatchedHost, ThreadingHTTPServer]:
    """A host with `like`'s certificate (the one the service's GIT_SSL_CAINFO names)."""
    root.mkdir(parents=True, exist_ok=True)
    cert, key = like.ca_file, like.ca_file.with_name("git-host.key")
    host = WatchedHost(root=root, ca_file=cert, username=username, password=password)
    base = git_https.handler_for(host)

    class Handler(base):  # type: ignore[misc,valid-type]
        def _serve(self) -> None:
            host.peers.append(peer_of(self.client_address[1], host.port))
            super()._serve()

        do_GET = _serve
        do_POST = _serve

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    host.port = httpd.server_address[1]
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return host, httpd
