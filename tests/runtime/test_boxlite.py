"""BoxLite up to the boot boundary: option mapping, image preparation, typed failure.

End-to-end BoxLite behaviour is covered by the parametrized conformance tests, which run
wherever a BoxLite VM boots and skip elsewhere with the probe's diagnosis.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from service.runtime import (
    ExecRequest,
    PathNotFound,
    RuntimeUnavailable,
    SandboxInfo,
    SandboxSpec,
    images,
    select,
)
from service.runtime.boxlite import BoxliteRuntime, ProbeResult, box_options_kwargs


def test_option_mapping() -> None:
    spec = SandboxSpec(vcpus=1.5, memory_mib=768, disk_mib=1500, env={"A": "1"}, user="1000:1000")
    kwargs = box_options_kwargs(spec, Path("/images/default"))
    assert kwargs == {
        "rootfs_path": "/images/default",
        "cpus": 2,
        "memory_mib": 768,
        "disk_size_gb": 2,
        "env": [("A", "1")],  # BoxLite wants (name, value) tuples, not a dict
        "user": "1000:1000",
        "working_dir": "/work",
        "auto_remove": False,
    }
    assert box_options_kwargs(SandboxSpec(user="root"), Path("/x"))["user"] == "0:0"


def test_options_are_accepted_by_boxlite() -> None:
    boxlite = pytest.importorskip("boxlite")
    from service.runtime.boxlite import _box_options

    options = _box_options(SandboxSpec(env={"A": "1"}), Path("/images/default"))
    assert isinstance(options, boxlite.BoxOptions)
    assert options.env == [("A", "1")]
    assert options.cpus == 1 and options.memory_mib == 512


@pytest.fixture(scope="session")
async def fresh_probe(state_dir: Path) -> ProbeResult:
    """A probe run now (not from the cache), bounded by the probe's own timeout."""
    return await select.probe_boxlite(state_dir, refresh=True)


async def test_probe_prepares_the_local_image(fresh_probe: ProbeResult, state_dir: Path) -> None:
    assert fresh_probe.version is not None
    prepared = list((state_dir / "boxlite-probe" / "images").rglob("extracted"))
    assert prepared, "BoxLite did not prepare the local OCI layout"
    digest = images.get_image(state_dir, images.DEFAULT_IMAGE).digest
    assert any(digest.split(":")[1][:8] in str(p) for p in prepared)


async def test_unbootable_host_gives_typed_failure(
    fresh_probe: ProbeResult, state_dir: Path
) -> None:
    if fresh_probe.ok:
        pytest.skip("a BoxLite VM boots on this host; the failure path does not apply")
    assert fresh_probe.diagnosis
    with pytest.raises(RuntimeUnavailable) as failure:
        await BoxliteRuntime.open(state_dir, fresh_probe)
    assert failure.value.runtime == "boxlite"
    assert failure.value.diagnosis == fresh_probe.diagnosis
    assert "Error" in fresh_probe.diagnosis or "did not boot" in fresh_probe.diagnosis


class _LocalExecution:
    """Stands in for a BoxLite native execution by running the command on the host.

    Only the adapter's logic (line streams, cap, deadline, base64 transfer) is under test here;
    it says nothing about BoxLite itself.
    """

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.id = f"local-{proc.pid}"

    async def _lines(self, stream: asyncio.StreamReader | None) -> AsyncIterator[str]:
        assert stream is not None
        while line := await stream.readline():
            yield line.decode()

    def stdout(self) -> AsyncIterator[str]:
        return self._lines(self.proc.stdout)

    def stderr(self) -> AsyncIterator[str]:
        return self._lines(self.proc.stderr)

    def stdin(self) -> Any:
        proc = self.proc

        class Writer:
            async def send_input(self, data: bytes) -> None:
                assert proc.stdin is not None
                proc.stdin.write(data)
                await proc.stdin.drain()

            async def close(self) -> None:
                assert proc.stdin is not None
                proc.stdin.close()

        return Writer()

    async def wait(self) -> Any:
        code = await self.proc.wait()
        return type("Result", (), {"exit_code": code, "error_message": None})()

    async def kill(self) -> None:
        self.proc.kill()


class _LocalBox:
    id = "local-box"

    async def exec(
        self, cmd: str, args: list[str], env: Any, tty: bool, user: Any, limit_s: int, cwd: str
    ) -> _LocalExecution:
        proc = await asyncio.create_subprocess_exec(
            cmd,
            *args,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        return _LocalExecution(proc)


def _adapter(tmp_path: Path) -> BoxliteRuntime:
    runtime = BoxliteRuntime(tmp_path, runtime=None)
    info = SandboxInfo(
        id="local-box",
        runtime="boxlite",
        image="default",
        image_digest="x",
        spec=SandboxSpec(),
        state="running",
        created_at=0.0,
    )
    runtime._boxes["local-box"] = (_LocalBox(), info)
    return runtime


async def test_adapter_exec_cap_and_deadline(tmp_path: Path) -> None:
    runtime = _adapter(tmp_path)
    flood = ExecRequest(argv=["sh", "-c", "yes | head -c 100000; echo e >&2"], output_cap=1000)
    result = await runtime.run("local-box", flood)
    assert (result.outcome, result.exit_code) == ("exited", 0)
    assert len(result.stdout) == 1000 and result.stdout_bytes == 100000
    assert result.stdout_truncated and result.stderr == b"e\n"
    slow = await runtime.run("local-box", ExecRequest(argv=["sleep", "30"], timeout_s=0.5))
    assert slow.outcome == "timeout" and slow.exit_code is None


async def test_adapter_files_round_trip(tmp_path: Path) -> None:
    runtime = _adapter(tmp_path)
    payload = os.urandom(300_000)
    target = str(tmp_path / "sub" / "blob")
    assert await runtime.write_file("local-box", target, payload) == len(payload)
    back = b"".join([c async for c in runtime.read_file("local-box", target)])
    assert back == payload
    names = [e.name for e in await runtime.list_files("local-box", str(tmp_path / "sub"))]
    assert names == ["blob"]
    with pytest.raises(PathNotFound):
        [c async for c in runtime.read_file("local-box", str(tmp_path / "missing"))]
