"""Fetching on the host: into a new bare repository, with nothing of the repository executed.

- A bare repository has no checkout: no `.gitattributes` filters, no hooks on checkout.
- Hooks are off (`core.hooksPath=/dev/null`), and git reads no system or global config (the
  host's credentials helpers, aliases and includes stay out); the environment is built from
  scratch, so none of the service's own variables reach git or the remote helper.
- Only the transports we allow: https/http, and `file` for a local repository or a bundle
  only when that source kind was accepted; redirects are not followed and the host name is
  pinned to the addresses `source.pin_addresses` checked.
- No submodules, no tags, objects checked as they arrive (`transfer.fsckObjects`).

The result is a git bundle of the two refs, which is all that enters the sandbox.

A private repository's credentials (`HttpAuth`) reach git only through the environment of the
one `git fetch` that needs them, as an `http.extraHeader` set with `GIT_CONFIG_COUNT` /
`GIT_CONFIG_KEY_0` / `GIT_CONFIG_VALUE_0`: never on a command line (which any local user can
read in /proc), never in the bare repository's config, and masked in any error text git
writes back. Redirects are off, so the header goes to the URL's host and nowhere else.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import signal
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

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

    def env(self) -> dict[str, str]:
        return {
            "GIT_CONFIG_COUNT": "1",
            "GIT_CONFIG_KEY_0": "http.extraHeader",
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
        "http.lowSpeedLimit": "1000",
        "http.lowSpeedTime": "60",
        "transfer.fsckObjects": "true",
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


def _env(home: Path) -> dict[str, str]:
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_ASKPASS": "/bin/false",
        "SSH_ASKPASS": "/bin/false",
        "GIT_PROTOCOL_FROM_USER": "0",
        "GIT_NO_REPLACE_OBJECTS": "1",
    }
    # A host that reaches git hosts only through a proxy still does, and one whose git hosts
    # (or TLS-inspecting proxy) use a private CA names it here.
    for name in (
        "HTTPS_PROXY",
        "HTTP_PROXY",
        "NO_PROXY",
        "https_proxy",
        "http_proxy",
        "no_proxy",
        "GIT_SSL_CAINFO",
    ):
        if name in os.environ:
            env[name] = os.environ[name]
    return env


async def git(
    work: Path,
    *args: str,
    source: Source | None = None,
    timeout_s: float = LOCAL_TIMEOUT_S,
    auth: HttpAuth | None = None,
) -> str:
    """Run git with the safe options in `work`; its stdout, or FetchFailed."""
    what = next(a for a in args if a in ("init", "fetch", "rev-parse", "bundle"))
    config = _config(source) if source is not None else _config(Source("none", ""))
    env = _env(work)
    if auth is not None:
        env.update(auth.env())
    proc = await asyncio.create_subprocess_exec(
        "git",
        *config,
        *args,
        cwd=work,
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout_s)
    except (TimeoutError, asyncio.CancelledError):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        await proc.wait()
        raise FetchFailed(f"git {what} took longer than {timeout_s:.0f} s") from None
    if proc.returncode != 0:
        text = err.decode(errors="replace").strip()
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
) -> Fetched:
    """Fetch `base` and `head` from `location` (the URL, path or bundle file) into a bare
    repository under `work`, and bundle them into `work/review.bundle`; `auth` only for a URL."""
    if auth is not None and source.kind != "url":
        raise FetchFailed("credentials are for repository URLs only")
    repo = work / "repo.git"
    await git(work, "init", "--bare", "--quiet", str(repo))
    timeout = FETCH_TIMEOUT_S if source.kind == "url" else LOCAL_TIMEOUT_S
    await git(
        work,
        "-C",
        str(repo),
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
    )
    commits = await git(
        work, "-C", str(repo), "rev-parse", f"{BASE_REF}^{{commit}}", f"{HEAD_REF}^{{commit}}"
    )
    base_commit, head_commit = commits.split()
    bundle = work / "review.bundle"
    await git(work, "-C", str(repo), "bundle", "create", "--quiet", str(bundle), BASE_REF, HEAD_REF)
    return Fetched(bundle, bundle.stat().st_size, base_commit, head_commit)
