from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.template_version_start_mode_type_0 import (
    TemplateVersionStartModeType0,
    check_template_version_start_mode_type_0,
)
from ..models.template_version_state import TemplateVersionState, check_template_version_state
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.network_policy import NetworkPolicy
    from ..models.template_version_env import TemplateVersionEnv


T = TypeVar("T", bound="TemplateVersion")


@_attrs_define
class TemplateVersion:
    """
    Attributes:
        build_log (str):
        created_at (str):
        env (TemplateVersionEnv):
        error (None | str):
        finished_at (None | str):
        image (str):
        network (NetworkPolicy): A template's network, the same policy as a sandbox's: its setup steps run under it.
            Sandboxes started from the template choose their own (`none` unless asked).
        setup (list[list[str]]):
        size (str):
        snapshot_bytes (int | None):
        start_mode (None | TemplateVersionStartModeType0):
        started_at (None | str):
        state (TemplateVersionState):
        version (int):
        from_sandbox (None | str | Unset):
    """

    build_log: str
    created_at: str
    env: TemplateVersionEnv
    error: None | str
    finished_at: None | str
    image: str
    network: NetworkPolicy
    setup: list[list[str]]
    size: str
    snapshot_bytes: int | None
    start_mode: None | TemplateVersionStartModeType0
    started_at: None | str
    state: TemplateVersionState
    version: int
    from_sandbox: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        build_log = self.build_log

        created_at = self.created_at

        env = self.env.to_dict()

        error: None | str
        error = self.error

        finished_at: None | str
        finished_at = self.finished_at

        image = self.image

        network = self.network.to_dict()

        setup = []
        for setup_item_data in self.setup:
            setup_item = setup_item_data

            setup.append(setup_item)

        size = self.size

        snapshot_bytes: int | None
        snapshot_bytes = self.snapshot_bytes

        start_mode: None | str
        if isinstance(self.start_mode, str):
            start_mode = self.start_mode
        else:
            start_mode = self.start_mode

        started_at: None | str
        started_at = self.started_at

        state: str = self.state

        version = self.version

        from_sandbox: None | str | Unset
        if isinstance(self.from_sandbox, Unset):
            from_sandbox = UNSET
        else:
            from_sandbox = self.from_sandbox

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "build_log": build_log,
                "created_at": created_at,
                "env": env,
                "error": error,
                "finished_at": finished_at,
                "image": image,
                "network": network,
                "setup": setup,
                "size": size,
                "snapshot_bytes": snapshot_bytes,
                "start_mode": start_mode,
                "started_at": started_at,
                "state": state,
                "version": version,
            }
        )
        if from_sandbox is not UNSET:
            field_dict["from_sandbox"] = from_sandbox

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.network_policy import NetworkPolicy
        from ..models.template_version_env import TemplateVersionEnv

        d = dict(src_dict)
        build_log = d.pop("build_log")

        created_at = d.pop("created_at")

        env = TemplateVersionEnv.from_dict(d.pop("env"))

        def _parse_error(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        error = _parse_error(d.pop("error"))

        def _parse_finished_at(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        finished_at = _parse_finished_at(d.pop("finished_at"))

        image = d.pop("image")

        network = NetworkPolicy.from_dict(d.pop("network"))

        setup = []
        _setup = d.pop("setup")
        for setup_item_data in _setup:
            setup_item = cast(list[str], setup_item_data)

            setup.append(setup_item)

        size = d.pop("size")

        def _parse_snapshot_bytes(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        snapshot_bytes = _parse_snapshot_bytes(d.pop("snapshot_bytes"))

        def _parse_start_mode(data: object) -> None | TemplateVersionStartModeType0:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                start_mode_type_0 = check_template_version_start_mode_type_0(data)

                return start_mode_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | TemplateVersionStartModeType0, data)

        start_mode = _parse_start_mode(d.pop("start_mode"))

        def _parse_started_at(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        started_at = _parse_started_at(d.pop("started_at"))

        state = check_template_version_state(d.pop("state"))

        version = d.pop("version")

        def _parse_from_sandbox(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        from_sandbox = _parse_from_sandbox(d.pop("from_sandbox", UNSET))

        template_version = cls(
            build_log=build_log,
            created_at=created_at,
            env=env,
            error=error,
            finished_at=finished_at,
            image=image,
            network=network,
            setup=setup,
            size=size,
            snapshot_bytes=snapshot_bytes,
            start_mode=start_mode,
            started_at=started_at,
            state=state,
            version=version,
            from_sandbox=from_sandbox,
        )

        template_version.additional_properties = d
        return template_version

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
