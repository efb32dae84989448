"""Where the base's tests run: in a second sandbox at the same time as the head's steps, in the
head's sandbox first when the tenant may not have a second one, and not at all when an earlier
review of the same base (same commit, commands, sandbox) left its results; the kept results
still judge the head. With an install step, the base's install runs once and a fork of that
sandbox runs the base's tests. Through HTTP on gVisor."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.conftest import Api, Tenant
from tests.reviews.conftest import (
    BILLING,
    BROKEN_BILLING,
    TESTS,
    git,
    make_repo,
    review,
    stages,
    wait_for,
)

TEST = ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider"]


def _with_a_breaking_change(tmp_path: Path) -> Path:
    """A repository whose pr-42 is good and whose pr-43 breaks a test that passes at main."""
    repo = make_repo(tmp_path, {"billing.py": BILLING, "test_billing.py": TESTS}, {"x.txt": "1"})
    git(repo, "checkout", "--quiet", "-b", "pr-43", "main")
    (repo / "billing.py").write_text(BROKEN_BILLING)
    git(repo, "commit", "--quiet", "-am", "pr-43")
    git(repo, "checkout", "--quiet", "main")
    return repo


def _sandbox_ids(report: dict) -> set[str]:
    return {e for e in stages(report)["cleanup"]["detail"].split(" destroyed")[0].split(", ")}


async def test_a_kept_baseline_judges_the_next_review_of_the_same_base(
    rapi: Api, tmp_path: Path
) -> None:
    tenant = await rapi.tenant()
    repo = _with_a_breaking_change(tmp_path)

    first = await review(rapi, tenant, repo=str(repo), head="pr-42", test=TEST)
    assert first["verdict"] == "APPROVE", first["reasoning"]
    assert "at the same time" in stages(first)["sandbox"]["detail"]
    assert stages(first)["baseline"]["outcome"] == "ok"
    assert len(_sandbox_ids(first)) == 2

    second = await review(rapi, tenant, repo=str(repo), head="pr-43", test=TEST)
    kept = f"kept from review {first['id']}"
    assert kept in stages(second)["sandbox"]["detail"], stages(second)["sandbox"]
    assert stages(second)["baseline"]["outcome"] == "skipped"
    assert kept in stages(second)["baseline"]["detail"]
    assert len(_sandbox_ids(second)) == 1
    # The kept results are the ones the head is judged against.
    assert second["verdict"] == "REQUEST_CHANGES"
    assert second["gate"]["base"]["passed"] == 2
    assert {(r["test"], r["head"]) for r in second["gate"]["regressions"]} == {
        ("test_billing.py::test_ten_percent", "failed")
    }

    # Another test command is another baseline; so is another tenant's review.
    other = await review(rapi, tenant, repo=str(repo), head="pr-43", test=[*TEST, "-x"])
    assert stages(other)["baseline"]["outcome"] != "skipped"
    stranger = await review(rapi, await rapi.tenant(), repo=str(repo), head="pr-43", test=TEST)
    assert stages(stranger)["baseline"]["outcome"] != "skipped"
    assert stranger["verdict"] == "REQUEST_CHANGES"


async def test_reviews_of_one_base_at_the_same_time_run_it_once(rapi: Api, tmp_path: Path) -> None:
    """Two reviews of the same base submitted together: the second to look waits for the
    first's run of the base, then is judged against what it kept."""
    tenant = await rapi.tenant()
    repo = _with_a_breaking_change(tmp_path)

    ids = []
    for head in ("pr-42", "pr-43"):
        body = {"repo": str(repo), "base": "main", "head": head, "test": TEST}
        r = await rapi.client.post("/v1/reviews", json=body, headers=tenant.headers)
        assert r.status_code == 202, r.text
        ids.append(r.json()["id"])
    good, bad = await asyncio.gather(*(wait_for(rapi, tenant, i) for i in ids))
    ran, waited = sorted((good, bad), key=lambda r: stages(r)["baseline"]["outcome"] == "skipped")
    assert stages(ran)["baseline"]["outcome"] == "ok", stages(ran)["baseline"]
    assert stages(waited)["baseline"]["outcome"] == "skipped", stages(waited)["baseline"]
    detail = stages(waited)["sandbox"]["detail"]
    assert f"kept from review {ran['id']}" in detail, detail
    assert f"waiting for review {ran['id']}, which ran the same base" in detail, detail
    assert len(_sandbox_ids(waited)) == 1
    # Each is judged against the one base run.
    assert (good["verdict"], bad["verdict"]) == ("APPROVE", "REQUEST_CHANGES")
    assert good["gate"]["base"] == bad["gate"]["base"]
    assert bad["gate"]["base"]["passed"] == 2


async def test_with_room_for_one_sandbox_the_base_runs_first_in_the_same_one(
    rapi: Api, tmp_path: Path
) -> None:
    tenant: Tenant = await rapi.tenant(max_sandboxes=1)
    repo = make_repo(
        tmp_path, {"billing.py": BILLING, "test_billing.py": TESTS}, {"billing.py": BROKEN_BILLING}
    )
    report = await review(rapi, tenant, repo=str(repo), head="pr-42", test=TEST)
    assert "in the same sandbox, first" in stages(report)["sandbox"]["detail"]
    names = [s["name"] for s in report["stages"]]
    assert names.index("diff") < names.index("baseline") < names.index("test")
    assert len(_sandbox_ids(report)) == 1
    assert report["verdict"] == "REQUEST_CHANGES"
    assert report["gate"]["base"]["passed"] == 2


