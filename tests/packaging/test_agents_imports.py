"""airlock-agents is a distribution of its own, released apart from the client: it may use only
what the SDK makes public, never a module or a name of it that starts with an underscore."""

from __future__ import annotations

import ast
from pathlib import Path

AGENTS = Path(__file__).resolve().parents[2] / "clients/agents/airlock_agents"


def private_sdk_imports(source: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "airlock_sdk":
            named = [f"{node.module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            named = [a.name for a in node.names if a.name.split(".")[0] == "airlock_sdk"]
        else:
            continue
        found += [f"{source.name}:{node.lineno} {name}" for name in named if "._" in name]
    return found


def test_the_agents_client_uses_only_the_sdks_public_names() -> None:
    sources = sorted(AGENTS.rglob("*.py"))
    assert len(sources) >= 3, sources
    assert [hit for source in sources for hit in private_sdk_imports(source)] == []
