#!/usr/bin/env bash
# Run the service on its embedded defaults: SQLite in ./.airlock, 127.0.0.1:8080.
# First, one line per step with its time, it installs what is missing: the virtualenv, the host
# packages sandboxes need and the default image (scripts/runtime-setup.sh); then it asks
# `airlock doctor` whether sandboxes can run here and, when they cannot, says why and how to fix
# it before serving the rest of the API. When everything is present this takes seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/steps.sh

step "Python environment in .venv" scripts/python-env.sh
setup_ok=1
scripts/runtime-setup.sh || setup_ok=0
step "database migrations" .venv/bin/airlock migrate

# The BoxLite probe is cached in the state dir (the server reuses it); a first probe takes
# up to half a minute on hosts where no VM boots.
report=$(mktemp "${TMPDIR:-/tmp}/airlock-doctor.XXXXXX")
start=$(now)
printf '==> can sandboxes run here? (airlock doctor) ... ' >&2
if .venv/bin/airlock doctor --cached-probe >"$report" 2>"$report.log"; then
  echo "$(tail -n 1 "$report"), $(elapsed "$start")" >&2
  rm -f "$report" "$report.log"
else
  echo "NO, $(elapsed "$start")" >&2
  if [[ -s $report ]]; then sed 's/^/    /' "$report" >&2; else tail -n 20 "$report.log" >&2; fi
  if ((!setup_ok)) || [[ $(id -u) -ne 0 ]]; then
    echo "    fix: run ./scripts/run.sh as root (it installs runsc and builds the default image;" \
      "gVisor with cgroup caps needs root), or sudo scripts/runtime-setup.sh" >&2
  fi
  echo "airlock: sandboxes cannot run on this host until that is fixed (then check with" \
    ".venv/bin/airlock doctor); serving the rest of the API, sandbox calls answer 503" \
    "runtime_unavailable" >&2
  rm -f "$report" "$report.log"
fi
# Ports of sandboxes on hosts of their own without DNS: browsers take every *.localhost name
# for the loopback address (README.md, "Ports of sandboxes"). Set it empty for none.
export AIRLOCK_PREVIEW_DOMAIN="${AIRLOCK_PREVIEW_DOMAIN-localhost}"
exec .venv/bin/airlock serve "$@"