# The install leaves a line per run in the home directory; the tests print those lines first.
INSTALLS = "/home/sandbox/installs"
RECORD_INSTALL = ["/bin/sh", "-c", f'echo "$PWD" >> {INSTALLS}']
SHOW_INSTALLS = ["/bin/sh", "-c", f"cat {INSTALLS}; exec python -m pytest -q -p no:cacheprovider"]


async def _install_runs(rapi: Api, tenant: Tenant, review_id: str) -> list[str]:
    """The sandboxes the review's install command ran in, one entry per run."""
    r = await rapi.client.get(
        "/v1/audit", params={"action": "exec.start", "limit": 200}, headers=tenant.headers
    )
    assert r.status_code == 200, r.text
    return [
        e["details"]["sandbox_id"]
        for e in r.json()["items"]
        if e["actor"] == f"review:{review_id}" and e["details"]["cmd"] == RECORD_INSTALL
    ]


async def test_with_an_install_the_base_installs_once_and_a_fork_of_it_runs_the_base(
    rapi: Api, tmp_path: Path
) -> None:
    tenant = await rapi.tenant()
    repo = make_repo(
        tmp_path, {"billing.py": BILLING, "test_billing.py": TESTS}, {"billing.py": BROKEN_BILLING}
    )
    report = await review(
        rapi, tenant, repo=str(repo), head="pr-42", install=RECORD_INSTALL, test=SHOW_INSTALLS
    )
    assert report["state"] == "finished", report
    assert "the base's tests in a fork of this sandbox" in stages(report)["sandbox"]["detail"]
    dependencies = stages(report)["dependencies"]
    assert dependencies["outcome"] == "ok", dependencies
    forked = dependencies["detail"].split("forked into ")[1].split()[0]
    assert _sandbox_ids(report) == {report["sandbox_id"], forked}
    assert f"in its own sandbox ({forked})" in stages(report)["baseline"]["detail"]
    names = [s["name"] for s in report["stages"]]
    assert names.index("diff") < names.index("dependencies") < names.index("install")
    # The install ran twice, both times in the head's sandbox (the base's, then the head's on
    # top of it), and never in the fork, which started with the base's in place.
    assert await _install_runs(rapi, tenant, report["id"]) == [report["sandbox_id"]] * 2
    assert "/work/base\n/work/repo\n" in report["test_output"], report["test_output"]
    # The fork's run of the base is what the head is judged against.
    assert report["gate"]["base"]["passed"] == 2
    assert {(r["test"], r["head"]) for r in report["gate"]["regressions"]} == {
        ("test_billing.py::test_ten_percent", "failed")
    }
    assert report["verdict"] == "REQUEST_CHANGES"
    r = await rapi.client.get(f"/v1/sandboxes/{forked}", headers=tenant.headers)
    assert r.json()["started_from"] == "fork" and r.json()["state"] == "stopped", r.json()


async def test_with_an_install_and_room_for_one_sandbox_the_base_runs_here_first(
    rapi: Api, tmp_path: Path
) -> None:
    tenant: Tenant = await rapi.tenant(max_sandboxes=1)
    repo = make_repo(
        tmp_path, {"billing.py": BILLING, "test_billing.py": TESTS}, {"billing.py": BROKEN_BILLING}
    )
    report = await review(
        rapi, tenant, repo=str(repo), head="pr-42", install=RECORD_INSTALL, test=SHOW_INSTALLS
    )
    assert report["state"] == "finished", report
    assert "no fork" in stages(report)["dependencies"]["detail"], stages(report)["dependencies"]
    names = [s["name"] for s in report["stages"]]
    assert names.index("dependencies") < names.index("baseline") < names.index("install")
    assert _sandbox_ids(report) == {report["sandbox_id"]}
    assert await _install_runs(rapi, tenant, report["id"]) == [report["sandbox_id"]] * 2
    assert report["gate"]["base"]["passed"] == 2
    assert report["verdict"] == "REQUEST_CHANGES"


async def test_an_install_that_fails_at_the_base_makes_no_fork(rapi: Api, tmp_path: Path) -> None:
    tenant = await rapi.tenant()
    base = {"billing.py": BILLING, "test_billing.py": TESTS, "broken": ""}
    repo = make_repo(tmp_path, base, {"billing.py": BROKEN_BILLING})
    git(repo, "checkout", "--quiet", "pr-42")
    git(repo, "rm", "--quiet", "broken")
    git(repo, "commit", "--quiet", "-m", "pr-42 mends the install")
    git(repo, "checkout", "--quiet", "main")
    install = ["/bin/sh", "-c", "test ! -e broken"]
    report = await review(rapi, tenant, repo=str(repo), head="pr-42", install=install, test=TEST)
    assert report["state"] == "finished", report
    assert stages(report)["dependencies"]["outcome"] == "failed"
    assert stages(report)["baseline"]["outcome"] == "skipped"
    assert _sandbox_ids(report) == {report["sandbox_id"]}
    assert stages(report)["install"]["outcome"] == "ok"
    assert report["verdict"] == "REQUEST_CHANGES"  # no trusted baseline: nothing to vouch for
