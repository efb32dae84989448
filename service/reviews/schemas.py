from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, ClassVar, Literal

import msgspec
from msgspec import Meta

from service.hostnames import REPO
from service.sandboxes.schemas import SandboxNetwork, SizeName

ReviewState = Literal["queued", "running", "finished", "failed"]
# A branch, tag, full ref, commit id or `pull/N/head`; never an option or a refspec, and
# nothing git refuses as a ref name (`..`, `//`, `/.`, a final `/`, `.` or `.lock`).
Ref = Annotated[
    str,
    Meta(
        min_length=1,
        max_length=200,
        pattern=r"^(?![^\n]*\n)(?!.*\.\.)(?!.*//)(?!.*/\.)(?!.*(?:/|\.|\.lock)$)[A-Za-z0-9_][A-Za-z0-9._/-]*$",
    ),
]
Arg = Annotated[str, Meta(max_length=32_768)]
Argv = Annotated[list[Arg], Meta(min_length=1, max_length=1000)]

DEFAULT_TEST = ["python", "-m", "pytest", "-q"]
DEFAULT_TIMEOUT_S = 300
DEFAULT_USERNAME = "x-access-token"


class ReviewCredentials(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """How to fetch a private https repository: a tenant secret (`PUT /v1/secrets/{name}`)
    sent as the password of HTTP Basic auth. The value is read on the host at fetch time and
    given to git through its environment only; nothing of it enters the sandbox."""

    secret: Annotated[str, Meta(min_length=1, max_length=100)]
    # Printable ASCII without ':' (what a Basic auth header carries).
    # GitHub takes `x-access-token` with a token; GitLab `oauth2`; Bitbucket `x-token-auth`.
    username: Annotated[
        str, Meta(min_length=1, max_length=200, pattern=r"^(?![^\n]*\n)[ -9;-~]+$")
    ] = DEFAULT_USERNAME


class ReviewCreate(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """A pull request to review: fetched on the host, tested in a fresh sandbox, judged."""

    # An https:// git URL, an uploaded bundle id (`bdl_…`), or, where the operator enabled
    # local repositories, a path or file:// URL on the server.
    repo: Annotated[str, Meta(min_length=1, max_length=2048, pattern=REPO)]
    base: Ref = "main"
    head: Ref
    # A template to start the sandbox from (else the default image).
    template: Annotated[str, Meta(min_length=1, max_length=100)] | None = None
    size: SizeName = "small"
    install: Argv | None = None
    test: Argv = msgspec.field(default_factory=lambda: list(DEFAULT_TEST))
    # The deadline of the install and of the test run, each.
    timeout_s: Annotated[int, Meta(ge=1, le=86_400)] = DEFAULT_TIMEOUT_S
    network: SandboxNetwork = msgspec.field(default_factory=SandboxNetwork)
    # The model to ask (else the server's AIRLOCK_LLM_MODEL).
    model: Annotated[str, Meta(min_length=1, max_length=200)] | None = None
    # For a private https repository: the tenant secret to fetch with.
    credentials: ReviewCredentials | None = None

    # Rules across fields, added to the schema (service.openapi): credentials go with an
    # https:// repository only; a review from a template keeps the network `none`.
    schema_rules: ClassVar[dict[str, Any]] = {
        "if": {"required": ["credentials"], "properties": {"credentials": {"type": "object"}}},
        "then": {"properties": {"repo": {"pattern": "^https://"}}},
        "not": {
            "required": ["template", "network"],
            "properties": {
                "template": {"type": "string"},
                "network": {
                    "required": ["mode"],
                    "properties": {"mode": {"enum": ["allowlist", "open"]}},
                },
            },
        },
    }


class Stage(msgspec.Struct, kw_only=True):
    name: str
    # ok | failed | timeout | skipped | error
    outcome: str
    started_at: datetime
    duration_ms: int
    detail: str | None = None


class DiffStat(msgspec.Struct, kw_only=True):
    files: int
    insertions: int
    deletions: int
    # `path +N -M` per changed file (capped)
    text: str


class TestCounts(msgspec.Struct, kw_only=True):
    """Tests by outcome, as the review's pytest plugin recorded them."""

    passed: int
    failed: int
    error: int
    skipped: int
    xfailed: int
    xpassed: int


class Regression(msgspec.Struct, kw_only=True):
    """A test that passes at the base and not at the head."""

    test: str
    base: str
    # failed | error | skipped | xfailed | missing
    head: str


class ReviewGate(msgspec.Struct, kw_only=True):
    """Whether the tests allow an approval, decided before the model is asked: never when the
    change touches test infrastructure, when the head's results are missing or odd, when a
    test fails, or when a test that passes at the base fails, vanishes or is skipped at the
    head. The head's exit code and output never count."""

    approvable: bool
    # Each reason the change cannot be approved from its tests (empty when approvable).
    findings: list[str]
    # Changed test infrastructure: paths, config sections, plugins new at the head.
    infrastructure: list[str]
    # What the change's Python code newly reaches into that makes its results its own word:
    # the runner, the import or exit machinery, tracing, run-time code, the results channel.
    reaches: list[str] = msgspec.field(default_factory=list)
    regressions: list[Regression]
    # Tests that fail or error at the head.
    failing: list[str]
    base: TestCounts | None
    head: TestCounts | None


class Review(msgspec.Struct, kw_only=True):
    """The report."""

    id: str
    state: ReviewState
    repo: str
    base: str
    head: str
    base_commit: str | None
    head_commit: str | None
    template: str | None
    size: str
    install: list[str] | None
    test: list[str]
    timeout_s: int
    network: SandboxNetwork
    # The secret's name and the user name the fetch used; never the value.
    credentials: ReviewCredentials | None
    stages: list[Stage]
    sandbox_id: str | None
    diff: DiffStat | None
    install_exit_code: int | None
    install_outcome: str | None
    test_exit_code: int | None
    test_outcome: str | None
    test_output: str | None
    # The test gate (None until the head's tests ran).
    gate: ReviewGate | None
    # "APPROVE", "REQUEST_CHANGES" or "COMMENT" (the tests passed and no model judged the
    # change: never an approval), as plain strings (the generated client then has no
    # enum-or-null types), or None until decided or when the review failed.
    verdict: str | None
    reasoning: str | None
    # The model asked, and what it answered (the verdict may differ: failed tests decide).
    model: str | None
    model_verdict: str | None
    error: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None


class ReviewSummary(msgspec.Struct, kw_only=True):
    id: str
    state: ReviewState
    repo: str
    base: str
    head: str
    verdict: str | None
    test_exit_code: int | None
    created_at: datetime
    finished_at: datetime | None


class ReviewPage(msgspec.Struct, kw_only=True):
    items: list[ReviewSummary]
    next_cursor: str | None


class ReviewAccepted(msgspec.Struct, kw_only=True):
    id: str
    state: ReviewState


class Bundle(msgspec.Struct, kw_only=True):
    """An uploaded git bundle: give its id as a review's `repo`."""

    id: str
    size: int
    sha256: str
    created_at: datetime
