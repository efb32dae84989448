"""An install or a test run of a review, as the gate and the verdict read it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Run:
    """An install or test run as the verdict sees it; `None` exit means it never ended."""

    exit_code: int | None
    outcome: str | None  # exited | timeout | oom | killed | None (did not run)
    timeout_s: int

    @property
    def passed(self) -> bool:
        return self.outcome == "exited" and self.exit_code == 0

    def describe(self, what: str) -> str:
        if self.outcome == "timeout":
            return f"the {what} did not finish within its {self.timeout_s} s deadline"
        if self.outcome in ("oom", "killed"):
            return f"the {what} was ended ({self.outcome})"
        if self.outcome is None:
            return f"the {what} did not run"
        return f"the {what} failed (exit code {self.exit_code})"
