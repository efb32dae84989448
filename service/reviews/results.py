"""What a test run's results file says, read on the host as hostile input.

The file is written inside the sandbox by `results_plugin.py` as the tests run. Code of the
commit under test runs in the same process and as the same user, so it *can* write anything
there: these results are never enough for an approval on their own (`gate.py` adds the
test-infrastructure rule and the baseline). What this module guarantees is that a run which
is cut short, rewritten clumsily or simply not pytest reads as untrustworthy, never as green:
every oddity becomes a `problem`, and any problem blocks approval.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Annotated, Literal

import msgspec
from msgspec import Meta

MAX_TESTS = 50_000
MAX_ID = 2000
MAX_PLUGINS = 500
# A test's phases, and one record per subtest (`unittest`'s subTest, pytest's subtests).
MAX_RECORDS = 300_000
NO_TESTS = 5  # pytest's exit status when it collected nothing
PASSED, FAILED, ERROR, SKIPPED, XFAILED, XPASSED = (
    "passed",
    "failed",
    "error",
    "skipped",
    "xfailed",
    "xpassed",
)
OUTCOMES = (PASSED, FAILED, ERROR, SKIPPED, XFAILED, XPASSED)

TestId = Annotated[str, Meta(min_length=1, max_length=MAX_ID)]
Plugins = Annotated[list[Annotated[str, Meta(max_length=MAX_ID)]], Meta(max_length=MAX_PLUGINS)]


class Start(msgspec.Struct, tag="start", tag_field="t", forbid_unknown_fields=True):
    pytest: Annotated[str, Meta(max_length=100)]
    plugins: Plugins


class Collected(msgspec.Struct, tag="collected", tag_field="t", forbid_unknown_fields=True):
    ids: Annotated[list[TestId], Meta(max_length=MAX_TESTS)]


class CollectError(msgspec.Struct, tag="collect_error", tag_field="t", forbid_unknown_fields=True):
    id: Annotated[str, Meta(max_length=MAX_ID)]


class Report(msgspec.Struct, tag="report", tag_field="t", forbid_unknown_fields=True):
    id: TestId
    when: Literal["setup", "call", "teardown"]
    outcome: Literal["passed", "failed", "skipped"]
    xfail: bool
    # One subtest of the test's call: any number of them, reported during the call.
    sub: bool = False


class End(msgspec.Struct, tag="end", tag_field="t", forbid_unknown_fields=True):
    exitstatus: int
    plugins: Plugins


Record = Start | Collected | CollectError | Report | End
_DECODER = msgspec.json.Decoder(Record)


@dataclass
class TestRun:
    """One run's per-test outcomes, and every reason not to believe them."""

    outcomes: dict[str, str] = field(default_factory=dict)
    plugins: list[str] = field(default_factory=list)
    collect_errors: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    # Subtests reported, by outcome (a failed one fails its test).
    subtests: Counter[str] = field(default_factory=Counter)

    @property
    def trusted(self) -> bool:
        return not self.problems

    def counts(self) -> dict[str, int]:
        found = Counter(self.outcomes.values())
        return {name: found.get(name, 0) for name in OUTCOMES}

    def with_outcome(self, *wanted: str) -> list[str]:
        return sorted(test for test, outcome in self.outcomes.items() if outcome in wanted)


def unreadable(why: str) -> TestRun:
    return TestRun(problems=[why])


def parse(text: str, *, exit_code: int | None) -> TestRun:
    """The run in `text` (the results file), checked against the exit code the runtime saw."""
    if not text.strip():
        return unreadable(
            "the test run left no results (the test command did not run pytest, pytest did "
            "not load the review's plugin, or the run ended before pytest started)"
        )
    records: list[Record] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if len(records) > MAX_RECORDS:
            return unreadable("the results hold more records than any run of the tests makes")
        try:
            records.append(_DECODER.decode(line))
        except msgspec.DecodeError as exc:
            return unreadable(
                f"the results are not what the review's plugin writes (line {number}: {exc})"
            )
    return _reduce(records, exit_code)


