#!/usr/bin/env bash
# The load tests' environment in .venv-load: locust and matplotlib, pinned in
# loadtests/requirements.txt (reinstalled only when that file changes).
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3}
if [[ ! -x .venv-load/bin/python ]]; then
  "$PY" -m venv .venv-load
fi
stamp=.venv-load/.airlock-deps
want=$(sha256sum loadtests/requirements.txt | cut -d' ' -f1)
if [[ ! -f $stamp || $(cat "$stamp") != "$want" ]]; then
  echo "==> installing the load test environment into .venv-load" >&2
  .venv-load/bin/pip install -q --disable-pip-version-check -r loadtests/requirements.txt
  echo "$want" > "$stamp"
fi
