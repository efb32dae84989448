"""`scripts/cluster.py`'s readiness probe: a port that answers with something other than HTTP
means the process is not ready yet, never a crash of the whole start.

A probe sent before its process listens can connect to itself (its ephemeral port is the one
it dials) and read its own request back; a listener that echoes does the same here."""

from __future__ import annotations

import importlib.util
import socket
import threading
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[1]


def cluster_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("cluster_script", REPO / "scripts/cluster.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_port_that_echoes_the_probe_is_not_ready() -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:

        def echo() -> None:
            conn, _ = server.accept()
            with conn:
                conn.sendall(conn.recv(65536))

        answering = threading.Thread(target=echo, daemon=True)
        answering.start()
        port = server.getsockname()[1]
        assert cluster_script().ready(f"http://127.0.0.1:{port}") is False
        answering.join(timeout=5)


def test_a_port_nobody_listens_on_is_not_ready() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert cluster_script().ready(f"http://127.0.0.1:{port}") is False
