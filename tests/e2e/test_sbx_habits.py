"""`sbx` used with a shell's habits (pipes, `cp` into directories, `ls`, reading back a past
command), run from bash against a real server on gVisor, asserting on what the user sees."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.e2e.conftest import Airlock, Tenant

SBX = str(Path(sys.executable).with_name("sbx"))
MIB = 1 << 20


async def bash(
    script: str, airlock: Airlock, tenant: Tenant, *, stdin: Any = subprocess.DEVNULL
) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PATH": f"{Path(SBX).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "AIRLOCK_URL": airlock.server.url,
        "AIRLOCK_API_KEY": tenant.key,
        "AIRLOCK_CONFIG": "/nonexistent/airlock.json",
    }
    return await asyncio.to_thread(
        subprocess.run,
        ["bash", "-c", script],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=stdin,
    )


def no_traceback(done: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in done.stderr, done.stderr


async def test_exec_feeds_piped_stdin_and_leaves_a_terminal_alone(
    airlock: Airlock, tenant: Tenant, tmp_path: Path
) -> None:
    sandbox = await airlock.sandbox(tenant)
    blob = tmp_path / "blob"
    blob.write_bytes(os.urandom(3 * MIB + 17))  # more than one write's worth, not text
    done = await bash(
        f"echo 'print(6 * 7)' | sbx exec {sandbox.id} -- python3\n"
        f"sbx exec {sandbox.id} -- sha256sum < {blob}\n"
        f"printf 'a\\nb\\n' | sbx exec {sandbox.id} -- wc -l\n"
        f'seq 1 100000 | sbx exec {sandbox.id} -- head -n 1; echo "head=$?"\n',
        airlock,
        tenant,
    )
    no_traceback(done)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "42"
    assert lines[1].split()[0] == hashlib.sha256(blob.read_bytes()).hexdigest()
    assert lines[2] == "2"
    assert lines[3:] == ["1", "head=0"]  # the command ended before reading it all: no error
    assert done.stderr == "", done.stderr

    # A terminal as stdin is not read: `cat` sees no input and ends, nothing waits for a user.
    leader, follower = pty.openpty()
    try:
        script = f"sbx exec {sandbox.id} -- cat; echo cat=$?"
        done = await bash(script, airlock, tenant, stdin=follower)
    finally:
        os.close(leader)
        os.close(follower)
    assert done.stdout.splitlines() == ["cat=0"], (done.stdout, done.stderr)


async def test_exec_says_what_was_cut_and_why_it_ended(airlock: Airlock, tenant: Tenant) -> None:
    sandbox = await airlock.sandbox(tenant)
    big = "import sys; sys.stdout.write('x' * (2 << 20)); sys.stderr.write('e' * (2 << 20))"
    more = f"--max-output-bytes {3 * MIB}"
    done = await bash(
        f'sbx exec {sandbox.id} -- python3 -c "{big}" > /dev/null; echo "cut=$?"\n'
        f'sbx exec {sandbox.id} {more} -- python3 -c "{big}" 2>/dev/null | wc -c\n'
        f"sbx exec {sandbox.id} --timeout 1.5 -- sleep 30; echo timeout=$?\n"
        f"sbx exec {sandbox.id} -- sh -c 'kill -9 $$'; echo killed=$?\n"
        f"sbx exec {sandbox.id} --max-output-bytes {9 * MIB} -- true; echo more=$?\n",
        airlock,
        tenant,
    )
    no_traceback(done)
    assert "cut=0" in done.stdout  # the command's own exit code
    errors = done.stderr.replace("e" * 1000, "")  # the command's own stderr, mostly
    assert "sbx: stdout was cut at 1 MiB" in errors, errors
    assert "sbx: stderr was cut at 1 MiB" in errors, errors
    assert "--max-output-bytes" in errors  # how to keep more
    assert str(2 << 20) in done.stdout.split()  # with the larger limit all of it came
    assert "sbx: the command timed out after 1.5 s" in errors, errors
    assert "timeout=124" in done.stdout
    assert "killed=137" in done.stdout
    assert "ended timeout" not in errors
    assert "more=2" in done.stdout and f"1<=x<={8 * MIB}" in errors  # refused before it runs


async def test_output_prints_a_past_commands_output_and_exit(
    airlock: Airlock, tenant: Tenant
) -> None:
    sandbox = await airlock.sandbox(tenant)
    code = "import sys; print('out line'); print('err line', file=sys.stderr); sys.exit(3)"
    done = await bash(
        f'sbx exec {sandbox.id} -- python3 -c "{code}" >/dev/null 2>&1\n'
        f"sbx exec {sandbox.id} --timeout 1 -- sh -c 'echo before; sleep 30' >/dev/null 2>&1\n"
        f"sbx history {sandbox.id} --json\n",
        airlock,
        tenant,
    )
    ids = {json.loads(line)["cmd"][0]: json.loads(line)["id"] for line in done.stdout.splitlines()}
    exited, timed_out = ids["python3"], ids["sh"]
    shown = await bash(
        f"sbx output {sandbox.id} {exited}; echo rc=$?\n"
        f"sbx output {sandbox.id} {timed_out}; echo rc=$?\n"
        f"sbx output {sandbox.id} {exited} --json\n"
        f"sbx output {sandbox.id} exe_nope; echo rc=$?\n",
        airlock,
        tenant,
    )
    no_traceback(shown)
    out = shown.stdout.splitlines()
    assert out[:4] == ["out line", "rc=3", "before", "rc=124"], shown.stdout
    record = json.loads(out[4])
    assert record["id"] == exited and record["exit_code"] == 3 and record["stderr"] == "err line\n"
    assert out[5] == "rc=1"
    assert "err line" in shown.stderr
    assert "sbx: the command timed out after 1 s" in shown.stderr
    assert "not_found" in shown.stderr


async def test_cp_into_directories_and_its_errors(
    airlock: Airlock, tenant: Tenant, tmp_path: Path
) -> None:
    sandbox = await airlock.sandbox(tenant)
    sid = sandbox.id
    (tmp_path / "note.txt").write_text("note\n")
    (tmp_path / "sub").mkdir()
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "four").write_text("four")
    done = await bash(
        f"cd {tmp_path} && set -e\n"
        f"sbx exec {sid} -- mkdir /work/dir\n"
        f"sbx cp note.txt {sid}:/work/\n"  # a trailing slash: into it, under its own name
        f"sbx cp note.txt {sid}:/work/dir\n"  # an existing directory: the same
        f"sbx cp note.txt {sid}:/work/renamed.txt\n"
        f"sbx exec {sid} -- sh -c 'cat /work/note.txt /work/dir/note.txt /work/renamed.txt'\n"
        f"sbx cp {sid}:/work/note.txt ./sub/\n"
        f"sbx cp {sid}:/work/dir/note.txt sub/again.txt\n"
        f"sbx cp {sid}:/work/renamed.txt .\n"
        f"sbx cp tree {sid}:/work/tree 2>&1\n"
        f"sbx cp {sid}:/work/tree ./back 2>&1\n",
        airlock,
        tenant,
    )
    no_traceback(done)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[:3] == ["note", "note", "note"], done.stdout
    assert (tmp_path / "sub" / "note.txt").read_text() == "note\n"
    assert (tmp_path / "sub" / "again.txt").read_text() == "note\n"
    assert (tmp_path / "renamed.txt").read_text() == "note\n"
    assert (tmp_path / "back" / "four").read_text() == "four"
    # The two directions of one directory report the same quantity: the bytes transferred.
    sent, received = (
        int(m) for m in re.findall(r": (\d+) bytes", "\n".join(done.stdout.splitlines()[3:]))
    )
    assert sent == received, done.stdout

    failures = {
        f"sbx cp missing.txt {sid}:/work/x": "missing.txt: no such file or directory",
        f"sbx cp {sid}:/work/missing.txt ./m.txt": f"{sid}:/work/missing.txt: no such file",
        f"sbx cp note.txt {sid}:/work/nodir/": f"{sid}:/work/nodir/: no such directory",
        f"sbx cp {sid}:/work/note.txt ./nodir/": "./nodir/: no such directory",
        f"sbx cp {sid}:/work/note.txt ./a/b/c.txt": "a/b/c.txt: no such file or directory",
        f"sbx cp note.txt {sid}:/work/note.txt/": f"{sid}:/work/note.txt/: not a directory",
    }
    script = "".join(f"cd {tmp_path}; {line}; echo rc=$?\n" for line in failures)
    done = await bash(script, airlock, tenant)
    no_traceback(done)
    assert done.stdout.splitlines() == ["rc=1"] * len(failures), (done.stdout, done.stderr)
    said = done.stderr.lower().splitlines()
    assert len(said) == len(failures), done.stderr
    for line, (command, text) in zip(said, failures.items(), strict=True):
        assert line.startswith("sbx: ") and text.lower() in line, (command, line)
    assert not (tmp_path / "m.txt").exists() and not (tmp_path / "nodir").exists()


async def test_ls_shows_live_sandboxes_with_whole_ids(airlock: Airlock, tenant: Tenant) -> None:
    live = await airlock.sandbox(tenant)
    gone = await airlock.sandbox(tenant)
    done = await bash(
        f"sbx delete {gone.id} --yes 2>/dev/null\n"
        "sbx ls\necho --\nsbx ls --all\necho --\nsbx ls --json\n",
        airlock,
        tenant,
    )
    assert done.returncode == 0, done.stderr
    default, every, as_json = (part.strip().splitlines() for part in done.stdout.split("--\n"))
    assert [line.split()[0] for line in default[1:]] == [live.id]
    assert sorted(line.split()[0] for line in every[1:]) == sorted([live.id, gone.id])
    assert {json.loads(line)["id"] for line in as_json} == {live.id}
    # The columns line up under their headings, however long the ids.
    for table in (default, every):
        at = table[0].index("STATE")
        for row in table[1:]:
            assert row[at - 1] == " " and row[at] != " ", table
