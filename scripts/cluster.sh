#!/usr/bin/env bash
# A local cluster: PostgreSQL, N nodes and M API replicas, each replica behind an nginx, on this
# machine (scripts/cluster.py).
#
#   scripts/cluster.sh start [--nodes 2] [--apis 2] [--port 8100] [--dir .airlock-cluster]
#   scripts/cluster.sh status | stop [--dir ...]
#   scripts/cluster.sh restart node-1 [--dir ...]
#
# `start` first makes sure of what the processes need: the Python environment, PostgreSQL
# (scripts/postgres.sh), the runtime with the default image (scripts/runtime-setup.sh) and nginx
# (scripts/proxy-setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ ${1:-} == start ]]; then
  . scripts/steps.sh
  step "Python environment in .venv" scripts/python-env.sh
  admin_url=$(scripts/postgres.sh)
  scripts/runtime-setup.sh
  scripts/proxy-setup.sh
  shift
  exec .venv/bin/python scripts/cluster.py start --admin-url "$admin_url" "$@"
fi
exec .venv/bin/python scripts/cluster.py "$@"
