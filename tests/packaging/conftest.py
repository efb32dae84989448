"""The packaging tests' helpers: the session's wheels and empty virtualenvs (tests/wheels.py)."""

from tests.wheels import REPO, Venv, Wheels, new_venv

__all__ = ["REPO", "Venv", "Wheels", "new_venv"]
