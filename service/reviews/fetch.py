"""Fetching on the host: into a new bare repository, with nothing of the repository executed.

- A bare repository has no checkout: no `.gitattributes` filters, no hooks on checkout.
- Hooks are off (`core.hooksPath=/dev/null`), and git reads no system or global config (the
  host's credentials helpers, aliases and includes stay out); the environment is built from
  scratch, so none of the service's own variables reach git or the remote helper, proxies
  included (a proxy would resolve the host name again and undo the pinning).
- Git itself is confined (`confine`): an unprivileged uid, rlimits, a private directory and a
  byte cap on what it writes.
- Only the transports we allow: https/http, and `file` for a local repository or a bundle
  only when that source kind was accepted; redirects are not followed and the host name is
  pinned to the addresses `source.pin_addresses` checked.
- No submodules, no tags, objects checked as they arrive (`transfer.fsckObjects`).

The result is a git bundle of the two refs, which is all that enters the sandbox.

A private repository's credentials (`HttpAuth`) reach git only through the environment of the
one `git fetch` that needs them, as an `http.<url>.extraHeader` set with `GIT_CONFIG_COUNT`
/ `GIT_CONFIG_KEY_0` / `GIT_CONFIG_VALUE_0`: never on a command line (which any local user can
read in /proc), never in the bare repository's config, and masked in any error text git
writes back. The header is scoped to the URL's scheme, host and port, and redirects are off,
so it goes to the URL's host and nowhere else. Which hosts a secret may go to at all is the
secret's own (`service.secrets.hosts`), checked before the secret is read.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import signal
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urlsplit

from service.reviews.confine import REPO, FetchLimits, Workspace, watch, workspace
from service.reviews.source import Source, remote_ref

FETCH_TIMEOUT_S = 300.0
LOCAL_TIMEOUT_S = 60.0
BASE_REF = "refs/review/base"
HEAD_REF = "refs/review/head"


class FetchFailed(Exception):
    pass


@dataclass(frozen=True)
class HttpAuth:
    """HTTP Basic credentials for the fetch; `repr` never shows the password."""

    username: str
    password: str

    def __repr__(self) -> str:
        return f"HttpAuth(username={self.username!r}, password=<hidden>)"

    @property
    def token(self) -> str:
        return base64.b64encode(f"{self.username}:{self.password}".encode()).decode()

    def env(self, url: str) -> dict[str, str]:
        """The header for requests to `url`'s scheme, host and port only."""
        parts = urlsplit(url)
        return {
            "GIT_CONFIG_COUNT": "1",
            "GIT_CONFIG_KEY_0": f"http.{parts.scheme}://{parts.netloc}/.extraHeader",
            "GIT_CONFIG_VALUE_0": f"Authorization: Basic {self.token}",
        }

    def mask(self, text: str) -> str:
        for form in (self.token, self.password, quote(self.password, safe="")):
            if form:
                text = text.replace(form, "[secret]")
        return text


@dataclass(frozen=True)
class Fetched:
    bundle: Path
    size: int
    base_commit: str
    head_commit: str


def _config(source: Source) -> list[str]:
    options = {
        "core.hooksPath": "/dev/null",
        "core.fsmonitor": "false",
        "core.askPass": "",
        "credential.helper": "",
        "protocol.allow": "never",
        "protocol.https.allow": "always",
        "protocol.http.allow": "always",
        "protocol.file.allow": "always" if source.kind in ("local", "bundle") else "never",
        "http.followRedirects": "false",
        # Empty: no proxy, whatever the environment says (git passes "" on to curl).
        "http.proxy": "",
        "http.lowSpeedLimit": "1000",
        "http.lowSpeedTime": "60",
        "transfer.fsckObjects": "true",
        # One pack file (capped by RLIMIT_FSIZE), never thousands of loose objects; one thread.
        "transfer.unpackLimit": "1",
        "pack.threads": "1",
        "fetch.recurseSubmodules": "false",
        "submodule.recurse": "false",
        "uploadpack.packObjectsHook": "",
    }
    args: list[str] = []
    for key, value in options.items():
        args += ["-c", f"{key}={value}"]
    for pin in source.resolve:
        args += ["-c", f"http.curloptResolve={pin}"]
    return args


def _env(home: Path, ca_file: Path | None) -> dict[str, str]:
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(home),
        "TMPDIR": str(home),
        "LANG": "C.UTF-8",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_ATTR_NOSYSTEM": "1",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_ASKPASS": "/bin/false",
        "SSH_ASKPASS": "/bin/false",
        "GIT_PROTOCOL_FROM_USER": "0",
        "GIT_NO_REPLACE_OBJECTS": "1",
    }
    if ca_file is not None:
        env["GIT_SSL_CAINFO"] = str(ca_file)
    return env


