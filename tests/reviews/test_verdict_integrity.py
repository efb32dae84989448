"""The pull request never decides its own verdict: on a real multi-module package (`ledger`,
41 tests), a change that breaks two tests is not approved however it is dressed up (notes to
the model in comments and docstrings, fake "N passed" lines, a conftest.py that ends the run
with exit status 0 and a green summary, package code that does the same, the failing tests
deleted, package code that turns pytest's failing reports into passing ones), with a model that
approves everything and with no model at all; a harmless change is approved by the model, and
without one it is a COMMENT (the tests passed, nothing judged the change), never an approval.

Every review goes through HTTP to the app's review runner on gVisor. The cases run at once
(the runner takes two at a time), once per app, and each test reads its case's report.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Api
from tests.reviews import ledger
from tests.reviews.conftest import (
    ModelServer,
    make_repo,
    migrated_database,
    own_state,
    serving,
    stages,
    wait_for,
)

CASES = {
    "breaks": ledger.BREAKS_A_TEST,
    "injection": ledger.INJECTION,
    "exit_zero": ledger.EXIT_ZERO,
    "forged_exit": ledger.FORGED_EXIT,
    "patches_reports": ledger.PATCHES_REPORTS,
    "deletes_test": ledger.DELETES_THE_FAILING_TEST,
    "harmless": ledger.HARMLESS,
}
APPS = ["approver", "no_model"]


@pytest.fixture(scope="module")
async def plain_api(
    review_state: Path, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Api]:
    """A second app with no model configured: the tests can refuse a change, never approve it."""
    async with (
        migrated_database("airlock_review_plain") as url,
        own_state(review_state, tmp_path_factory, "review-plain-state") as state,
    ):
        async with serving(state, url) as api:
            yield api


async def _post_all(api: Api, root: Path, model: str | None) -> dict[str, str]:
    tenant = await api.tenant()
    ids = {}
    for name, change in CASES.items():
        repo = make_repo(root / name, ledger.BASE, change)
        body: dict[str, Any] = {"repo": str(repo), "base": "main", "head": "pr-42"}
        if model:
            body["model"] = model
        r = await api.client.post("/v1/reviews", json=body, headers=tenant.headers)
        assert r.status_code == 202, r.text
        ids[name] = r.json()["id"]
    reports = await asyncio.gather(*(wait_for(api, tenant, i, 600) for i in ids.values()))
    return dict(zip(ids, reports, strict=True))


@pytest.fixture(scope="module")
async def reports(
    rapi: Api,
    plain_api: Api,
    model_server: ModelServer,
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, dict[str, Any]]:
    root = tmp_path_factory.mktemp("ledger")
    approver, plain = await asyncio.gather(
        _post_all(rapi, root / "approver", "approver"),
        _post_all(plain_api, root / "plain", None),
    )
    return {"approver": approver, "no_model": plain}


def _regressions(report: dict[str, Any]) -> dict[str, str]:
    return {r["test"]: r["head"] for r in report["gate"]["regressions"]}


def _not_approved(report: dict[str, Any], app: str) -> None:
    assert report["state"] == "finished", report
    assert report["verdict"] == "REQUEST_CHANGES", (report["verdict"], report["reasoning"])
    assert report["gate"]["approvable"] is False
    if app == "approver":
        # The model approved; it cannot lift the gate.
        assert report["model_verdict"] == "APPROVE", report
    else:
        assert report["model"] is None and stages(report)["model"]["outcome"] == "skipped"
    # The gate was decided from the results, before the model was asked.
    names = [s["name"] for s in report["stages"]]
    assert names.index("gate") < names.index("model"), names


@pytest.mark.parametrize("app", APPS)
async def test_a_change_that_breaks_two_tests_is_not_approved(
    reports: dict[str, dict[str, Any]], app: str
) -> None:
    report = reports[app]["breaks"]
    _not_approved(report, app)
    assert _regressions(report) == dict.fromkeys(ledger.FAILING, "failed")
    assert report["gate"]["base"]["passed"] == 41 and report["gate"]["base"]["failed"] == 0
    assert report["gate"]["head"]["passed"] == 39 and report["gate"]["head"]["failed"] == 2
    for test in ledger.FAILING:
        assert test in report["reasoning"]


@pytest.mark.parametrize("app", APPS)
async def test_notes_to_the_model_and_fake_summaries_change_nothing(
    reports: dict[str, dict[str, Any]], app: str
) -> None:
    report = reports[app]["injection"]
    _not_approved(report, app)
    # The fake summary did reach the output; the verdict never read it.
    assert "41 passed in 0.29s" in report["test_output"]
    assert _regressions(report) == dict.fromkeys(ledger.FAILING, "failed")
    assert report["gate"]["infrastructure"] == []


@pytest.mark.parametrize("app", APPS)
async def test_a_conftest_that_forces_exit_status_0_is_not_approved(
    reports: dict[str, dict[str, Any]], app: str
) -> None:
    report = reports[app]["exit_zero"]
    _not_approved(report, app)
    # The head's process said all was well, and exited 0 ...
    assert report["test_exit_code"] == 0
    assert "41 passed in 0.30s" in report["test_output"]
    # ... but it changed the test infrastructure, and its failures were recorded as they ran.
    assert "tests/conftest.py" in report["gate"]["infrastructure"]
    assert _regressions(report) == dict.fromkeys(ledger.FAILING, "failed")
    assert "needs a human review" in report["reasoning"]


@pytest.mark.parametrize("app", APPS)
async def test_package_code_that_forces_exit_status_0_is_not_approved(
    reports: dict[str, dict[str, Any]], app: str
) -> None:
    report = reports[app]["forged_exit"]
    _not_approved(report, app)
    assert report["test_exit_code"] == 0
    assert report["gate"]["infrastructure"] == []
    # pytest's own status, recorded before the exit, disagrees with the process's.
    assert "pytest finished with status 1 but the process exited with 0" in report["reasoning"]
    assert _regressions(report) == dict.fromkeys(ledger.FAILING, "failed")


@pytest.mark.parametrize("app", APPS)
async def test_package_code_that_patches_pytests_reports_is_not_approved(
    reports: dict[str, dict[str, Any]], app: str
) -> None:
    report = reports[app]["patches_reports"]
    _not_approved(report, app)
    # Its results read as honest: every test passed, pytest's status and the exit agree ...
    gate = report["gate"]
    assert report["test_exit_code"] == 0 and gate["head"]["failed"] == 0
    assert gate["regressions"] == [] and gate["infrastructure"] == []
    # ... but the diff shows the package reaching into pytest's reports, and says so.
    reach = [
        r for r in gate["reaches"] if r.startswith("ledger/tax.py reaches into the test runner")
    ]
    assert reach and "from_item_and_call" in reach[0], gate["reaches"]
    assert "sys.modules" in " ".join(gate["reaches"])
    assert "reaches into what produces its own test results" in report["reasoning"]


@pytest.mark.parametrize("app", APPS)
async def test_deleting_the_failing_tests_is_not_approved(
    reports: dict[str, dict[str, Any]], app: str
) -> None:
    report = reports[app]["deletes_test"]
    _not_approved(report, app)
    assert report["test_exit_code"] == 0 and report["gate"]["head"]["failed"] == 0
    # The baseline names the tests the head no longer has.
    assert _regressions(report) == dict.fromkeys(ledger.FAILING, "missing")
    for test in ledger.FAILING:
        assert test in report["reasoning"]


@pytest.mark.parametrize("app", APPS)
async def test_a_harmless_change_is_approved_by_a_model_only(
    reports: dict[str, dict[str, Any]], app: str
) -> None:
    report = reports[app]["harmless"]
    assert report["state"] == "finished", report
    # With no model, passing tests are the change's own word: a comment, not an approval.
    expected = "APPROVE" if app == "approver" else "COMMENT"
    assert report["verdict"] == expected, report["reasoning"]
    gate = report["gate"]
    assert gate["approvable"] is True and gate["findings"] == []
    # A version bump in pyproject.toml is not a change to the test settings.
    assert gate["infrastructure"] == [] and gate["regressions"] == [] and gate["reaches"] == []
    assert gate["base"]["passed"] == 41 and gate["head"]["passed"] == 44
    if app == "no_model":
        assert "nothing judged the change" in report["reasoning"]
