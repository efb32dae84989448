from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.network_change import NetworkChange


T = TypeVar("T", bound="SandboxUpdate")


@_attrs_define
class SandboxUpdate:
    """
    Attributes:
        idle_timeout_s (int | None | Unset):
        network (NetworkChange | None | Unset):
        ttl_s (int | None | Unset):
    """

    idle_timeout_s: int | None | Unset = UNSET
    network: NetworkChange | None | Unset = UNSET
    ttl_s: int | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.network_change import NetworkChange

        idle_timeout_s: int | None | Unset
        if isinstance(self.idle_timeout_s, Unset):
            idle_timeout_s = UNSET
        else:
            idle_timeout_s = self.idle_timeout_s

        network: dict[str, Any] | None | Unset
        if isinstance(self.network, Unset):
            network = UNSET
        elif isinstance(self.network, NetworkChange):
            network = self.network.to_dict()
        else:
            network = self.network

        ttl_s: int | None | Unset
        if isinstance(self.ttl_s, Unset):
            ttl_s = UNSET
        else:
            ttl_s = self.ttl_s

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if idle_timeout_s is not UNSET:
            field_dict["idle_timeout_s"] = idle_timeout_s
        if network is not UNSET:
            field_dict["network"] = network
        if ttl_s is not UNSET:
            field_dict["ttl_s"] = ttl_s

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.network_change import NetworkChange

        d = dict(src_dict)

        def _parse_idle_timeout_s(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        idle_timeout_s = _parse_idle_timeout_s(d.pop("idle_timeout_s", UNSET))

        def _parse_network(data: object) -> NetworkChange | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                network_type_0 = NetworkChange.from_dict(data)

                return network_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(NetworkChange | None | Unset, data)

        network = _parse_network(d.pop("network", UNSET))

        def _parse_ttl_s(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        ttl_s = _parse_ttl_s(d.pop("ttl_s", UNSET))

        sandbox_update = cls(
            idle_timeout_s=idle_timeout_s,
            network=network,
            ttl_s=ttl_s,
        )

        return sandbox_update