def _ca_file(space: Workspace) -> Path | None:
    """The service's `GIT_SSL_CAINFO` (a private CA of the operator's git hosts), copied where
    the fetch uid can read it; the one variable of the service's environment git sees."""
    configured = os.environ.get("GIT_SSL_CAINFO")
    if not configured:
        return None
    return space.give(Path(configured), "ca.pem")


async def git(
    space: Workspace,
    *args: str,
    source: Source | None = None,
    timeout_s: float = LOCAL_TIMEOUT_S,
    auth: HttpAuth | None = None,
    ca_file: Path | None = None,
) -> str:
    """Run git confined, with the safe options, in `space`; its stdout, or FetchFailed."""
    what = next(a for a in args if a in ("init", "fetch", "rev-parse", "bundle"))
    config = _config(source) if source is not None else _config(Source("none", ""))
    env = _env(space.home, ca_file)
    if auth is not None and source is not None:
        env.update(auth.env(source.location))
    argv = space.limits.wrap(["git", *config, *args], timeout_s, drop=space.drop)
    proc = await asyncio.create_subprocess_exec(
        *argv,
        cwd=space.home,
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )
    tripped: list[bool] = []
    watchdog = asyncio.create_task(watch(space, proc, tripped))
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout_s)
    except (TimeoutError, asyncio.CancelledError):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        await proc.wait()
        raise FetchFailed(f"git {what} took longer than {timeout_s:.0f} s") from None
    finally:
        watchdog.cancel()
    if proc.returncode != 0:
        text = err.decode(errors="replace").strip()
        if tripped or await asyncio.to_thread(space.at_cap):
            mib = space.limits.max_bytes // (1 << 20)
            raise FetchFailed(
                f"git {what} stopped: the repository is larger than the fetch limit of "
                f"{mib} MiB (AIRLOCK_REVIEW_FETCH_MAX_MIB)"
            )
        if auth is not None:
            text = auth.mask(text)
            # A host that refuses the credentials asks for others, which git cannot give.
            what += f" with the credentials of user {auth.username!r}"
        raise FetchFailed(f"git {what} failed: {text[-800:] or proc.returncode}")
    return out.decode(errors="replace")


async def fetch(
    source: Source,
    base: str,
    head: str,
    work: Path,
    location: str,
    auth: HttpAuth | None = None,
    limits: FetchLimits | None = None,
) -> Fetched:
    """Fetch `base` and `head` from `location` (the URL, path or bundle file) into a bare
    repository, confined, and bundle them into `work/review.bundle`; `auth` only for a URL.

    A local path is read as the service's own uid (the operator enabled reading this host's
    disk, whose permissions the fetch uid does not share); URLs and bundles as the fetch uid."""
    if auth is not None and source.kind != "url":
        raise FetchFailed("credentials are for repository URLs only")
    limits = limits or FetchLimits()
    async with workspace(limits, drop=source.kind != "local") as space:
        if source.kind == "bundle":
            location = str(await asyncio.to_thread(space.give, Path(location), "source.bundle"))
        ca_file = await asyncio.to_thread(_ca_file, space) if source.kind == "url" else None
        await git(space, "init", "--bare", "--quiet", REPO)
        timeout = FETCH_TIMEOUT_S if source.kind == "url" else LOCAL_TIMEOUT_S
        await git(
            space,
            "-C",
            REPO,
            "fetch",
            "--quiet",
            "--no-tags",
            "--no-recurse-submodules",
            "--no-write-fetch-head",
            "--",
            location,
            f"+{remote_ref(base)}:{BASE_REF}",
            f"+{remote_ref(head)}:{HEAD_REF}",
            source=source,
            timeout_s=timeout,
            auth=auth,
            ca_file=ca_file,
        )
        commits = await git(
            space, "-C", REPO, "rev-parse", f"{BASE_REF}^{{commit}}", f"{HEAD_REF}^{{commit}}"
        )
        base_commit, head_commit = commits.split()
        await git(space, "-C", REPO, "bundle", "create", "--quiet", "../review.bundle",
                  BASE_REF, HEAD_REF)  # fmt: skip
        bundle = work / "review.bundle"
        size = await asyncio.to_thread(space.take, "review.bundle", bundle)
        return Fetched(bundle, size, base_commit, head_commit)
