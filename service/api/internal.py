"""The routes one process of a deployment calls on another (node tokens only, not in the
OpenAPI document): what is left of a deleted template to destroy here, and a snapshot this node
holds, for a node that starts a sandbox from it."""

from __future__ import annotations

from litestar import get, post
from litestar.params import FromPath, JSONBody

from service.deps import Runtimes
from service.nodes import cleanup, snapshots
from service.streaming import ClosingStream


@post(cleanup.ROUTE, operation_id="clean_up", opt={"internal": True}, include_in_schema=False,
      status_code=200)  # fmt: skip
async def clean_up(runtimes: Runtimes, data: JSONBody[cleanup.Leftovers]) -> cleanup.Cleaned:
    """Destroy what another process of the deployment says is left of a deleted template."""
    return await cleanup.clean_here(runtimes, data)


@get(
    f"{snapshots.ROUTE}/{{snapshot_id:str}}",
    operation_id="export_snapshot",
    opt={"internal": True},
    include_in_schema=False,
)
async def export_snapshot(runtimes: Runtimes, snapshot_id: FromPath[str]) -> ClosingStream:
    """A snapshot this node holds, for another node."""
    body = await snapshots.export(await runtimes.get(), snapshot_id)
    return ClosingStream(body, media_type="application/x-tar")
