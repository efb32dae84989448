#!/usr/bin/env bash
# Fail when clients/openapi.json or clients/python differ from what the code generates now.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
scripts/gen-client.sh "$tmp"
drift=0
diff -u clients/openapi.json "$tmp/openapi.json" >&2 || drift=1
diff -ru --exclude=__pycache__ --exclude='*.egg-info' --exclude=.ruff_cache --exclude=build \
  clients/python "$tmp/python" >&2 || drift=1
if [[ $drift -ne 0 ]]; then
  echo "the generated client is out of date with the code: run \`make client\` and commit clients/" >&2
  exit 1
fi
echo "clients/openapi.json and clients/python match the code" >&2
