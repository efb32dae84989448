#!/usr/bin/env bash
# Build the service's wheel, the client's and the Agents SDK client's into DIR (default: dist/),
# for `pip install` on any machine: airlock-<version>-py3-none-any.whl,
# airlock_client-<version>-py3-none-any.whl and airlock_agents-<version>-py3-none-any.whl.
# Dependencies come from PyPI when they are installed; building needs only PyPI (setuptools).
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(realpath -m "${1:-dist}")
mkdir -p "$out"
pip=(.venv/bin/pip)
[[ -x .venv/bin/pip ]] || pip=(python3 -m pip)
for project in . clients/python clients/agents; do
  # setuptools builds in the source tree: a build/ left from an earlier run would put files
  # deleted since into the wheel.
  rm -rf "$project/build"
  "${pip[@]}" wheel -q --disable-pip-version-check --no-deps --wheel-dir "$out" "./$project"
  rm -rf "$project/build"
done
ls "$out"/airlock-*.whl "$out"/airlock_client-*.whl "$out"/airlock_agents-*.whl
