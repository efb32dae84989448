"""Real projects' pull requests, reviewed end to end through HTTP on gVisor: for each project of
`corpus.PROJECTS` (source distributions from PyPI, pinned by version and sha256, cached) a
correct change, a bug its tests catch, the bug with those tests deleted, the bug with the
module patching pytest's reports, and the bug dressed up for a model.

On PostgreSQL the app asks a model that approves everything: only the correct change may be
approved. On SQLite no model is configured: the correct change is a COMMENT, never an
approval. Every other change is REQUEST_CHANGES on both, each for its own named reason, and
every project's own suite must read as trusted at the base (subtests, doctests, skips,
parametrisation and all), or there is no baseline to judge against. PostgreSQL reviews every
project; the SQLite smoke set those of `ON_SQLITE`, one for each way a suite's results are
read (pytest with subtests, doctests, `python -m unittest`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from service.db import migrate
from tests.conftest import Api, database_kind
from tests.reviews import corpus
from tests.reviews.conftest import ModelServer, git, migrated_database, own_state, serving, wait_for

BOUND_S = 900.0
ON_SQLITE = ("more-itertools", "toolz", "pyasn1")


def _projects() -> list[corpus.Project]:
    if database_kind() == "sqlite":
        return [p for p in corpus.PROJECTS if p.name in ON_SQLITE]
    return corpus.PROJECTS


def _repo(root: Path, project: corpus.Project) -> Path:
    """The project's sdist on `main`, and each change on a branch `pr-<kind>` of its own."""
    repo = root / project.name
    repo.mkdir(parents=True)
    base = corpus.unpack(project)
    git(repo, "init", "--quiet", "--initial-branch=main")
    corpus.write_tree(repo, base)
    git(repo, "add", "--all")
    git(repo, "commit", "--quiet", "-m", f"{project.name} {project.version}")
    for kind in corpus.KINDS:
        git(repo, "checkout", "--quiet", "-b", f"pr-{kind}", "main")
        corpus.write_tree(repo, corpus.change(project, kind, base))
        git(repo, "add", "--all")
        git(repo, "commit", "--quiet", "-m", f"pr-{kind}")
        git(repo, "checkout", "--quiet", "main")
    return repo


@pytest.fixture(scope="module")
async def corpus_api(
    review_state: Path, model_server: ModelServer, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Api]:
    async with own_state(review_state, tmp_path_factory, "review-corpus-state") as state:
        model: dict[str, Any] = {}
        if database_kind() == "sqlite":
            url = f"sqlite+aiosqlite:///{state / 'corpus.db'}"
            await asyncio.to_thread(migrate.upgrade, url)
            async with serving(state, url, **model) as api:
                yield api
            return
        model = {"llm_base_url": model_server.base_url, "llm_api_key": "sk-corpus",
                 "llm_model": "approver", "llm_timeout_s": 20}  # fmt: skip
        async with (
            migrated_database("airlock_review_corpus") as url,
            serving(state, url, **model) as api,
        ):
            yield api


class _Errors(logging.Handler):
    """The service's error logs while the reviews run, tracebacks included: a review that ends
    in an internal error names only the exception's type in its report."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.setFormatter(logging.Formatter("%(name)s: %(message)s"))
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


ERRORS = _Errors()


@pytest.fixture(scope="module")
async def reports(
    corpus_api: Api, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[dict[tuple[str, str], dict[str, Any]]]:
    logging.getLogger().addHandler(ERRORS)
    try:
        yield await _reviewed(corpus_api, tmp_path_factory)
    finally:
        logging.getLogger().removeHandler(ERRORS)


async def _reviewed(
    corpus_api: Api, tmp_path_factory: pytest.TempPathFactory
) -> dict[tuple[str, str], dict[str, Any]]:
    root = tmp_path_factory.mktemp("corpus")
    projects = _projects()
    reviews = len(projects) * len(corpus.KINDS)
    # About 15 execs a review, and nearly all of them within a few minutes.
    tenant = await corpus_api.tenant(max_queued_reviews=reviews, execs_per_minute=20 * reviews)
    ids: dict[tuple[str, str], str] = {}
    for project in projects:
        repo = await asyncio.to_thread(_repo, root, project)
        for kind in corpus.KINDS:
            body = {"repo": str(repo), "base": "main", "head": f"pr-{kind}", "test": project.test}
            r = await corpus_api.client.post("/v1/reviews", json=body, headers=tenant.headers)
            assert r.status_code == 202, r.text
            ids[(project.name, kind)] = r.json()["id"]
    done = await asyncio.gather(*(wait_for(corpus_api, tenant, i, BOUND_S) for i in ids.values()))
    found = dict(zip(ids, done, strict=True))
    print(_table(found))
    return found


def _table(found: dict[tuple[str, str], dict[str, Any]]) -> str:
    lines = ["project | version | tests at the base | " + " | ".join(corpus.KINDS)]
    for project in [p for p in corpus.PROJECTS if (p.name, "correct") in found]:
        base = (found[(project.name, "correct")].get("gate") or {}).get("base") or {}
        counts = ", ".join(f"{n} {name}" for name, n in base.items() if n) or "no baseline"
        verdicts = [str(found[(project.name, kind)]["verdict"]) for kind in corpus.KINDS]
        lines.append(f"{project.name} | {project.version} | {counts} | " + " | ".join(verdicts))
    return "\n".join(lines)


CASES = [
    pytest.param(
        project,
        kind,
        marks=[pytest.mark.sqlite] if project.name in ON_SQLITE else [],
        id=f"{project.name}-{kind}",
    )
    for project in corpus.PROJECTS
    for kind in corpus.KINDS
]


def _regressions(report: dict[str, Any]) -> dict[str, str]:
    return {r["test"]: r["head"] for r in report["gate"]["regressions"]}


@pytest.mark.parametrize(("project", "kind"), CASES)
async def test_each_change_gets_the_right_verdict(
    reports: dict[tuple[str, str], dict[str, Any]], project: corpus.Project, kind: str
) -> None:
    if (project.name, kind) not in reports:
        pytest.fail(f"{project.name} is reviewed on PostgreSQL only (SQLite: {ON_SQLITE})")
    report = reports[(project.name, kind)]
    assert report["state"] == "finished", (report["error"], report["stages"], ERRORS.lines)
    gate = report["gate"]
    # The project's own suite read as trusted at the base: there is a baseline.
    assert gate["base"] is not None and gate["base"]["passed"] > 0, gate["findings"]
    assert gate["infrastructure"] == [], gate["infrastructure"]
    if kind == "correct":
        expected = "APPROVE" if report["model"] else "COMMENT"
        assert report["verdict"] == expected, report["reasoning"]
        assert gate["approvable"] and gate["reaches"] == [] and gate["regressions"] == []
        assert gate["head"]["passed"] > gate["base"]["passed"]  # its new tests ran and passed
        return
    assert report["verdict"] == "REQUEST_CHANGES", report["reasoning"]
    assert not gate["approvable"]
    regressions = _regressions(report)
    if kind in ("bug", "injection"):
        for test in project.catches:
            assert regressions.get(test) == "failed", (test, regressions)
    elif kind == "deletes":
        assert gate["failing"] == [], gate["failing"]
        for test in project.catches:
            assert regressions.get(test) == "missing", (test, regressions)
    else:
        reach = [r for r in gate["reaches"] if r.startswith(f"{project.module} reaches into")]
        assert any("from_item_and_call" in r for r in reach), gate["reaches"]
        if project.test[2] == "pytest":
            # Under pytest the tampering worked (nothing failed), and the diff gave it away.
            assert gate["failing"] == [] and regressions == {}, gate
