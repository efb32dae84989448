"""Getting a key with `sbx` alone, as a newcomer does: the operator makes a tenant and a key,
`sbx login` stores it, later commands use it; bad keys and URLs are refused with a message and
nothing stored."""

from __future__ import annotations

import asyncio
import json
import os
import re
import secrets
import stat
import subprocess
import sys
from pathlib import Path

from tests.e2e.conftest import REPO, Airlock, free_port

SBX = str(Path(sys.executable).with_name("sbx"))
README = REPO / "clients/python/README.md"


def getting_a_key() -> str:
    """The shell block of the client README's "Getting a key"."""
    section = re.search(r"^## Getting a key\n(.*?)^## ", README.read_text(), re.DOTALL | re.M)
    assert section, f"no 'Getting a key' section in {README}"
    blocks = re.findall(r"^```sh\n(.*?)^```", section.group(1), re.DOTALL | re.M)
    assert len(blocks) == 1, blocks
    return blocks[0]


class Shell:
    """`sbx` run with a home of its own and no AIRLOCK_* variables unless given."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.config = home / "xdg" / "airlock" / "config.json"

    async def sbx(
        self, *args: str, stdin: str = "", **env: str
    ) -> subprocess.CompletedProcess[str]:
        # umask 000: the modes seen are the ones the code asks for, not the umask's.
        return await self.bash('umask 000; exec sbx "$@"', *args, stdin=stdin, **env)

    async def bash(
        self, script: str, *args: str, stdin: str = "", cwd: Path | None = None, **env: str
    ) -> subprocess.CompletedProcess[str]:
        base = {k: v for k, v in os.environ.items() if not k.startswith("AIRLOCK_")}
        full_env = {
            **base,
            "PATH": f"{Path(SBX).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}",
            "HOME": str(self.home),
            "XDG_CONFIG_HOME": str(self.home / "xdg"),
            **env,
        }
        return await asyncio.to_thread(
            subprocess.run,
            ["bash", "-c", script, "bash", *args],
            env=full_env,
            cwd=cwd,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=120,
        )


def ok(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    assert "Traceback" not in done.stderr, done.stderr
    return done.stdout


def refused(done: subprocess.CompletedProcess[str], status: int, *texts: str) -> None:
    assert done.returncode == status, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    assert "Traceback" not in done.stderr, done.stderr
    for text in texts:
        assert text in done.stderr, done.stderr


async def test_operator_makes_a_tenant_and_a_key_and_the_tenant_logs_in(
    airlock: Airlock, tmp_path: Path
) -> None:
    sh = Shell(tmp_path)
    url, op = airlock.server.url, airlock.operator_key
    name = f"e2e-login-{secrets.token_hex(4)}"

    made = await sh.sbx(
        "--url", url, "--api-key", op, "tenant", "create", name, "--quota", "max_sandboxes=3"
    )
    admin_key = ok(made).strip()
    assert admin_key.startswith("alk_") and "\n" not in admin_key, made.stdout
    assert f"created tenant {name} (ten_" in made.stderr and "shown once" in made.stderr

    listed = ok(await sh.sbx("--url", url, "--api-key", op, "tenant", "ls", "--json"))
    mine = [t for t in map(json.loads, listed.splitlines()) if t["name"] == name]
    assert mine and mine[0]["quotas"]["max_sandboxes"] == 3, listed

    # The operator makes a key for the tenant by its name; the tenant's first key makes its own.
    ci = await sh.sbx(
        "--url",
        url,
        "--api-key",
        op,
        "key",
        "create",
        "ci",
        "--tenant",
        name,
        "--scope",
        "sandboxes:read",
        "--json",
    )
    answer = json.loads(ok(ci))
    assert answer["key"].startswith("alk_") and answer["api_key"]["scopes"] == ["sandboxes:read"]
    assert answer["api_key"]["tenant_id"] == mine[0]["id"]
    laptop = ok(
        await sh.sbx("--url", url, "--api-key", admin_key, "key", "create", "laptop")
    ).strip()
    assert laptop.startswith("alk_"), laptop

    # The key on stdin (never in argv), the URL as an option: checked, then stored 0600 in 0700.
    login = await sh.sbx("login", "--url", url, stdin=f"{laptop}\n")
    assert f"logged in to {url} as a tenant's key; stored in {sh.config}" in ok(login)
    assert json.loads(sh.config.read_text()) == {"url": url, "api_key": laptop}
    assert stat.S_IMODE(sh.config.stat().st_mode) == 0o600
    assert stat.S_IMODE(sh.config.parent.stat().st_mode) == 0o700

    assert (
        ok(await sh.sbx("ls", "--json")) == ""
    )  # the stored URL and key, nothing in the environment
    # The environment wins over the file, as before.
    refused(await sh.sbx("ls", AIRLOCK_API_KEY="alk_not-a-key"), 1, "401 unauthenticated")

    logout = ok(await sh.sbx("logout"))
    assert f"removed the API key from {sh.config}" in logout
    assert json.loads(sh.config.read_text()) == {"url": url}
    refused(await sh.sbx("ls"), 1, "no credential: run `sbx login`")
    assert "no API key stored" in ok(await sh.sbx("logout"))


async def test_login_refuses_what_does_not_work_and_stores_nothing(
    airlock: Airlock, tmp_path: Path
) -> None:
    sh = Shell(tmp_path)
    url, op = airlock.server.url, airlock.operator_key

    bad_key = await sh.sbx("login", "--url", url, "--api-key", "alk_0123456789abcdef")
    refused(bad_key, 1, f"sbx: 401 unauthenticated: {url} refused the key")
    unreachable = await sh.sbx("login", "--url", f"http://127.0.0.1:{free_port()}", "--api-key", op)
    refused(unreachable, 1, "sbx: transport_error: cannot reach http://127.0.0.1:")
    nowhere = f"http://127.0.0.1:{free_port()}"
    refused(
        await sh.sbx("--url", nowhere, "--api-key", op, "tenant", "create", "x"), 1, "cannot reach"
    )
    refused(await sh.sbx("login", "--url", url), 2, "no API key")  # nothing on stdin
    refused(
        await sh.sbx("login", "--url", "127.0.0.1:8080", "--api-key", op),
        2,
        "not an http:// or https:// URL",
    )
    assert not sh.config.parent.exists()

    # The key from the environment, as every command takes it; the operator's is a key too.
    login = ok(await sh.sbx("login", AIRLOCK_URL=url, AIRLOCK_API_KEY=op))
    assert f"logged in to {url} as the operator" in login
    assert json.loads(sh.config.read_text())["api_key"] == op

    # What the operator may not do, said plainly.
    refused(await sh.sbx("key", "create", "ci"), 1, "name the tenant (--tenant ID|NAME)")
    refused(
        await sh.sbx("key", "create", "ci", "--tenant", "no-such-tenant"),
        1,
        "no tenant named 'no-such-tenant'",
    )
    refused(
        await sh.sbx("tenant", "create", "x", "--quota", "max_sandbox=1"),
        2,
        "no quota named 'max_sandbox'",
    )
    refused(
        await sh.sbx("key", "create", "ci", "--tenant", "x", "--scope", "root"),
        2,
        "'root' is not one of",
    )


async def test_the_readme_gets_a_key_as_written(airlock: Airlock, tmp_path: Path) -> None:
    sh = Shell(tmp_path)
    clone = tmp_path / "clone"  # where ./scripts/run.sh keeps the operator key
    (clone / ".airlock").mkdir(parents=True)
    (clone / ".airlock/operator_key").write_text(airlock.operator_key + "\n")
    script = getting_a_key()
    assert "sbx login" in script and "sbx ls" in script
    name = f"e2e-readme-{secrets.token_hex(4)}"  # one tenant name per database
    script, made = re.subn(r"sbx tenant create [\w-]+", f"sbx tenant create {name}", script)
    assert made == 1, script
    done = await sh.bash(
        f"set -euo pipefail\n{script}",
        cwd=clone,
        AIRLOCK_URL=airlock.server.url,
    )
    # Then `sbx ls` ran on the stored key: the script would have stopped on its failure.
    assert f"logged in to {airlock.server.url} as a tenant's key" in ok(done), done.stdout
    stored = json.loads(sh.config.read_text())
    assert stored["url"] == airlock.server.url and stored["api_key"].startswith("alk_")
    assert stat.S_IMODE(sh.config.stat().st_mode) == 0o600
