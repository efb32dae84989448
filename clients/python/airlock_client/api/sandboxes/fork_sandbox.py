from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...models.sandbox import Sandbox
from ...models.sandbox_fork import SandboxFork
from ...types import Response


def _get_kwargs(
    sandbox_id: str,
    *,
    body: SandboxFork,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/sandboxes/{sandbox_id}/fork".format(
            sandbox_id=quote(str(sandbox_id), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Problem | Sandbox | None:
    if response.status_code == 201:
        response_201 = Sandbox.from_dict(response.json())

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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Problem | Sandbox]:
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
    body: SandboxFork,
) -> Response[Problem | Sandbox]:
    """Start a new sandbox from a live snapshot of this one

     The child has everything the parent had in memory and in its files at that moment, its caps, network
    policy, environment and labels (unless given), and its own id, hostname and randomness; the two
    diverge from then on. It counts against the tenant's quotas as a new sandbox. Its processes are the
    parent's, those of the parent's running execs too (the execs stay the parent's). What the runtime
    could not keep (a connection open through the port route) is a 409 `sandbox_busy` naming it, and no
    child is made; a paused parent is woken first.

    Args:
        sandbox_id (str):
        body (SandboxFork): A child of a running sandbox: its TTL (else the parent's), labels
            (else the parent's)
            and idle timeout (else the tenant's default); the rest is the parent's.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | Sandbox]
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
    body: SandboxFork,
) -> Problem | Sandbox | None:
    """Start a new sandbox from a live snapshot of this one

     The child has everything the parent had in memory and in its files at that moment, its caps, network
    policy, environment and labels (unless given), and its own id, hostname and randomness; the two
    diverge from then on. It counts against the tenant's quotas as a new sandbox. Its processes are the
    parent's, those of the parent's running execs too (the execs stay the parent's). What the runtime
    could not keep (a connection open through the port route) is a 409 `sandbox_busy` naming it, and no
    child is made; a paused parent is woken first.

    Args:
        sandbox_id (str):
        body (SandboxFork): A child of a running sandbox: its TTL (else the parent's), labels
            (else the parent's)
            and idle timeout (else the tenant's default); the rest is the parent's.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | Sandbox
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
    body: SandboxFork,
) -> Response[Problem | Sandbox]:
    """Start a new sandbox from a live snapshot of this one

     The child has everything the parent had in memory and in its files at that moment, its caps, network
    policy, environment and labels (unless given), and its own id, hostname and randomness; the two
    diverge from then on. It counts against the tenant's quotas as a new sandbox. Its processes are the
    parent's, those of the parent's running execs too (the execs stay the parent's). What the runtime
    could not keep (a connection open through the port route) is a 409 `sandbox_busy` naming it, and no
    child is made; a paused parent is woken first.

    Args:
        sandbox_id (str):
        body (SandboxFork): A child of a running sandbox: its TTL (else the parent's), labels
            (else the parent's)
            and idle timeout (else the tenant's default); the rest is the parent's.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | Sandbox]
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
    body: SandboxFork,
) -> Problem | Sandbox | None:
    """Start a new sandbox from a live snapshot of this one

     The child has everything the parent had in memory and in its files at that moment, its caps, network
    policy, environment and labels (unless given), and its own id, hostname and randomness; the two
    diverge from then on. It counts against the tenant's quotas as a new sandbox. Its processes are the
    parent's, those of the parent's running execs too (the execs stay the parent's). What the runtime
    could not keep (a connection open through the port route) is a 409 `sandbox_busy` naming it, and no
    child is made; a paused parent is woken first.

    Args:
        sandbox_id (str):
        body (SandboxFork): A child of a running sandbox: its TTL (else the parent's), labels
            (else the parent's)
            and idle timeout (else the tenant's default); the rest is the parent's.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | Sandbox
    """

    return (
        await asyncio_detailed(
            sandbox_id=sandbox_id,
            client=client,
            body=body,
        )
    ).parsed
