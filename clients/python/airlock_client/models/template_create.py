from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define

from ..models.template_create_size import TemplateCreateSize, check_template_create_size
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.network_policy import NetworkPolicy
    from ..models.template_create_env import TemplateCreateEnv


T = TypeVar("T", bound="TemplateCreate")


@_attrs_define
class TemplateCreate:
    """A new template, or a new version of an existing one (same name): built as a job.

    Attributes:
        name (str):
        env (TemplateCreateEnv | Unset):
        from_sandbox (None | str | Unset):
        image (str | Unset):  Default: 'default'.
        network (NetworkPolicy | Unset): A template's network, the same policy as a sandbox's: its setup steps run under
            it.
            Sandboxes started from the template choose their own (`none` unless asked).
        setup (list[list[str]] | Unset):
        size (TemplateCreateSize | Unset):  Default: 'small'.
    """

    name: str
    env: TemplateCreateEnv | Unset = UNSET
    from_sandbox: None | str | Unset = UNSET
    image: str | Unset = "default"
    network: NetworkPolicy | Unset = UNSET
    setup: list[list[str]] | Unset = UNSET
    size: TemplateCreateSize | Unset = "small"

    def to_dict(self) -> dict[str, Any]:
        name = self.name

        env: dict[str, Any] | Unset = UNSET
        if not isinstance(self.env, Unset):
            env = self.env.to_dict()

        from_sandbox: None | str | Unset
        if isinstance(self.from_sandbox, Unset):
            from_sandbox = UNSET
        else:
            from_sandbox = self.from_sandbox

        image = self.image

        network: dict[str, Any] | Unset = UNSET
        if not isinstance(self.network, Unset):
            network = self.network.to_dict()

        setup: list[list[str]] | Unset = UNSET
        if not isinstance(self.setup, Unset):
            setup = []
            for setup_item_data in self.setup:
                setup_item = setup_item_data

                setup.append(setup_item)

        size: str | Unset = UNSET
        if not isinstance(self.size, Unset):
            size = self.size

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "name": name,
            }
        )
        if env is not UNSET:
            field_dict["env"] = env
        if from_sandbox is not UNSET:
            field_dict["from_sandbox"] = from_sandbox
        if image is not UNSET:
            field_dict["image"] = image
        if network is not UNSET:
            field_dict["network"] = network
        if setup is not UNSET:
            field_dict["setup"] = setup
        if size is not UNSET:
            field_dict["size"] = size

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.network_policy import NetworkPolicy
        from ..models.template_create_env import TemplateCreateEnv

        d = dict(src_dict)
        name = d.pop("name")

        _env = d.pop("env", UNSET)
        env: TemplateCreateEnv | Unset
        if isinstance(_env, Unset):
            env = UNSET
        else:
            env = TemplateCreateEnv.from_dict(_env)

        def _parse_from_sandbox(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        from_sandbox = _parse_from_sandbox(d.pop("from_sandbox", UNSET))

        image = d.pop("image", UNSET)

        _network = d.pop("network", UNSET)
        network: NetworkPolicy | Unset
        if isinstance(_network, Unset):
            network = UNSET
        else:
            network = NetworkPolicy.from_dict(_network)

        _setup = d.pop("setup", UNSET)
        setup: list[list[str]] | Unset = UNSET
        if _setup is not UNSET:
            setup = []
            for setup_item_data in _setup:
                setup_item = cast(list[str], setup_item_data)

                setup.append(setup_item)

        _size = d.pop("size", UNSET)
        size: TemplateCreateSize | Unset
        if isinstance(_size, Unset):
            size = UNSET
        else:
            size = check_template_create_size(_size)

        template_create = cls(
            name=name,
            env=env,
            from_sandbox=from_sandbox,
            image=image,
            network=network,
            setup=setup,
            size=size,
        )

        return template_create
