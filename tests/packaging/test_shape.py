"""No module of `service/` is longer than LONGEST lines: past that, one reads as several.

What is over it is listed, file by file, in `STILL_LONG`: the test fails on anything new over
the limit and on any entry of the list that is no longer over it, so the list only shrinks.
"""

from __future__ import annotations

from pathlib import Path

SERVICE = Path(__file__).resolve().parents[2] / "service"
LONGEST = 400
STILL_LONG: frozenset[str] = frozenset()


def _lengths() -> dict[str, int]:
    return {
        str(path.relative_to(SERVICE.parent)): len(path.read_text().splitlines())
        for path in sorted(SERVICE.rglob("*.py"))
        if "migrations/versions" not in path.as_posix()
    }


def test_no_module_is_longer_than_the_limit() -> None:
    lengths = _lengths()
    long = {name for name, lines in lengths.items() if lines > LONGEST}
    new = [f"new: {name} ({lengths[name]} lines)" for name in sorted(long - STILL_LONG)]
    mended = [f"no longer so, take it off the list: {name}" for name in sorted(STILL_LONG - long)]
    assert new + mended == []
