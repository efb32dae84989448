"""A small project with tests, as a git bundle a review can fetch: `main`, and a `change`
branch that adds a function and its tests."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

CALC = "def add(a, b):\n    return a + b\n"
TESTS = (
    "from calc import add\n\n\n"
    "def test_add():\n    assert add(2, 3) == 5\n\n\n"
    "def test_add_negative():\n    assert add(-2, -3) == -5\n"
)
CHANGE = CALC + "\n\ndef mul(a, b):\n    return a * b\n"
CHANGE_TESTS = (
    TESTS + "\n\ndef test_mul():\n    from calc import mul\n\n    assert mul(4, 5) == 20\n"
)


def make_bundle(path: Path) -> Path:
    with tempfile.TemporaryDirectory(prefix="airlock-load-repo-") as tmp:
        repo = Path(tmp)

        def git(*args: str) -> None:
            subprocess.run(
                ["git", "-c", "user.name=load", "-c", "user.email=load@example.invalid", *args],
                cwd=repo, check=True, capture_output=True,
            )  # fmt: skip

        git("init", "-q", "-b", "main")
        (repo / "calc.py").write_text(CALC)
        (repo / "test_calc.py").write_text(TESTS)
        git("add", ".")
        git("commit", "-q", "-m", "calc")
        git("checkout", "-q", "-b", "change")
        (repo / "calc.py").write_text(CHANGE)
        (repo / "test_calc.py").write_text(CHANGE_TESTS)
        git("commit", "-q", "-am", "mul")
        git("bundle", "create", str(path.resolve()), "--all")
    return path
