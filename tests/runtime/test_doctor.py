"""`airlock doctor` and the CLI wiring of the runtime commands."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from service.runtime import commands, doctor
from service.runtime.config import RuntimeConfig
from service.settings import Settings


async def test_doctor_reports_a_working_gvisor(state_dir: Path) -> None:
    async def database() -> str:
        return "test database"

    report = await doctor.diagnose(RuntimeConfig(state_dir), database, refresh_probe=False)
    by_name = {c.name: c for c in report.checks}
    assert by_name["gvisor"].ok and "gvisor" in report.usable
    assert report.chosen in report.usable
    assert by_name["runsc"].ok and "platform" in by_name["runsc"].detail
    assert by_name["database"].detail == "test database"
    assert by_name["cgroups"].detail in ("v1", "v2", "hybrid")
    text = doctor.render(report)
    assert "runtime:" in text and "boxlite" in text


async def test_doctor_fails_without_any_runtime(tmp_path: Path) -> None:
    async def broken() -> str:
        raise ConnectionRefusedError("no server")

    config = RuntimeConfig(tmp_path, runtime="gvisor")  # empty state dir: no image
    report = await doctor.diagnose(config, broken, refresh_probe=False)
    by_name = {c.name: c for c in report.checks}
    assert not report.ok
    assert not by_name["images"].ok and "image build" in (by_name["images"].fix or "")
    assert not by_name["database"].ok
    assert "NONE can work" in doctor.render(report)


def test_kvm_kind_is_reported() -> None:
    present, kind = doctor.kvm_info()
    assert isinstance(present, bool) and kind


def test_commands_register(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser(prog="airlock")
    sub = parser.add_subparsers(dest="command", required=True)
    commands.add_commands(sub, lambda: Settings(state_dir=tmp_path))
    args = parser.parse_args(["image", "list"])
    assert args.func(args, Settings(state_dir=tmp_path)) == 0
    assert capsys.readouterr().out == ""
    assert parser.parse_args(["doctor", "--cached-probe"]).cached_probe
    args = parser.parse_args(["image", "import", str(tmp_path / "nothing")])
    assert args.func(args, None) == 1  # settings from get_settings; typed failure, exit 1
