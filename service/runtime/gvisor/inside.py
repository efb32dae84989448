"""Shell scripts the gVisor runtime runs inside a sandbox for its own bookkeeping.

They run through `runsc exec` like any command, so they see only the sandbox; they need a
POSIX `sh`, `cat`, `kill` and `readlink`, which every supported image has.
"""

# Kill an exec's process tree from inside, as root with CAP_KILL. $1: the exec's pid in the
# sandbox. Takes its process group (looping, so a fork bomb cannot outrun it), then every
# process in its session or parented by it, or still holding its stdout/stderr (which catches
# children that escaped with setsid but keep the output open). Processes of other execs, and
# daemons that detached their output, are left alone.
KILL_SCRIPT = r"""
target="$1"
out=$(readlink "/proc/$target/fd/1" 2>/dev/null); err=$(readlink "/proc/$target/fd/2" 2>/dev/null)
n=0
while kill -9 "-$target" 2>/dev/null && [ "$n" -lt 1000 ]; do n=$((n + 1)); done
kill -9 "$target" 2>/dev/null
for round in 1 2 3 4 5; do
  found=0
  for st in /proc/[0-9]*/stat; do
    pid="${st#/proc/}"; pid="${pid%/stat}"
    [ "$pid" = "$$" ] || [ "$pid" = 1 ] && continue
    line=$(cat "$st" 2>/dev/null) || continue
    set -- ${line##*) }
    # fields after the command name: state ppid pgrp session
    hit=0
    if [ "$2" = "$target" ] || [ "$3" = "$target" ] || [ "$4" = "$target" ]; then
      hit=1
    elif [ -n "$out$err" ]; then
      o=$(readlink "/proc/$pid/fd/1" 2>/dev/null); e=$(readlink "/proc/$pid/fd/2" 2>/dev/null)
      if [ -n "$out" ] && [ "$o" = "$out" ]; then hit=1; fi
      if [ -n "$err" ] && [ "$e" = "$err" ]; then hit=1; fi
    fi
    if [ "$hit" = 1 ]; then kill -9 "$pid" 2>/dev/null; found=1; fi
  done
  [ "$found" = 0 ] && break
done
exit 0
"""


# Lists processes (other than PID 1 and itself) holding a host file descriptor: an exec's pipe
# inherited by something that outlived the exec. A checkpoint of such a sandbox cannot be
# restored, so snapshot refuses it instead of losing the sandbox.
HELD_PIPES_SCRIPT = r"""
for d in /proc/[0-9]*; do
  p="${d#/proc/}"
  [ "$p" = 1 ] || [ "$p" = "$$" ] && continue
  for f in "$d"/fd/*; do
    case "$(readlink "$f" 2>/dev/null)" in
      host:*) echo "$p $(cat "$d/comm" 2>/dev/null)"; break ;;
    esac
  done
done
"""


# Lists processes other than PID 1 and itself (shell builtins only, so it forks nothing that
# would list itself). Without the exec agent every one of them came from a `runsc exec`,
# which a restore on runsc 0.0~20240729 does not bring back.
LIVE_PROCESSES_SCRIPT = r"""
for d in /proc/[0-9]*; do
  p="${d#/proc/}"
  [ "$p" = 1 ] || [ "$p" = "$$" ] && continue
  read -r comm < "$d/comm" 2>/dev/null || continue
  echo "$p $comm"
done
"""
