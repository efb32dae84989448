"""The test gate: whether the tests allow an approval at all, decided on the host before the
model is asked (the model can only turn an approvable change down, never lift the gate).

A change can be approved from its tests only when all of these hold:
- its Python code reaches into nothing that produces its own results (`reaches.py`: the
  runner, the interpreter's import and exit machinery, tracing, code built at run time, the
  results channel) more than the base's did;
- it changes no test infrastructure: no conftest.py, pytest/tox/nox settings, interpreter
  start-up hooks (`*.pth`, sitecustomize), modules that shadow pytest or the standard library
  where the tests import from, and it loads no pytest plugin the base did not (code there
  decides how the tests run and what they report, so the tests cannot vouch for it);
- the head's results can be trusted (`results.TestRun.problems` is empty) and hold tests;
- no test fails or errors at the head;
- the base's results were read, and every test that passes at the base passes at the head
  (failing, vanished, skipped or xfail-marked ones are named).

The changed paths and the config files' two versions come from git in the sandbox before any
of the head's code has run there.
"""

from __future__ import annotations

import configparser
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from service.reviews.results import ERROR, FAILED, PASSED, TestRun
from service.reviews.runs import Run

# Files whose code or settings drive pytest, wherever they are in the tree.
INFRA_NAMES = frozenset(
    {
        "conftest.py",
        "pytest.ini",
        ".pytest.ini",
        "pytest.toml",
        ".pytest.toml",
        "tox.ini",
        "noxfile.py",
        "sitecustomize.py",
        "usercustomize.py",
    }
)
# Shared config files: only their test sections count (a version bump is not infrastructure).
SECTIONED = frozenset({"pyproject.toml", "setup.cfg"})
# pytest and what it imports: a module of that name anywhere in the tree may shadow it.
PYTEST_MODULES = frozenset(
    {"pytest", "_pytest", "pluggy", "iniconfig", "packaging", "py", "exceptiongroup", "tomli"}
)
SHOWN = 50  # names listed in a finding; the report's lists are capped higher
LISTED = 500


@dataclass
class Regression:
    test: str
    base: str
    head: str  # failed | error | skipped | xfailed | missing


@dataclass
class Gate:
    findings: list[str] = field(default_factory=list)
    infrastructure: list[str] = field(default_factory=list)
    reaches: list[str] = field(default_factory=list)
    regressions: list[Regression] = field(default_factory=list)
    failing: list[str] = field(default_factory=list)
    base: dict[str, int] | None = None
    head: dict[str, int] | None = None

    @property
    def approvable(self) -> bool:
        return not self.findings

    def document(self) -> dict[str, Any]:
        return {
            "approvable": self.approvable,
            "findings": self.findings,
            "infrastructure": self.infrastructure[:LISTED],
            "reaches": self.reaches[:LISTED],
            "regressions": [vars(r) for r in self.regressions[:LISTED]],
            "failing": self.failing[:LISTED],
            "base": self.base,
            "head": self.head,
        }


Versions = tuple[str | None, str | None]


def infrastructure(changed: list[str], configs: dict[str, Versions | None]) -> list[str]:
    """The changed paths (and config sections) that are test infrastructure. `configs` holds
    the shared config files' (base, head) texts, None for a file that could not be read."""
    found = []
    for path in changed:
        name = PurePosixPath(path).name
        if name in INFRA_NAMES or name.endswith(".pth") or _shadows(path):
            found.append(path)
        elif name in SECTIONED:
            versions = configs.get(path)
            sections = ["unreadable"] if versions is None else _test_sections(name, *versions)
            found += [f"{path} [{section}]" for section in sections]
    return found


def _shadows(path: str) -> bool:
    """A Python file that may be imported in place of pytest or of the standard library."""
    pure = PurePosixPath(path)
    if pure.suffix not in (".py", ".pyc", ".so"):
        return False
    modules = [part.split(".", 1)[0] for part in pure.parts]
    if any(module in PYTEST_MODULES for module in modules):
        return True
    # The standard library can be shadowed from the directories on sys.path when tests run:
    # the repository's root and test directories (pytest's default import mode prepends them).
    first = modules[1] if len(modules) > 1 and modules[0].startswith("test") else modules[0]
    return first in sys.stdlib_module_names


