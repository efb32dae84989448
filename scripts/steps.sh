# Progress lines for the setup scripts (sourced by run.sh and runtime-setup.sh).
# `step WHAT CMD…` runs CMD with its output kept in a log and prints one line on stderr,
# "==> WHAT … 12.3 s"; when CMD fails, the end of its log follows and the step's status is CMD's.

now() { date +%s.%N; }

elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f s", b - a }'; }

step() {
  local what=$1 start log rc=0
  shift
  start=$(now)
  log=$(mktemp "${TMPDIR:-/tmp}/airlock-step.XXXXXX")
  printf '==> %s ... ' "$what" >&2
  "$@" >"$log" 2>&1 </dev/null || rc=$?
  if ((rc == 0)); then
    echo "$(elapsed "$start")" >&2
    rm -f "$log"
    return 0
  fi
  echo "FAILED after $(elapsed "$start") (exit $rc)" >&2
  tail -n 20 "$log" | sed 's/^/    /' >&2
  echo "    (the whole output: $log)" >&2
  return "$rc"
}
