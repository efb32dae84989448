from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...types import UNSET, Response, Unset


def _get_kwargs(
    sandbox_id: str,
    exec_id: str,
    *,
    after: int | None | Unset = UNSET,
    last_event_id: None | str | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if not isinstance(last_event_id, Unset):
        headers["Last-Event-ID"] = last_event_id

    params: dict[str, Any] = {}

    json_after: int | None | Unset
    if isinstance(after, Unset):
        json_after = UNSET
    else:
        json_after = after
    params["after"] = json_after

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/sandboxes/{sandbox_id}/execs/{exec_id}/events".format(
            sandbox_id=quote(str(sandbox_id), safe=""),
            exec_id=quote(str(exec_id), safe=""),
        ),
        "params": params,
    }

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Any | Problem | None:
    if response.status_code == 200:
        response_200 = cast(Any, response.text)
        return response_200

    if response.status_code == 204:
        response_204 = cast(Any, None)
        return response_204

    if response.status_code == 401:
        response_401 = Problem.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = Problem.from_dict(response.json())

        return response_403

    if response.status_code == 404:
        response_404 = Problem.from_dict(response.json())

        return response_404

    if response.status_code == 409:
        response_409 = Problem.from_dict(response.json())

        return response_409

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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Any | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    sandbox_id: str,
    exec_id: str,
    *,
    client: AuthenticatedClient | Client,
    after: int | None | Unset = UNSET,
    last_event_id: None | str | Unset = UNSET,
) -> Response[Any | Problem]:
    r"""Stream an exec's output as server-sent events

     Events `stdout` and `stderr` carry `{\"text\": ...}`; the last is `exit`. Reconnect with `Last-
    Event-ID` (or `?after=`) to resume without loss. The credential is checked again every few seconds:
    once it is revoked or expired, or the tenant suspended, the stream ends with an `unauthenticated`
    event (`{\"code\", \"detail\"}`).

    Args:
        sandbox_id (str):
        exec_id (str):
        after (int | None | Unset): Resume after this event id (as Last-Event-ID)
        last_event_id (None | str | Unset): Resume after this event id

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | Problem]
    """

    kwargs = _get_kwargs(
        sandbox_id=sandbox_id,
        exec_id=exec_id,
        after=after,
        last_event_id=last_event_id,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    sandbox_id: str,
    exec_id: str,
    *,
    client: AuthenticatedClient | Client,
    after: int | None | Unset = UNSET,
    last_event_id: None | str | Unset = UNSET,
) -> Any | Problem | None:
    r"""Stream an exec's output as server-sent events

     Events `stdout` and `stderr` carry `{\"text\": ...}`; the last is `exit`. Reconnect with `Last-
    Event-ID` (or `?after=`) to resume without loss. The credential is checked again every few seconds:
    once it is revoked or expired, or the tenant suspended, the stream ends with an `unauthenticated`
    event (`{\"code\", \"detail\"}`).

    Args:
        sandbox_id (str):
        exec_id (str):
        after (int | None | Unset): Resume after this event id (as Last-Event-ID)
        last_event_id (None | str | Unset): Resume after this event id

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | Problem
    """

    return sync_detailed(
        sandbox_id=sandbox_id,
        exec_id=exec_id,
        client=client,
        after=after,
        last_event_id=last_event_id,
    ).parsed


async def asyncio_detailed(
    sandbox_id: str,
    exec_id: str,
    *,
    client: AuthenticatedClient | Client,
    after: int | None | Unset = UNSET,
    last_event_id: None | str | Unset = UNSET,
) -> Response[Any | Problem]:
    r"""Stream an exec's output as server-sent events

     Events `stdout` and `stderr` carry `{\"text\": ...}`; the last is `exit`. Reconnect with `Last-
    Event-ID` (or `?after=`) to resume without loss. The credential is checked again every few seconds:
    once it is revoked or expired, or the tenant suspended, the stream ends with an `unauthenticated`
    event (`{\"code\", \"detail\"}`).

    Args:
        sandbox_id (str):
        exec_id (str):
        after (int | None | Unset): Resume after this event id (as Last-Event-ID)
        last_event_id (None | str | Unset): Resume after this event id

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | Problem]
    """

    kwargs = _get_kwargs(
        sandbox_id=sandbox_id,
        exec_id=exec_id,
        after=after,
        last_event_id=last_event_id,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    sandbox_id: str,
    exec_id: str,
    *,
    client: AuthenticatedClient | Client,
    after: int | None | Unset = UNSET,
    last_event_id: None | str | Unset = UNSET,
) -> Any | Problem | None:
    r"""Stream an exec's output as server-sent events

     Events `stdout` and `stderr` carry `{\"text\": ...}`; the last is `exit`. Reconnect with `Last-
    Event-ID` (or `?after=`) to resume without loss. The credential is checked again every few seconds:
    once it is revoked or expired, or the tenant suspended, the stream ends with an `unauthenticated`
    event (`{\"code\", \"detail\"}`).

    Args:
        sandbox_id (str):
        exec_id (str):
        after (int | None | Unset): Resume after this event id (as Last-Event-ID)
        last_event_id (None | str | Unset): Resume after this event id

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | Problem
    """

    return (
        await asyncio_detailed(
            sandbox_id=sandbox_id,
            exec_id=exec_id,
            client=client,
            after=after,
            last_event_id=last_event_id,
        )
    ).parsed