def _test_sections(name: str, before: str | None, after: str | None) -> list[str]:
    read = _toml_sections if name == "pyproject.toml" else _cfg_sections
    old, new = read(before), read(after)
    if new is None or (old is None and before is not None):
        return ["unreadable"]
    old = old or {}
    keys = sorted(set(old) | set(new))
    return [key for key in keys if old.get(key) != new.get(key)]


def _toml_sections(text: str | None) -> dict[str, Any] | None:
    if text is None:
        return {}
    try:
        data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError):
        return None
    tool, project = _table(data, "tool"), _table(data, "project")
    entry_points = _table(project, "entry-points")
    plugins = _table(_table(tool, "poetry"), "plugins")
    sections = {f"tool.{key}": tool.get(key) for key in ("pytest", "tox", "nox", "hatch")}
    sections["project.entry-points.pytest11"] = entry_points.get("pytest11")
    sections["tool.poetry.plugins.pytest11"] = plugins.get("pytest11")
    return {key: value for key, value in sections.items() if value is not None}


def _table(data: dict[str, Any], key: str) -> dict[str, Any]:
    value = data.get(key)
    return value if isinstance(value, dict) else {}


def _cfg_sections(text: str | None) -> dict[str, Any] | None:
    if text is None:
        return {}
    parser = configparser.RawConfigParser(strict=False, interpolation=None)
    try:
        parser.read_string(text)
    except configparser.Error:
        return None
    found: dict[str, Any] = {}
    for section in parser.sections():
        if section in ("tool:pytest", "pytest", "tox:tox") or section.startswith("testenv"):
            found[section] = dict(parser.items(section))
    if parser.has_option("options.entry_points", "pytest11"):
        found["options.entry_points pytest11"] = parser.get("options.entry_points", "pytest11")
    return found


def evaluate(
    infra: list[str],
    base: TestRun | None,
    head: TestRun | None,
    head_run: Run,
    reaches: list[str] | None = None,
) -> Gate:
    gate = Gate(infrastructure=list(infra), reaches=list(reaches or []))
    if gate.reaches:
        gate.findings.append(
            f"Its code reaches into what produces its own test results ({_names(gate.reaches)}): "
            "tests that pass under such code vouch for nothing, so it needs a human review."
        )
    if head is not None and base is not None and base.trusted:
        extra = sorted(set(head.plugins) - set(base.plugins))
        gate.infrastructure += [f"pytest plugin {name} (not loaded at the base)" for name in extra]
    if gate.infrastructure:
        gate.findings.append(
            f"It changes the test infrastructure ({_names(gate.infrastructure)}): a change to "
            "how the tests run needs a human review, whatever the tests report."
        )
    if head_run.outcome != "exited":
        gate.findings.append(f"{_capital(head_run.describe('test run'))}.")
    if head is None:
        gate.findings.append("The head's tests left no results.")
        return gate
    gate.head = head.counts()
    if head.problems:
        problems = "; ".join(head.problems)
        gate.findings.append(f"The head's test results cannot be trusted: {problems}.")
    gate.failing = head.with_outcome(FAILED, ERROR)
    if head.collect_errors:
        errors = _names(head.collect_errors)
        gate.findings.append(f"Collecting the tests failed at the head: {errors}.")
    if gate.failing:
        gate.findings.append(f"{len(gate.failing)} tests fail at the head: {_names(gate.failing)}.")
    if not head.outcomes and not head.problems:
        gate.findings.append("The head ran no tests.")
    _compare(gate, base, head)
    return gate


def _compare(gate: Gate, base: TestRun | None, head: TestRun) -> None:
    if base is None or not base.trusted:
        why = "; ".join(base.problems) if base is not None else "the base's tests did not run"
        gate.findings.append(f"There is no baseline to compare with: {why}.")
        return
    gate.base = base.counts()
    for test in base.with_outcome(PASSED):
        now = head.outcomes.get(test, "missing")
        if now not in (PASSED, "xpassed"):
            gate.regressions.append(Regression(test, PASSED, now))
    if gate.regressions:
        gate.findings.append(
            f"{len(gate.regressions)} tests that pass at the base fail, vanish or are skipped "
            f"at the head: {_names([f'{r.test} ({r.head})' for r in gate.regressions])}."
        )


def _names(items: list[str]) -> str:
    shown = ", ".join(items[:SHOWN])
    return shown + (f" and {len(items) - SHOWN} more" if len(items) > SHOWN else "")


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]
