#!/usr/bin/env bash
# Run the service on its embedded defaults: SQLite in ./.airlock, 127.0.0.1:8080
# (`scripts/run.sh --help`: the options and the environment it takes).
# First, one line per step with its time, it installs what is missing: the virtualenv, the host
# packages sandboxes need and the default image (scripts/runtime-setup.sh); then it asks
# `airlock doctor` whether sandboxes can run here and, when they cannot, says why and how to fix
# it before serving the rest of the API. When everything is present this takes seconds.
set -euo pipefail

usage() {
  cat <<EOF
Usage: $0 [--host HOST] [--port PORT] [--role all|api|node]

Serves Airlock from this clone. First it installs what is missing (the virtualenv in .venv,
the host packages sandboxes need, the default image: minutes, once), migrates the database and
asks \`airlock doctor\` whether sandboxes can run here; then it runs \`airlock serve\`.

Options (\`airlock serve\`'s; they win over the environment):
  --host HOST   bind address (default 127.0.0.1)
  --port PORT   port (default 8080)
  --role ROLE   all: the API and this host's sandboxes (default); api or node: one part of a
                deployment of many hosts (both need PostgreSQL)
  -h, --help    print this and exit, installing nothing

Environment:
  AIRLOCK_HOST, AIRLOCK_PORT  bind address and port, as --host and --port
  AIRLOCK_STATE_DIR       the state dir: embedded database, keys, the generated operator key,
                          images (default .airlock in the clone; a relative path is from the clone)
  AIRLOCK_DATABASE_URL    the database (default SQLite in the state dir), such as
                          postgresql://user:pass@host/db
  AIRLOCK_OPERATOR_KEY    the operator's key (default: generated on the first run into
                          <state dir>/operator_key and printed once)
  AIRLOCK_PREVIEW_DOMAIN  host names for sandboxes' ports (here: localhost; empty for none)
  PYTHON                  the Python that makes .venv (default python3; 3.11.4 or newer)
  Every AIRLOCK_* setting is in README.md, "Configuration".

Example: AIRLOCK_PORT=9000 $0   (or: $0 --port 9000)
EOF
}

# Options are read before anything is installed: --help at once, a mistake before minutes of work.
args=("$@")
while (($#)); do
  case $1 in
    -h | --help) usage; exit 0 ;;
    --host | --port | --role)
      if (($# < 2)); then echo "$0: $1 needs a value (see $0 --help)" >&2; exit 2; fi
      shift 2 ;;
    --host=* | --port=* | --role=*) shift ;;
    *) echo "$0: unknown option $1 (see $0 --help)" >&2; exit 2 ;;
  esac
done
set -- ${args[@]+"${args[@]}"}

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
