from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.list_reviews_state_type_0_item import ListReviewsStateType0Item
from ...models.problem import Problem
from ...models.review_page import ReviewPage
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    state: list[ListReviewsStateType0Item] | None | Unset = UNSET,
    cursor: None | str | Unset = UNSET,
    limit: int | Unset = 50,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    json_state: list[str] | None | Unset
    if isinstance(state, Unset):
        json_state = UNSET
    elif isinstance(state, list):
        json_state = []
        for state_type_0_item_data in state:
            state_type_0_item: str = state_type_0_item_data
            json_state.append(state_type_0_item)

    else:
        json_state = state
    params["state"] = json_state

    json_cursor: None | str | Unset
    if isinstance(cursor, Unset):
        json_cursor = UNSET
    else:
        json_cursor = cursor
    params["cursor"] = json_cursor

    params["limit"] = limit

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/reviews",
        "params": params,
    }

    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Problem | ReviewPage | None:
    if response.status_code == 200:
        response_200 = ReviewPage.from_dict(response.json())

        return response_200

    if response.status_code == 401:
        response_401 = Problem.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = Problem.from_dict(response.json())

        return response_403

    if response.status_code == 422:
        response_422 = Problem.from_dict(response.json())

        return response_422

    if response.status_code == 429:
        response_429 = Problem.from_dict(response.json())

        return response_429

    if response.status_code == 503:
        response_503 = Problem.from_dict(response.json())

        return response_503

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[Problem | ReviewPage]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient | Client,
    state: list[ListReviewsStateType0Item] | None | Unset = UNSET,
    cursor: None | str | Unset = UNSET,
    limit: int | Unset = 50,
) -> Response[Problem | ReviewPage]:
    """List reviews, newest first

    Args:
        state (list[ListReviewsStateType0Item] | None | Unset): Repeatable: only these states
        cursor (None | str | Unset): `next_cursor` of the previous page: the key of its last item
        limit (int | Unset): Page size (default 50) Default: 50.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | ReviewPage]
    """

    kwargs = _get_kwargs(
        state=state,
        cursor=cursor,
        limit=limit,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient | Client,
    state: list[ListReviewsStateType0Item] | None | Unset = UNSET,
    cursor: None | str | Unset = UNSET,
    limit: int | Unset = 50,
) -> Problem | ReviewPage | None:
    """List reviews, newest first

    Args:
        state (list[ListReviewsStateType0Item] | None | Unset): Repeatable: only these states
        cursor (None | str | Unset): `next_cursor` of the previous page: the key of its last item
        limit (int | Unset): Page size (default 50) Default: 50.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | ReviewPage
    """

    return sync_detailed(
        client=client,
        state=state,
        cursor=cursor,
        limit=limit,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient | Client,
    state: list[ListReviewsStateType0Item] | None | Unset = UNSET,
    cursor: None | str | Unset = UNSET,
    limit: int | Unset = 50,
) -> Response[Problem | ReviewPage]:
    """List reviews, newest first

    Args:
        state (list[ListReviewsStateType0Item] | None | Unset): Repeatable: only these states
        cursor (None | str | Unset): `next_cursor` of the previous page: the key of its last item
        limit (int | Unset): Page size (default 50) Default: 50.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | ReviewPage]
    """

    kwargs = _get_kwargs(
        state=state,
        cursor=cursor,
        limit=limit,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient | Client,
    state: list[ListReviewsStateType0Item] | None | Unset = UNSET,
    cursor: None | str | Unset = UNSET,
    limit: int | Unset = 50,
) -> Problem | ReviewPage | None:
    """List reviews, newest first

    Args:
        state (list[ListReviewsStateType0Item] | None | Unset): Repeatable: only these states
        cursor (None | str | Unset): `next_cursor` of the previous page: the key of its last item
        limit (int | Unset): Page size (default 50) Default: 50.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | ReviewPage
    """

    return (
        await asyncio_detailed(
            client=client,
            state=state,
            cursor=cursor,
            limit=limit,
        )
    ).parsed
