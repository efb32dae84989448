"""The results plugin under the real pytest (the version the sandbox image pins), on each way a
test suite reports: `unittest`'s subTest and pytest's subtests (passing, failing, skipped),
parametrisation, xfail and xpass (strict or not), skips, errors in fixtures and in collection,
doctests, and a `python -m pytest` run of a unittest-only module; and `python -m unittest` as a
review runs it (`results_unittest.py`). Each run's file is read by `results.parse` as the
review reads it, and must be trusted and say what the runner said.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from service.reviews import results
from service.reviews.inside import PLUGIN_SOURCE, UNITTEST_SOURCE, unittest_argv

STYLES = '''\
import unittest

import pytest


class Sums(unittest.TestCase):
    def test_every_subtest_passes(self):
        for n in range(5):
            with self.subTest(n=n):
                self.assertEqual(n + 0, n)

    def test_one_subtest_fails(self):
        for n in range(3):
            with self.subTest(n=n):
                self.assertNotEqual(n, 1)

    @unittest.skip("not on this platform")
    def test_skipped(self):
        pass

    @unittest.expectedFailure
    def test_expected_failure(self):
        self.assertEqual(1, 2)


def test_subtests_fixture(subtests):
    for n in range(3):
        with subtests.test(n=n):
            assert n < 2


def test_subtests_fixture_all_pass(subtests):
    for n in range(3):
        with subtests.test(n=n):
            assert n < 3


def test_a_skipped_subtest(subtests):
    with subtests.test("skipped"):
        pytest.skip("nothing to do")


@pytest.mark.parametrize("n", [1, 2, 3])
def test_parametrised(n):
    assert n != 3


@pytest.mark.xfail(reason="known")
def test_xfail():
    assert False


@pytest.mark.xfail(reason="fixed since")
def test_xpass():
    pass


@pytest.mark.xfail(strict=True, reason="must fail")
def test_strict_xpass():
    pass


@pytest.fixture
def broken():
    raise RuntimeError("fixture failed")


def test_fixture_error(broken):
    pass


def test_skip_inside():
    pytest.skip("no")


def twice(n):
    """
    >>> twice(2)
    4
    >>> twice(3)
    7
    """
    return 2 * n
'''


def _run(
    tmp_path: Path, *args: str, command: tuple[str, ...] = ("-m", "pytest", "-q")
) -> tuple[results.TestRun, int]:
    plugin_dir = tmp_path / "plugin"
    plugin_dir.mkdir(exist_ok=True)
    (plugin_dir / "airlock_results_styles.py").write_text(PLUGIN_SOURCE.read_text())
    (plugin_dir / "airlock_results_styles_unittest.py").write_text(UNITTEST_SOURCE.read_text())
    out = tmp_path / f"results-{len(list(tmp_path.iterdir()))}.jsonl"
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PYTHONPATH": str(plugin_dir),
        "PYTEST_ADDOPTS": "-p airlock_results_styles",
        "AIRLOCK_REVIEW_RESULTS": str(out),
    }
    argv = [sys.executable, *command, *args]
    argv = unittest_argv(argv, "airlock_results_styles") or argv
    done = subprocess.run(
        argv,
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return results.parse(out.read_text(), exit_code=done.returncode), done.returncode


@pytest.mark.sqlite
def test_each_way_of_reporting_reads_as_pytest_said(tmp_path: Path) -> None:
    (tmp_path / "test_styles.py").write_text(STYLES)
    run, status = _run(tmp_path, "-p", "no:cacheprovider", "--doctest-modules", "test_styles.py")
    assert status == 1
    assert run.trusted, run.problems
    outcomes = {test.split("::", 1)[1]: outcome for test, outcome in run.outcomes.items()}
    assert outcomes == {
        "Sums::test_every_subtest_passes": "passed",
        # unittest reports the failure only through the subtest; the test fails with it.
        "Sums::test_one_subtest_fails": "failed",
        "Sums::test_skipped": "skipped",
        "Sums::test_expected_failure": "xfailed",
        "test_subtests_fixture": "failed",
        "test_subtests_fixture_all_pass": "passed",
        "test_a_skipped_subtest": "passed",
        "test_parametrised[1]": "passed",
        "test_parametrised[2]": "passed",
        "test_parametrised[3]": "failed",
        "test_xfail": "xfailed",
        "test_xpass": "xpassed",
        "test_strict_xpass": "failed",
        "test_fixture_error": "error",
        "test_skip_inside": "skipped",
        "test_styles.twice": "failed",
    }
    # 5 + 3 unittest subtests, 3 + 3 + 1 of the fixture.
    assert run.subtests == {"passed": 12, "failed": 2, "skipped": 1}


@pytest.mark.sqlite
def test_a_collection_error_is_recorded_and_trusted(tmp_path: Path) -> None:
    (tmp_path / "test_ok.py").write_text("def test_ok():\n    pass\n")
    (tmp_path / "test_broken.py").write_text("import not_a_module_anywhere\n")
    run, status = _run(tmp_path, "-p", "no:cacheprovider")
    assert status == 2  # pytest stops on a collection error: an interrupted session
    assert run.collect_errors == ["test_broken.py"]
    assert any("status 2" in problem for problem in run.problems), run.problems


@pytest.mark.sqlite
def test_a_unittest_only_module_under_pytest(tmp_path: Path) -> None:
    (tmp_path / "test_plain.py").write_text(
        "import unittest\n\n\nclass T(unittest.TestCase):\n"
        "    def test_a(self):\n        for i in range(50):\n"
        "            with self.subTest(i=i):\n                self.assertTrue(i >= 0)\n"
    )
    run, status = _run(tmp_path, "-p", "no:cacheprovider")
    assert status == 0
    assert run.trusted, run.problems
    assert run.outcomes == {"test_plain.py::T::test_a": "passed"}
    assert run.subtests == {"passed": 50}


UNITTEST_STYLES = """\
import unittest


