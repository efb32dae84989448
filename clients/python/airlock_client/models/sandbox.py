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
        node_id (None | str | Unset):
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
    node_id: None | str | Unset = UNSET
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

        node_id: None | str | Unset
        if isinstance(self.node_id, Unset):
            node_id = UNSET
        else:
            node_id = self.node_id

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
        if node_id is not UNSET:
            field_dict["node_id"] = node_id

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

        def _parse_node_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        node_id = _parse_node_id(d.pop("node_id", UNSET))

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
            node_id=node_id,
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
