from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.template_state import TemplateState, check_template_state
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.template_version import TemplateVersion


T = TypeVar("T", bound="Template")


@_attrs_define
class Template:
    """
    Attributes:
        created_at (str):
        id (str):
        latest_version (int):
        name (str):
        shared (bool):
        snapshot_bytes (int | None):
        state (TemplateState):
        updated_at (str):
        version (int | None):
        versions (list[TemplateVersion] | None | Unset):
    """

    created_at: str
    id: str
    latest_version: int
    name: str
    shared: bool
    snapshot_bytes: int | None
    state: TemplateState
    updated_at: str
    version: int | None
    versions: list[TemplateVersion] | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        created_at = self.created_at

        id = self.id

        latest_version = self.latest_version

        name = self.name

        shared = self.shared

        snapshot_bytes: int | None
        snapshot_bytes = self.snapshot_bytes

        state: str = self.state

        updated_at = self.updated_at

        version: int | None
        version = self.version

        versions: list[dict[str, Any]] | None | Unset
        if isinstance(self.versions, Unset):
            versions = UNSET
        elif isinstance(self.versions, list):
            versions = []
            for versions_type_0_item_data in self.versions:
                versions_type_0_item = versions_type_0_item_data.to_dict()
                versions.append(versions_type_0_item)

        else:
            versions = self.versions

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "created_at": created_at,
                "id": id,
                "latest_version": latest_version,
                "name": name,
                "shared": shared,
                "snapshot_bytes": snapshot_bytes,
                "state": state,
                "updated_at": updated_at,
                "version": version,
            }
        )
        if versions is not UNSET:
            field_dict["versions"] = versions

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.template_version import TemplateVersion

        d = dict(src_dict)
        created_at = d.pop("created_at")

        id = d.pop("id")

        latest_version = d.pop("latest_version")

        name = d.pop("name")

        shared = d.pop("shared")

        def _parse_snapshot_bytes(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        snapshot_bytes = _parse_snapshot_bytes(d.pop("snapshot_bytes"))

        state = check_template_state(d.pop("state"))

        updated_at = d.pop("updated_at")

        def _parse_version(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        version = _parse_version(d.pop("version"))

        def _parse_versions(data: object) -> list[TemplateVersion] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                versions_type_0 = []
                _versions_type_0 = data
                for versions_type_0_item_data in _versions_type_0:
                    versions_type_0_item = TemplateVersion.from_dict(versions_type_0_item_data)

                    versions_type_0.append(versions_type_0_item)

                return versions_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[TemplateVersion] | None | Unset, data)

        versions = _parse_versions(d.pop("versions", UNSET))

        template = cls(
            created_at=created_at,
            id=id,
            latest_version=latest_version,
            name=name,
            shared=shared,
            snapshot_bytes=snapshot_bytes,
            state=state,
            updated_at=updated_at,
            version=version,
            versions=versions,
        )

        template.additional_properties = d
        return template

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