def _reduce(records: list[Record], exit_code: int | None) -> TestRun:
    run = TestRun()
    kinds = Counter(type(record) for record in records)
    if kinds[Start] != 1 or kinds[Collected] > 1 or kinds[End] > 1:
        run.problems.append("the results hold more than one pytest session, or none")
        return run
    start = next(r for r in records if isinstance(r, Start))
    run.plugins = sorted(start.plugins)
    collected = next((r.ids for r in records if isinstance(r, Collected)), None)
    end = next((r for r in records if isinstance(r, End)), None)
    phases: dict[str, dict[str, Report]] = {}
    failed_subtests: set[str] = set()
    for record in records:
        if isinstance(record, CollectError):
            run.collect_errors.append(record.id or "(the session)")
        elif isinstance(record, Report) and record.sub:
            _subtest(run, record, phases.get(record.id, {}), failed_subtests)
        elif isinstance(record, Report):
            seen = phases.setdefault(record.id, {})
            if record.when in seen:
                run.problems.append(f"{record.id} has its {record.when} reported twice")
            seen[record.when] = record
    for test, seen in phases.items():
        run.outcomes[test] = _outcome(seen)
        if test in failed_subtests and run.outcomes[test] in (PASSED, SKIPPED, XPASSED):
            run.outcomes[test] = FAILED  # pytest fails a test that holds a failed subtest
    _check_shape(run, collected, phases)
    _check_end(run, end, exit_code)
    return run


def _subtest(run: TestRun, record: Report, seen: dict[str, Report], failed: set[str]) -> None:
    """A subtest runs inside its test's call: after the setup, before the call's own report."""
    if record.when != "call" or "setup" not in seen or "call" in seen:
        run.problems.append(f"{record.id} has a subtest reported outside its call")
        return
    outcome = SKIPPED if record.outcome == "skipped" else record.outcome
    run.subtests[XFAILED if record.xfail else outcome] += 1
    if record.outcome == "failed" and not record.xfail:
        failed.add(record.id)


def _outcome(seen: dict[str, Report]) -> str:
    setup, call, teardown = seen.get("setup"), seen.get("call"), seen.get("teardown")
    if setup is None or teardown is None:
        return ERROR  # a test whose phases did not all run ended abnormally
    if setup.outcome == "failed" or teardown.outcome == "failed":
        return ERROR
    if setup.outcome == "skipped":
        return XFAILED if setup.xfail else SKIPPED
    if call is None:
        return ERROR
    if call.outcome == "failed":
        return FAILED
    if call.outcome == "skipped":
        return XFAILED if call.xfail else SKIPPED
    return XPASSED if call.xfail else PASSED


def _check_shape(
    run: TestRun, collected: list[str] | None, phases: dict[str, dict[str, Report]]
) -> None:
    if collected is None:
        if not run.collect_errors:
            run.problems.append("pytest never finished collecting the tests")
        return
    if len(set(collected)) != len(collected):
        run.problems.append("a test id was collected twice")
    unreported = [test for test in collected if test not in phases]
    if unreported:
        run.problems.append(
            f"{len(unreported)} collected tests have no result, e.g. {unreported[0]}"
        )
        for test in unreported:
            run.outcomes[test] = ERROR
    stray = sorted(set(phases) - set(collected))
    if stray:
        run.problems.append(f"results for tests that were never collected, e.g. {stray[0]}")


def _check_end(run: TestRun, end: End | None, exit_code: int | None) -> None:
    if end is None:
        run.problems.append(
            "the run ended before pytest finished its session (its last record is missing)"
        )
        return
    if sorted(end.plugins) != run.plugins:
        added = sorted(set(end.plugins) - set(run.plugins))
        run.problems.append(f"plugins were registered during the run: {', '.join(added) or '?'}")
    if end.exitstatus != exit_code:
        run.problems.append(
            f"pytest finished with status {end.exitstatus} but the process exited with "
            f"{exit_code}: something ended the run its own way"
        )
    bad = run.with_outcome(FAILED, ERROR)
    if end.exitstatus == 0 and (bad or run.collect_errors):
        run.problems.append("pytest's status says all passed while tests failed")
    if end.exitstatus == NO_TESTS and not run.outcomes and not run.collect_errors:
        return  # an empty run: nothing to compare with (a head that runs no test is refused)
    if end.exitstatus not in (0, 1):
        run.problems.append(
            f"pytest ended with status {end.exitstatus} (interrupted, an internal or usage "
            "error, or no tests collected)"
        )
    if end.exitstatus == 1 and not (bad or run.collect_errors):
        run.problems.append("pytest's status says tests failed but no failure was recorded")
