#!/usr/bin/env bash
# Regenerate the OpenAPI document and the Python client from the code (no server needed).
#   scripts/gen-client.sh          write clients/openapi.json and clients/python
#   scripts/gen-client.sh DIR      write DIR/openapi.json and DIR/python instead (used by the check)
# clients/python is generated whole, never edited by hand, except clients/python/airlock_sdk
# (the SDK and `sbx`, written over the generated client), which is carried over into every
# regeneration; the README comes from clients/templates/README.md.jinja, setup.py from
# clients/templates/setup.py.jinja and the generator settings from clients/python-config.yaml.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-clients}
mkdir -p "$out"
# The generator's post-hooks call `ruff` from PATH: use the project's pinned one.
export PATH="$PWD/.venv/bin:$PATH"

.venv/bin/python scripts/openapi_doc.py > "$out/openapi.json.new"
mv "$out/openapi.json.new" "$out/openapi.json"

log=$(mktemp)
hand=$(mktemp -d)
trap 'rm -rf "$log" "$hand"' EXIT
cp -r clients/python/airlock_sdk "$hand/"
rm -rf "$out/python"
if ! .venv/bin/openapi-python-client generate \
    --path "$out/openapi.json" \
    --config clients/python-config.yaml \
    --custom-template-path clients/templates \
    --meta setup \
    --output-path "$out/python" >"$log" 2>&1; then
  cat "$log" >&2
  exit 1
fi
rm -rf "$out/python/.ruff_cache"
cp -r "$hand/airlock_sdk" "$out/python/"
find "$out/python/airlock_sdk" -name __pycache__ -prune -exec rm -rf {} +
