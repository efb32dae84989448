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

With `--install N`, N more reviews (by fresh tenants allowed two sandboxes) carry the project's
own `make requirements`, offline: its development requirements (sphinx, mypy, ruff, coverage,
twine, flit: 64 wheels, pinned below, fetched from PyPI once and cached, committed beside the
code) and then the project itself, editable. Each review's time and its stages' are printed;
then `--concurrent` of them are posted at once.

    .venv/bin/python bench/reviews.py [--rounds 3] [--concurrent 5] [--install 0] [--json PATH]

Uses PostgreSQL when AIRLOCK_TEST_PG_ADMIN_URL is set, otherwise the embedded SQLite.
`--json PATH` also writes the tables to PATH for `bench/compare.py` (bench/results/README.md).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
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
from bench.tables import Better, Column, Label, Report, json_argument  # noqa: E402
from tests.reviews import corpus  # noqa: E402

PROJECT = next(p for p in corpus.PROJECTS if p.name == "more-itertools")
TEST = ["python", "-m", "pytest", "-q", "tests"]
MODES = ("one sandbox", "two sandboxes", "kept baseline")
INSTALL = ["/bin/sh", "-c", "python -m pip install --quiet --no-index --find-links wheels "
           "-r requirements/development.txt && python -m pip install --quiet --no-index "
           "--find-links wheels --editable ."]  # fmt: skip
# What requirements/development.txt (and flit_core, its build backend) resolved to for Python
# 3.11 on x86_64 Linux on 2026-12-05.
WHEELS = """accessible_pygments==0.0.5 alabaster==1.0.0 ast_serialize==0.13.1 babel==2.19.0
backports.tarfile==1.2.0 beautifulsoup4==4.15.0 certifi==2026.10.19.post1 cffi==2.1.1
charset_normalizer==3.5.3 coverage==7.18.0 cryptography==50.0.2 docutils==0.22.4 flit==3.12.0
flit_core==3.12.0 furo==2025.12.19 id==1.6.1 idna==3.20 imagesize==2.0.1
importlib_metadata==10.2.0 jaraco.classes==3.4.0 jaraco_context==6.1.2 jaraco_functools==4.6.0
jeepney==0.9.0 jinja2==3.1.6 keyring==25.7.0 lazy_importer==0.1.0 librt==0.17.0
markdown_it_py==4.3.0 markupsafe==3.0.4 mdurl==0.1.2 more_itertools==11.2.1 mypy==2.4.1
mypy_extensions==1.2.0 nh3==0.3.8 packaging==26.4 pathspec==1.1.1 pip==26.3 pycparser==3.12
pygments==2.21.0 readme_renderer==46.0 requests==2.34.2 requests_toolbelt==1.0.0 rfc3986==2.0.0
rich==15.0.0 roman_numerals==4.1.0 ruff==0.17.6 secretstorage==3.5.0 setuptools==84.2.1
snowballstemmer==3.1.1 soupsieve==2.10 sphinx==9.0.4 sphinx_basic_ng==1.0.0b2
sphinxcontrib_applehelp==2.0.0 sphinxcontrib_devhelp==2.0.0 sphinxcontrib_htmlhelp==2.1.0
sphinxcontrib_jsmath==2.0.0 sphinxcontrib_qthelp==2.0.0 sphinxcontrib_serializinghtml==2.0.0
tomli_w==1.2.0 twine==7.0.0 typing_extensions==4.16.0 urllib3==2.8.0 wheel==0.48.0
zipp==4.1.2""".split()
WHEEL_CACHE = corpus.CACHE.parent / "wheels" / "more-itertools-development"


def git(repo: Path, *args: str) -> None:
    who = {"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@example.com",
           "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@example.com"}  # fmt: skip
    env = {"PATH": os.environ["PATH"], "HOME": str(repo), **who}
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)


def wheels() -> Path:
    """The pinned wheels, from the cache or from PyPI."""
    done = WHEEL_CACHE / ".complete"
    if not done.exists():
        WHEEL_CACHE.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary",
             ":all:", "--python-version", "3.11", "--platform", "manylinux_2_28_x86_64",
             "--platform", "manylinux2014_x86_64", "--platform", "any",
             "--disable-pip-version-check", "-d", str(WHEEL_CACHE), *WHEELS],
            check=True, timeout=600,
        )  # fmt: skip
        done.touch()
    return WHEEL_CACHE


def make_repo(root: Path, heads: int, *, with_wheels: bool = False) -> Path:
    """The sdist on `main`; `head-N` each add one more helper with its tests. `with_wheels`: the
    development wheels committed in `wheels/`."""
    repo = root / ("repo-wheels" if with_wheels else "repo")
    repo.mkdir()
    base = corpus.unpack(PROJECT)
    git(repo, "init", "--quiet", "--initial-branch=main")
    corpus.write_tree(repo, base)
    if with_wheels:
        shutil.copytree(wheels(), repo / "wheels", ignore=shutil.ignore_patterns(".complete"))
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


async def review(
    client: httpx.AsyncClient, auth: dict[str, str], repo: Path, head: str, **extra: object
) -> float:
    return (await report(client, auth, repo, head, **extra))[0]


