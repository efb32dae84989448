from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.file_written import FileWritten
from ...models.problem import Problem
from ...types import UNSET, File, Response, Unset


def _get_kwargs(
    sandbox_id: str,
    path: str,
    *,
    body: File,
    mode: None | str | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    params: dict[str, Any] = {}

    json_mode: None | str | Unset
    if isinstance(mode, Unset):
        json_mode = UNSET
    else:
        json_mode = mode
    params["mode"] = json_mode

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "put",
        "url": "/v1/sandboxes/{sandbox_id}/files/{path}".format(
            sandbox_id=quote(str(sandbox_id), safe=""),
            path=quote(str(path), safe=""),
        ),
        "params": params,
    }

    _kwargs["content"] = body.payload

    headers["Content-Type"] = "application/octet-stream"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> FileWritten | Problem | None:
    if response.status_code == 201:
        response_201 = FileWritten.from_dict(response.json())

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


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[FileWritten | Problem]:
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
    body: File,
    mode: None | str | Unset = UNSET,
) -> Response[FileWritten | Problem]:
    """Upload a file into a sandbox

     The raw body is the file's content, streamed into the sandbox and limited by the tenant's
    `max_upload_mib` (413 beyond it, leaving nothing behind). Parent directories are made; an existing
    file is replaced.

    Args:
        sandbox_id (str):
        path (str):
        mode (None | str | Unset): Octal permission bits of the new file, e.g. `0644` (default)
        body (File):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[FileWritten | Problem]
    """

    kwargs = _get_kwargs(
        sandbox_id=sandbox_id,
        path=path,
        body=body,
        mode=mode,
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
    body: File,
    mode: None | str | Unset = UNSET,
) -> FileWritten | Problem | None:
    """Upload a file into a sandbox

     The raw body is the file's content, streamed into the sandbox and limited by the tenant's
    `max_upload_mib` (413 beyond it, leaving nothing behind). Parent directories are made; an existing
    file is replaced.

    Args:
        sandbox_id (str):
        path (str):
        mode (None | str | Unset): Octal permission bits of the new file, e.g. `0644` (default)
        body (File):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        FileWritten | Problem
    """

    return sync_detailed(
        sandbox_id=sandbox_id,
        path=path,
        client=client,
        body=body,
        mode=mode,
    ).parsed


async def asyncio_detailed(
    sandbox_id: str,
    path: str,
    *,
    client: AuthenticatedClient | Client,
    body: File,
    mode: None | str | Unset = UNSET,
) -> Response[FileWritten | Problem]:
    """Upload a file into a sandbox

     The raw body is the file's content, streamed into the sandbox and limited by the tenant's
    `max_upload_mib` (413 beyond it, leaving nothing behind). Parent directories are made; an existing
    file is replaced.

    Args:
        sandbox_id (str):
        path (str):
        mode (None | str | Unset): Octal permission bits of the new file, e.g. `0644` (default)
        body (File):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[FileWritten | Problem]
    """

    kwargs = _get_kwargs(
        sandbox_id=sandbox_id,
        path=path,
        body=body,
        mode=mode,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    sandbox_id: str,
    path: str,
    *,
    client: AuthenticatedClient | Client,
    body: File,
    mode: None | str | Unset = UNSET,
) -> FileWritten | Problem | None:
    """Upload a file into a sandbox

     The raw body is the file's content, streamed into the sandbox and limited by the tenant's
    `max_upload_mib` (413 beyond it, leaving nothing behind). Parent directories are made; an existing
    file is replaced.

    Args:
        sandbox_id (str):
        path (str):
        mode (None | str | Unset): Octal permission bits of the new file, e.g. `0644` (default)
        body (File):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        FileWritten | Problem
    """

    return (
        await asyncio_detailed(
            sandbox_id=sandbox_id,
            path=path,
            client=client,
            body=body,
            mode=mode,
        )
    ).parsed
