#!/bin/sh
# The PostgreSQL image's entrypoint. On the first start (an empty $PGDATA) make the cluster:
# its superuser POSTGRES_USER (default airlock) with the password in POSTGRES_PASSWORD_FILE or
# POSTGRES_PASSWORD, a database POSTGRES_DB (default: the user's name), password logins from
# any address. Later starts keep what the first made (a changed password is changed with
# ALTER ROLE). Then run postgres in the foreground, listening on every address, without a
# JIT; arguments go to postgres (`-c name=value`).
set -eu
user=${POSTGRES_USER:-airlock}
database=${POSTGRES_DB:-$user}
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  password_file=${POSTGRES_PASSWORD_FILE:-}
  if [ -z "$password_file" ] && [ -n "${POSTGRES_PASSWORD:-}" ]; then
    password_file=$(mktemp)
    printf '%s\n' "$POSTGRES_PASSWORD" >"$password_file"
  fi
  if [ ! -r "$password_file" ]; then
    echo "airlock-postgres: set POSTGRES_PASSWORD_FILE (a readable file) or POSTGRES_PASSWORD" \
      "to the password of $user: the first start makes the cluster" >&2
    exit 1
  fi
  initdb --pgdata="$PGDATA" --username="$user" --pwfile="$password_file" \
    --auth-local=trust --auth-host=scram-sha-256 --encoding=UTF8 --locale=C.UTF-8 >/dev/null
  [ "$password_file" = "${POSTGRES_PASSWORD_FILE:-}" ] || rm -f "$password_file"
  echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
  if [ "$database" != postgres ]; then
    echo "CREATE DATABASE \"$database\"" |
      postgres --single -D "$PGDATA" -c log_min_messages=warning postgres >/dev/null
  fi
fi
exec postgres -D "$PGDATA" -c listen_addresses='*' -c jit=off "$@"
