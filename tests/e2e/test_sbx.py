"""`sbx` run as a user runs it, from bash, against a real server on gVisor."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from tests.e2e.conftest import REPO, Airlock, Tenant

README = REPO / "clients/python/README.md"
SBX = str(Path(sys.executable).with_name("sbx"))


def readme_script() -> str:
    """The shell example of the client's README (the one that makes a sandbox with `sbx new`)."""
    blocks = re.findall(r"```sh\n(.*?)```", README.read_text(), flags=re.DOTALL)
    found = [b for b in blocks if "sbx new" in b]
    assert found, f"no sbx example in {README}"
    return found[0]


async def bash(
    script: str, airlock: Airlock, tenant: Tenant, **env: str
) -> subprocess.CompletedProcess[str]:
    full_env = {
        **os.environ,
        "PATH": f"{Path(SBX).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "AIRLOCK_URL": airlock.server.url,
        "AIRLOCK_API_KEY": tenant.key,
        "AIRLOCK_CONFIG": "/nonexistent/airlock.json",
        **env,
    }
    return await asyncio.to_thread(
        subprocess.run,
        ["bash", "-c", script],
        env=full_env,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


async def test_the_readme_lines_work_unchanged(airlock: Airlock, tenant: Tenant) -> None:
    script = readme_script()
    assert 'sbx delete "$id" --yes' in script
    code = "import sys; print(sum(range(10))); print('to stderr', file=sys.stderr); sys.exit(5)"
    exec_line = next(line for line in script.splitlines() if line.startswith("sbx exec"))
    script = script.replace(exec_line, f"{exec_line}\nrc=$?")  # the lines as written, plus a note
    done = await bash(
        f'set -u\n{script}\necho "exec=$rc id=$id"\n',
        airlock,
        tenant,
        GENERATED_CODE=code,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "45", done.stdout  # the command's own output, streamed
    assert "to stderr" in done.stderr
    status = dict(part.split("=", 1) for part in lines[-1].split())
    assert status["exec"] == "5"  # sbx exec exited with the command's code
    async with airlock.http(tenant.key) as http:
        got = (await http.get(f"/v1/sandboxes/{status['id']}")).json()
    assert got["state"] == "stopped"  # deleted by the third line


async def test_exec_exits_with_the_commands_code(airlock: Airlock, tenant: Tenant) -> None:
    sandbox = await airlock.sandbox(tenant)
    done = await bash(
        f"sbx exec {sandbox.id} -- sh -c 'exit 7'; a=$?\n"
        f"sbx exec {sandbox.id} --timeout 1 -- sleep 30; b=$?\n"
        f"sbx exec {sandbox.id} --env GREETING=hi -- sh -c 'echo $GREETING'; c=$?\n"
        'echo "$a $b $c"',
        airlock,
        tenant,
    )
    assert done.stdout.splitlines() == ["hi", "7 124 0"], (done.stdout, done.stderr)
    assert "timeout" in done.stderr


async def test_cp_copies_directories_both_ways_byte_exact(
    airlock: Airlock, tenant: Tenant, tmp_path: Path
) -> None:
    sandbox = await airlock.sandbox(tenant)
    src = tmp_path / "src"
    (src / "a" / "b").mkdir(parents=True)
    (src / "a" / "b" / "blob").write_bytes(os.urandom(300_000))
    (src / "top.txt").write_text("top\n")
    (src / "empty").mkdir()
    done = await bash(
        f"set -e\nsbx cp {src} {sandbox.id}:/work/copy\n"
        f"sbx exec {sandbox.id} -- sh -c 'cd /work/copy && find . | sort && sha256sum a/b/blob'\n"
        f"sbx cp {sandbox.id}:/work/copy {tmp_path / 'back'}\n"
        f"sbx cp {sandbox.id}:/work/copy/top.txt {tmp_path / 'one.txt'}\n"
        f"sbx cp {src / 'a' / 'b' / 'blob'} {sandbox.id}:/work/single.bin\n"
        f"sbx exec {sandbox.id} -- sha256sum /work/single.bin /work/copy/a/b/blob\n",
        airlock,
        tenant,
    )
    assert done.returncode == 0, done.stderr
    assert "./a/b/blob" in done.stdout and "./empty" in done.stdout
    for rel in ("a/b/blob", "top.txt"):
        assert (tmp_path / "back" / rel).read_bytes() == (src / rel).read_bytes()
    assert (tmp_path / "back" / "empty").is_dir()
    assert (tmp_path / "one.txt").read_text() == "top\n"
    sums = [line.split()[0] for line in done.stdout.splitlines()[-2:]]
    assert len(sums) == 2 and sums[0] == sums[1]  # the file sent alone arrived whole


async def test_json_everywhere_and_deleting_asks(airlock: Airlock, tenant: Tenant) -> None:
    sandbox = await airlock.sandbox(tenant)
    done = await bash(
        f"sbx ls --json; sbx --json get {sandbox.id}; sbx history {sandbox.id} --json; "
        f"sbx token --sandbox {sandbox.id} --scope exec --json; sbx templates --json",
        airlock,
        tenant,
    )
    assert done.returncode == 0, done.stderr
    objects = [json.loads(line) for line in done.stdout.splitlines()]
    assert objects[0]["id"] == sandbox.id and objects[1]["id"] == sandbox.id
    grant = next(o for o in objects if "token" in o)
    assert grant["scopes"] == ["exec"] and grant["sandbox_id"] == sandbox.id

    refused = await bash(f"sbx delete {sandbox.id}", airlock, tenant)
    assert refused.returncode != 0 and "--yes" in refused.stderr
    missing = await bash("sbx get sbx_nope --json", airlock, tenant)
    assert missing.returncode == 1
    assert json.loads(missing.stdout.splitlines()[-1])["code"] == "not_found"
    assert "not_found" in missing.stderr


async def test_pause_resume_and_fork_from_the_shell(airlock: Airlock, tenant: Tenant) -> None:
    script = """
set -e
id=$(sbx new --ttl 300 --json | jq -r 'select(.event=="ready") | .id')
sbx exec "$id" -- sh -c 'echo kept > /work/k'
sbx pause "$id"
sbx get "$id" --json | jq -r .state
sbx exec "$id" -- cat /work/k
child=$(sbx fork "$id" --ttl 120)
sbx exec "$child" -- cat /work/k
sbx delete "$child" --yes >/dev/null
sbx delete "$id" --yes >/dev/null
"""
    done = await bash(script, airlock, tenant)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("sbx_") and lines[0].endswith(" bytes)"), lines
    assert lines[1:] == ["paused", "kept", "kept"], lines
