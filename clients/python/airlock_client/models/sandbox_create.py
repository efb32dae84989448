from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define

from ..models.sandbox_create_preset_type_0 import SandboxCreatePresetType0, check_sandbox_create_preset_type_0
from ..models.sandbox_create_size_type_0 import SandboxCreateSizeType0, check_sandbox_create_size_type_0
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.sandbox_create_env import SandboxCreateEnv
    from ..models.sandbox_create_labels import SandboxCreateLabels
    from ..models.sandbox_network import SandboxNetwork


T = TypeVar("T", bound="SandboxCreate")


@_attrs_define
class SandboxCreate:
    """`image` or `template` (neither: the default image); a size, a preset and/or explicit
    caps. Without `network` (and without a preset that gives one) there is no network.

        Attributes:
            cpus (int | None | Unset):
            disk_mib (int | None | Unset):
            env (SandboxCreateEnv | Unset):
            idle_timeout_s (int | None | Unset):
            image (None | str | Unset):
            labels (SandboxCreateLabels | Unset):
            memory_mib (int | None | Unset):
            network (None | SandboxNetwork | Unset):
            preset (None | SandboxCreatePresetType0 | Unset):
            size (None | SandboxCreateSizeType0 | Unset):
            template (None | str | Unset):
            ttl_s (int | Unset):  Default: 600.
    """

    cpus: int | None | Unset = UNSET
    disk_mib: int | None | Unset = UNSET
    env: SandboxCreateEnv | Unset = UNSET
    idle_timeout_s: int | None | Unset = UNSET
    image: None | str | Unset = UNSET
    labels: SandboxCreateLabels | Unset = UNSET
    memory_mib: int | None | Unset = UNSET
    network: None | SandboxNetwork | Unset = UNSET
    preset: None | SandboxCreatePresetType0 | Unset = UNSET
    size: None | SandboxCreateSizeType0 | Unset = UNSET
    template: None | str | Unset = UNSET
    ttl_s: int | Unset = 600

    def to_dict(self) -> dict[str, Any]:
        from ..models.sandbox_network import SandboxNetwork

        cpus: int | None | Unset
        if isinstance(self.cpus, Unset):
            cpus = UNSET
        else:
            cpus = self.cpus

        disk_mib: int | None | Unset
        if isinstance(self.disk_mib, Unset):
            disk_mib = UNSET
        else:
            disk_mib = self.disk_mib

        env: dict[str, Any] | Unset = UNSET
        if not isinstance(self.env, Unset):
            env = self.env.to_dict()

        idle_timeout_s: int | None | Unset
        if isinstance(self.idle_timeout_s, Unset):
            idle_timeout_s = UNSET
        else:
            idle_timeout_s = self.idle_timeout_s

        image: None | str | Unset
        if isinstance(self.image, Unset):
            image = UNSET
        else:
            image = self.image

        labels: dict[str, Any] | Unset = UNSET
        if not isinstance(self.labels, Unset):
            labels = self.labels.to_dict()

        memory_mib: int | None | Unset
        if isinstance(self.memory_mib, Unset):
            memory_mib = UNSET
        else:
            memory_mib = self.memory_mib

        network: dict[str, Any] | None | Unset
        if isinstance(self.network, Unset):
            network = UNSET
        elif isinstance(self.network, SandboxNetwork):
            network = self.network.to_dict()
        else:
            network = self.network

        preset: None | str | Unset
        if isinstance(self.preset, Unset):
            preset = UNSET
        elif isinstance(self.preset, str):
            preset = self.preset
        else:
            preset = self.preset

        size: None | str | Unset
        if isinstance(self.size, Unset):
            size = UNSET
        elif isinstance(self.size, str):
            size = self.size
        else:
            size = self.size

        template: None | str | Unset
        if isinstance(self.template, Unset):
            template = UNSET
        else:
            template = self.template

        ttl_s = self.ttl_s

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if cpus is not UNSET:
            field_dict["cpus"] = cpus
        if disk_mib is not UNSET:
            field_dict["disk_mib"] = disk_mib
        if env is not UNSET:
            field_dict["env"] = env
        if idle_timeout_s is not UNSET:
            field_dict["idle_timeout_s"] = idle_timeout_s
        if image is not UNSET:
            field_dict["image"] = image
        if labels is not UNSET:
            field_dict["labels"] = labels
        if memory_mib is not UNSET:
            field_dict["memory_mib"] = memory_mib
        if network is not UNSET:
            field_dict["network"] = network
        if preset is not UNSET:
            field_dict["preset"] = preset
        if size is not UNSET:
            field_dict["size"] = size
        if template is not UNSET:
            field_dict["template"] = template
        if ttl_s is not UNSET:
            field_dict["ttl_s"] = ttl_s

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.sandbox_create_env import SandboxCreateEnv
        from ..models.sandbox_create_labels import SandboxCreateLabels
        from ..models.sandbox_network import SandboxNetwork

        d = dict(src_dict)

        def _parse_cpus(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        cpus = _parse_cpus(d.pop("cpus", UNSET))

        def _parse_disk_mib(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        disk_mib = _parse_disk_mib(d.pop("disk_mib", UNSET))

        _env = d.pop("env", UNSET)
        env: SandboxCreateEnv | Unset
        if isinstance(_env, Unset):
            env = UNSET
        else:
            env = SandboxCreateEnv.from_dict(_env)

        def _parse_idle_timeout_s(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        idle_timeout_s = _parse_idle_timeout_s(d.pop("idle_timeout_s", UNSET))

        def _parse_image(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        image = _parse_image(d.pop("image", UNSET))

        _labels = d.pop("labels", UNSET)
        labels: SandboxCreateLabels | Unset
        if isinstance(_labels, Unset):
            labels = UNSET
        else:
            labels = SandboxCreateLabels.from_dict(_labels)

        def _parse_memory_mib(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        memory_mib = _parse_memory_mib(d.pop("memory_mib", UNSET))

        def _parse_network(data: object) -> None | SandboxNetwork | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                network_type_0 = SandboxNetwork.from_dict(data)

                return network_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | SandboxNetwork | Unset, data)

        network = _parse_network(d.pop("network", UNSET))

        def _parse_preset(data: object) -> None | SandboxCreatePresetType0 | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                preset_type_0 = check_sandbox_create_preset_type_0(data)

                return preset_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | SandboxCreatePresetType0 | Unset, data)

        preset = _parse_preset(d.pop("preset", UNSET))

        def _parse_size(data: object) -> None | SandboxCreateSizeType0 | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                size_type_0 = check_sandbox_create_size_type_0(data)

                return size_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | SandboxCreateSizeType0 | Unset, data)

        size = _parse_size(d.pop("size", UNSET))

        def _parse_template(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        template = _parse_template(d.pop("template", UNSET))

        ttl_s = d.pop("ttl_s", UNSET)

        sandbox_create = cls(
            cpus=cpus,
            disk_mib=disk_mib,
            env=env,
            idle_timeout_s=idle_timeout_s,
            image=image,
            labels=labels,
            memory_mib=memory_mib,
            network=network,
            preset=preset,
            size=size,
            template=template,
            ttl_s=ttl_s,
        )

        return sandbox_create
