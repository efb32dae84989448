"""Host side of the exec agent (`agent/`, PID 1 of gVisor sandboxes with /usr/bin/python3).

The agent's stdin/stdout are pipes this process holds; frames are `>IBI` (payload length,
kind, channel) and a payload. Everything the agent sends is untrusted: a root process in the
sandbox can write to /proc/1/fd/1 or take the agent over. So frames from it are bounded
(`MAX_FRAME`), of known kinds, on channels we opened, with JSON payloads decoded strictly;
any breach, a closed pipe, a start or a kill left unanswered, closes the link for good. The
runtime then falls back to `runsc exec`, and kills the tree of an exec whose end the agent
did not report from outside (the pid file and `KILL_SCRIPT`). A compromised agent can only
lie about execs of its own sandbox. Connections to the sandbox's ports are channels of the
same link (`agent_ports.py`), bounded the same way.

Around a checkpoint the link is held (`agent_hold.py`): the running execs' channels outlive
the pipes, which the restore replaces (`rebind`), and their deadlines stop while held.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import struct
from collections.abc import Callable
from typing import Any, Literal

import msgspec

from . import agent_frames as frames
from . import agent_pipes, agent_ports
from .agent_hold import Hold

log = logging.getLogger(__name__)

START_TIMEOUT_S = 5.0
KILL_CONFIRM_S = 5.0
PING_TIMEOUT_S = 2.0
# An agent from before the usage frame (a sandbox restored from an older snapshot) does not
# answer it: asked once, for this long.
USAGE_TIMEOUT_S = 1.0


class AgentLost(Exception):
    """The link is closed (the agent died, misbehaved or stopped answering)."""


class Channel:
    """One exec on the link: its start, output, stdin credit and end."""

    def __init__(self, link: AgentLink, number: int) -> None:
        loop = asyncio.get_running_loop()
        self.link = link
        self.number = number
        self.started: asyncio.Future[int | None] = loop.create_future()
        self.exit: asyncio.Future[frames.Exit] = loop.create_future()
        self._on_data: Callable[[Literal["stdout", "stderr"], bytes], None] | None = None
        self._early: list[tuple[Literal["stdout", "stderr"], bytes]] = []
        self.credit = frames.STDIN_WINDOW
        self.credit_changed = asyncio.Event()

    def data(self, stream: Literal["stdout", "stderr"], payload: bytes) -> None:
        if self._on_data is None:
            self._early.append((stream, payload))  # before the exec's owner is attached
        else:
            self._on_data(stream, payload)

    def attach(self, on_data: Callable[[Literal["stdout", "stderr"], bytes], None]) -> None:
        self._on_data = on_data
        for stream, payload in self._early:
            on_data(stream, payload)
        self._early = []

    def fail(self, exc: Exception) -> None:
        for future in (self.started, self.exit):
            if not future.done():
                future.set_exception(exc)
                future.exception()  # retrieved: nobody may be waiting any more
        self.credit_changed.set()


class AgentLink:
    """The framed link to one sandbox's agent. `usable` once the agent said hello (or answered
    a ping after a restore) and until anything goes wrong."""

    def __init__(self, sandbox_id: str) -> None:
        self.sandbox_id = sandbox_id
        self.broken: str | None = None
        self.ending = False  # the service is stopping the sandbox (a checkpoint): no warning
        self._buf = bytearray()
        self._channels: dict[int, Channel] = {}
        self._last = 0
        self._pings: dict[str, asyncio.Future[None]] = {}
        self._usages: dict[str, asyncio.Future[frames.Usage]] = {}
        self.answers_usage = True
        self.tty = False  # the agent runs execs under a terminal (it said so)
        self.holds = False  # the agent holds its output for a checkpoint (it said so)
        self.hold = Hold()
        self._ready = asyncio.get_running_loop().create_future()
        self._reader: asyncio.ReadTransport | None = None
        self._writer: asyncio.WriteTransport | None = None
        self._pipes = 0  # which pipes are the link's: callbacks of earlier ones are ignored
        self._gone: str | None = None  # a pipe that ended while held: judged on release
        self.ports = agent_ports.PortChannels(self)

    @classmethod
    async def connect(cls, sandbox_id: str, read_fd: int, write_fd: int) -> AgentLink:
        """Take over the pipe ends (the agent's stdout to read, its stdin to write)."""
        link = cls(sandbox_id)
        await link.rebind(read_fd, write_fd)
        return link

    async def rebind(self, read_fd: int, write_fd: int) -> None:
        """Talk over these pipe ends from now on (a restore gave the agent new ones)."""
        self.unbind()
        self._reader, self._writer = await agent_pipes.connect(self, self._pipes, read_fd, write_fd)
        self._gone = None

    def unbind(self) -> None:
        """Let go of the pipes (the sandbox stopped at a checkpoint): what they still report
        is ignored; the channels stay for the restore."""
        self._pipes += 1
        for transport in (self._reader, self._writer):
            if transport is not None:
                transport.close()
        self._reader = self._writer = None

    def on_pipes(self, pipes: int) -> bool:
        """Whether these are the pipes the link talks over now."""
        return pipes == self._pipes

    def pipe_closed(self, pipes: int, side: str) -> None:
        """A pipe of the link ended: the agent is gone, unless the link is held for a
        checkpoint (which stops the sandbox) or the pipe is an earlier one."""
        if not self.on_pipes(pipes):
            return
        if self.hold.held:
            self._gone = f"the agent closed its {side}"
        else:
            self.close(f"the agent closed its {side}")

    @property
    def usable(self) -> bool:
        # Only `close` cancels `_ready`, and it sets `broken` first.
        return self.broken is None and self._ready.done()

    # -- incoming -------------------------------------------------------------------------

    def data_received(self, data: bytes) -> None:
        if self.broken is not None:
            return
        self._buf += data
        while len(self._buf) >= frames.HEADER.size and self.broken is None:
            size, kind, number = frames.HEADER.unpack_from(self._buf)
            if kind not in frames.FROM_AGENT or size > frames.MAX_FRAME:
                self.close(f"bad frame header (kind {kind}, {size} bytes)")
                return
            if len(self._buf) < frames.HEADER.size + size:
                return
            payload = bytes(self._buf[frames.HEADER.size : frames.HEADER.size + size])
            del self._buf[: frames.HEADER.size + size]
            try:
                self._dispatch(kind, number, payload)
            except (msgspec.DecodeError, msgspec.ValidationError, ValueError) as exc:
                self.close(f"bad frame (kind {kind}): {str(exc)[:200]}")

    def _dispatch(self, kind: int, number: int, payload: bytes) -> None:
        if kind == frames.USAGE_OF:
            if number != 0:
                raise ValueError("usage on an exec channel")
            usage = frames.decode(payload, frames.Usage)
            waiter = self._usages.pop(usage.token, None)
            if waiter is not None and not waiter.done():
                waiter.set_result(usage)
            return
        if kind == frames.HELLO or kind == frames.PONG:
            if number != 0:
                raise ValueError("hello/pong on an exec channel")
            if kind == frames.HELLO:
                hello = frames.decode(payload, frames.Hello)
                version, self.tty, self.holds = hello.v, hello.tty, hello.hold
            else:
                pong = frames.decode(payload, frames.Pong)
                version, self.tty, self.holds = pong.v, pong.tty, pong.hold
                waiter = self._pings.pop(pong.token, None)
                if waiter is not None and not waiter.done():
                    waiter.set_result(None)
            if version != frames.VERSION:
                raise ValueError(f"agent version {version}, expected {frames.VERSION}")
            if not self._ready.done():
                self._ready.set_result(None)
            return
        if not 0 < number <= self._last:
            raise ValueError(f"frame for channel {number}, never opened")
        if kind in agent_ports.FROM_AGENT:
            if not self.ports.frame(kind, number, payload) and number in self._channels:
                raise ValueError(f"port frame on exec channel {number}")
            return
        channel = self._channels.get(number)
        if channel is None:
            return  # an exec we stopped following
        if kind == frames.STARTED:
            pid = frames.decode(payload, frames.Started).pid
            if not 1 < pid < 1 << 22:
                raise ValueError(f"pid {pid}")
            if not channel.started.done():
                channel.started.set_result(pid)
        elif kind == frames.STDOUT or kind == frames.STDERR:
            channel.data("stdout" if kind == frames.STDOUT else "stderr", payload)
        elif kind == frames.STDIN_ACK:
            if len(payload) != 4:
                raise ValueError("stdin ack of the wrong size")
            channel.credit = min(
                frames.STDIN_WINDOW, channel.credit + struct.unpack(">I", payload)[0]
            )
            channel.credit_changed.set()
        elif kind == frames.EXIT:
            end = frames.decode(payload, frames.Exit)
            if end.code is not None and not 0 <= end.code <= 255:
                raise ValueError(f"exit code {end.code}")
            if min(end.out, end.err) < 0 or end.ran != end.ran:
                raise ValueError("bad counters")
            self._channels.pop(number, None)
            if not channel.started.done():
                channel.started.set_result(None)  # it never ran (fork failed)
            if not channel.exit.done():
                channel.exit.set_result(end)
            channel.credit_changed.set()

    # -- outgoing -------------------------------------------------------------------------

    def send(self, kind: int, number: int, payload: bytes = b"") -> None:
        """Send a frame; while the link is held, once it is released."""
        frame = frames.HEADER.pack(len(payload), kind, number) + payload
        if self.hold.held and self.broken is None:
            self.hold.queued.append(frame)
        else:
            self._write(frame)

    def _write(self, frame: bytes) -> None:
        if self.broken is not None or self._writer is None:
            raise AgentLost(self.broken or "not connected")
        self._writer.write(frame)

    def next_channel(self) -> int:
        self._last += 1
        return self._last

    def open_channel(self) -> Channel:
        channel = Channel(self, self.next_channel())
        self._channels[channel.number] = channel
        return channel

    def forget(self, channel: Channel) -> None:
        self._channels.pop(channel.number, None)

    async def start(self, request: dict[str, Any]) -> tuple[Channel, int | None]:
        """Start an exec; its channel and its pid in the sandbox. AgentLost only when the
        request never left (the caller may use `runsc exec` instead). Once sent, the exec is
        never started a second way: a pid of None means it did not start (its end is on the
        channel) or the link was lost meanwhile (the channel fails, the agent ends the tree);
        an agent silent for START_TIMEOUT_S loses its link."""
        payload = msgspec.json.encode(request)
        if len(payload) > frames.MAX_START:
            raise AgentLost("exec request too large for the agent")
        channel = self.open_channel()
        try:
            self.send(frames.START, channel.number, payload)
        except AgentLost:
            self.forget(channel)
            raise
        try:
            return channel, await asyncio.wait_for(asyncio.shield(channel.started), START_TIMEOUT_S)
        except TimeoutError:
            self.close("the agent did not start an exec in time")
        except AgentLost:
            pass
        except BaseException:
            self.forget(channel)
            raise
        return channel, None

    async def ping(self, timeout_s: float = PING_TIMEOUT_S) -> bool:
        """One round trip; False (and the link closed) when the agent does not answer."""
        return await self._round_trip(frames.PING, timeout_s)

    async def _round_trip(self, kind: int, timeout_s: float = PING_TIMEOUT_S) -> bool:
        """A frame answered with a pong (written now, also while held)."""
        token = secrets.token_hex(8)
        waiter = asyncio.get_running_loop().create_future()
        self._pings[token] = waiter
        try:
            self._write(frames.HEADER.pack(len(token), kind, 0) + token.encode())
            await asyncio.wait_for(waiter, timeout_s)
            return True
        except (TimeoutError, AgentLost, asyncio.CancelledError) as exc:
            if isinstance(exc, asyncio.CancelledError) and self.broken is None:
                raise
            self.close("the agent did not answer a ping")
            return False
        finally:
            self._pings.pop(token, None)

    async def hold_for_checkpoint(self) -> bool:
        """Hold the link for a checkpoint: once this returns True, nothing is half-way
        through either pipe and nothing more goes in until `release`, so the agent may be
        frozen and restored onto other pipes with its execs. False when the agent cannot (an
        older one: a ping round trip leaves the pipes empty for now) or did not answer (the
        link is then closed)."""
        if not self.holds:
            await self.ping()
            return False
        self.hold.begin()
        return await self._round_trip(frames.HOLD)

    def release(self) -> None:
        """Both sides talk again, over the pipes the link has now, what was held first."""
        held = self.hold.end()
        if self._gone is not None:  # and no restore gave it new pipes
            self.close(self._gone)
        if self.broken is None:
            for frame in [frames.HEADER.pack(0, frames.RELEASE, 0), *held]:
                self._write(frame)

    def take_over(self, *, end_execs: bool) -> None:
        """A new link to an agent restored from a checkpoint it was held for: it forgets the
        channels of the host it had and talks again. Their execs run on unwatched in a clone;
        in the sandbox itself (its service restarted meanwhile, which ended their records)
        with `end_execs` they end, as when a running sandbox loses its service. Older agents
        ignore both frames."""
        detach = frames.END_EXECS if end_execs else b""
        self._write(frames.HEADER.pack(len(detach), frames.DETACH, 0) + detach)
        self._write(frames.HEADER.pack(0, frames.RELEASE, 0))

    async def usage(self, paths: list[str]) -> frames.Usage | None:
        """The processes and the writable space the agent sees in the sandbox; None when it
        cannot say (an agent older than this question, which is then not asked again)."""
        if not self.answers_usage:
            return None
        token = secrets.token_hex(8)
        waiter: asyncio.Future[frames.Usage] = asyncio.get_running_loop().create_future()
        self._usages[token] = waiter
        try:
            # Written now, also while held: the agent answers it then too.
            question = msgspec.json.encode({"token": token, "paths": paths})
            self._write(frames.HEADER.pack(len(question), frames.USAGE, 0) + question)
            return await asyncio.wait_for(waiter, USAGE_TIMEOUT_S)
        except TimeoutError:
            self.answers_usage = False
            return None
        except AgentLost:
            return None
        finally:
            self._usages.pop(token, None)

    async def wait_ready(self, timeout_s: float) -> bool:
        if not self._ready.done() and timeout_s > 0:
            await asyncio.wait([self._ready], timeout=timeout_s)
        return self.usable

    def close(self, reason: str = "closed") -> None:
        """Close the link for good; every exec on it learns it lost the agent."""
        if self.broken is not None:
            return
        self.broken = reason
        if reason != "closed" and not self.ending:
            log.warning("sandbox %s: agent link closed: %s", self.sandbox_id, reason)
        if not self._ready.done():
            self._ready.cancel()
        self.hold.end()
        for waiter in self._pings.values():
            if not waiter.done():
                waiter.cancel()
        lost = AgentLost(reason)
        for channel in list(self._channels.values()):
            channel.fail(lost)
        self._channels.clear()
        self.ports.fail_all(lost)
        self._buf = bytearray()
        for transport in (self._reader, self._writer):
            if transport is not None:
                transport.close()
