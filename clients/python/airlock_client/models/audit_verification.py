from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.broken_link import BrokenLink


T = TypeVar("T", bound="AuditVerification")


@_attrs_define
class AuditVerification:
    """
    Attributes:
        anchored_after_purge (bool):
        broken (BrokenLink | None):
        events_checked (int):
        first_seq (int | None):
        last_seq (int | None):
        tenant_id (None | str):
        valid (bool):
        checked_from_seq (int | None | Unset):
        keyed_from_seq (int | Unset):  Default: 1.
    """

    anchored_after_purge: bool
    broken: BrokenLink | None
    events_checked: int
    first_seq: int | None
    last_seq: int | None
    tenant_id: None | str
    valid: bool
    checked_from_seq: int | None | Unset = UNSET
    keyed_from_seq: int | Unset = 1
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.broken_link import BrokenLink

        anchored_after_purge = self.anchored_after_purge

        broken: dict[str, Any] | None
        if isinstance(self.broken, BrokenLink):
            broken = self.broken.to_dict()
        else:
            broken = self.broken

        events_checked = self.events_checked

        first_seq: int | None
        first_seq = self.first_seq

        last_seq: int | None
        last_seq = self.last_seq

        tenant_id: None | str
        tenant_id = self.tenant_id

        valid = self.valid

        checked_from_seq: int | None | Unset
        if isinstance(self.checked_from_seq, Unset):
            checked_from_seq = UNSET
        else:
            checked_from_seq = self.checked_from_seq

        keyed_from_seq = self.keyed_from_seq

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "anchored_after_purge": anchored_after_purge,
                "broken": broken,
                "events_checked": events_checked,
                "first_seq": first_seq,
                "last_seq": last_seq,
                "tenant_id": tenant_id,
                "valid": valid,
            }
        )
        if checked_from_seq is not UNSET:
            field_dict["checked_from_seq"] = checked_from_seq
        if keyed_from_seq is not UNSET:
            field_dict["keyed_from_seq"] = keyed_from_seq

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.broken_link import BrokenLink

        d = dict(src_dict)
        anchored_after_purge = d.pop("anchored_after_purge")

        def _parse_broken(data: object) -> BrokenLink | None:
            if data is None:
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                broken_type_0 = BrokenLink.from_dict(data)

                return broken_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(BrokenLink | None, data)

        broken = _parse_broken(d.pop("broken"))

        events_checked = d.pop("events_checked")

        def _parse_first_seq(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        first_seq = _parse_first_seq(d.pop("first_seq"))

        def _parse_last_seq(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        last_seq = _parse_last_seq(d.pop("last_seq"))

        def _parse_tenant_id(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        tenant_id = _parse_tenant_id(d.pop("tenant_id"))

        valid = d.pop("valid")

        def _parse_checked_from_seq(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        checked_from_seq = _parse_checked_from_seq(d.pop("checked_from_seq", UNSET))

        keyed_from_seq = d.pop("keyed_from_seq", UNSET)

        audit_verification = cls(
            anchored_after_purge=anchored_after_purge,
            broken=broken,
            events_checked=events_checked,
            first_seq=first_seq,
            last_seq=last_seq,
            tenant_id=tenant_id,
            valid=valid,
            checked_from_seq=checked_from_seq,
            keyed_from_seq=keyed_from_seq,
        )

        audit_verification.additional_properties = d
        return audit_verification

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
