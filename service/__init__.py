"""Airlock: run untrusted code in gVisor sandboxes behind a multi-tenant HTTP API."""

VERSION = "0.1.0"
