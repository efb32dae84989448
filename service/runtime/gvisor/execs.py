"""Execs in gVisor sandboxes: through the exec agent where it answers, else `runsc exec`.

Either way an exec has the same kill (its tree, from outside, through its pid file), the same
outcome rules (`oom` when the cgroup's OOM counter rose, `killed` when the sandbox died) and
the same end (its process and pid files removed). Which way matters beyond the exec: runsc
ends everything a `runsc exec` started (children, `nohup`, `setsid` included) when it restores
a checkpoint, and keeps what the agent started. So an exec in a sandbox whose agent has not
said hello yet waits for it, and the record notes when an exec did go through `runsc exec`.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import os
import re
import secrets
import time
from collections.abc import AsyncIterable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from ..errors import ExecNotFound, InvalidSpec, SandboxNotFound, TtyUnsupported
from ..execution import Classify, ExecutionBase, KillTree, Spawned, SupervisedExecution, spawn
from ..paths import sandbox_path
from ..specs import parse_user
from ..types import ExecRequest, ExecResult, Outcome, TtySize, new_exec_id
from . import bundle, reaper
from .agent_execution import AgentExecution
from .agent_link import AgentLost
from .core import HELPER_ENV
from .inside import KILL_SCRIPT
from .outcomes import exec_end
from .runsc import KILL_TIMEOUT_S, Runsc
from .store import Sandbox, Store

log = logging.getLogger(__name__)

_E = TypeVar("_E", bound=ExecutionBase)

EXEC_ID = re.compile(r"exec-[0-9a-f]{16}")
# How long an exec waits for a just started agent's hello (~0.1-0.5 s) before giving up on it.
HELLO_WAIT_S = 10.0
# How long after an OOM kill a sandbox found dead is taken to have died of it.
OOM_AFTERMATH_S = 30.0


@dataclass
class Execs:
    """Execs in the store's sandboxes, through their agent or the runsc driver."""

    store: Store
    cli: Runsc

    async def agent_ready(self, sandbox_id: str, timeout_s: float = 10.0) -> bool:
        """Whether execs in this sandbox go through its exec agent, waiting up to `timeout_s`
        for a freshly started agent to say hello (until then execs use `runsc exec`)."""
        link = self.store.load(sandbox_id).link
        return link is not None and await link.wait_ready(timeout_s)

    async def tty_available(self, sandbox_id: str) -> bool:
        """Terminals are the agent's: `runsc exec` (no agent, or one lost) gives none."""
        link = (await self.store.ready(sandbox_id)).link
        return link is not None and await link.wait_ready(10.0) and link.tty

    async def resize_exec(self, sandbox_id: str, exec_id: str, size: TtySize) -> None:
        _check_size(size)
        execution = self.store.load(sandbox_id).execs.get(exec_id)
        if execution is None:
            raise ExecNotFound(exec_id)
        await execution.resize(size)

    async def exec(self, sandbox_id: str, request: ExecRequest) -> ExecutionBase:
        if request.tty is not None:
            await self.tty_available(sandbox_id)  # a fresh agent says hello first
        sandbox = await self.store.ready(sandbox_id)
        return await self.start_exec(
            sandbox,
            list(request.argv),
            cwd=request.cwd,
            env=request.env,
            user=request.user,
            stdin=request.stdin,
            timeout_s=request.timeout_s,
            helper=request.helper,
            output_cap=request.output_cap,
            exec_id=request.exec_id,
            tty=request.tty,
            stream=request.stream,
        )

    async def run(self, sandbox_id: str, request: ExecRequest) -> ExecResult:
        return await (await self.exec(sandbox_id, request)).wait()

    async def kill_exec(self, sandbox_id: str, exec_id: str) -> None:
        """Kill a running exec. Works for execs started by an earlier process too (after a
        restart) while their pid file is still there; unknown or finished: ExecNotFound."""
        sandbox = self.store.load(sandbox_id)
        execution = sandbox.execs.get(exec_id)
        if execution is not None:
            await execution.kill()
            return
        pid_file = sandbox.dir / "exec" / f"{exec_id}.pid"
        if not EXEC_ID.fullmatch(exec_id) or not pid_file.exists():
            raise ExecNotFound(exec_id)
        await self._kill_tree(sandbox, exec_id)
        self.exec_done(sandbox, exec_id)

    async def spawn_exec(
        self, sandbox: Sandbox, exec_id: str, process: dict[str, Any], with_stdin: bool
    ) -> Spawned:
        base = sandbox.dir / "exec" / exec_id
        process_file = base.with_suffix(".json")
        try:
            # 0600: the process carries the exec's environment, secrets included.
            fd = os.open(process_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as fh:
                fh.write(json.dumps(process))
        except FileNotFoundError as exc:  # destroyed meanwhile
            raise SandboxNotFound(sandbox.id) from exc
        argv = self.cli.command(
            "exec",
            f"--process={process_file}",
            f"--internal-pid-file={base.with_suffix('.pid')}",
            sandbox.id,
            meta=sandbox.meta,
        )
        return await spawn(argv, with_stdin=with_stdin)

    def _exec_env(self, sandbox: Sandbox, extra: dict[str, str]) -> list[str]:
        env = {"PATH": sandbox.meta.path_env or bundle.DEFAULT_PATH}
        env.update(sandbox.spec.env)
        env.update(extra)
        return bundle.env_list(env)

    async def start_exec(
        self,
        sandbox: Sandbox,
        argv: list[str],
        *,
        cwd: str = "/",
        env: dict[str, str] | None = None,
        user: str | None = None,
        stdin: bytes | AsyncIterable[bytes] | None = None,
        timeout_s: float = 60.0,
        output_cap: int = 1 << 20,
        helper: bool = False,
        exec_id: str | None = None,
        tty: TtySize | None = None,
        stream: bool = False,
    ) -> ExecutionBase:
        requested = time.monotonic()
        if not argv or not all(isinstance(a, str) and "\x00" not in a for a in argv):
            raise InvalidSpec("argv must be a non-empty list of strings without NUL")
        exec_id = exec_id or new_exec_id()
        if not EXEC_ID.fullmatch(exec_id) or exec_id in sandbox.execs:
            raise InvalidSpec(f"exec id {exec_id!r} is malformed or in use")
        if timeout_s <= 0 or output_cap < 0:
            raise InvalidSpec("timeout_s must be positive and output_cap not negative")
        if tty is not None:
            _check_size(tty)
        uid, gid = parse_user(user or sandbox.spec.user)
        process = bundle.exec_process(
            argv=argv,
            cwd=sandbox_path(cwd),
            env=HELPER_ENV if helper else self._exec_env(sandbox, env or {}),
            uid=uid,
            gid=gid,
        )
        await self._await_hello(sandbox)
        if tty is not None and (sandbox.agent is None or not sandbox.agent.tty):
            raise TtyUnsupported("this sandbox has no exec agent to give the exec a terminal")
        if sandbox.agent is not None:
            try:
                return await self.agent_exec(
                    sandbox,
                    process,
                    exec_id=exec_id,
                    stdin=stdin,
                    timeout_s=timeout_s,
                    output_cap=output_cap,
                    requested=requested,
                    tty=tty,
                    stream=stream,
                )
            except AgentLost:  # lost on the way: `runsc exec` takes over, without a terminal
                if tty is not None:
                    raise TtyUnsupported("the sandbox's exec agent was lost") from None
        if not helper:
            _note_runsc_exec(sandbox)
        spawned = await self.spawn_exec(sandbox, exec_id, process, stdin is not None)
        kill_tree, classify, on_done = self._hooks(sandbox, exec_id)
        return self._track(
            sandbox,
            SupervisedExecution(
                exec_id,
                spawned,
                stdin=stdin,
                timeout_s=timeout_s,
                output_cap=output_cap,
                kill_tree=kill_tree,
                classify=classify,
                requested_at=requested,
                on_done=on_done,
            ),
        )

    async def _await_hello(self, sandbox: Sandbox) -> None:
        """A sandbox just started has an agent that has not said hello yet: wait for it, so
        what this exec starts is the agent's (a restore keeps it). An agent that never says
        hello loses its link, and every exec goes through `runsc exec` without waiting."""
        link = sandbox.link
        if link is not None and link.broken is None and not link.usable:
            if not await link.wait_ready(HELLO_WAIT_S):
                link.close("the agent did not say hello")

    async def agent_exec(
        self,
        sandbox: Sandbox,
        process: dict[str, Any],
        *,
        stdin: bytes | AsyncIterable[bytes] | None,
        timeout_s: float,
        output_cap: int,
        requested: float,
        stream: bool = False,
        exec_id: str | None = None,
        tty: TtySize | None = None,
    ) -> AgentExecution:
        """Start `process` through the sandbox's exec agent (AgentLost: use `runsc exec`)."""
        link = sandbox.link
        if link is None:
            raise AgentLost("no agent")
        channel, pid = await link.start(
            {
                "argv": process["args"],
                "cwd": process["cwd"],
                "env": process["env"],
                "uid": process["user"]["uid"],
                "gid": process["user"]["gid"],
                "stdin": stdin is not None,
                "cap": None if stream else output_cap,
                **({"tty": [tty.rows, tty.cols]} if tty is not None else {}),
            }
        )
        exec_id = exec_id or new_exec_id()
        if pid is not None:  # so `kill_exec` works from another process too (after a restart)
            with contextlib.suppress(OSError):
                (sandbox.dir / "exec" / f"{exec_id}.pid").write_text(str(pid))
        kill_tree, classify, on_done = self._hooks(sandbox, exec_id)
        return self._track(
            sandbox,
            AgentExecution(
                exec_id,
                channel,
                pid,
                stdin=stdin,
                timeout_s=timeout_s,
                output_cap=output_cap,
                kill_fallback=kill_tree,
                classify=classify,
                requested_at=requested,
                stream=stream,
                on_done=on_done,
                tty=tty is not None,
            ),
        )

    def _hooks(
        self, sandbox: Sandbox, exec_id: str
    ) -> tuple[KillTree, Classify, Callable[[ExecutionBase], None]]:
        """An exec's kill (its tree, from outside), outcome and end callbacks."""
        return (
            functools.partial(self._kill_tree, sandbox, exec_id),
            functools.partial(self._classify, sandbox, sandbox.cgroup.oom_kills()),
            lambda execution: self.exec_done(sandbox, execution.id),
        )

    def _track(self, sandbox: Sandbox, execution: _E) -> _E:
        sandbox.execs[execution.id] = execution
        return execution

    def exec_done(self, sandbox: Sandbox, exec_id: str) -> None:
        sandbox.execs.pop(exec_id, None)
        base = sandbox.dir / "exec" / exec_id
        for suffix in (".json", ".pid"):
            with contextlib.suppress(OSError):
                base.with_suffix(suffix).unlink()

    async def _kill_tree(self, sandbox: Sandbox, exec_id: str) -> None:
        """Kill an exec's process tree inside the sandbox (see KILL_SCRIPT)."""
        pid = 0
        for _ in range(20):  # the pid file appears once runsc has started the process
            try:
                pid = int((sandbox.dir / "exec" / f"{exec_id}.pid").read_text().strip())
                break
            except (OSError, ValueError):
                await asyncio.sleep(0.05)
        if not pid:
            log.warning("sandbox %s: no pid for exec %s, cannot kill its tree", sandbox.id, exec_id)
            return
        await self.root_helper(
            sandbox, "kill", ["/bin/sh", "-c", KILL_SCRIPT, "sh", str(pid)], "CAP_KILL"
        )

    async def root_helper(
        self, sandbox: Sandbox, kind: str, argv: list[str], capability: str
    ) -> int | None:
        """Run a short root process inside the sandbox holding just `capability`; its exit
        code, or None when it did not finish within the kill timeout."""
        process = bundle.exec_process(
            argv=argv,
            cwd="/",
            env=HELPER_ENV,
            uid=0,
            gid=0,
            caps=[capability],
        )
        helper_id = f"{kind}-{secrets.token_hex(8)}"
        spawned = await self.spawn_exec(sandbox, helper_id, process, with_stdin=False)
        try:
            return await asyncio.wait_for(spawned.proc.wait(), KILL_TIMEOUT_S)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                spawned.proc.kill()
            return None
        finally:
            spawned.close()
            self.exec_done(sandbox, helper_id)

    async def _classify(
        self, sandbox: Sandbox, oom_kills_before: int | None, code: int | None
    ) -> Outcome:
        """The exec's outcome by `exec_end`; a sandbox that ended with it is marked failed.
        Under systrap, which host process the OOM killer takes is its own choice: at times
        the Sentry or the exec agent's address space rather than the hog's. An agent lost
        with the OOM kill is PID 1 gone, so the sandbox is ending, and it fails `oom` now
        rather than when runsc notices."""
        if code == 0:
            return "exited"
        after = sandbox.cgroup.oom_kills()
        oom_killed = oom_kills_before is not None and after is not None and after > oom_kills_before
        if not oom_killed and code is not None and code < 128:
            return "exited"
        reaper.reap_adopted()
        now = time.monotonic()
        recent_oom = sandbox.oom_seen_at is not None and now - sandbox.oom_seen_at < OOM_AFTERMATH_S
        if oom_killed:
            sandbox.oom_seen_at = now
        agent_lost = sandbox.link is not None and sandbox.link.broken is not None
        ended = (oom_killed and agent_lost) or await self.state(sandbox.id) != "running"
        outcome, reason = exec_end(
            code,
            oom_killed,
            sandbox_ended=ended,
            recent_oom=recent_oom,
            pids_hit=sandbox.cgroup.pids_max_hits() > 0,
        )
        if reason is not None:
            sandbox.mark_failed(reason)
        return outcome

    async def state(self, sandbox_id: str) -> str | None:
        """runsc's state of the container (`running`, `stopped`...), None if it has none."""
        return await self.cli.state(sandbox_id, self.store.record_of(sandbox_id))


def _check_size(size: TtySize) -> None:
    """A window the terminal can hold (two unsigned shorts)."""
    if not (0 < size.rows < 1 << 16 and 0 < size.cols < 1 << 16):
        raise InvalidSpec("rows and cols must be between 1 and 65535")


def _note_runsc_exec(sandbox: Sandbox) -> None:
    """Record that a tenant's exec went through `runsc exec` (a checkpoint then checks what
    still runs: a restore would end it)."""
    if not sandbox.meta.runsc_execs:
        sandbox.meta.runsc_execs = True
        sandbox.save()
