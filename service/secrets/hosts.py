"""The hosts a secret may be sent to.

A secret's value leaves the host only toward a server: for a review's fetch, the git host the
repository URL names. Whoever may post a review must not be able to choose where a secret
goes, so each secret carries the hosts its owner named when storing it (`allowed_hosts`), and
a secret with none can be used for no fetch at all.

An entry is a host name or IP literal, lowercased, with an optional port (`git.example.com`,
`git.example.com:8443`, `[2001:db8::1]:443`). A bare host allows any port of that host, a host
with a port only that port. Names match exactly: no wildcards, no subdomains, since
`*.example.com` would take in whatever a user of that domain can host.
"""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import urlsplit

from service.errors import Forbidden, Unprocessable

MAX_HOSTS = 20
# A DNS name: labels of letters, digits and '-', not starting or ending with '-'.
_LABEL = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")


class SecretHostRefused(Forbidden):
    code, title = "secret_host_not_allowed", "The secret may not be sent to this host"


def _host_and_port(entry: str) -> tuple[str, int | None]:
    """`entry` parsed as `host[:port]`, or ValueError."""
    if not entry or entry != entry.strip() or any(c in entry for c in "/?#@\\ *"):
        raise ValueError(entry)
    parts = urlsplit(f"https://{entry}")
    host, port = parts.hostname, parts.port  # port raises ValueError when malformed
    if not host:
        raise ValueError(entry)
    host = host.rstrip(".")
    try:
        ipaddress.ip_address(host)
    except ValueError:
        if entry.startswith("[") or len(host) > 253:
            raise ValueError(entry) from None
        if not all(_LABEL.match(label) for label in host.split(".")):
            raise ValueError(entry) from None
    return host, port


def _entry(host: str, port: int | None) -> str:
    shown = f"[{host}]" if ":" in host else host
    return shown if port is None else f"{shown}:{port}"


def normalize(entries: list[str]) -> list[str]:
    """The entries checked, lowercased, deduplicated and sorted; a 422 names a bad one."""
    if len(entries) > MAX_HOSTS:
        raise Unprocessable(
            f"a secret names at most {MAX_HOSTS} allowed hosts", extra={"max_hosts": MAX_HOSTS}
        )
    out = set()
    for entry in entries:
        try:
            out.add(_entry(*_host_and_port(entry.lower())))
        except ValueError:
            raise Unprocessable(
                f"allowed host {entry!r} is not a host name or IP address with an optional "
                "port (no scheme, path, user or wildcard)",
                extra={"allowed_host": entry},
            ) from None
    return sorted(out)


def url_target(url: str) -> tuple[str, int]:
    """The host and port a URL's request goes to."""
    parts = urlsplit(url)
    assert parts.hostname is not None
    default = 443 if parts.scheme == "https" else 80
    return parts.hostname.rstrip(".").lower(), parts.port or default


def allows(allowed: list[str], url: str) -> bool:
    host, port = url_target(url)
    for entry in allowed:
        entry_host, entry_port = _host_and_port(entry)
        if entry_host == host and entry_port in (None, port):
            return True
    return False


def check(name: str, allowed: list[str], url: str) -> None:
    """A 422 unless the secret `name` may go to the host of `url`."""
    if allows(allowed, url):
        return
    host, port = url_target(url)
    if not allowed:
        reason = "names no allowed hosts, so it is sent to none"
    else:
        reason = f"may be sent only to {', '.join(allowed)}"
    raise SecretHostRefused(
        f"the secret {name!r} {reason}, not to {_entry(host, port)} "
        f"(PUT /v1/secrets/{name} with allowed_hosts to change that)",
        extra={"secret": name, "host": host, "allowed_hosts": allowed},
    )
