"""Runtime selection and the cached BoxLite probe."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from service.runtime import SandboxRuntime, select
from service.runtime.boxlite import ProbeResult
from service.runtime.config import RuntimeConfig


def _cache(state_dir: Path, result: ProbeResult, key: str | None = None) -> None:
    payload = {"key": key or select.cache_key(), "at": 0, "result": result.__dict__}
    (state_dir / select.CACHE_FILE).write_text(json.dumps(payload))


async def test_explicit_choice(tmp_path: Path) -> None:
    choice = await select.choose(RuntimeConfig(tmp_path, runtime="gvisor"))
    assert choice.runtime == "gvisor"
    assert "AIRLOCK_RUNTIME=gvisor" in choice.reason


async def test_auto_uses_cached_probe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async def no_boot(*args: object) -> ProbeResult:
        raise AssertionError("a warm start must not boot a probe VM")

    monkeypatch.setattr(select.boxlite_runtime, "probe", no_boot)
    _cache(tmp_path, ProbeResult(False, "EngineError: The VM failed to start.", 12.0, "0.10.8"))
    choice = await select.choose(RuntimeConfig(tmp_path))
    assert choice.runtime == "gvisor"
    assert "VM failed to start" in choice.reason
    _cache(tmp_path, ProbeResult(True, "booted", 1.0, "0.10.8"))
    assert (await select.choose(RuntimeConfig(tmp_path))).runtime == "boxlite"


async def test_cache_is_keyed_by_kernel_and_version(tmp_path: Path) -> None:
    _cache(tmp_path, ProbeResult(True, "booted", 1.0, "0.10.8"), key="other-kernel|boxlite 0.1")
    assert select.cached_probe(tmp_path) is None
    _cache(tmp_path, ProbeResult(True, "booted", 1.0, "0.10.8"))
    assert select.cached_probe(tmp_path) == ProbeResult(True, "booted", 1.0, "0.10.8")


async def test_open_runtime_gvisor(state_dir: Path) -> None:
    runtime = await select.open_runtime(RuntimeConfig(state_dir, runtime="gvisor"))
    try:
        assert runtime.name == "gvisor"
        assert isinstance(runtime, SandboxRuntime)
    finally:
        await runtime.close()
