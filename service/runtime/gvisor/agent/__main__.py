"""Airlock's exec agent: PID 1 of a gVisor sandbox whose image has /usr/bin/python3.

This directory is bind-mounted read-only into the sandbox and run by `BOOT` (see
`agent_boot.py`). The agent talks to the host over its own stdin/stdout (pipes held by the
service) with length-prefixed frames, and keeps the duties of an init: it reaps every child
and orphan, ignores TERM/INT/HUP, and survives `kill -9 -1`. Each exec is a child in its own
session with exactly the argv, cwd, environment and uid/gid asked for and no capabilities;
rlimits come from the sandbox spec. An exec may ask for a terminal instead of pipes: a pty
whose other end is its stdin, stdout and stderr and its controlling terminal; a resize frame
changes its window.

Frames: a header `>IBI` (payload length, kind, channel) and the payload. The host is trusted
here (it made the sandbox); the host trusts nothing from this side. When the host goes away
(EOF or a broken pipe) every exec's process tree is killed and the agent stays on as a plain
init. Stdlib only, and Python 3.6 syntax: images bring their own python3.

Modules: `wire` (frames, constants), `loop` (the Agent: frames, pipes, reaping), `running`
(one exec's state, its stdin and output), `launch` (starting an exec: its pipes or terminal,
its child), `become` (turning a child into the exec), `terminal` (ptys, window sizes),
`tree` (killing an exec's process tree), `usage` (what the sandbox holds, for its metrics),
`ports` (connections the host asks for to TCP ports inside the sandbox).
"""

import loop

loop.main()
