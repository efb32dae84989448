"""The headers a proxy never passes on, for both of this service's proxies: a sandbox call sent
on to its node (service.nodes.proxy) and a request to a server in a sandbox (service.ports).

Hop-by-hop headers (RFC 9110 section 7.6.1) are the connection's own, not the message's, and
so is any header the message's `Connection` header names. The host a request was sent to and
the caller's credential are never what the next hop should see either.
"""

from __future__ import annotations

from collections.abc import Iterable

HOP_BY_HOP = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"proxy-authenticate",
        b"proxy-authorization",
        b"proxy-connection",
        b"te",
        b"trailer",
        b"transfer-encoding",
        b"upgrade",
    }
)
# Never passed to the next hop with a request.
NOT_RELAYED = HOP_BY_HOP | {b"host", b"authorization"}


def named_by_connection(headers: Iterable[tuple[bytes, bytes]]) -> set[bytes]:
    """The header names a message's `Connection` header lists (lowercase): hop-by-hop too."""
    return {
        token.strip().lower()
        for name, value in headers
        if name.lower() == b"connection"
        for token in value.split(b",")
    }
