from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...models.stdin_written import StdinWritten
from ...types import UNSET, File, Response, Unset


def _get_kwargs(
    sandbox_id: str,
    exec_id: str,
    *,
    body: File,
    close: bool | Unset = False,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    params: dict[str, Any] = {}

    params["close"] = close

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/sandboxes/{sandbox_id}/execs/{exec_id}/stdin".format(
            sandbox_id=quote(str(sandbox_id), safe=""),
            exec_id=quote(str(exec_id), safe=""),
        ),
        "params": params,
    }

    _kwargs["content"] = body.payload

    headers["Content-Type"] = "application/octet-stream"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Problem | StdinWritten | None:
    if response.status_code == 200:
        response_200 = StdinWritten.from_dict(response.json())

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


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[Problem | StdinWritten]:
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
    body: File,
    close: bool | Unset = False,
) -> Response[Problem | StdinWritten]:
    """Write to a running exec's stdin

     For an exec started with `stdin_open`: the raw body (at most 1 MiB) goes to the process's stdin
    after what was written before; `?close=true` then closes it (the process reads EOF). An exec started
    without `stdin_open`, one whose stdin was closed, or one that has ended is a 409 `stdin_not_open`.
    At most 1 MiB written to an exec and not yet read by its process is held: a write that does not fit
    waits up to 10 s for the process to read, then (or at once, while another write to the same exec is
    waiting) is refused whole with a 429 `stdin_full` and `Retry-After`; nothing of a refused write
    reaches the process.

    Args:
        sandbox_id (str):
        exec_id (str):
        close (bool | Unset): Close stdin after this write Default: False.
        body (File):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | StdinWritten]
    """

    kwargs = _get_kwargs(
        sandbox_id=sandbox_id,
        exec_id=exec_id,
        body=body,
        close=close,
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
    body: File,
    close: bool | Unset = False,
) -> Problem | StdinWritten | None:
    """Write to a running exec's stdin

     For an exec started with `stdin_open`: the raw body (at most 1 MiB) goes to the process's stdin
    after what was written before; `?close=true` then closes it (the process reads EOF). An exec started
    without `stdin_open`, one whose stdin was closed, or one that has ended is a 409 `stdin_not_open`.
    At most 1 MiB written to an exec and not yet read by its process is held: a write that does not fit
    waits up to 10 s for the process to read, then (or at once, while another write to the same exec is
    waiting) is refused whole with a 429 `stdin_full` and `Retry-After`; nothing of a refused write
    reaches the process.

    Args:
        sandbox_id (str):
        exec_id (str):
        close (bool | Unset): Close stdin after this write Default: False.
        body (File):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | StdinWritten
    """

    return sync_detailed(
        sandbox_id=sandbox_id,
        exec_id=exec_id,
        client=client,
        body=body,
        close=close,
    ).parsed


async def asyncio_detailed(
    sandbox_id: str,
    exec_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: File,
    close: bool | Unset = False,
) -> Response[Problem | StdinWritten]:
    """Write to a running exec's stdin

     For an exec started with `stdin_open`: the raw body (at most 1 MiB) goes to the process's stdin
    after what was written before; `?close=true` then closes it (the process reads EOF). An exec started
    without `stdin_open`, one whose stdin was closed, or one that has ended is a 409 `stdin_not_open`.
    At most 1 MiB written to an exec and not yet read by its process is held: a write that does not fit
    waits up to 10 s for the process to read, then (or at once, while another write to the same exec is
    waiting) is refused whole with a 429 `stdin_full` and `Retry-After`; nothing of a refused write
    reaches the process.

    Args:
        sandbox_id (str):
        exec_id (str):
        close (bool | Unset): Close stdin after this write Default: False.
        body (File):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | StdinWritten]
    """

    kwargs = _get_kwargs(
        sandbox_id=sandbox_id,
        exec_id=exec_id,
        body=body,
        close=close,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    sandbox_id: str,
    exec_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: File,
    close: bool | Unset = False,
) -> Problem | StdinWritten | None:
    """Write to a running exec's stdin

     For an exec started with `stdin_open`: the raw body (at most 1 MiB) goes to the process's stdin
    after what was written before; `?close=true` then closes it (the process reads EOF). An exec started
    without `stdin_open`, one whose stdin was closed, or one that has ended is a 409 `stdin_not_open`.
    At most 1 MiB written to an exec and not yet read by its process is held: a write that does not fit
    waits up to 10 s for the process to read, then (or at once, while another write to the same exec is
    waiting) is refused whole with a 429 `stdin_full` and `Retry-After`; nothing of a refused write
    reaches the process.

    Args:
        sandbox_id (str):
        exec_id (str):
        close (bool | Unset): Close stdin after this write Default: False.
        body (File):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | StdinWritten
    """

    return (
        await asyncio_detailed(
            sandbox_id=sandbox_id,
            exec_id=exec_id,
            client=client,
            body=body,
            close=close,
        )
    ).parsed
