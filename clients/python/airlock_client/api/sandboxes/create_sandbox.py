from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...models.sandbox import Sandbox
from ...models.sandbox_create import SandboxCreate
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    body: SandboxCreate,
    idempotency_key: None | str | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if not isinstance(idempotency_key, Unset):
        headers["Idempotency-Key"] = idempotency_key

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/sandboxes",
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Problem | Sandbox | None:
    if response.status_code == 200:
        response_200 = Sandbox.from_dict(response.json())

        return response_200

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
    *,
    client: AuthenticatedClient | Client,
    body: SandboxCreate,
    idempotency_key: None | str | Unset = UNSET,
) -> Response[Problem | Sandbox]:
    """Create and start a sandbox

    Args:
        idempotency_key (None | str | Unset): A retry with the same key returns the first result
            and starts nothing new
        body (SandboxCreate): `image` or `template` (neither: the default image); a size, a preset
            and/or explicit
            caps. Without `network` (and without a preset that gives one) there is no network.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | Sandbox]
    """

    kwargs = _get_kwargs(
        body=body,
        idempotency_key=idempotency_key,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient | Client,
    body: SandboxCreate,
    idempotency_key: None | str | Unset = UNSET,
) -> Problem | Sandbox | None:
    """Create and start a sandbox

    Args:
        idempotency_key (None | str | Unset): A retry with the same key returns the first result
            and starts nothing new
        body (SandboxCreate): `image` or `template` (neither: the default image); a size, a preset
            and/or explicit
            caps. Without `network` (and without a preset that gives one) there is no network.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | Sandbox
    """

    return sync_detailed(
        client=client,
        body=body,
        idempotency_key=idempotency_key,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient | Client,
    body: SandboxCreate,
    idempotency_key: None | str | Unset = UNSET,
) -> Response[Problem | Sandbox]:
    """Create and start a sandbox

    Args:
        idempotency_key (None | str | Unset): A retry with the same key returns the first result
            and starts nothing new
        body (SandboxCreate): `image` or `template` (neither: the default image); a size, a preset
            and/or explicit
            caps. Without `network` (and without a preset that gives one) there is no network.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | Sandbox]
    """

    kwargs = _get_kwargs(
        body=body,
        idempotency_key=idempotency_key,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient | Client,
    body: SandboxCreate,
    idempotency_key: None | str | Unset = UNSET,
) -> Problem | Sandbox | None:
    """Create and start a sandbox

    Args:
        idempotency_key (None | str | Unset): A retry with the same key returns the first result
            and starts nothing new
        body (SandboxCreate): `image` or `template` (neither: the default image); a size, a preset
            and/or explicit
            caps. Without `network` (and without a preset that gives one) there is no network.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | Sandbox
    """

    return (
        await asyncio_detailed(
            client=client,
            body=body,
            idempotency_key=idempotency_key,
        )
    ).parsed
