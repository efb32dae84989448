"""Where the base's tests run: in a second sandbox at the same time as the head's steps, in the
head's sandbox first when the tenant may not have a second one, and not at all when an earlier
review of the same base (same commit, commands, sandbox) left its results; the kept results
still judge the head. Through HTTP on gVisor."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import Api, Tenant
from tests.reviews.conftest import BILLING, BROKEN_BILLING, TESTS, git, make_repo, review, stages

TEST = ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider"]


def _sandbox_ids(report: dict) -> set[str]:
    return {e for e in stages(report)["cleanup"]["detail"].split(" destroyed")[0].split(", ")}


async def test_a_kept_baseline_judges_the_next_review_of_the_same_base(
    rapi: Api, tmp_path: Path
) -> None:
    tenant = await rapi.tenant()
    repo = make_repo(tmp_path, {"billing.py": BILLING, "test_billing.py": TESTS}, {"x.txt": "1"})
    git(repo, "checkout", "--quiet", "-b", "pr-43", "main")
    (repo / "billing.py").write_text(BROKEN_BILLING)
    git(repo, "commit", "--quiet", "-am", "pr-43")
    git(repo, "checkout", "--quiet", "main")

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
