"""A review of a real project's whole test suite against running that suite natively once,
measured side by side in one run.

The project is more-itertools 10.8.0 (its sdist from PyPI, pinned and cached as the review
corpus does): 736 tests, about 20,000 unittest subtests. Each round, in turn:

- native: its tests with this machine's Python and pytest (plugins from elsewhere off), once;
- one sandbox: a review by a tenant allowed one sandbox, so the base's tests run first and
  the head's after them in the same sandbox (how every review ran before);
- two sandboxes: a review by a fresh tenant, so the base's tests run in a second sandbox at
  the same time as the head's steps;
- kept baseline: a review of another head on the same base by the previous tenant, whose
  earlier review left the base's results: only the head's tests run.

A review's time is from its POST to its report's end (fetch, sandboxes, checkout, diff, both
runs, cleanup, gate). No model is configured. Prints each round and the medians, and each
review mode's median over native's. Then `--concurrent` reviews (5 by default; 0: none) are
posted at once, each by a fresh tenant allowed two sandboxes (no kept baseline), as a burst
of pull requests would come: each one's time, their median and the time until the last
finished, against native's median.

    .venv/bin/python bench/reviews.py [--rounds 3] [--concurrent 5]

Uses PostgreSQL when AIRLOCK_TEST_PG_ADMIN_URL is set, otherwise the embedded SQLite.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.api import local_server  # noqa: E402
from tests.reviews import corpus  # noqa: E402

PROJECT = next(p for p in corpus.PROJECTS if p.name == "more-itertools")
TEST = ["python", "-m", "pytest", "-q", "tests"]
MODES = ("one sandbox", "two sandboxes", "kept baseline")


def git(repo: Path, *args: str) -> None:
    who = {"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@example.com",
           "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@example.com"}  # fmt: skip
    env = {"PATH": os.environ["PATH"], "HOME": str(repo), **who}
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)


def make_repo(root: Path, heads: int) -> Path:
    """The sdist on `main`; `head-N` each add one more helper with its tests."""
    repo = root / "repo"
    repo.mkdir()
    base = corpus.unpack(PROJECT)
    git(repo, "init", "--quiet", "--initial-branch=main")
    corpus.write_tree(repo, base)
    git(repo, "add", "--all")
    git(repo, "commit", "--quiet", "-m", "base")
    for n in range(heads):
        git(repo, "checkout", "--quiet", "-b", f"head-{n}", "main")
        files = corpus.change(PROJECT, "correct", base)
        files = {path.replace("clamp_between", f"clamp_{n}"): text.replace(
            "clamp_between", f"clamp_{n}") for path, text in files.items()}  # fmt: skip
        corpus.write_tree(repo, files)
        git(repo, "add", "--all")
        git(repo, "commit", "--quiet", "-m", f"head {n}")
        git(repo, "checkout", "--quiet", "main")
    return repo


def native(work: Path) -> float:
    tree = work / "native"
    if not tree.exists():
        corpus.write_tree(tree, corpus.unpack(PROJECT))
    env = {"PATH": os.environ["PATH"], "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, *TEST[1:], "-p", "no:cacheprovider"],
        cwd=tree, env=env, capture_output=True, text=True,
    )  # fmt: skip
    elapsed = time.monotonic() - start
    if done.returncode != 0:
        raise SystemExit(f"the native run failed:\n{done.stdout[-2000:]}")
    return elapsed


async def tenant(client: httpx.AsyncClient, operator: str, sandboxes: int) -> dict[str, str]:
    quotas = {"max_sandboxes": sandboxes, "execs_per_minute": 100_000, "max_vcpus": 16,
              "max_exec_timeout_s": 3600}  # fmt: skip
    r = await client.post(
        "/v1/tenants",
        json={"name": f"bench-{time.monotonic_ns()}", "quotas": quotas},
        headers={"Authorization": f"Bearer {operator}"},
    )
    r.raise_for_status()
    return {"Authorization": f"Bearer {r.json()['api_key']}"}


async def review(client: httpx.AsyncClient, auth: dict[str, str], repo: Path, head: str) -> float:
    body = {"repo": str(repo), "base": "main", "head": head, "test": TEST, "timeout_s": 1200,
            "size": "medium"}  # fmt: skip
    start = time.monotonic()
    r = await client.post("/v1/reviews", json=body, headers=auth)
    r.raise_for_status()
    review_id = r.json()["id"]
    while True:
        await asyncio.sleep(0.5)
        got = (await client.get(f"/v1/reviews/{review_id}", headers=auth)).json()
        if got["state"] in ("finished", "failed"):
            break
    elapsed = time.monotonic() - start
    if got["verdict"] != "COMMENT":
        raise SystemExit(f"review {review_id}: {got['state']} {got['verdict']}: "
                         f"{got['reasoning'] or got['error']}")  # fmt: skip
    return elapsed


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrent", type=int, default=5)
    args = parser.parse_args()
    env = {"AIRLOCK_REVIEW_ALLOW_LOCAL_REPOS": "true"}
    with tempfile.TemporaryDirectory(prefix="airlock-bench-reviews-") as tmp:
        work = Path(tmp)
        repo = await asyncio.to_thread(make_repo, work, 2 * args.rounds)
        async with (
            local_server(env) as server,
            httpx.AsyncClient(base_url=server.base, timeout=60) as client,
        ):
            times: dict[str, list[float]] = {"native": [], **{mode: [] for mode in MODES}}
            print(f"more-itertools {PROJECT.version}, whole suite; database: {server.db_kind}")
            print(f"{'round':>5}{'native s':>10}" + "".join(f"{m + ' s':>17}" for m in MODES))
            for n in range(args.rounds):
                times["native"].append(await asyncio.to_thread(native, work))
                one = await tenant(client, server.operator, 1)
                times["one sandbox"].append(await review(client, one, repo, f"head-{2 * n}"))
                two = await tenant(client, server.operator, 4)
                times["two sandboxes"].append(await review(client, two, repo, f"head-{2 * n}"))
                times["kept baseline"].append(await review(client, two, repo, f"head-{2 * n + 1}"))
                row = [times[k][-1] for k in ("native", *MODES)]
                print(f"{n + 1:>5}{row[0]:>10.1f}" + "".join(f"{t:>17.1f}" for t in row[1:]))
            medians = {k: statistics.median(v) for k, v in times.items()}
            print(f"{'median':>5}{medians['native']:>10.1f}"
                  + "".join(f"{medians[m]:>17.1f}" for m in MODES))  # fmt: skip
            print(f"{'÷ native':>15}" + "".join(
                f"{medians[m] / medians['native']:>16.2f}x" for m in MODES))  # fmt: skip
            if args.concurrent:
                await burst(client, server.operator, repo, args.concurrent, 2 * args.rounds,
                            medians["native"])  # fmt: skip


async def burst(
    client: httpx.AsyncClient, operator: str, repo: Path, count: int, heads: int, native_s: float
) -> None:
    tenants = [await tenant(client, operator, 4) for _ in range(count)]
    start = time.monotonic()
    took = await asyncio.gather(*(
        review(client, auth, repo, f"head-{n % heads}") for n, auth in enumerate(tenants)
    ))  # fmt: skip
    wall = time.monotonic() - start
    median = statistics.median(took)
    print(f"\n{count} reviews at once (two sandboxes allowed each, no kept baseline)")
    print("each s: " + ", ".join(f"{t:.1f}" for t in sorted(took)))
    per = wall / count / native_s
    print(
        f"median {median:.1f} s ({median / native_s:.2f}x native), all done after "
        f"{wall:.1f} s ({wall / native_s:.2f}x native, {per:.2f}x per review)"
    )


if __name__ == "__main__":
    asyncio.run(main())
