from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.exec_ import Exec
from ...models.exec_create import ExecCreate
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


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Exec | None:
    if response.status_code == 200:
        response_200 = Exec.from_dict(response.json())

        return response_200

    if response.status_code == 202:
        response_202 = Exec.from_dict(response.json())

        return response_202

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Exec]:
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
) -> Response[Exec]:
    """Run a command in a sandbox

     With `wait` (the default) the answer is the finished exec (200); `wait: false` answers 202 at once.
    A non-zero exit is a 200 with its exit code.

    Args:
        sandbox_id (str):
        idempotency_key (None | str | Unset): A retry with the same key returns the first result
            and starts nothing new
        body (ExecCreate):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Exec]
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
) -> Exec | None:
    """Run a command in a sandbox

     With `wait` (the default) the answer is the finished exec (200); `wait: false` answers 202 at once.
    A non-zero exit is a 200 with its exit code.

    Args:
        sandbox_id (str):
        idempotency_key (None | str | Unset): A retry with the same key returns the first result
            and starts nothing new
        body (ExecCreate):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Exec
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
) -> Response[Exec]:
    """Run a command in a sandbox

     With `wait` (the default) the answer is the finished exec (200); `wait: false` answers 202 at once.
    A non-zero exit is a 200 with its exit code.

    Args:
        sandbox_id (str):
        idempotency_key (None | str | Unset): A retry with the same key returns the first result
            and starts nothing new
        body (ExecCreate):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Exec]
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
) -> Exec | None:
    """Run a command in a sandbox

     With `wait` (the default) the answer is the finished exec (200); `wait: false` answers 202 at once.
    A non-zero exit is a 200 with its exit code.

    Args:
        sandbox_id (str):
        idempotency_key (None | str | Unset): A retry with the same key returns the first result
            and starts nothing new
        body (ExecCreate):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Exec
    """

    return (
        await asyncio_detailed(
            sandbox_id=sandbox_id,
            client=client,
            body=body,
            idempotency_key=idempotency_key,
        )
    ).parsed
