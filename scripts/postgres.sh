#!/usr/bin/env bash
# Make a PostgreSQL server available for the tests and print its admin URL on stdout.
#
# Uses AIRLOCK_TEST_PG_ADMIN_URL when it answers. Otherwise installs PostgreSQL from Debian's
# packages when missing, and runs a private throw-away cluster (trust auth, loopback only) in
# $AIRLOCK_TEST_PG_DIR on port $AIRLOCK_TEST_PG_PORT.
set -euo pipefail

PORT=${AIRLOCK_TEST_PG_PORT:-54329}
DIR=${AIRLOCK_TEST_PG_DIR:-/var/tmp/airlock-test-pg}

if [[ -n ${AIRLOCK_TEST_PG_ADMIN_URL:-} ]]; then
  echo "$AIRLOCK_TEST_PG_ADMIN_URL"
  exit 0
fi

bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1 || true)
if [[ -z $bindir || ! -x $bindir/initdb ]]; then
  echo "==> installing PostgreSQL from Debian's packages" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
  bindir=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n1)
fi

as_pg() {
  if [[ $(id -u) -eq 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi
}

if ! "$bindir/pg_isready" -q -h 127.0.0.1 -p "$PORT"; then
  if [[ ! -f $DIR/PG_VERSION ]]; then
    echo "==> creating a test cluster in $DIR" >&2
    mkdir -p "$DIR"
    [[ $(id -u) -eq 0 ]] && chown postgres:postgres "$DIR"
    as_pg "$bindir/initdb" -D "$DIR" -U postgres --auth=trust -E UTF8 >/dev/null
  fi
  echo "==> starting PostgreSQL on 127.0.0.1:$PORT" >&2
  as_pg "$bindir/pg_ctl" -D "$DIR" -l "$DIR/server.log" -w -t 60 start \
    -o "-p $PORT -k $DIR -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300" >/dev/null
fi
echo "postgresql://postgres@127.0.0.1:$PORT/postgres"
