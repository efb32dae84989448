from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
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


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Any | None:
    if response.status_code == 200:
        return None

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Any]:
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
) -> Response[Any]:
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
        Response[Any]
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


async def asyncio_detailed(
    sandbox_id: str,
    exec_id: str,
    *,
    client: AuthenticatedClient | Client,
    after: int | None | Unset = UNSET,
    last_event_id: None | str | Unset = UNSET,
) -> Response[Any]:
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
        Response[Any]
    """

    kwargs = _get_kwargs(
        sandbox_id=sandbox_id,
        exec_id=exec_id,
        after=after,
        last_event_id=last_event_id,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)
