"""`airlock doctor` says whether templates can be snapshotted here, and what the pool does."""

from __future__ import annotations

import pytest

from service.runtime import doctor
from service.runtime.config import RuntimeConfig
from service.settings import Settings
from tests.templates.conftest import new_state


@pytest.mark.parametrize("snapshots", ["auto", "off"])
async def test_doctor_reports_snapshots(
    tmp_path_factory: pytest.TempPathFactory, snapshots: str
) -> None:
    state = new_state(tmp_path_factory, "doctor")
    report = doctor.Report()
    settings = Settings(state_dir=state, runtime="gvisor", template_snapshots=snapshots)
    await doctor.snapshot_check(report, RuntimeConfig.from_settings(settings))
    line = {c.name: c for c in report.checks}["snapshots"]
    assert line.ok
    if snapshots == "auto":
        assert "checkpoint + restore work" in line.detail
    else:
        assert "pre-starts members from the image" in line.detail
    assert "snapshots" in doctor.render(report)
