"""Which bucket a request is counted in.

Routes are put in classes by what a call costs the API and how callers use them, so that one
kind of traffic cannot spend another's budget:

- `reads`: GET, HEAD and OPTIONS (and opening an event stream): one indexed read, nothing
  appended to the audit chain. What dashboards and polling loops send.
- `writes`: every other method of the control plane (create, delete, pause, fork, keys,
  tokens, secrets, templates, reviews, uploads): a transaction that appends to the tenant's
  audit chain, which serialises the tenant's writes, and often runtime work.
- `exec_calls`: starting a command and talking to one that runs (stdin, resize, kill). An agent
  loop or an interactive terminal sends these back to back; counted apart so that they do not
  use up the writes (nor the writes them). How many commands start per minute is still
  `execs_per_minute`, checked with the exec's own record: this class counts calls, not starts.
- `port_requests`: requests and WebSocket connections to a sandbox's own web server (the
  port routes, by bearer or preview link). Their volume is the tenant's users', not its own.

Callers without a tenant are counted by address (`anonymous`, service.ratelimit.limiter).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any


class RouteClass(StrEnum):
    """Each class's rate is the tenant's quota `<value>_per_s`."""

    READS = "reads"
    WRITES = "writes"
    EXEC_CALLS = "exec_calls"
    PORT_REQUESTS = "port_requests"


# The exec routes that act on a command (its events stream and records are reads).
EXEC_OPERATIONS = frozenset({"create_exec", "write_exec_stdin", "resize_exec_tty", "kill_exec"})
_READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def class_of(scope: dict[str, Any]) -> RouteClass:
    """The class of the request `scope` (routed: its handler is known)."""
    handler = scope.get("route_handler")
    opt = handler.opt if handler is not None else {}
    if opt.get("preview"):  # the port routes, HTTP and WebSocket
        return RouteClass.PORT_REQUESTS
    if getattr(handler, "operation_id", None) in EXEC_OPERATIONS:
        return RouteClass.EXEC_CALLS
    if scope["type"] != "http" or scope["method"] in _READ_METHODS:
        return RouteClass.READS
    return RouteClass.WRITES
