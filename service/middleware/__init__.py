"""The ASGI middleware of the HTTP edge: who calls (auth) and which node serves the call
(routing)."""
