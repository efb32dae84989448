"""Airlock as a sandbox of the OpenAI Agents SDK: a `SandboxAgent`'s shell, file and patch tools
run in an Airlock sandbox, and a saved run resumes in it (or in a new one, from the workspace tar).

    from agents import Runner
    from agents.run import RunConfig
    from agents.sandbox import SandboxAgent, SandboxRunConfig
    from airlock_agents import AirlockSandboxClient, AirlockSandboxClientOptions

    sandbox = SandboxRunConfig(client=AirlockSandboxClient(), options=AirlockSandboxClientOptions(ttl=600))
    result = await Runner.run(agent, "…", run_config=RunConfig(sandbox=sandbox))

The client takes the URL and credential from its arguments, else `AIRLOCK_URL` and
`AIRLOCK_API_KEY` (see `airlock_sdk.config`); they never enter a saved session state.
The `airlock-agents` distribution (clients/agents), over `airlock-client` (clients/python).
"""

try:
    import agents.sandbox  # noqa: F401
except ImportError as exc:  # installed without its dependencies (pip --no-deps)
    raise ImportError("airlock_agents needs the OpenAI Agents SDK: pip install 'openai-agents == 0.24.0'") from exc

from .client import AirlockSandboxClient
from .session import AirlockSandboxSession
from .state import AirlockSandboxClientOptions, AirlockSandboxSessionState

__all__ = [
    "AirlockSandboxClient",
    "AirlockSandboxClientOptions",
    "AirlockSandboxSession",
    "AirlockSandboxSessionState",
]