async def report(
    client: httpx.AsyncClient, auth: dict[str, str], repo: Path, head: str, **extra: object
) -> tuple[float, dict]:
    body = {"repo": str(repo), "base": "main", "head": head, "test": TEST, "timeout_s": 1200,
            "size": "medium", **extra}  # fmt: skip
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
        steps = "\n".join(f"{s['name']}: {s['detail']}" for s in got["stages"])
        raise SystemExit(f"review {review_id}: {got['state']} {got['verdict']}: "
                         f"{got['reasoning'] or got['error']}\n{steps}")  # fmt: skip
    return elapsed, got


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrent", type=int, default=5)
    parser.add_argument("--install", type=int, default=0)
    json_argument(parser)
    args = parser.parse_args()
    tables = Report("reviews", args)
    env = {"AIRLOCK_REVIEW_ALLOW_LOCAL_REPOS": "true"}
    with tempfile.TemporaryDirectory(prefix="airlock-bench-reviews-") as tmp:
        work = Path(tmp)
        repo = await asyncio.to_thread(make_repo, work, 2 * args.rounds)
        async with (
            local_server(env) as server,
            httpx.AsyncClient(base_url=server.base, timeout=60) as client,
        ):
            tables.database = server.db_kind
            print(f"more-itertools {PROJECT.version}, whole suite; database: {server.db_kind}")
            if args.install:
                wheeled = await asyncio.to_thread(make_repo, work, args.install, with_wheels=True)
                await installs(
                    client, server.operator, wheeled, args.install, args.concurrent, tables
                )
            if args.rounds:
                await rounds(client, server.operator, work, repo, args, tables)
    tables.write()


async def rounds(
    client: httpx.AsyncClient,
    operator: str,
    work: Path,
    repo: Path,
    args: argparse.Namespace,
    tables: Report,
) -> None:
    times: dict[str, list[float]] = {"native": [], **{mode: [] for mode in MODES}}
    table = tables.table(
        "review and native run",
        Label("round", 5, ">"),
        # this machine's own run of the suite, outside Airlock: context for the ratios
        Column("native s", "s", Better.NEITHER, width=10),
        *(Column(f"{m} s", "s", Better.LOWER, width=17) for m in MODES),
    )
    table.heading()
    for n in range(args.rounds):
        times["native"].append(await asyncio.to_thread(native, work))
        one = await tenant(client, operator, 1)
        times["one sandbox"].append(await review(client, one, repo, f"head-{2 * n}"))
        two = await tenant(client, operator, 4)
        times["two sandboxes"].append(await review(client, two, repo, f"head-{2 * n}"))
        times["kept baseline"].append(await review(client, two, repo, f"head-{2 * n + 1}"))
        table.row(n + 1, *(times[k][-1] for k in ("native", *MODES)))
    medians = {k: statistics.median(v) for k, v in times.items()}
    table.row("median", *(medians[k] for k in ("native", *MODES)))
    # printed under the table above, one figure under each mode
    over_native = tables.table(
        "review over native, medians",
        Label("", 15, ">"),
        *(Column(m, "x", Better.LOWER, width=16, format=".2f", suffix="x") for m in MODES),
    )
    over_native.row("÷ native", *(medians[m] / medians["native"] for m in MODES))
    if args.concurrent:
        await burst(client, operator, repo, args.concurrent, 2 * args.rounds,
                    medians["native"], tables)  # fmt: skip


async def installs(
    client: httpx.AsyncClient, operator: str, repo: Path, count: int, at_once: int, tables: Report
) -> None:
    # printed in sentences; kept as a table
    table = tables.table(
        "reviews with make requirements",
        Label("posted", 0),
        Column("median s", "s", Better.LOWER),
        Column("all done s", "s", Better.LOWER),
    )
    print("\n`make requirements` as the install step (two sandboxes allowed, no kept baseline)")
    took = []
    for n in range(count):
        auth = await tenant(client, operator, 4)
        elapsed, got = await report(client, auth, repo, f"head-{n}", install=INSTALL)
        took.append(elapsed)
        steps = ", ".join(
            f"{s['name']} {s['duration_ms'] / 1000:.1f}" for s in got["stages"]
            if s["outcome"] != "skipped"
        )  # fmt: skip
        print(f"{n + 1:>3}: {elapsed:.1f} s ({steps})")
    table.record("one at a time", statistics.median(took), None)
    print(f"median {statistics.median(took):.1f} s")
    if not at_once:
        return
    tenants = [await tenant(client, operator, 4) for _ in range(at_once)]
    start = time.monotonic()
    took = await asyncio.gather(*(
        review(client, auth, repo, f"head-{n % count}", install=INSTALL)
        for n, auth in enumerate(tenants)
    ))  # fmt: skip
    wall = time.monotonic() - start
    table.record(f"{at_once} at once", statistics.median(took), wall)
    print(f"{at_once} at once, each s: " + ", ".join(f"{t:.1f}" for t in sorted(took)))
    print(f"median {statistics.median(took):.1f} s, all done after {wall:.1f} s")


async def burst(
    client: httpx.AsyncClient,
    operator: str,
    repo: Path,
    count: int,
    heads: int,
    native_s: float,
    tables: Report,
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
    # printed in sentences; kept as a table
    tables.table(
        "reviews at once",
        Label("posted", 0),
        Column("median s", "s", Better.LOWER),
        Column("median / native", "x", Better.LOWER, format=".2f"),
        Column("all done s", "s", Better.LOWER),
        Column("all done / native", "x", Better.LOWER, format=".2f"),
        Column("per review / native", "x", Better.LOWER, format=".2f"),
    ).record(f"{count} at once", median, median / native_s, wall, wall / native_s, per)
    print(
        f"median {median:.1f} s ({median / native_s:.2f}x native), all done after "
        f"{wall:.1f} s ({wall / native_s:.2f}x native, {per:.2f}x per review)"
    )


if __name__ == "__main__":
    asyncio.run(main())
