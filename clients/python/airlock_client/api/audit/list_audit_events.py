from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.audit_page import AuditPage
from ...models.problem import Problem
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    tenant_id: None | str | Unset = UNSET,
    action: None | str | Unset = UNSET,
    target: None | str | Unset = UNSET,
    since: None | str | Unset = UNSET,
    until: None | str | Unset = UNSET,
    cursor: None | str | Unset = UNSET,
    limit: int | Unset = 50,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    json_tenant_id: None | str | Unset
    if isinstance(tenant_id, Unset):
        json_tenant_id = UNSET
    else:
        json_tenant_id = tenant_id
    params["tenant_id"] = json_tenant_id

    json_action: None | str | Unset
    if isinstance(action, Unset):
        json_action = UNSET
    else:
        json_action = action
    params["action"] = json_action

    json_target: None | str | Unset
    if isinstance(target, Unset):
        json_target = UNSET
    else:
        json_target = target
    params["target"] = json_target

    json_since: None | str | Unset
    if isinstance(since, Unset):
        json_since = UNSET
    else:
        json_since = since
    params["since"] = json_since

    json_until: None | str | Unset
    if isinstance(until, Unset):
        json_until = UNSET
    else:
        json_until = until
    params["until"] = json_until

    json_cursor: None | str | Unset
    if isinstance(cursor, Unset):
        json_cursor = UNSET
    else:
        json_cursor = cursor
    params["cursor"] = json_cursor

    params["limit"] = limit

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/audit",
        "params": params,
    }

    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> AuditPage | Problem | None:
    if response.status_code == 200:
        response_200 = AuditPage.from_dict(response.json())

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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[AuditPage | Problem]:
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
    action: None | str | Unset = UNSET,
    target: None | str | Unset = UNSET,
    since: None | str | Unset = UNSET,
    until: None | str | Unset = UNSET,
    cursor: None | str | Unset = UNSET,
    limit: int | Unset = 50,
) -> Response[AuditPage | Problem]:
    """List audit events, newest first

    Args:
        tenant_id (None | str | Unset): Operator only: the tenant whose chain to read; `_operator`
            for the operator's own chain.
        action (None | str | Unset):
        target (None | str | Unset):
        since (None | str | Unset): An RFC 3339 date-time
        until (None | str | Unset): An RFC 3339 date-time
        cursor (None | str | Unset): `next_cursor` of the previous page: the key of its last item
        limit (int | Unset): Page size (default 50) Default: 50.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[AuditPage | Problem]
    """

    kwargs = _get_kwargs(
        tenant_id=tenant_id,
        action=action,
        target=target,
        since=since,
        until=until,
        cursor=cursor,
        limit=limit,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient | Client,
    tenant_id: None | str | Unset = UNSET,
    action: None | str | Unset = UNSET,
    target: None | str | Unset = UNSET,
    since: None | str | Unset = UNSET,
    until: None | str | Unset = UNSET,
    cursor: None | str | Unset = UNSET,
    limit: int | Unset = 50,
) -> AuditPage | Problem | None:
    """List audit events, newest first

    Args:
        tenant_id (None | str | Unset): Operator only: the tenant whose chain to read; `_operator`
            for the operator's own chain.
        action (None | str | Unset):
        target (None | str | Unset):
        since (None | str | Unset): An RFC 3339 date-time
        until (None | str | Unset): An RFC 3339 date-time
        cursor (None | str | Unset): `next_cursor` of the previous page: the key of its last item
        limit (int | Unset): Page size (default 50) Default: 50.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        AuditPage | Problem
    """

    return sync_detailed(
        client=client,
        tenant_id=tenant_id,
        action=action,
        target=target,
        since=since,
        until=until,
        cursor=cursor,
        limit=limit,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient | Client,
    tenant_id: None | str | Unset = UNSET,
    action: None | str | Unset = UNSET,
    target: None | str | Unset = UNSET,
    since: None | str | Unset = UNSET,
    until: None | str | Unset = UNSET,
    cursor: None | str | Unset = UNSET,
    limit: int | Unset = 50,
) -> Response[AuditPage | Problem]:
    """List audit events, newest first

    Args:
        tenant_id (None | str | Unset): Operator only: the tenant whose chain to read; `_operator`
            for the operator's own chain.
        action (None | str | Unset):
        target (None | str | Unset):
        since (None | str | Unset): An RFC 3339 date-time
        until (None | str | Unset): An RFC 3339 date-time
        cursor (None | str | Unset): `next_cursor` of the previous page: the key of its last item
        limit (int | Unset): Page size (default 50) Default: 50.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[AuditPage | Problem]
    """

    kwargs = _get_kwargs(
        tenant_id=tenant_id,
        action=action,
        target=target,
        since=since,
        until=until,
        cursor=cursor,
        limit=limit,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient | Client,
    tenant_id: None | str | Unset = UNSET,
    action: None | str | Unset = UNSET,
    target: None | str | Unset = UNSET,
    since: None | str | Unset = UNSET,
    until: None | str | Unset = UNSET,
    cursor: None | str | Unset = UNSET,
    limit: int | Unset = 50,
) -> AuditPage | Problem | None:
    """List audit events, newest first

    Args:
        tenant_id (None | str | Unset): Operator only: the tenant whose chain to read; `_operator`
            for the operator's own chain.
        action (None | str | Unset):
        target (None | str | Unset):
        since (None | str | Unset): An RFC 3339 date-time
        until (None | str | Unset): An RFC 3339 date-time
        cursor (None | str | Unset): `next_cursor` of the previous page: the key of its last item
        limit (int | Unset): Page size (default 50) Default: 50.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        AuditPage | Problem
    """

    return (
        await asyncio_detailed(
            client=client,
            tenant_id=tenant_id,
            action=action,
            target=target,
            since=since,
            until=until,
            cursor=cursor,
            limit=limit,
        )
    ).parsed
