"""The pytest plugin a review loads into every test run (its source is copied into the sandbox,
under a random module name, by root into a directory the tests cannot write).

It writes one JSON record per line to the results file as each thing happens: the session's
start (with the plugins pytest loaded), the ids collected, each collection error, each test
phase's outcome (each subtest too, from pytest's subtests or `unittest`'s `subTest`: one more
record of the test's call, marked `sub`), and the session's end. The file is opened when the
plugin is imported, before any conftest.py or test module, and every record is written at
once, so a run the head's code cuts short (`os._exit`, a signal) still leaves every result it
produced, and no final record.

This runs inside the sandbox with the tests, on the image's Python and pytest (7 or newer): it
imports only what pytest itself has already imported. Nothing it writes is trusted on the host
(`results.parse` reads it as hostile input); it only makes an honest run readable.
"""

import json
import os

import pytest

_PATH = os.environ.pop("AIRLOCK_REVIEW_RESULTS", "")
_FD = -1
if _PATH:
    _FD = os.open(
        _PATH,
        os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC,
        0o644,  # read by the review as root, which has no CAP_DAC_OVERRIDE here
    )


def _write(record):
    if _FD >= 0:
        os.write(_FD, (json.dumps(record, separators=(",", ":")) + "\n").encode())


def _plugins(config):
    """The plugins pytest loaded other than its own, this one and conftest modules (which the
    review judges from the diff): modules by name, distributions by name."""
    names = set()
    for _, dist in config.pluginmanager.list_plugin_distinfo():
        names.add("dist:" + str(getattr(dist, "project_name", dist)))
    for _name, plugin in config.pluginmanager.list_name_plugin():
        module = getattr(plugin, "__name__", None)
        if not isinstance(module, str) or module == __name__:
            continue
        if module.startswith("_pytest.") or module in ("_pytest", "pytest"):
            continue
        if (getattr(plugin, "__file__", None) or "").endswith("conftest.py"):
            continue
        names.add("module:" + module)
    return sorted(names)


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    _write({"t": "start", "pytest": pytest.__version__, "plugins": _plugins(config)})


def pytest_collectreport(report):
    if report.failed:
        _write({"t": "collect_error", "id": report.nodeid})


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session):
    _write({"t": "collected", "ids": [item.nodeid for item in session.items]})


def pytest_runtest_logreport(report):
    record = {
        "t": "report",
        "id": report.nodeid,
        "when": report.when,
        "outcome": report.outcome,
        "xfail": hasattr(report, "wasxfail"),
    }
    # pytest 9's SubtestReport, pytest-subtests' SubTestReport: one per subtest, all "call".
    if type(report).__name__.lower() == "subtestreport":
        record["sub"] = True
    _write(record)


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session, exitstatus):
    _write({"t": "end", "exitstatus": int(exitstatus), "plugins": _plugins(session.config)})
