"""What a change's Python code newly reaches into that its own test results cannot vouch for.

The head's code runs in the test process: code that patches the runner's report objects, the
interpreter's import or exit machinery, or writes where the results go can make a failing run
read as a passing one, and the results file then shows nothing odd. So the diff is read
statically, on the host, before any of it runs: every changed Python file is parsed at the
base and at the head, and each place that touches one of these is counted; a kind of reach
that the head has more of than the base (a new file counts from zero) is a finding, and a
finding refuses the approval whatever the tests and the model say.

Test files are held to the runner and the results channel only: tests legitimately mock
`sys.modules`, `builtins` and exits, but have no business with pytest's internals.

This is a reading of the text, not a proof: code built at run time from pieces of strings is
caught only where it needs `exec`, `eval`, `compile` or `__import__` to run, which count too.
"""

from __future__ import annotations

import ast
from collections import Counter
from dataclasses import dataclass
from pathlib import PurePosixPath

RUNNER = "the test runner"
IMPORTS = "the interpreter's import machinery"
EXITS = "the interpreter's exit machinery"
TRACING = "tracing and other frames"
DYNAMIC = "code built at run time"
CHANNEL = "the results channel"

# Modules (and their submodules) that are the runner, or that the runner reports through.
RUNNER_MODULES = ("_pytest", "pluggy", "unittest.result", "unittest.runner", "unittest.case")
# Attribute and function names of the runner's report and result objects.
RUNNER_NAMES = frozenset(
    {
        "TestReport",
        "CollectReport",
        "CallInfo",
        "from_item_and_call",
        "TestResult",
        "TextTestResult",
        "TextTestRunner",
        "_Outcome",
        "addSuccess",
        "addFailure",
        "addError",
        "wasSuccessful",
        "hookimpl",
        "pluginmanager",
        "pytest_runtest_makereport",
        "pytest_runtest_logreport",
        "pytest_report_teststatus",
        "pytest_sessionfinish",
        "exitstatus",
        "testsfailed",
    }
)
# What the runner offers tests in public: a test file may do these.
TESTS_MAY = frozenset({"imports pytest", "defines the hook pytest_generate_tests"})
# Non-test code only (tests use these to mock and to check exits).
IMPORT_MODULES = ("builtins", "importlib", "importlib.util", "importlib.machinery", "imp")
IMPORT_ATTRS = frozenset({"modules", "meta_path", "path_hooks", "path_importer_cache"})
EXIT_MODULES = ("atexit", "signal", "faulthandler")
EXIT_CALLS = frozenset({"_exit", "abort", "kill", "killpg"})  # os.<name>
TRACE_ATTRS = frozenset({"settrace", "setprofile", "_getframe", "get_objects", "get_referrers"})
FRAME_ATTRS = frozenset({"f_back", "f_globals", "f_locals", "tb_frame", "gi_frame", "cr_frame"})
TRACE_MODULES = ("ctypes", "gc", "inspect")
DYNAMIC_NAMES = frozenset({"exec", "eval", "compile", "__import__", "__builtins__"})
# Strings that name where the results go, or how the runner is started.
CHANNEL_MARKS = (
    "airlock_review",
    "airlock-review",
    "airlock_results",
    "airlock-results",
    "pytest_addopts",
    "pytest_plugins",
    "/proc/self/fd",
    "/dev/fd",
)
CHANNEL_CALLS = frozenset({"write", "dup2", "fdopen"})  # os.<name>: writes to raw descriptors
# Names that count as a string too (reached with getattr), with the module they belong to.
STRING_OWNERS = {
    "_exit": "os",
    "meta_path": "sys",
    "path_hooks": "sys",
    "path_importer_cache": "sys",
}


@dataclass(frozen=True)
class Source:
    """One changed Python file's text at the base (None when new) and at the head."""

    path: str
    base: bytes | None
    head: bytes


def is_test_file(path: str) -> bool:
    pure = PurePosixPath(path)
    parts = [part.lower() for part in pure.parts]
    return any(p.startswith("test") for p in parts[:-1]) or (
        parts[-1].startswith("test") or parts[-1].endswith("_test.py")
    )


def findings(sources: list[Source]) -> list[str]:
    """One line per changed file and kind of reach the head adds, naming what it reaches."""
    found = []
    for source in sources:
        test = is_test_file(source.path)
        head = _reaches(source.head, test)
        if head is None:
            found.append(
                f"{source.path}: not Python this review can read, so what it reaches is unknown"
            )
            continue
        base = _reaches(source.base, test) if source.base is not None else Counter()
        added = head - (base or Counter())
        kinds: dict[str, list[str]] = {}
        for kind, what in sorted(added):
            kinds.setdefault(kind, []).append(what)
        found += [
            f"{source.path} reaches into {kind} ({', '.join(whats)})"
            for kind, whats in kinds.items()
        ]
    return found


