from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.audit_verification import AuditVerification
from ...models.problem import Problem
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    tenant_id: None | str | Unset = UNSET,
    full: bool | Unset = False,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    json_tenant_id: None | str | Unset
    if isinstance(tenant_id, Unset):
        json_tenant_id = UNSET
    else:
        json_tenant_id = tenant_id
    params["tenant_id"] = json_tenant_id

    params["full"] = full

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/audit/verify",
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> AuditVerification | Problem | None:
    if response.status_code == 200:
        response_200 = AuditVerification.from_dict(response.json())

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
) -> Response[AuditVerification | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient | Client,
    tenant_id: None | str | Unset = UNSET,
    full: bool | Unset = False,
) -> Response[AuditVerification | Problem]:
    """Check the hash chain from its last verified point and report the first broken link

    Args:
        tenant_id (None | str | Unset): Operator only: the tenant whose chain to read; `_operator`
            for the operator's own chain.
        full (bool | Unset): Walk the whole chain instead of starting at its last verified point
            Default: False.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[AuditVerification | Problem]
    """

    kwargs = _get_kwargs(
        tenant_id=tenant_id,
        full=full,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient | Client,
    tenant_id: None | str | Unset = UNSET,
    full: bool | Unset = False,
) -> AuditVerification | Problem | None:
    """Check the hash chain from its last verified point and report the first broken link

    Args:
        tenant_id (None | str | Unset): Operator only: the tenant whose chain to read; `_operator`
            for the operator's own chain.
        full (bool | Unset): Walk the whole chain instead of starting at its last verified point
            Default: False.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        AuditVerification | Problem
    """

    return sync_detailed(
        client=client,
        tenant_id=tenant_id,
        full=full,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient | Client,
    tenant_id: None | str | Unset = UNSET,
    full: bool | Unset = False,
) -> Response[AuditVerification | Problem]:
    """Check the hash chain from its last verified point and report the first broken link

    Args:
        tenant_id (None | str | Unset): Operator only: the tenant whose chain to read; `_operator`
            for the operator's own chain.
        full (bool | Unset): Walk the whole chain instead of starting at its last verified point
            Default: False.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[AuditVerification | Problem]
    """

    kwargs = _get_kwargs(
        tenant_id=tenant_id,
        full=full,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient | Client,
    tenant_id: None | str | Unset = UNSET,
    full: bool | Unset = False,
) -> AuditVerification | Problem | None:
    """Check the hash chain from its last verified point and report the first broken link

    Args:
        tenant_id (None | str | Unset): Operator only: the tenant whose chain to read; `_operator`
            for the operator's own chain.
        full (bool | Unset): Walk the whole chain instead of starting at its last verified point
            Default: False.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        AuditVerification | Problem
    """

    return (
        await asyncio_detailed(
            client=client,
            tenant_id=tenant_id,
            full=full,
        )
    ).parsed
