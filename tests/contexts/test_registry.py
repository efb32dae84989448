"""What the node's registry of contexts keeps: ended contexts are forgotten after a while, the
live ones never (no sandbox needed: the registry's own bookkeeping)."""

from __future__ import annotations

import time
from datetime import UTC, datetime

from service.contexts import service
from service.contexts.live import ContextFacts, LiveContext
from service.runtime.holder import RuntimeHolder


def context(sandbox_id: str, number: int) -> LiveContext:
    facts = ContextFacts(
        id=f"ctx_{number}",
        tenant_id="ten_1",
        sandbox_id=sandbox_id,
        runtime_id=f"rt-{sandbox_id}",
        language="python",
        created_at=datetime.now(UTC),
    )
    return LiveContext(facts)


async def _no_runtime() -> None:
    raise AssertionError("the registry's bookkeeping needs no runtime")


def test_ended_contexts_are_forgotten_after_they_were_kept_a_while() -> None:
    contexts = service.Contexts(RuntimeHolder(_no_runtime), None)  # type: ignore[arg-type]
    live, ended_long_ago, ended_now = context("sbx_a", 1), context("sbx_b", 2), context("sbx_c", 3)
    ended_long_ago._gone("the interpreter ended")
    ended_long_ago.ended_at = time.monotonic() - service.ENDED_KEPT_S - 1
    ended_now._gone("the context was deleted")
    for one in (live, ended_long_ago, ended_now):
        contexts.live[one.facts.id] = one
    contexts._forget_ended()
    assert set(contexts.live) == {"ctx_1", "ctx_3"}
    assert ended_now.gone == "the context was deleted" and ended_now.ended_at is not None
    assert live.gone is None and live.ended_at is None


def test_a_sandbox_keeps_at_most_its_share_of_ended_contexts() -> None:
    contexts = service.Contexts(RuntimeHolder(_no_runtime), None)  # type: ignore[arg-type]
    for number in range(service.MAX_ENDED + 3):
        one = context("sbx_a", number)
        one._gone("the interpreter ended")
        contexts.live[one.facts.id] = one
    contexts._prune("sbx_a")
    # Room is made for the next one: MAX_ENDED - 1 stay, the newest.
    assert len(contexts.live) == service.MAX_ENDED - 1
    assert "ctx_0" not in contexts.live and f"ctx_{service.MAX_ENDED + 2}" in contexts.live
