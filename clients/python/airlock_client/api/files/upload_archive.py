from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.archive_written import ArchiveWritten
from ...models.problem import Problem
from ...types import UNSET, File, Response, Unset


def _get_kwargs(
    sandbox_id: str,
    *,
    body: File,
    dir_: str | Unset = "/work",
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    params: dict[str, Any] = {}

    params["dir"] = dir_

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "put",
        "url": "/v1/sandboxes/{sandbox_id}/archive".format(
            sandbox_id=quote(str(sandbox_id), safe=""),
        ),
        "params": params,
    }

    _kwargs["content"] = body.payload

    headers["Content-Type"] = "application/x-tar"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> ArchiveWritten | Problem | None:
    if response.status_code == 201:
        response_201 = ArchiveWritten.from_dict(response.json())

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
) -> Response[ArchiveWritten | Problem]:
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
    body: File,
    dir_: str | Unset = "/work",
) -> Response[ArchiveWritten | Problem]:
    """Unpack a tar archive into a sandbox directory

     The body is a tar (`application/x-tar`), streamed into the sandbox and unpacked there by the
    sandbox's user; the directory is made if missing. A tar that cannot be unpacked is a 422 with tar's
    own message.

    Args:
        sandbox_id (str):
        dir_ (str | Unset): An absolute directory Default: '/work'.
        body (File):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ArchiveWritten | Problem]
    """

    kwargs = _get_kwargs(
        sandbox_id=sandbox_id,
        body=body,
        dir_=dir_,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    sandbox_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: File,
    dir_: str | Unset = "/work",
) -> ArchiveWritten | Problem | None:
    """Unpack a tar archive into a sandbox directory

     The body is a tar (`application/x-tar`), streamed into the sandbox and unpacked there by the
    sandbox's user; the directory is made if missing. A tar that cannot be unpacked is a 422 with tar's
    own message.

    Args:
        sandbox_id (str):
        dir_ (str | Unset): An absolute directory Default: '/work'.
        body (File):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ArchiveWritten | Problem
    """

    return sync_detailed(
        sandbox_id=sandbox_id,
        client=client,
        body=body,
        dir_=dir_,
    ).parsed


async def asyncio_detailed(
    sandbox_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: File,
    dir_: str | Unset = "/work",
) -> Response[ArchiveWritten | Problem]:
    """Unpack a tar archive into a sandbox directory

     The body is a tar (`application/x-tar`), streamed into the sandbox and unpacked there by the
    sandbox's user; the directory is made if missing. A tar that cannot be unpacked is a 422 with tar's
    own message.

    Args:
        sandbox_id (str):
        dir_ (str | Unset): An absolute directory Default: '/work'.
        body (File):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ArchiveWritten | Problem]
    """

    kwargs = _get_kwargs(
        sandbox_id=sandbox_id,
        body=body,
        dir_=dir_,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    sandbox_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: File,
    dir_: str | Unset = "/work",
) -> ArchiveWritten | Problem | None:
    """Unpack a tar archive into a sandbox directory

     The body is a tar (`application/x-tar`), streamed into the sandbox and unpacked there by the
    sandbox's user; the directory is made if missing. A tar that cannot be unpacked is a 422 with tar's
    own message.

    Args:
        sandbox_id (str):
        dir_ (str | Unset): An absolute directory Default: '/work'.
        body (File):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ArchiveWritten | Problem
    """

    return (
        await asyncio_detailed(
            sandbox_id=sandbox_id,
            client=client,
            body=body,
            dir_=dir_,
        )
    ).parsed
