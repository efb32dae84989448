"""The verdict rules, as pure logic over what ran.

1. A failed install is REQUEST_CHANGES, whatever the model says.
2. A test gate that allows no approval (`gate.Gate`: test infrastructure changed, results
   missing or odd, failing tests, tests that passed at the base failing, vanishing or skipped
   at the head) is REQUEST_CHANGES, whatever the model says: the model can only turn an
   approvable change down. The exit code and output of the head's test run never count.
3. Otherwise, with a model: its verdict, when its answer parsed; an answer that did not parse
   (or no answer) leaves no verdict at all: the review fails, it is never an approval.
4. Otherwise, with no model configured: COMMENT, never APPROVE. The tests are the pull
   request's own testimony (its code runs in the test process), so passing tests say only
   that no regression was seen; with nothing to judge the change itself, the review says
   that and leaves the decision to a person. (GitHub's review events have the same three
   names, so a verdict can be posted as it is.)
"""

from __future__ import annotations

from dataclasses import dataclass

from service.reviews.gate import Gate
from service.reviews.runs import Run

APPROVE = "APPROVE"
REQUEST_CHANGES = "REQUEST_CHANGES"
COMMENT = "COMMENT"


@dataclass(frozen=True)
class Decision:
    verdict: str | None
    reasoning: str
    error: str | None = None


def decide(
    install: Run | None,
    gate: Gate | None,
    *,
    model_configured: bool,
    model_verdict: str | None,
    model_reasoning: str | None,
    model_error: str | None,
) -> Decision:
    """`gate` is None only when the install failed (the tests then did not run)."""
    said = f" The model said {model_verdict}: {model_reasoning}" if model_verdict else ""
    if install is not None and not install.passed:
        why = install.describe("install")
        return Decision(
            REQUEST_CHANGES, f"{why[0].upper()}{why[1:]}, so the tests did not run.{said}"
        )
    if gate is None or not gate.approvable:
        findings = " ".join(gate.findings) if gate else "The tests did not run."
        return Decision(REQUEST_CHANGES, f"{findings}{said}")
    if not model_configured:
        return Decision(
            COMMENT,
            "The tests passed, and every test that passes at the base passes at the head. "
            "No model is configured, so nothing judged the change itself: the tests are its "
            "own testimony, and this is not an approval.",
        )
    if model_verdict is None:
        error = model_error or "the model gave no answer"
        return Decision(None, f"The tests passed, but no verdict: {error}.", error=error)
    return Decision(model_verdict, model_reasoning or "")
