"""`airlock doctor` says whether templates can be snapshotted here, and what the pool does."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from service.runtime import doctor
from tests.templates.conftest import new_state


@dataclass
class DoctorSettings:
    state_dir: Path
    runtime: str = "gvisor"
    runsc_platform: str | None = None
    database_url: str = ""
    template_snapshots: str = "auto"


@pytest.mark.parametrize("snapshots", ["auto", "off"])
async def test_doctor_reports_snapshots(
    tmp_path_factory: pytest.TempPathFactory, snapshots: str
) -> None:
    state = new_state(tmp_path_factory, "doctor")
    report = doctor.Report()
    await doctor.snapshot_check(report, state, DoctorSettings(state, template_snapshots=snapshots))
    line = {c.name: c for c in report.checks}["snapshots"]
    assert line.ok
    if snapshots == "auto":
        assert "checkpoint + restore work" in line.detail
    else:
        assert "pre-starts members from the image" in line.detail
    assert "snapshots" in doctor.render(report)
