from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.pool_status import PoolStatus
from ...models.pool_target_set import PoolTargetSet
from ...models.problem import Problem
from ...types import UNSET, Response, Unset


def _get_kwargs(
    template: str,
    *,
    body: PoolTargetSet,
    tenant: None | str | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    params: dict[str, Any] = {}

    json_tenant: None | str | Unset
    if isinstance(tenant, Unset):
        json_tenant = UNSET
    else:
        json_tenant = tenant
    params["tenant"] = json_tenant

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "put",
        "url": "/v1/pool/{template}".format(
            template=quote(str(template), safe=""),
        ),
        "params": params,
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> PoolStatus | Problem | None:
    if response.status_code == 200:
        response_200 = PoolStatus.from_dict(response.json())

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


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[PoolStatus | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    template: str,
    *,
    client: AuthenticatedClient | Client,
    body: PoolTargetSet,
    tenant: None | str | Unset = UNSET,
) -> Response[PoolStatus | Problem]:
    """Keep N started sandboxes of a template and size

    Args:
        template (str):
        tenant (None | str | Unset): A tenant's own template of that name
        body (PoolTargetSet):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[PoolStatus | Problem]
    """

    kwargs = _get_kwargs(
        template=template,
        body=body,
        tenant=tenant,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    template: str,
    *,
    client: AuthenticatedClient | Client,
    body: PoolTargetSet,
    tenant: None | str | Unset = UNSET,
) -> PoolStatus | Problem | None:
    """Keep N started sandboxes of a template and size

    Args:
        template (str):
        tenant (None | str | Unset): A tenant's own template of that name
        body (PoolTargetSet):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        PoolStatus | Problem
    """

    return sync_detailed(
        template=template,
        client=client,
        body=body,
        tenant=tenant,
    ).parsed


async def asyncio_detailed(
    template: str,
    *,
    client: AuthenticatedClient | Client,
    body: PoolTargetSet,
    tenant: None | str | Unset = UNSET,
) -> Response[PoolStatus | Problem]:
    """Keep N started sandboxes of a template and size

    Args:
        template (str):
        tenant (None | str | Unset): A tenant's own template of that name
        body (PoolTargetSet):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[PoolStatus | Problem]
    """

    kwargs = _get_kwargs(
        template=template,
        body=body,
        tenant=tenant,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    template: str,
    *,
    client: AuthenticatedClient | Client,
    body: PoolTargetSet,
    tenant: None | str | Unset = UNSET,
) -> PoolStatus | Problem | None:
    """Keep N started sandboxes of a template and size

    Args:
        template (str):
        tenant (None | str | Unset): A tenant's own template of that name
        body (PoolTargetSet):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        PoolStatus | Problem
    """

    return (
        await asyncio_detailed(
            template=template,
            client=client,
            body=body,
            tenant=tenant,
        )
    ).parsed
