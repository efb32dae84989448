from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.sandbox_env import SandboxEnv
    from ..models.sandbox_labels import SandboxLabels
    from ..models.sandbox_network import SandboxNetwork


T = TypeVar("T", bound="Sandbox")


@_attrs_define
class Sandbox:
    """
    Attributes:
        cpus (int):
        created_at (str):
        disk_mib (int):
        env (SandboxEnv):
        expires_at (str):
        failure_reason (None | str):
        id (str):
        image (str):
        labels (SandboxLabels):
        memory_mib (int):
        network (SandboxNetwork): Egress of a sandbox: `none` (the default), `allowlist` (only `allow`) or `open` (where
            the operator allowed it for the tenant). The host, link-local addresses (cloud metadata)
            and other sandboxes are never reachable.
        runtime (None | str):
        size (str):
        started_from (None | str):
        state (str):
        stopped_at (None | str):
        template (None | str):
        template_version (int | None):
        ttl_s (int):
        connections_cut (list[str] | None | Unset):
        idle_timeout_s (int | None | Unset):
        last_activity_at (None | str | Unset):
        node_id (None | str | Unset):
        pause_bytes (int | None | Unset):
        pause_expires_at (None | str | Unset):
        paused_at (None | str | Unset):
    """

    cpus: int
    created_at: str
    disk_mib: int
    env: SandboxEnv
    expires_at: str
    failure_reason: None | str
    id: str
    image: str
    labels: SandboxLabels
    memory_mib: int
    network: SandboxNetwork
    runtime: None | str
    size: str
    started_from: None | str
    state: str
    stopped_at: None | str
    template: None | str
    template_version: int | None
    ttl_s: int
    connections_cut: list[str] | None | Unset = UNSET
    idle_timeout_s: int | None | Unset = UNSET
    last_activity_at: None | str | Unset = UNSET
    node_id: None | str | Unset = UNSET
    pause_bytes: int | None | Unset = UNSET
    pause_expires_at: None | str | Unset = UNSET
    paused_at: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        cpus = self.cpus

        created_at = self.created_at

        disk_mib = self.disk_mib

        env = self.env.to_dict()

        expires_at = self.expires_at

        failure_reason: None | str
        failure_reason = self.failure_reason

        id = self.id

        image = self.image

        labels = self.labels.to_dict()

        memory_mib = self.memory_mib

        network = self.network.to_dict()

        runtime: None | str
        runtime = self.runtime

        size = self.size

        started_from: None | str
        started_from = self.started_from

        state = self.state

        stopped_at: None | str
        stopped_at = self.stopped_at

        template: None | str
        template = self.template

        template_version: int | None
        template_version = self.template_version

        ttl_s = self.ttl_s

        connections_cut: list[str] | None | Unset
        if isinstance(self.connections_cut, Unset):
            connections_cut = UNSET
        elif isinstance(self.connections_cut, list):
            connections_cut = self.connections_cut

        else:
            connections_cut = self.connections_cut

        idle_timeout_s: int | None | Unset
        if isinstance(self.idle_timeout_s, Unset):
            idle_timeout_s = UNSET
        else:
            idle_timeout_s = self.idle_timeout_s

        last_activity_at: None | str | Unset
        if isinstance(self.last_activity_at, Unset):
            last_activity_at = UNSET
        else:
            last_activity_at = self.last_activity_at

        node_id: None | str | Unset
        if isinstance(self.node_id, Unset):
            node_id = UNSET
        else:
            node_id = self.node_id

        pause_bytes: int | None | Unset
        if isinstance(self.pause_bytes, Unset):
            pause_bytes = UNSET
        else:
            pause_bytes = self.pause_bytes

        pause_expires_at: None | str | Unset
        if isinstance(self.pause_expires_at, Unset):
            pause_expires_at = UNSET
        else:
            pause_expires_at = self.pause_expires_at

        paused_at: None | str | Unset
        if isinstance(self.paused_at, Unset):
            paused_at = UNSET
        else:
            paused_at = self.paused_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "cpus": cpus,
                "created_at": created_at,
                "disk_mib": disk_mib,
                "env": env,
                "expires_at": expires_at,
                "failure_reason": failure_reason,
                "id": id,
                "image": image,
                "labels": labels,
                "memory_mib": memory_mib,
                "network": network,
                "runtime": runtime,
                "size": size,
                "started_from": started_from,
                "state": state,
                "stopped_at": stopped_at,
                "template": template,
                "template_version": template_version,
                "ttl_s": ttl_s,
            }
        )
        if connections_cut is not UNSET:
            field_dict["connections_cut"] = connections_cut
        if idle_timeout_s is not UNSET:
            field_dict["idle_timeout_s"] = idle_timeout_s
        if last_activity_at is not UNSET:
            field_dict["last_activity_at"] = last_activity_at
        if node_id is not UNSET:
            field_dict["node_id"] = node_id
        if pause_bytes is not UNSET:
            field_dict["pause_bytes"] = pause_bytes
        if pause_expires_at is not UNSET:
            field_dict["pause_expires_at"] = pause_expires_at
        if paused_at is not UNSET:
            field_dict["paused_at"] = paused_at

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.sandbox_env import SandboxEnv
        from ..models.sandbox_labels import SandboxLabels
        from ..models.sandbox_network import SandboxNetwork

        d = dict(src_dict)
        cpus = d.pop("cpus")

        created_at = d.pop("created_at")

        disk_mib = d.pop("disk_mib")

        env = SandboxEnv.from_dict(d.pop("env"))

        expires_at = d.pop("expires_at")

        def _parse_failure_reason(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        failure_reason = _parse_failure_reason(d.pop("failure_reason"))

        id = d.pop("id")

        image = d.pop("image")

        labels = SandboxLabels.from_dict(d.pop("labels"))

        memory_mib = d.pop("memory_mib")

        network = SandboxNetwork.from_dict(d.pop("network"))

        def _parse_runtime(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        runtime = _parse_runtime(d.pop("runtime"))

        size = d.pop("size")

        def _parse_started_from(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        started_from = _parse_started_from(d.pop("started_from"))

        state = d.pop("state")

        def _parse_stopped_at(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        stopped_at = _parse_stopped_at(d.pop("stopped_at"))

        def _parse_template(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        template = _parse_template(d.pop("template"))

        def _parse_template_version(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        template_version = _parse_template_version(d.pop("template_version"))

        ttl_s = d.pop("ttl_s")

        def _parse_connections_cut(data: object) -> list[str] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                connections_cut_type_0 = cast(list[str], data)

                return connections_cut_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | None | Unset, data)

        connections_cut = _parse_connections_cut(d.pop("connections_cut", UNSET))

        def _parse_idle_timeout_s(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        idle_timeout_s = _parse_idle_timeout_s(d.pop("idle_timeout_s", UNSET))

        def _parse_last_activity_at(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        last_activity_at = _parse_last_activity_at(d.pop("last_activity_at", UNSET))

        def _parse_node_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        node_id = _parse_node_id(d.pop("node_id", UNSET))

        def _parse_pause_bytes(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        pause_bytes = _parse_pause_bytes(d.pop("pause_bytes", UNSET))

        def _parse_pause_expires_at(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        pause_expires_at = _parse_pause_expires_at(d.pop("pause_expires_at", UNSET))

        def _parse_paused_at(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        paused_at = _parse_paused_at(d.pop("paused_at", UNSET))

        sandbox = cls(
            cpus=cpus,
            created_at=created_at,
            disk_mib=disk_mib,
            env=env,
            expires_at=expires_at,
            failure_reason=failure_reason,
            id=id,
            image=image,
            labels=labels,
            memory_mib=memory_mib,
            network=network,
            runtime=runtime,
            size=size,
            started_from=started_from,
            state=state,
            stopped_at=stopped_at,
            template=template,
            template_version=template_version,
            ttl_s=ttl_s,
            connections_cut=connections_cut,
            idle_timeout_s=idle_timeout_s,
            last_activity_at=last_activity_at,
            node_id=node_id,
            pause_bytes=pause_bytes,
            pause_expires_at=pause_expires_at,
            paused_at=paused_at,
        )

        sandbox.additional_properties = d
        return sandbox

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
