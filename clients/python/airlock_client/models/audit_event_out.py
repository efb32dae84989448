from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.audit_event_out_details import AuditEventOutDetails


T = TypeVar("T", bound="AuditEventOut")


@_attrs_define
class AuditEventOut:
    """
    Attributes:
        action (str):
        actor (str):
        client (None | str):
        details (AuditEventOutDetails):
        hash_ (str):
        id (int):
        outcome (str):
        prev_hash (str):
        request_id (None | str):
        seq (int):
        target (None | str):
        tenant_id (None | str):
        ts (str):
    """

    action: str
    actor: str
    client: None | str
    details: AuditEventOutDetails
    hash_: str
    id: int
    outcome: str
    prev_hash: str
    request_id: None | str
    seq: int
    target: None | str
    tenant_id: None | str
    ts: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        action = self.action

        actor = self.actor

        client: None | str
        client = self.client

        details = self.details.to_dict()

        hash_ = self.hash_

        id = self.id

        outcome = self.outcome

        prev_hash = self.prev_hash

        request_id: None | str
        request_id = self.request_id

        seq = self.seq

        target: None | str
        target = self.target

        tenant_id: None | str
        tenant_id = self.tenant_id

        ts = self.ts

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "action": action,
                "actor": actor,
                "client": client,
                "details": details,
                "hash": hash_,
                "id": id,
                "outcome": outcome,
                "prev_hash": prev_hash,
                "request_id": request_id,
                "seq": seq,
                "target": target,
                "tenant_id": tenant_id,
                "ts": ts,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.audit_event_out_details import AuditEventOutDetails

        d = dict(src_dict)
        action = d.pop("action")

        actor = d.pop("actor")

        def _parse_client(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        client = _parse_client(d.pop("client"))

        details = AuditEventOutDetails.from_dict(d.pop("details"))

        hash_ = d.pop("hash")

        id = d.pop("id")

        outcome = d.pop("outcome")

        prev_hash = d.pop("prev_hash")

        def _parse_request_id(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        request_id = _parse_request_id(d.pop("request_id"))

        seq = d.pop("seq")

        def _parse_target(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        target = _parse_target(d.pop("target"))

        def _parse_tenant_id(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        tenant_id = _parse_tenant_id(d.pop("tenant_id"))

        ts = d.pop("ts")

        audit_event_out = cls(
            action=action,
            actor=actor,
            client=client,
            details=details,
            hash_=hash_,
            id=id,
            outcome=outcome,
            prev_hash=prev_hash,
            request_id=request_id,
            seq=seq,
            target=target,
            tenant_id=tenant_id,
            ts=ts,
        )

        audit_event_out.additional_properties = d
        return audit_event_out

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
