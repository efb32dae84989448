from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.context import Context
from ...models.context_create import ContextCreate
from ...models.problem import Problem
from ...types import Response


def _get_kwargs(
    sandbox_id: str,
    *,
    body: ContextCreate,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/sandboxes/{sandbox_id}/contexts".format(
            sandbox_id=quote(str(sandbox_id), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Context | Problem | None:
    if response.status_code == 201:
        response_201 = Context.from_dict(response.json())

        return response_201

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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Context | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    sandbox_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: ContextCreate,
) -> Response[Context | Problem]:
    """Start a Python interpreter in a sandbox, kept between runs

     The interpreter runs as an exec does: as the sandbox's user (or `user`), with the sandbox's
    environment and `env`, under the sandbox's caps and network policy. It lives until it is deleted,
    its sandbox stops, or a run overruns its deadline; a pause keeps it. A sandbox holds at most 8 live
    contexts (409 `sandbox_contexts_full`); a sandbox without `python3` is a 422 `context_not_started`.

    Args:
        sandbox_id (str):
        body (ContextCreate): A Python interpreter in the sandbox, kept between runs: it runs as
            an exec would (the
            sandbox's user unless `user`, its environment with `env` added, in `cwd`).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Context | Problem]
    """

    kwargs = _get_kwargs(
        sandbox_id=sandbox_id,
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    sandbox_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: ContextCreate,
) -> Context | Problem | None:
    """Start a Python interpreter in a sandbox, kept between runs

     The interpreter runs as an exec does: as the sandbox's user (or `user`), with the sandbox's
    environment and `env`, under the sandbox's caps and network policy. It lives until it is deleted,
    its sandbox stops, or a run overruns its deadline; a pause keeps it. A sandbox holds at most 8 live
    contexts (409 `sandbox_contexts_full`); a sandbox without `python3` is a 422 `context_not_started`.

    Args:
        sandbox_id (str):
        body (ContextCreate): A Python interpreter in the sandbox, kept between runs: it runs as
            an exec would (the
            sandbox's user unless `user`, its environment with `env` added, in `cwd`).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Context | Problem
    """

    return sync_detailed(
        sandbox_id=sandbox_id,
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    sandbox_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: ContextCreate,
) -> Response[Context | Problem]:
    """Start a Python interpreter in a sandbox, kept between runs

     The interpreter runs as an exec does: as the sandbox's user (or `user`), with the sandbox's
    environment and `env`, under the sandbox's caps and network policy. It lives until it is deleted,
    its sandbox stops, or a run overruns its deadline; a pause keeps it. A sandbox holds at most 8 live
    contexts (409 `sandbox_contexts_full`); a sandbox without `python3` is a 422 `context_not_started`.

    Args:
        sandbox_id (str):
        body (ContextCreate): A Python interpreter in the sandbox, kept between runs: it runs as
            an exec would (the
            sandbox's user unless `user`, its environment with `env` added, in `cwd`).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Context | Problem]
    """

    kwargs = _get_kwargs(
        sandbox_id=sandbox_id,
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    sandbox_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: ContextCreate,
) -> Context | Problem | None:
    """Start a Python interpreter in a sandbox, kept between runs

     The interpreter runs as an exec does: as the sandbox's user (or `user`), with the sandbox's
    environment and `env`, under the sandbox's caps and network policy. It lives until it is deleted,
    its sandbox stops, or a run overruns its deadline; a pause keeps it. A sandbox holds at most 8 live
    contexts (409 `sandbox_contexts_full`); a sandbox without `python3` is a 422 `context_not_started`.

    Args:
        sandbox_id (str):
        body (ContextCreate): A Python interpreter in the sandbox, kept between runs: it runs as
            an exec would (the
            sandbox's user unless `user`, its environment with `env` added, in `cwd`).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Context | Problem
    """

    return (
        await asyncio_detailed(
            sandbox_id=sandbox_id,
            client=client,
            body=body,
        )
    ).parsed
