"""The packages of `service/` import only downward, and no import goes round in a circle.

The import graph is read from the source with `ast`: every import of a service module counts,
wherever it is written (at module level, in a function, under `if TYPE_CHECKING:`), so a lazy
import cannot hide a loop. A package is the first name under `service/` (a module at the top,
such as `app.py`, is a package of its own). The order of the layers is written once, in
`LAYERS`, from the bottom up: a package may import its own layer's packages and those below.

What the code does not meet yet is listed, import by import, in `STILL_UPWARD` and
`STILL_CIRCULAR`: each test fails on anything outside those lists and on any entry of them
that is no longer true, so the lists only shrink, and a change that mends one takes it off.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

SERVICE = Path(__file__).resolve().parents[2] / "service"

# From the bottom up.
LAYERS: tuple[tuple[str, frozenset[str]], ...] = (
    ("base", frozenset({
        "__init__", "ids", "errors", "requestid", "redaction", "pagination", "hostnames",
        "addresses", "settings", "variables", "telemetry", "server_timing", "streaming", "inputs",
        "periodic", "hop", "kept",
    })),
    ("infrastructure", frozenset({"db", "runtime", "migrations"})),
    ("records", frozenset({
        "audit", "auth", "apikeys", "tenants", "secrets", "sandboxes", "bootstrap",
    })),
    ("resources", frozenset({
        "nodes", "templates", "pool", "execs", "files", "ports", "tokens", "contexts",
    })),
    ("jobs", frozenset({"jobs"})),
    ("flows", frozenset({"flows"})),
    ("features", frozenset({"reviews"})),
    ("edge", frozenset({
        "api", "middleware", "deps", "context", "openapi", "mcp", "ratelimit", "background",
        "app",
    })),
    ("entry", frozenset({"__main__"})),
)  # fmt: skip
LEVEL = {package: level for level, (_, packages) in enumerate(LAYERS) for package in packages}

# Imports that still point up a layer ("file:line imports module").
STILL_UPWARD: frozenset[str] = frozenset()
# Packages, and modules, that still import each other: each circle by its members.
STILL_CIRCULAR: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Import:
    source: str  # the importing module, e.g. service.execs.runner
    target: str  # the imported module
    where: str  # file:line

    def __str__(self) -> str:
        return f"{self.where} imports {self.target}"


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(SERVICE.rglob("*.py")):
        parts = list(path.relative_to(SERVICE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _resolved(name: str) -> str:
    """The service module `name` names (`service.a.b.attr` is the module `service.a.b`)."""
    while name not in MODULES and "." in name:
        name = name.rsplit(".", 1)[0]
    return name


def _imports() -> Iterator[Import]:
    for module, path in MODULES.items():
        here = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
        where = path.relative_to(SERVICE.parent)
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    package = here.rsplit(".", node.level - 1)[0] if node.level > 1 else here
                    base = f"{package}.{base}" if base else package
                # `from service.x import y` imports the module service.x.y when there is one
                names = [f"{base}.{alias.name}" for alias in node.names]
            else:
                continue
            for name in names:
                if name == "service" or name.startswith("service."):
                    yield Import(module, _resolved(name), f"{where}:{node.lineno}")


IMPORTS = sorted(set(_imports()), key=lambda i: (i.where, i.target))


def _packages_above(module: str) -> list[str]:
    """The packages (with an __init__ of their own) Python initialises to import `module`."""
    parts = module.split(".")
    above = [".".join(parts[:n]) for n in range(2, len(parts))]
    return [p for p in above if p in MODULES and MODULES[p].name == "__init__.py"]


def _circles(graph: dict[str, set[str]]) -> set[frozenset[str]]:
    """The strongly connected parts of more than one member (Tarjan's algorithm)."""
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: set[frozenset[str]] = set()

    def visit(node: str) -> None:
        order[node] = low[node] = len(order)
        stack.append(node)
        on_stack.add(node)
        for after in sorted(graph.get(node, ())):
            if after not in order:
                visit(after)
                low[node] = min(low[node], low[after])
            elif after in on_stack:
                low[node] = min(low[node], order[after])
        if low[node] == order[node]:
            part = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                part.add(member)
                if member == node:
                    break
            if len(part) > 1:
                circles.add(frozenset(part))

    for node in sorted(set(graph) | {n for targets in graph.values() for n in targets}):
        if node not in order:
            visit(node)
    return circles


def _compare(found: set[str], still: frozenset[str], what: str) -> list[str]:
    new = [f"new: {item}" for item in sorted(found - still)]
    mended = [f"no longer so, take it off the list: {item}" for item in sorted(still - found)]
    return [f"{what}: {line}" for line in new + mended]


def test_every_package_has_a_layer() -> None:
    assert sorted({_package(m) for m in MODULES} - set(LEVEL)) == []


def test_imports_point_down_the_layers() -> None:
    upward = {str(i) for i in IMPORTS if LEVEL[_package(i.target)] > LEVEL[_package(i.source)]}
    assert _compare(upward, STILL_UPWARD, "upward") == []


def test_no_circle_of_packages_or_modules() -> None:
    packages: dict[str, set[str]] = defaultdict(set)
    modules: dict[str, set[str]] = defaultdict(set)
    for i in IMPORTS:
        if _package(i.source) != _package(i.target):
            packages[_package(i.source)].add(_package(i.target))
        # A module importing its own package's __init__ is how a package is read, not a circle;
        # importing a module runs the __init__ of each package above it that is not its own.
        for target in (i.target, *_packages_above(i.target)):
            if target != i.source and not i.source.startswith(target + "."):
                modules[i.source].add(target)
    circles = {"packages " + ", ".join(sorted(c)) for c in _circles(packages)}
    circles |= {"modules " + ", ".join(sorted(c)) for c in _circles(modules)}
    assert _compare(circles, STILL_CIRCULAR, "circle") == []