# CPython 3.11 keeps the AST constructor's recursion count per interpreter, not per thread:
# a tree built while another thread builds one (a traceback being formatted parses its source
# lines) can fail its balance check with a SystemError, though the source is fine
# (python/cpython#106905). The count starts afresh with each parse, so the parse is tried again.
PARSE_ATTEMPTS = 3


def _parse(text: bytes) -> ast.Module:
    """The module's tree (bytes: the file's own coding declaration applies)."""
    attempt = 1
    while True:
        try:
            return ast.parse(text)
        except SystemError as exc:
            if "recursion depth mismatch" not in str(exc) or attempt >= PARSE_ATTEMPTS:
                raise
            attempt += 1


def _reaches(text: bytes | None, test: bool) -> Counter[tuple[str, str]] | None:
    if text is None:
        return Counter()
    try:
        tree = _parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    found: Counter[tuple[str, str]] = Counter()
    for node in ast.walk(tree):
        for kind, what in _node(node):
            if not test or (kind in (RUNNER, CHANNEL) and what not in TESTS_MAY):
                found[(kind, what)] += 1
    return found


def _node(node: ast.AST) -> list[tuple[str, str]]:
    match node:
        case ast.Import(names=names):
            return [hit for alias in names for hit in _module(alias.name)]
        case ast.ImportFrom(module=module, names=names, level=0) if module:
            hits = _module(module)
            for alias in names if not hits else []:
                hits += _module(f"{module}.{alias.name}") or _name(alias.name, module)
            return hits
        case ast.Attribute(value=value, attr=attr):
            return _name(attr, _dotted(value))
        case ast.Name(id=name):
            return _name(name, None)
        case ast.FunctionDef(name=name) | ast.AsyncFunctionDef(name=name) if name.startswith(
            "pytest_"
        ):
            return [(RUNNER, f"defines the hook {name}")]
        case ast.Constant(value=str() as text):
            return _string(text)
    return []


def _module(name: str) -> list[tuple[str, str]]:
    def under(prefixes: tuple[str, ...]) -> bool:
        return any(name == p or name.startswith(p + ".") for p in prefixes)

    if under(RUNNER_MODULES) or name == "pytest" or name.startswith("pytest."):
        return [(RUNNER, f"imports {name}")]
    if name in IMPORT_MODULES:
        return [(IMPORTS, f"imports {name}")]
    if under(EXIT_MODULES):
        return [(EXITS, f"imports {name}")]
    if under(TRACE_MODULES):
        return [(TRACING, f"imports {name}")]
    return []


def _name(name: str, owner: str | None) -> list[tuple[str, str]]:
    shown = f"{owner}.{name}" if owner else name
    if name in RUNNER_NAMES:
        return [(RUNNER, shown)]
    if owner == "sys" and name in IMPORT_ATTRS:
        return [(IMPORTS, shown)]
    if owner == "os" and name in EXIT_CALLS:
        return [(EXITS, shown)]
    if owner == "os" and name in CHANNEL_CALLS:
        return [(CHANNEL, shown)]
    if name in TRACE_ATTRS or name in FRAME_ATTRS:
        return [(TRACING, shown)]
    if owner is None and name in DYNAMIC_NAMES:
        return [(DYNAMIC, shown)]
    return []


def _string(text: str) -> list[tuple[str, str]]:
    """A string that names a runner module or object, or an attribute reached with `getattr`
    (`getattr(os, "_exit")`, `import_module("_pytest.reports")`), or the results channel."""
    word = text.strip()
    kinds = [kind for kind, _ in _module(word)] if _is_dotted_name(word) else []
    # Not the builtins by name: "eval" and "compile" are common words in strings.
    kinds += [k for k, _ in _name(word, STRING_OWNERS.get(word)) if k != DYNAMIC]
    if any(mark in text.lower() for mark in CHANNEL_MARKS):
        kinds.append(CHANNEL)
    shown = repr(word if len(word) <= 60 else word[:57] + "...")
    return [(kind, f"the string {shown}") for kind in dict.fromkeys(kinds)]


def _is_dotted_name(word: str) -> bool:
    return bool(word) and all(part.isidentifier() for part in word.split("."))


def _dotted(node: ast.AST) -> str | None:
    match node:
        case ast.Name(id=name):
            return name
        case ast.Attribute(value=value, attr=attr):
            owner = _dotted(value)
            return f"{owner}.{attr}" if owner else None
    return None
