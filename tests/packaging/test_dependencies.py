"""Every module the service or the client imports comes from a dependency it declares
(deptry, configured in pyproject.toml): a module that only happens to be installed, because a
dev tool or another package brought it, fails here before it fails a `pip install` user."""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEPTRY = REPO / ".venv/bin/deptry"
CLIENT = REPO / "clients/python"
AGENTS = REPO / "clients/agents"


def deptry(*args: str, cwd: Path) -> None:
    done = subprocess.run(
        [str(DEPTRY), *args], cwd=cwd, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, f"deptry {' '.join(args)}:\n{done.stdout}{done.stderr}"


def test_the_service_imports_only_what_it_declares() -> None:
    deptry("service", cwd=REPO)


def client_requirements() -> list[str]:
    """The client's requirements and its extras', read from its setup.py (the generator writes
    setup.py, which deptry does not read)."""
    call = next(
        node
        for node in ast.walk(ast.parse((CLIENT / "setup.py").read_text()))
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "setup"
    )
    given = {k.arg: k.value for k in call.keywords}
    required = list(ast.literal_eval(given["install_requires"]))
    for extra in ast.literal_eval(given["extras_require"]).values():
        required += extra
    return [re.sub(r"\s+", "", r) for r in required]


def test_the_client_imports_only_what_it_declares(tmp_path: Path) -> None:
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("\n".join(client_requirements()) + "\n")
    deptry(
        ".",
        "--requirements-files",
        str(requirements),
        "--known-first-party",
        "airlock_client,airlock_sdk",
        "--extend-exclude",
        r"setup\.py",
        # The generated models parse date-times with it once a schema has one.
        "--per-rule-ignores",
        "DEP002=python-dateutil",
        cwd=CLIENT,
    )


def test_the_agents_client_imports_only_what_it_declares() -> None:
    # Its requirements are its pyproject.toml's; airlock-client brings two import packages.
    deptry(
        ".",
        "--known-first-party",
        "airlock_agents",
        "--package-module-name-map",
        "airlock-client=airlock_client|airlock_sdk,openai-agents=agents",
        cwd=AGENTS,
    )
