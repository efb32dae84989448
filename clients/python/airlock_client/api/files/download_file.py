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
    path: str,
    *,
    max_bytes: int | None | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    json_max_bytes: int | None | Unset
    if isinstance(max_bytes, Unset):
        json_max_bytes = UNSET
    else:
        json_max_bytes = max_bytes
    params["max_bytes"] = json_max_bytes

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/sandboxes/{sandbox_id}/files/{path}".format(
            sandbox_id=quote(str(sandbox_id), safe=""),
            path=quote(str(path), safe=""),
        ),
        "params": params,
    }

    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Any | Problem | None:
    if response.status_code == 200:
        response_200 = cast(Any, response.content)
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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Any | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    sandbox_id: str,
    path: str,
    *,
    client: AuthenticatedClient | Client,
    max_bytes: int | None | Unset = UNSET,
) -> Response[Any | Problem]:
    """Download a file from a sandbox

     The file is read by the sandbox's user inside the sandbox (a link is followed there) and streamed as
    it is read. With `max_bytes` (at most 16 MiB) it is read whole before the answer starts, which then
    has a Content-Length, and a file longer than `max_bytes` is a 413 `file_too_large`: a regular file
    (a link's target) is refused by its own size, given as `size`, before any of it is read; anything
    else (a device, a pipe, a file that grows while it is read) once it gave more than `max_bytes`.
    Never more than `max_bytes` bytes of it are held.

    Args:
        sandbox_id (str):
        path (str):
        max_bytes (int | None | Unset): Read the file whole, at most this many bytes, or refuse it
            (413)

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | Problem]
    """

    kwargs = _get_kwargs(
        sandbox_id=sandbox_id,
        path=path,
        max_bytes=max_bytes,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    sandbox_id: str,
    path: str,
    *,
    client: AuthenticatedClient | Client,
    max_bytes: int | None | Unset = UNSET,
) -> Any | Problem | None:
    """Download a file from a sandbox

     The file is read by the sandbox's user inside the sandbox (a link is followed there) and streamed as
    it is read. With `max_bytes` (at most 16 MiB) it is read whole before the answer starts, which then
    has a Content-Length, and a file longer than `max_bytes` is a 413 `file_too_large`: a regular file
    (a link's target) is refused by its own size, given as `size`, before any of it is read; anything
    else (a device, a pipe, a file that grows while it is read) once it gave more than `max_bytes`.
    Never more than `max_bytes` bytes of it are held.

    Args:
        sandbox_id (str):
        path (str):
        max_bytes (int | None | Unset): Read the file whole, at most this many bytes, or refuse it
            (413)

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | Problem
    """

    return sync_detailed(
        sandbox_id=sandbox_id,
        path=path,
        client=client,
        max_bytes=max_bytes,
    ).parsed


async def asyncio_detailed(
    sandbox_id: str,
    path: str,
    *,
    client: AuthenticatedClient | Client,
    max_bytes: int | None | Unset = UNSET,
) -> Response[Any | Problem]:
    """Download a file from a sandbox

     The file is read by the sandbox's user inside the sandbox (a link is followed there) and streamed as
    it is read. With `max_bytes` (at most 16 MiB) it is read whole before the answer starts, which then
    has a Content-Length, and a file longer than `max_bytes` is a 413 `file_too_large`: a regular file
    (a link's target) is refused by its own size, given as `size`, before any of it is read; anything
    else (a device, a pipe, a file that grows while it is read) once it gave more than `max_bytes`.
    Never more than `max_bytes` bytes of it are held.

    Args:
        sandbox_id (str):
        path (str):
        max_bytes (int | None | Unset): Read the file whole, at most this many bytes, or refuse it
            (413)

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | Problem]
    """

    kwargs = _get_kwargs(
        sandbox_id=sandbox_id,
        path=path,
        max_bytes=max_bytes,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    sandbox_id: str,
    path: str,
    *,
    client: AuthenticatedClient | Client,
    max_bytes: int | None | Unset = UNSET,
) -> Any | Problem | None:
    """Download a file from a sandbox

     The file is read by the sandbox's user inside the sandbox (a link is followed there) and streamed as
    it is read. With `max_bytes` (at most 16 MiB) it is read whole before the answer starts, which then
    has a Content-Length, and a file longer than `max_bytes` is a 413 `file_too_large`: a regular file
    (a link's target) is refused by its own size, given as `size`, before any of it is read; anything
    else (a device, a pipe, a file that grows while it is read) once it gave more than `max_bytes`.
    Never more than `max_bytes` bytes of it are held.

    Args:
        sandbox_id (str):
        path (str):
        max_bytes (int | None | Unset): Read the file whole, at most this many bytes, or refuse it
            (413)

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | Problem
    """

    return (
        await asyncio_detailed(
            sandbox_id=sandbox_id,
            path=path,
            client=client,
            max_bytes=max_bytes,
        )
    ).parsed
