from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.exec_ import Exec
from ...models.exec_create import ExecCreate
from ...models.problem import Problem
from ...types import UNSET, Response, Unset


def _get_kwargs(
    sandbox_id: str,
    *,
    body: ExecCreate,
    idempotency_key: None | str | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if not isinstance(idempotency_key, Unset):
        headers["Idempotency-Key"] = idempotency_key

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/sandboxes/{sandbox_id}/execs".format(
            sandbox_id=quote(str(sandbox_id), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Exec | Problem | None:
    if response.status_code == 200:
        response_200 = Exec.from_dict(response.json())

        return response_200

    if response.status_code == 202:
        response_202 = Exec.from_dict(response.json())

        return response_202

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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Exec | Problem]:
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
    body: ExecCreate,
    idempotency_key: None | str | Unset = UNSET,
) -> Response[Exec | Problem]:
    """Run a command in a sandbox

     With `wait` (the default) the answer is the finished exec (200); `wait: false` answers 202 at once.
    A non-zero exit is a 200 with its exit code. Every secret value any exec of the sandbox was given is
    masked (`***`) in this exec's output and record, for the sandbox's life; a sandbox holds at most 256
    of them (4 MiB), and an exec that would bring more is a 409 `sandbox_secrets_full` before anything
    runs.

    Args:
        sandbox_id (str):
        idempotency_key (None | str | Unset): A retry with the same key returns the first result
            and starts nothing new
        body (ExecCreate): One command. `secrets` reach the process as environment variables only
            and are masked
            in the output of every exec of the sandbox, for the sandbox's life; they are never
            stored.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Exec | Problem]
    """

    kwargs = _get_kwargs(
        sandbox_id=sandbox_id,
        body=body,
        idempotency_key=idempotency_key,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    sandbox_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: ExecCreate,
    idempotency_key: None | str | Unset = UNSET,
) -> Exec | Problem | None:
    """Run a command in a sandbox

     With `wait` (the default) the answer is the finished exec (200); `wait: false` answers 202 at once.
    A non-zero exit is a 200 with its exit code. Every secret value any exec of the sandbox was given is
    masked (`***`) in this exec's output and record, for the sandbox's life; a sandbox holds at most 256
    of them (4 MiB), and an exec that would bring more is a 409 `sandbox_secrets_full` before anything
    runs.

    Args:
        sandbox_id (str):
        idempotency_key (None | str | Unset): A retry with the same key returns the first result
            and starts nothing new
        body (ExecCreate): One command. `secrets` reach the process as environment variables only
            and are masked
            in the output of every exec of the sandbox, for the sandbox's life; they are never
            stored.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Exec | Problem
    """

    return sync_detailed(
        sandbox_id=sandbox_id,
        client=client,
        body=body,
        idempotency_key=idempotency_key,
    ).parsed


async def asyncio_detailed(
    sandbox_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: ExecCreate,
    idempotency_key: None | str | Unset = UNSET,
) -> Response[Exec | Problem]:
    """Run a command in a sandbox

     With `wait` (the default) the answer is the finished exec (200); `wait: false` answers 202 at once.
    A non-zero exit is a 200 with its exit code. Every secret value any exec of the sandbox was given is
    masked (`***`) in this exec's output and record, for the sandbox's life; a sandbox holds at most 256
    of them (4 MiB), and an exec that would bring more is a 409 `sandbox_secrets_full` before anything
    runs.

    Args:
        sandbox_id (str):
        idempotency_key (None | str | Unset): A retry with the same key returns the first result
            and starts nothing new
        body (ExecCreate): One command. `secrets` reach the process as environment variables only
            and are masked
            in the output of every exec of the sandbox, for the sandbox's life; they are never
            stored.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Exec | Problem]
    """

    kwargs = _get_kwargs(
        sandbox_id=sandbox_id,
        body=body,
        idempotency_key=idempotency_key,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    sandbox_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: ExecCreate,
    idempotency_key: None | str | Unset = UNSET,
) -> Exec | Problem | None:
    """Run a command in a sandbox

     With `wait` (the default) the answer is the finished exec (200); `wait: false` answers 202 at once.
    A non-zero exit is a 200 with its exit code. Every secret value any exec of the sandbox was given is
    masked (`***`) in this exec's output and record, for the sandbox's life; a sandbox holds at most 256
    of them (4 MiB), and an exec that would bring more is a 409 `sandbox_secrets_full` before anything
    runs.

    Args:
        sandbox_id (str):
        idempotency_key (None | str | Unset): A retry with the same key returns the first result
            and starts nothing new
        body (ExecCreate): One command. `secrets` reach the process as environment variables only
            and are masked
            in the output of every exec of the sandbox, for the sandbox's life; they are never
            stored.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Exec | Problem
    """

    return (
        await asyncio_detailed(
            sandbox_id=sandbox_id,
            client=client,
            body=body,
            idempotency_key=idempotency_key,
        )
    ).parsed