class Plain(unittest.TestCase):
    def test_passes(self):
        self.assertTrue(True)

    def test_fails(self):
        self.assertEqual(1, 2)

    def test_errors(self):
        raise KeyError("x")

    def test_subtests(self):
        for n in range(4):
            with self.subTest(n=n):
                self.assertNotEqual(n, 3)

    def test_a_skipped_subtest(self):
        with self.subTest("skip"):
            self.skipTest("no")

    @unittest.skip("not here")
    def test_skipped(self):
        pass

    @unittest.expectedFailure
    def test_expected_failure(self):
        self.assertEqual(1, 2)

    @unittest.expectedFailure
    def test_unexpected_success(self):
        pass


class BrokenSetUp(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        raise RuntimeError("no database")

    def test_never_runs(self):
        pass


class SkippedClass(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        raise unittest.SkipTest("not on this platform")

    def test_skipped_with_its_class(self):
        pass
"""


@pytest.mark.sqlite
def test_python_m_unittest_reads_as_the_runner_said(tmp_path: Path) -> None:
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "__init__.py").write_text("")
    (tests / "test_unit.py").write_text(UNITTEST_STYLES)
    (tests / "test_missing.py").write_text("import not_a_module_anywhere\n")
    run, status = _run(tmp_path, "discover", "-s", "tests", "-t", ".", command=("-m", "unittest"))
    assert status == 1
    assert run.trusted, run.problems
    assert run.collect_errors == ["unittest.loader._FailedTest.tests.test_missing"]
    assert {test.rsplit(".", 2)[-2] + "." + test.rsplit(".", 1)[-1]: outcome
            for test, outcome in run.outcomes.items()} == {
        "Plain.test_passes": "passed",
        "Plain.test_fails": "failed",
        "Plain.test_errors": "failed",
        "Plain.test_subtests": "failed",
        "Plain.test_a_skipped_subtest": "passed",
        "Plain.test_skipped": "skipped",
        "Plain.test_expected_failure": "xfailed",
        "Plain.test_unexpected_success": "xpassed",
        "BrokenSetUp.test_never_runs": "error",
        "SkippedClass.test_skipped_with_its_class": "skipped",
    }  # fmt: skip
    assert run.subtests == {"passed": 3, "failed": 1, "skipped": 1}


@pytest.mark.sqlite
def test_python_m_unittest_with_nothing_to_run_is_an_empty_run(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    run, status = _run(tmp_path, "discover", "-s", "empty", command=("-m", "unittest"))
    assert status == 5
    assert run.trusted and run.outcomes == {}, run.problems
