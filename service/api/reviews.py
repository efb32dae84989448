from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from litestar import Controller, Request, Response, get, post
from litestar.openapi.spec import OpenAPIMediaType, Operation, RequestBody, Schema
from litestar.openapi.spec.enums import OpenAPIType
from litestar.params import FromPath, JSONBody, QueryParameter

from service.deps import AppSettings, Audit, CurrentPrincipal, DbSession, Limit
from service.pagination import DEFAULT_LIMIT, cursor_parameter, id_pattern
from service.reviews import service
from service.reviews.schemas import (
    Bundle,
    Review,
    ReviewAccepted,
    ReviewCreate,
    ReviewPage,
    ReviewState,
)

Cursor = cursor_parameter(id_pattern("rev"))

StateFilter = Annotated[
    list[ReviewState] | None,
    QueryParameter(name="state", description="Repeatable: only these states"),
]


@dataclass
class _BundleBody(Operation):
    """The request body of a bundle upload is the raw bundle."""

    def __post_init__(self) -> None:
        self.request_body = RequestBody(
            content={
                "application/octet-stream": OpenAPIMediaType(
                    schema=Schema(type=OpenAPIType.STRING, format="binary")
                )
            },
            required=True,
        )


class ReviewController(Controller):
    path = "/v1/reviews"
    tags = ["reviews"]

    @post(
        "/",
        operation_id="create_review",
        summary="Review a pull request: fetch, test in a fresh sandbox, judge; runs as a job",
        status_code=202,
        opt={"scope": "reviews:write"},
    )
    async def create_review(
        self,
        db_session: DbSession,
        settings: AppSettings,
        principal: CurrentPrincipal,
        audit_ctx: Audit,
        data: JSONBody[ReviewCreate],
    ) -> Response[ReviewAccepted]:
        accepted = await service.create_review(db_session, settings, principal, audit_ctx, data)
        return Response(accepted, status_code=202)

    @get(
        "/",
        operation_id="list_reviews",
        summary="List reviews, newest first",
        opt={"scope": "reviews:read"},
    )
    async def list_reviews(
        self,
        db_session: DbSession,
        principal: CurrentPrincipal,
        states: StateFilter = None,
        cursor: Cursor = None,
        limit: Limit = DEFAULT_LIMIT,
    ) -> ReviewPage:
        return await service.list_reviews(
            db_session, principal, limit=limit, cursor=cursor, states=states or []
        )

    @get(
        "/{review_id:str}",
        operation_id="get_review",
        summary="Get a review's report: stages, exit codes, test output, diff stats, verdict",
        opt={"scope": "reviews:read"},
    )
    async def get_review(
        self, db_session: DbSession, principal: CurrentPrincipal, review_id: FromPath[str]
    ) -> Review:
        return await service.get_review(db_session, principal, review_id)

    @post(
        "/bundles",
        operation_id="upload_review_bundle",
        summary="Upload a git bundle to review (its id goes in a review's `repo`)",
        description="The raw body is a bundle made by `git bundle create` holding the base and "
        "head refs; limited by the tenant's `max_upload_mib`.",
        status_code=201,
        opt={"scope": "reviews:write", "streamed_body": True},
        request_max_body_size=None,  # the tenant's limit is enforced while reading
        operation_class=_BundleBody,
    )
    async def upload_review_bundle(
        self,
        request: Request[Any, Any, Any],
        db_session: DbSession,
        principal: CurrentPrincipal,
        audit_ctx: Audit,
    ) -> Bundle:
        return await service.upload_bundle(
            db_session, principal, audit_ctx, request.stream(), request.content_length
        )
