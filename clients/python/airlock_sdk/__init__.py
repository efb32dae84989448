"""The Airlock SDK: sandboxes as objects, over the generated client (`airlock_client`).

    from airlock_sdk import Sandbox

    with Sandbox.create(ttl=600) as sandbox:
        print(sandbox.run("python3 -c 'print(6 * 7)'").stdout)

The URL and credential come from the arguments, else `AIRLOCK_URL` and `AIRLOCK_API_KEY`, else
the config file (see `config.py`). Errors are typed by the problem `code` (`errors.py`).

For an API call the SDK has no method for, call the generated client on `sandbox.client`:
`errors.unwrap(answer)` turns its answer into the parsed body or the typed error, and
`retries.retry` (`retries.aretry`, awaited) sends it again as the SDK's own calls are.
"""

from . import errors
from ._common import CodeError, CodeRun, ExecResult, OutputEvent
from .aio import AsyncSandbox
from .config import Config
from .errors import AirlockError
from .sandbox import Sandbox

__all__ = [
    "AirlockError",
    "AsyncSandbox",
    "CodeError",
    "CodeRun",
    "Config",
    "ExecResult",
    "OutputEvent",
    "Sandbox",
    "errors",
]
