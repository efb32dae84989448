from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.sandbox_fork_labels_type_0 import SandboxForkLabelsType0


T = TypeVar("T", bound="SandboxFork")


@_attrs_define
class SandboxFork:
    """A child of a running sandbox: its TTL (else the parent's), labels (else the parent's)
    and idle timeout (else the tenant's default); the rest is the parent's.

        Attributes:
            idle_timeout_s (int | None | Unset):
            labels (None | SandboxForkLabelsType0 | Unset):
            ttl_s (int | None | Unset):
    """

    idle_timeout_s: int | None | Unset = UNSET
    labels: None | SandboxForkLabelsType0 | Unset = UNSET
    ttl_s: int | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.sandbox_fork_labels_type_0 import SandboxForkLabelsType0

        idle_timeout_s: int | None | Unset
        if isinstance(self.idle_timeout_s, Unset):
            idle_timeout_s = UNSET
        else:
            idle_timeout_s = self.idle_timeout_s

        labels: dict[str, Any] | None | Unset
        if isinstance(self.labels, Unset):
            labels = UNSET
        elif isinstance(self.labels, SandboxForkLabelsType0):
            labels = self.labels.to_dict()
        else:
            labels = self.labels

        ttl_s: int | None | Unset
        if isinstance(self.ttl_s, Unset):
            ttl_s = UNSET
        else:
            ttl_s = self.ttl_s

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if idle_timeout_s is not UNSET:
            field_dict["idle_timeout_s"] = idle_timeout_s
        if labels is not UNSET:
            field_dict["labels"] = labels
        if ttl_s is not UNSET:
            field_dict["ttl_s"] = ttl_s

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.sandbox_fork_labels_type_0 import SandboxForkLabelsType0

        d = dict(src_dict)

        def _parse_idle_timeout_s(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        idle_timeout_s = _parse_idle_timeout_s(d.pop("idle_timeout_s", UNSET))

        def _parse_labels(data: object) -> None | SandboxForkLabelsType0 | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                labels_type_0 = SandboxForkLabelsType0.from_dict(data)

                return labels_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | SandboxForkLabelsType0 | Unset, data)

        labels = _parse_labels(d.pop("labels", UNSET))

        def _parse_ttl_s(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        ttl_s = _parse_ttl_s(d.pop("ttl_s", UNSET))

        sandbox_fork = cls(
            idle_timeout_s=idle_timeout_s,
            labels=labels,
            ttl_s=ttl_s,
        )

        return sandbox_fork
