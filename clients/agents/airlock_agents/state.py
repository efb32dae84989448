"""What a session's sandbox is made from, as options for a new one and as saved state.

The saved state names the sandbox and how to make it again; it never holds the URL or the
credential (the client brings both), so a saved run can be stored anywhere a run's JSON goes.
"""

from __future__ import annotations

from typing import Any, Literal

from agents.sandbox.session import SandboxSessionState
from agents.sandbox.session.sandbox_client import BaseSandboxClientOptions
from pydantic import BaseModel

# Every Airlock sandbox has a writable /work (the API's default working directory); the rest of
# its filesystem is the image's, so a workspace belongs here.
WORKSPACE_ROOT = "/work"


class AirlockSandboxSpec(BaseModel):
    template: str | None = None
    """A template name (`GET /v1/templates`); neither this nor an image: the default image."""
    size: Literal["small", "medium", "large"] | None = None
    ttl: int | None = None
    """Seconds the sandbox lives at most (the API's `ttl_s`, default 600)."""
    network: str | dict[str, Any] | None = None
    """`"none"` (the default), `"open"`, or the API's policy: `{"mode": "allowlist", "allow": [...]}`."""
    env: dict[str, str] | None = None
    """Environment of every process in the sandbox."""
    keep_on_exit: bool = False
    """Leave the sandbox running when a run ends (until its TTL), for a later run to reattach to;
    `AirlockSandboxClient.delete_sandbox` deletes it. Otherwise the end of a run deletes it."""
    exec_timeout_s: float | None = None
    """Time limit of a command the Agents SDK gives none (else the API's default, 60 s)."""

    def create_arguments(self) -> dict[str, Any]:
        """The arguments of `AsyncSandbox.create` for a sandbox like this one."""
        return {
            "template": self.template,
            "size": self.size,
            "ttl": self.ttl,
            "network": self.network,
            "env": self.env,
        }


class AirlockSandboxClientOptions(BaseSandboxClientOptions, AirlockSandboxSpec):
    type: Literal["airlock"] = "airlock"


class AirlockSandboxSessionState(SandboxSessionState, AirlockSandboxSpec):
    type: Literal["airlock"] = "airlock"
    sandbox_id: str
