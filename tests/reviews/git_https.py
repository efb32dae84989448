"""A private git host for the tests: `git http-backend` run CGI-style behind HTTP Basic auth,
served over HTTPS with a certificate made here for 127.0.0.1.

Repositories live under `root`; `<name>.git` needs the password `password` for the user
`username`. `echo.git` is a hostile host: it answers every request with a protocol error
that repeats the password it was sent, as a remote error message git prints.
"""

from __future__ import annotations

import base64
import datetime
import ipaddress
import ssl
import subprocess
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


def self_signed(directory: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "git-host.crt", directory / "git-host.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


def pkt(text: str) -> bytes:
    data = text.encode()
    return f"{len(data) + 4:04x}".encode() + data


@dataclass
class GitHost:
    root: Path
    ca_file: Path
    username: str
    password: str
    port: int = 0
    # One line per request: method, path, status (what a web server's access log holds).
    log: list[str] = field(default_factory=list)
    # The Authorization headers received, to tell what the client sent.
    authorizations: list[str | None] = field(default_factory=list)

    def url(self, name: str) -> str:
        return f"https://127.0.0.1:{self.port}/{name}.git"

    def add(self, name: str, source: Path) -> None:
        subprocess.run(
            ["git", "clone", "--quiet", "--bare", str(source), str(self.root / f"{name}.git")],
            check=True,
            capture_output=True,
        )

    def expected(self) -> str:
        return "Basic " + base64.b64encode(f"{self.username}:{self.password}".encode()).decode()


def handler_for(host: GitHost) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _reply(self, status: int, headers: dict[str, str], body: bytes) -> None:
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            host.log.append(f"{self.command} {self.path} {status}")

        def _body(self) -> bytes:
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                parts = []
                while True:
                    size = int(self.rfile.readline().strip(), 16)
                    if size == 0:
                        self.rfile.readline()
                        return b"".join(parts)
                    parts.append(self.rfile.read(size))
                    self.rfile.readline()
            length = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(length) if length else b""

        def _serve(self) -> None:
            body = self._body()
            sent = self.headers.get("Authorization")
            host.authorizations.append(sent)
            path, _, query = self.path.partition("?")
            if path.startswith("/echo.git/"):
                password = ""
                if sent and sent.startswith("Basic "):
                    password = base64.b64decode(sent[6:]).decode().partition(":")[2]
                advert = pkt("# service=git-upload-pack\n") + b"0000"
                advert += pkt(f"ERR access denied for password {password}")
                media = "application/x-git-upload-pack-advertisement"
                self._reply(200, {"Content-Type": media}, advert)
                return
            if sent != host.expected():
                headers = {
                    "WWW-Authenticate": 'Basic realm="private"',
                    "Content-Type": "text/plain",
                }
                self._reply(401, headers, b"authentication required\n")
                return
            env = {
                "PATH": "/usr/bin:/bin",
                "HOME": str(host.root),
                "GIT_CONFIG_NOSYSTEM": "1",
                "GIT_PROJECT_ROOT": str(host.root),
                "GIT_HTTP_EXPORT_ALL": "1",
                "PATH_INFO": path,
                "QUERY_STRING": query,
                "REQUEST_METHOD": self.command,
                "CONTENT_TYPE": self.headers.get("Content-Type", ""),
                "CONTENT_LENGTH": str(len(body)),
                "REMOTE_USER": host.username,
                "REMOTE_ADDR": self.client_address[0],
                "GIT_PROTOCOL": self.headers.get("Git-Protocol", ""),
                "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding", ""),
            }
            done = subprocess.run(
                ["git", "http-backend"], input=body, env=env, capture_output=True, check=False
            )
            raw_headers, _, payload = done.stdout.partition(b"\r\n\r\n")
            if not payload and b"\n\n" in done.stdout:
                raw_headers, _, payload = done.stdout.partition(b"\n\n")
            status, headers = 200, {}
            for line in raw_headers.decode(errors="replace").splitlines():
                name, _, value = line.partition(":")
                if name.lower() == "status":
                    status = int(value.split()[0])
                elif name:
                    headers[name.strip()] = value.strip()
            self._reply(status, headers, payload)

        do_GET = _serve
        do_POST = _serve

        def log_message(self, *args: Any) -> None:
            pass

    return Handler


def start(root: Path, username: str, password: str) -> tuple[GitHost, ThreadingHTTPServer]:
    root.mkdir(parents=True, exist_ok=True)
    cert, key = self_signed(root.parent)
    host = GitHost(root=root, ca_file=cert, username=username, password=password)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler_for(host))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    host.port = httpd.server_address[1]
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return host, httpd
