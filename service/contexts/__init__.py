"""Execution contexts: a Python interpreter kept running in a sandbox between runs (README.md)."""
