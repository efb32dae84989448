#!/usr/bin/env bash
# Run the service on its embedded defaults: SQLite in ./.airlock, 127.0.0.1:8080.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/python-env.sh
.venv/bin/airlock migrate
exec .venv/bin/airlock serve "$@"
