#!/usr/bin/env bash
# Create or refresh the project's virtualenv in .venv (Python 3.11+), installing what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt() { command -v apt-get >/dev/null && { apt-get update -qq; DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null; }; }

PY=${PYTHON:-python3}
if ! command -v "$PY" >/dev/null; then need_apt python3 python3-venv; fi
if ! "$PY" -c 'import sys; assert sys.version_info >= (3, 11, 4)' 2>/dev/null; then
  echo "airlock needs Python 3.11.4 or newer (found: $("$PY" --version 2>&1))" >&2
  exit 1
fi
if [[ ! -x .venv/bin/python ]]; then
  "$PY" -m venv .venv 2>/dev/null || { need_apt python3-venv; rm -rf .venv; "$PY" -m venv .venv; }
fi
# Reinstall only when the dependency list changed.
stamp=.venv/.airlock-deps
want=$(sha256sum pyproject.toml | cut -d' ' -f1)
if [[ ! -f $stamp || $(cat "$stamp") != "$want" ]]; then
  echo "==> installing Python dependencies into .venv" >&2
  .venv/bin/pip install -q --disable-pip-version-check -e '.[dev]'
  echo "$want" > "$stamp"
fi
# The generated client (clients/python) and the Agents SDK client over it (clients/agents), for
# the end-to-end tests; again only when either changed.
client_want=$(cat clients/python/setup.py clients/python/pyproject.toml clients/agents/pyproject.toml | sha256sum | cut -d' ' -f1)
if [[ ! -f .venv/.airlock-client || $(cat .venv/.airlock-client) != "$client_want" ]]; then
  # With its extra: the API's /mcp serves the client's MCP tools.
  .venv/bin/pip install -q --disable-pip-version-check -e 'clients/python[mcp]' -e clients/agents
  echo "$client_want" > .venv/.airlock-client
fi
