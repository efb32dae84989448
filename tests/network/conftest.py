"""The end-to-end server fixtures (a real `airlock serve` on gVisor and PostgreSQL), started only
by the tests that ask for them; sandboxes left at the end go with the server."""

from tests.e2e.conftest import airlock, e2e_state  # noqa: F401 (fixtures)
