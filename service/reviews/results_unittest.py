"""`python -m unittest`, as a review runs it: the same command line and the same tests, with a
result that writes the review's results file (the records `results_plugin.py` writes for
pytest), so `results.parse` reads a unittest run exactly as a pytest one.

A review whose test command is `python -m unittest …` runs `python -m <this module> …`
instead (its source copied in by root, under a random name, beside the pytest plugin). Test
ids are unittest's (`package.module.Class.test`). Each test is reported as pytest would:
a setup, a call (a failure or an error fails it; a skip, an expected failure and an unexpected
success as pytest's skip, xfail and xpass), each subtest as one more record of the call, a
teardown; a test that never started (its class's or module's setUp failed) as a setup error;
a module that could not be imported, or a class's or module's tearDown that failed, as a
collection error. The process exits with the status
it records: 0 when every test passed, 1 when one did not, 5 when there were none.

This runs inside the sandbox with the tests and imports only the standard library; nothing it
writes is trusted on the host.
"""

import json
import os
import sys
import unittest
from unittest import case, suite

_PATH = os.environ.pop("AIRLOCK_REVIEW_RESULTS", "")
_FD = -1
if _PATH:
    _FD = os.open(
        _PATH,
        os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC,
        0o644,
    )


def _write(record):
    if _FD >= 0:
        os.write(_FD, (json.dumps(record, separators=(",", ":")) + "\n").encode())


def _report(test_id, when, outcome, xfail=False, sub=False):
    record = {"t": "report", "id": test_id, "when": when, "outcome": outcome, "xfail": xfail}
    if sub:
        record["sub"] = True
    _write(record)


def _tests(found):
    if isinstance(found, suite.TestSuite):
        for item in found:
            yield from _tests(item)
    else:
        yield found


def _outside(test):
    """An error or skip unittest reports outside any test: a module that did not import, or a
    class's or module's setUp or tearDown."""
    return type(test).__name__ == "_FailedTest" or isinstance(test, suite._ErrorHolder)


def _scope(holder):
    """`setUpClass (pkg.mod.Class)` → the prefix of the ids of that class's tests."""
    inside = holder.description.rpartition("(")[2].rstrip(")")
    return inside + "."


class _Recording(unittest.TextTestResult):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.started = set()
        self.skipped_scopes = []
        self._call = ("passed", False)

    def startTest(self, test):
        super().startTest(test)
        self._call = ("passed", False)
        if not _outside(test):
            self.started.add(test.id())
            _report(test.id(), "setup", "passed")

    def stopTest(self, test):
        super().stopTest(test)
        if not _outside(test):
            _report(test.id(), "call", *self._call)
            _report(test.id(), "teardown", "passed")

    def addError(self, test, err):
        super().addError(test, err)
        if isinstance(test, suite._ErrorHolder) and test.description.startswith("setUp"):
            pass  # its tests never start: each is reported as a setup error at the end
        elif _outside(test):
            _write({"t": "collect_error", "id": test.id()})
        else:
            self._call = ("failed", False)

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._call = ("failed", False)

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        if isinstance(test, case._SubTest):
            _report(test.test_case.id(), "call", "skipped", sub=True)
        elif isinstance(test, suite._ErrorHolder):
            self.skipped_scopes.append(_scope(test))
        else:
            self._call = ("skipped", False)

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self._call = ("skipped", True)

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self._call = ("passed", True)

    def addSubTest(self, test, subtest, err):
        super().addSubTest(test, subtest, err)
        _report(test.id(), "call", "passed" if err is None else "failed", sub=True)


class _Runner(unittest.TextTestRunner):
    resultclass = _Recording

    def run(self, test):
        ids = [t.id() for t in _tests(test) if not _outside(t)]
        _write({"t": "start", "pytest": f"unittest {sys.version.split()[0]}", "plugins": []})
        _write({"t": "collected", "ids": ids})
        result = super().run(test)
        for test_id in ids:
            if test_id in result.started:
                continue
            # Never started: its class's or module's setUp skipped it, or failed.
            skipped = any(test_id.startswith(scope) for scope in result.skipped_scopes)
            _report(test_id, "setup", "skipped" if skipped else "failed")
            _report(test_id, "teardown", "passed")
        return result


def main():
    program = unittest.main(
        module=None, argv=["python -m unittest", *sys.argv[1:]], testRunner=_Runner, exit=False
    )
    result = program.result
    status = 5 if result.testsRun == 0 else (0 if result.wasSuccessful() else 1)
    _write({"t": "end", "exitstatus": status, "plugins": []})
    sys.exit(status)


if __name__ == "__main__":
    main()
