"""Where a review's commits come from, decided before anything is written or fetched.

A repository is an `https://` (or `http://`) git URL, an uploaded bundle id, or, only where the
operator set `AIRLOCK_REVIEW_ALLOW_LOCAL_REPOS`, a path or `file://` URL on the server: otherwise
a tenant could make the host read its own disk. For the same reason a URL whose host is or
resolves to a loopback, private, link-local or otherwise non-public address, judged by what
the address reaches (`service.addresses`: `[::127.0.0.1]` and `[64:ff9b::a9fe:a9fe]` carry
IPv4 addresses that are), is refused unless local repositories are enabled, and the fetch is
pinned to the addresses checked here (no second lookup that could answer differently).
`ssh://`, `git://`, `ext::` and the rest are refused: ssh would use the host's own keys.
"""

from __future__ import annotations

import asyncio
import re
import socket
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit

from service.addresses import Grants, refusal
from service.errors import Forbidden, Unprocessable

BUNDLE_ID = re.compile(r"^bdl_[0-9a-f]{32}$")


@dataclass(frozen=True)
class Source:
    kind: str  # "url" | "local" | "bundle"
    location: str  # the URL, the local path, or the bundle id
    # For URLs: `host:port:addr[,addr]` pins for git's HTTP client.
    resolve: list[str] = field(default_factory=list)


def check_ref(ref: str, what: str) -> None:
    """The schema keeps options and refspecs out; this keeps names git would refuse out."""
    bad = (
        ".." in ref
        or "//" in ref
        or ref.endswith(("/", ".", ".lock"))
        or "/." in ref
        or ref.startswith("-")
    )
    if bad:
        raise Unprocessable(f"{what} {ref!r} is not a valid git ref name")


def remote_ref(ref: str) -> str:
    """What to ask the remote for: a commit id as is, `pull/N/head` under refs/, a full ref as
    is, anything else as a branch or tag name for git to match."""
    return f"refs/{ref}" if ref.startswith("pull/") else ref


def parse(repo: str, *, allow_local: bool) -> Source:
    """The kind of source, or why it is refused: a 422 for a malformed one, a 403 for one this
    server does not fetch from (its own disk, non-public addresses). No I/O."""
    if BUNDLE_ID.match(repo):
        return Source("bundle", repo)
    if repo.startswith("/") or repo.startswith("file://"):
        if not allow_local:
            raise Forbidden(
                "repositories on the server's disk are not enabled on this server "
                "(AIRLOCK_REVIEW_ALLOW_LOCAL_REPOS)",
                extra={"repo": repo},
            )
        path = unquote(urlsplit(repo).path) if repo.startswith("file://") else repo
        return Source("local", str(Path(path)))
    parts = urlsplit(repo)
    if parts.scheme not in ("https", "http"):
        raise Unprocessable(
            "repo must be an https:// git URL or an uploaded bundle id", extra={"repo": repo}
        )
    if parts.username is not None or parts.password is not None:
        raise Unprocessable("credentials do not belong in the repository URL")
    if not parts.hostname:
        raise Unprocessable("the repository URL has no host", extra={"repo": repo})
    try:
        parts.port  # noqa: B018 (raises on a malformed port)
    except ValueError as exc:
        raise Unprocessable("the repository URL has a malformed port") from exc
    if parts.query or parts.fragment:
        raise Unprocessable("the repository URL takes no query or fragment")
    _check_address(parts.hostname, parts.hostname, allow_private=allow_local, repo=repo)
    return Source("url", repo)


def _check_address(host: str, address: str, *, allow_private: bool, repo: str) -> None:
    """An address (an IP literal here, or what a name resolved to) that reaches a non-public
    host is refused, judged by what it reaches: `[::127.0.0.1]` is loopback."""
    try:
        refused = refusal(address, Grants(local=allow_private))
    except ValueError:
        return  # a name: checked once resolved, just before the fetch
    if refused is None:
        return
    need = "" if allow_private else "; such hosts need AIRLOCK_REVIEW_ALLOW_LOCAL_REPOS"
    raise Forbidden(
        f"the repository host {host} is on a non-public address ({refused}){need}",
        extra={"repo": repo},
    )


async def check_local(source: Source) -> None:
    path = Path(source.location)
    if not await asyncio.to_thread(path.is_dir):
        raise Unprocessable(f"no repository at {source.location}")


async def pin_addresses(source: Source, *, allow_private: bool) -> Source:
    """Resolve a URL's host once; refuse non-public addresses unless allowed; pin the result."""
    parts = urlsplit(source.location)
    host = parts.hostname
    assert host is not None
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise Unprocessable(f"the repository host {host} does not resolve") from exc
    addresses = sorted({str(info[4][0]) for info in infos})
    if not addresses:
        raise Unprocessable(f"the repository host {host} does not resolve")
    for address in addresses:
        _check_address(host, address, allow_private=allow_private, repo=source.location)
    pinned = ",".join(f"[{a}]" if ":" in a else a for a in addresses)
    return Source(source.kind, source.location, [f"{host}:{port}:{pinned}"])
