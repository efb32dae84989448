from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...models.run import Run
from ...models.run_create import RunCreate
from ...types import Response


def _get_kwargs(
    sandbox_id: str,
    context_id: str,
    *,
    body: RunCreate,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/sandboxes/{sandbox_id}/contexts/{context_id}/run".format(
            sandbox_id=quote(str(sandbox_id), safe=""),
            context_id=quote(str(context_id), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Problem | Run | None:
    if response.status_code == 200:
        response_200 = Run.from_dict(response.json())

        return response_200

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

    if response.status_code == 413:
        response_413 = Problem.from_dict(response.json())

        return response_413

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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Problem | Run]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    sandbox_id: str,
    context_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: RunCreate,
) -> Response[Problem | Run]:
    """Run code in a context

     The code runs after the context's earlier runs, with their variables. The answer has what it
    printed, the value of its last expression and each matplotlib figure it left open (`results`, by
    MIME type), and the exception that ended it (`error`). At its deadline (`timeout_s`, at most the
    tenant's `max_exec_timeout_s`) the code is interrupted (`timed_out`, a `TimeoutError`) and the
    context goes on; code still running 5 s later is killed with its interpreter (`context_lost`). A
    context that has ended is a 409 `context_gone`.

    Args:
        sandbox_id (str):
        context_id (str):
        body (RunCreate): Code to run in the context. Its deadline interrupts the code (a
            `TimeoutError` in the
            answer) and the context goes on; code that does not stop within 5 s more (a long call
            that does not let Python's signal handlers run) ends the context with it.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | Run]
    """

    kwargs = _get_kwargs(
        sandbox_id=sandbox_id,
        context_id=context_id,
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    sandbox_id: str,
    context_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: RunCreate,
) -> Problem | Run | None:
    """Run code in a context

     The code runs after the context's earlier runs, with their variables. The answer has what it
    printed, the value of its last expression and each matplotlib figure it left open (`results`, by
    MIME type), and the exception that ended it (`error`). At its deadline (`timeout_s`, at most the
    tenant's `max_exec_timeout_s`) the code is interrupted (`timed_out`, a `TimeoutError`) and the
    context goes on; code still running 5 s later is killed with its interpreter (`context_lost`). A
    context that has ended is a 409 `context_gone`.

    Args:
        sandbox_id (str):
        context_id (str):
        body (RunCreate): Code to run in the context. Its deadline interrupts the code (a
            `TimeoutError` in the
            answer) and the context goes on; code that does not stop within 5 s more (a long call
            that does not let Python's signal handlers run) ends the context with it.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | Run
    """

    return sync_detailed(
        sandbox_id=sandbox_id,
        context_id=context_id,
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    sandbox_id: str,
    context_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: RunCreate,
) -> Response[Problem | Run]:
    """Run code in a context

     The code runs after the context's earlier runs, with their variables. The answer has what it
    printed, the value of its last expression and each matplotlib figure it left open (`results`, by
    MIME type), and the exception that ended it (`error`). At its deadline (`timeout_s`, at most the
    tenant's `max_exec_timeout_s`) the code is interrupted (`timed_out`, a `TimeoutError`) and the
    context goes on; code still running 5 s later is killed with its interpreter (`context_lost`). A
    context that has ended is a 409 `context_gone`.

    Args:
        sandbox_id (str):
        context_id (str):
        body (RunCreate): Code to run in the context. Its deadline interrupts the code (a
            `TimeoutError` in the
            answer) and the context goes on; code that does not stop within 5 s more (a long call
            that does not let Python's signal handlers run) ends the context with it.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | Run]
    """

    kwargs = _get_kwargs(
        sandbox_id=sandbox_id,
        context_id=context_id,
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    sandbox_id: str,
    context_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: RunCreate,
) -> Problem | Run | None:
    """Run code in a context

     The code runs after the context's earlier runs, with their variables. The answer has what it
    printed, the value of its last expression and each matplotlib figure it left open (`results`, by
    MIME type), and the exception that ended it (`error`). At its deadline (`timeout_s`, at most the
    tenant's `max_exec_timeout_s`) the code is interrupted (`timed_out`, a `TimeoutError`) and the
    context goes on; code still running 5 s later is killed with its interpreter (`context_lost`). A
    context that has ended is a 409 `context_gone`.

    Args:
        sandbox_id (str):
        context_id (str):
        body (RunCreate): Code to run in the context. Its deadline interrupts the code (a
            `TimeoutError` in the
            answer) and the context goes on; code that does not stop within 5 s more (a long call
            that does not let Python's signal handlers run) ends the context with it.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | Run
    """

    return (
        await asyncio_detailed(
            sandbox_id=sandbox_id,
            context_id=context_id,
            client=client,
            body=body,
        )
    ).parsed
