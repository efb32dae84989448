"""A running gVisor sandbox's network policy: changed in place, its packets counted.

The namespace, veth pair and iptables chains themselves are network.py's; this is the
runtime's side of them.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import msgspec

from ..errors import InvalidSpec
from ..specs import validate
from ..types import SandboxInfo
from . import network
from .network import Networks
from .store import Store


@dataclass
class Policy:
    """The network policy of the store's sandboxes, applied through `networks`."""

    store: Store
    networks: Networks

    async def update_network(
        self,
        sandbox_id: str,
        mode: str,
        allow: list[str] | None = None,
        private: list[str] | None = None,
    ) -> SandboxInfo:
        """Change a running sandbox's egress policy between "allowlist" and "open" (`private`:
        the tenant's granted ranges now; None keeps the sandbox's). A sandbox made with "none"
        has no interface to open later, and one with a network cannot be reduced to "none"
        (an empty allowlist blocks everything instead)."""
        sandbox = await self.store.ready(sandbox_id)
        grants = sandbox.spec.network_private if private is None else list(private)
        spec = msgspec.structs.replace(
            sandbox.spec, network=mode, network_allow=list(allow or []), network_private=grants
        )
        validate(spec)
        if not sandbox.meta.net or mode == "none":
            raise InvalidSpec(
                "the network of a sandbox can change between 'allowlist' and 'open' only; "
                "give the sandbox a network when it is created"
            )
        async with sandbox.lock:
            slot = network.Slot.from_meta(sandbox.id, sandbox.meta.net)
            await asyncio.to_thread(
                self.networks.apply,
                slot,
                sandbox.dir,
                spec.network,
                spec.network_allow,
                spec.network_private,
            )
            sandbox.meta.spec = spec
            sandbox.save()
        return sandbox.info()

    async def network_counters(self, sandbox_id: str) -> dict[str, int] | None:
        """Packets the sandbox sent so far that its policy allowed and blocked; None without a
        network (nothing can leave)."""
        sandbox = self.store.load(sandbox_id)
        if not sandbox.meta.net:
            return None
        slot = network.Slot.from_meta(sandbox.id, sandbox.meta.net)
        return await asyncio.to_thread(self.networks.counters, slot)
