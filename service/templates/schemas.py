from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, ClassVar, Literal

import msgspec
from msgspec import Meta

from service.sandboxes.schemas import EnvName, EnvValue, NetworkPolicy, SizeName

TemplateName = Annotated[str, Meta(pattern=r"^[a-z0-9][a-z0-9._-]{0,62}$")]
Arg = Annotated[str, Meta(max_length=32_768)]
Argv = Annotated[list[Arg], Meta(min_length=1, max_length=1000)]
VersionState = Literal["queued", "building", "ready", "failed"]
# How sandboxes of a version start: restored from its snapshot, or from the image with the
# setup steps run again (runtimes that cannot snapshot on this host).
StartMode = Literal["snapshot", "image"]


_STRING = {"type": "string"}


class TemplateCreate(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """A new template, or a new version of an existing one (same name): built as a job."""

    name: TemplateName
    image: Annotated[str, Meta(min_length=1, max_length=200)] = "default"
    setup: Annotated[list[Argv], Meta(max_length=100)] = msgspec.field(default_factory=list)
    size: SizeName = "small"
    env: Annotated[dict[EnvName, EnvValue], Meta(max_length=128)] = msgspec.field(
        default_factory=dict
    )
    network: NetworkPolicy = msgspec.field(default_factory=NetworkPolicy)
    # A version made from this sandbox as it is now (its files, and its memory when it has no
    # network), with its image, size and environment: no image, setup, size, env or network.
    from_sandbox: Annotated[str, Meta(pattern=r"^sbx_[0-9a-f]{32}$")] | None = None

    # A template from a sandbox takes all of these from it (added to the schema by
    # service.openapi).
    schema_rules: ClassVar[dict[str, Any]] = {
        "not": {
            "anyOf": [
                {
                    "required": ["from_sandbox", other],
                    "properties": {"from_sandbox": {"type": "string"}},
                }
                for other in ("image", "setup", "size", "env", "network")
            ]
        }
    }


class TemplateVersion(msgspec.Struct, kw_only=True):
    version: int
    state: VersionState
    image: str
    setup: list[list[str]]
    size: str
    env: dict[str, str]
    network: NetworkPolicy
    start_mode: StartMode | None
    snapshot_bytes: int | None
    build_log: str
    error: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    from_sandbox: str | None = None


class Template(msgspec.Struct, kw_only=True):
    id: str
    name: str
    # Operator templates are shared with every tenant.
    shared: bool
    # The newest build's state; `version` is the newest ready one (what sandboxes start from).
    state: VersionState
    version: int | None
    latest_version: int
    snapshot_bytes: int | None
    created_at: datetime
    updated_at: datetime
    versions: list[TemplateVersion] | None = None


class TemplatePage(msgspec.Struct, kw_only=True):
    items: list[Template]
