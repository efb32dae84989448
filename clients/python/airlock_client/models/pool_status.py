from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.pool_status_mode_type_0 import PoolStatusModeType0, check_pool_status_mode_type_0
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.pool_status_ready_by_node import PoolStatusReadyByNode


T = TypeVar("T", bound="PoolStatus")


@_attrs_define
class PoolStatus:
    """
    Attributes:
        claims (int):
        fair_share_per_minute (int):
        last_refill_at (None | str):
        last_refill_ms (int | None):
        misses (int):
        mode (None | PoolStatusModeType0):
        ready (int):
        size (str):
        starting (int):
        target (int):
        template (str):
        template_id (str):
        tenant_id (None | str):
        tenants_last_minute (int):
        version (int | None):
        ready_by_node (PoolStatusReadyByNode | Unset):
    """

    claims: int
    fair_share_per_minute: int
    last_refill_at: None | str
    last_refill_ms: int | None
    misses: int
    mode: None | PoolStatusModeType0
    ready: int
    size: str
    starting: int
    target: int
    template: str
    template_id: str
    tenant_id: None | str
    tenants_last_minute: int
    version: int | None
    ready_by_node: PoolStatusReadyByNode | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        claims = self.claims

        fair_share_per_minute = self.fair_share_per_minute

        last_refill_at: None | str
        last_refill_at = self.last_refill_at

        last_refill_ms: int | None
        last_refill_ms = self.last_refill_ms

        misses = self.misses

        mode: None | str
        if isinstance(self.mode, str):
            mode = self.mode
        else:
            mode = self.mode

        ready = self.ready

        size = self.size

        starting = self.starting

        target = self.target

        template = self.template

        template_id = self.template_id

        tenant_id: None | str
        tenant_id = self.tenant_id

        tenants_last_minute = self.tenants_last_minute

        version: int | None
        version = self.version

        ready_by_node: dict[str, Any] | Unset = UNSET
        if not isinstance(self.ready_by_node, Unset):
            ready_by_node = self.ready_by_node.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "claims": claims,
                "fair_share_per_minute": fair_share_per_minute,
                "last_refill_at": last_refill_at,
                "last_refill_ms": last_refill_ms,
                "misses": misses,
                "mode": mode,
                "ready": ready,
                "size": size,
                "starting": starting,
                "target": target,
                "template": template,
                "template_id": template_id,
                "tenant_id": tenant_id,
                "tenants_last_minute": tenants_last_minute,
                "version": version,
            }
        )
        if ready_by_node is not UNSET:
            field_dict["ready_by_node"] = ready_by_node

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.pool_status_ready_by_node import PoolStatusReadyByNode

        d = dict(src_dict)
        claims = d.pop("claims")

        fair_share_per_minute = d.pop("fair_share_per_minute")

        def _parse_last_refill_at(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        last_refill_at = _parse_last_refill_at(d.pop("last_refill_at"))

        def _parse_last_refill_ms(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        last_refill_ms = _parse_last_refill_ms(d.pop("last_refill_ms"))

        misses = d.pop("misses")

        def _parse_mode(data: object) -> None | PoolStatusModeType0:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                mode_type_0 = check_pool_status_mode_type_0(data)

                return mode_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | PoolStatusModeType0, data)

        mode = _parse_mode(d.pop("mode"))

        ready = d.pop("ready")

        size = d.pop("size")

        starting = d.pop("starting")

        target = d.pop("target")

        template = d.pop("template")

        template_id = d.pop("template_id")

        def _parse_tenant_id(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        tenant_id = _parse_tenant_id(d.pop("tenant_id"))

        tenants_last_minute = d.pop("tenants_last_minute")

        def _parse_version(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        version = _parse_version(d.pop("version"))

        _ready_by_node = d.pop("ready_by_node", UNSET)
        ready_by_node: PoolStatusReadyByNode | Unset
        if isinstance(_ready_by_node, Unset):
            ready_by_node = UNSET
        else:
            ready_by_node = PoolStatusReadyByNode.from_dict(_ready_by_node)

        pool_status = cls(
            claims=claims,
            fair_share_per_minute=fair_share_per_minute,
            last_refill_at=last_refill_at,
            last_refill_ms=last_refill_ms,
            misses=misses,
            mode=mode,
            ready=ready,
            size=size,
            starting=starting,
            target=target,
            template=template,
            template_id=template_id,
            tenant_id=tenant_id,
            tenants_last_minute=tenants_last_minute,
            version=version,
            ready_by_node=ready_by_node,
        )

        pool_status.additional_properties = d
        return pool_status

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
