from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="QuotasPatch")


@_attrs_define
class QuotasPatch:
    """
    Attributes:
        audit_retention_days (int | None | Unset):
        bundle_retention_days (int | None | Unset):
        default_idle_timeout_s (int | None | Unset):
        exec_calls_per_s (int | None | Unset):
        execs_per_minute (int | None | Unset):
        max_bundles (int | None | Unset):
        max_disk_mib (int | None | Unset):
        max_exec_timeout_s (int | None | Unset):
        max_idle_timeout_s (int | None | Unset):
        max_lifetime_s (int | None | Unset):
        max_memory_mib (int | None | Unset):
        max_paused_mib (int | None | Unset):
        max_paused_s (int | None | Unset):
        max_paused_sandboxes (int | None | Unset):
        max_port_connections (int | None | Unset):
        max_queued_builds (int | None | Unset):
        max_queued_reviews (int | None | Unset):
        max_running_execs (int | None | Unset):
        max_running_transfers (int | None | Unset):
        max_sandbox_ttl_s (int | None | Unset):
        max_sandboxes (int | None | Unset):
        max_stored_output_mib (int | None | Unset):
        max_token_ttl_s (int | None | Unset):
        max_upload_mib (int | None | Unset):
        max_vcpus (int | None | Unset):
        network_open_allowed (bool | None | Unset):
        network_private_cidrs (list[str] | None | Unset):
        output_retention_days (int | None | Unset):
        port_requests_per_s (int | None | Unset):
        reads_per_s (int | None | Unset):
        writes_per_s (int | None | Unset):
    """

    audit_retention_days: int | None | Unset = UNSET
    bundle_retention_days: int | None | Unset = UNSET
    default_idle_timeout_s: int | None | Unset = UNSET
    exec_calls_per_s: int | None | Unset = UNSET
    execs_per_minute: int | None | Unset = UNSET
    max_bundles: int | None | Unset = UNSET
    max_disk_mib: int | None | Unset = UNSET
    max_exec_timeout_s: int | None | Unset = UNSET
    max_idle_timeout_s: int | None | Unset = UNSET
    max_lifetime_s: int | None | Unset = UNSET
    max_memory_mib: int | None | Unset = UNSET
    max_paused_mib: int | None | Unset = UNSET
    max_paused_s: int | None | Unset = UNSET
    max_paused_sandboxes: int | None | Unset = UNSET
    max_port_connections: int | None | Unset = UNSET
    max_queued_builds: int | None | Unset = UNSET
    max_queued_reviews: int | None | Unset = UNSET
    max_running_execs: int | None | Unset = UNSET
    max_running_transfers: int | None | Unset = UNSET
    max_sandbox_ttl_s: int | None | Unset = UNSET
    max_sandboxes: int | None | Unset = UNSET
    max_stored_output_mib: int | None | Unset = UNSET
    max_token_ttl_s: int | None | Unset = UNSET
    max_upload_mib: int | None | Unset = UNSET
    max_vcpus: int | None | Unset = UNSET
    network_open_allowed: bool | None | Unset = UNSET
    network_private_cidrs: list[str] | None | Unset = UNSET
    output_retention_days: int | None | Unset = UNSET
    port_requests_per_s: int | None | Unset = UNSET
    reads_per_s: int | None | Unset = UNSET
    writes_per_s: int | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        audit_retention_days: int | None | Unset
        if isinstance(self.audit_retention_days, Unset):
            audit_retention_days = UNSET
        else:
            audit_retention_days = self.audit_retention_days

        bundle_retention_days: int | None | Unset
        if isinstance(self.bundle_retention_days, Unset):
            bundle_retention_days = UNSET
        else:
            bundle_retention_days = self.bundle_retention_days

        default_idle_timeout_s: int | None | Unset
        if isinstance(self.default_idle_timeout_s, Unset):
            default_idle_timeout_s = UNSET
        else:
            default_idle_timeout_s = self.default_idle_timeout_s

        exec_calls_per_s: int | None | Unset
        if isinstance(self.exec_calls_per_s, Unset):
            exec_calls_per_s = UNSET
        else:
            exec_calls_per_s = self.exec_calls_per_s

        execs_per_minute: int | None | Unset
        if isinstance(self.execs_per_minute, Unset):
            execs_per_minute = UNSET
        else:
            execs_per_minute = self.execs_per_minute

        max_bundles: int | None | Unset
        if isinstance(self.max_bundles, Unset):
            max_bundles = UNSET
        else:
            max_bundles = self.max_bundles

        max_disk_mib: int | None | Unset
        if isinstance(self.max_disk_mib, Unset):
            max_disk_mib = UNSET
        else:
            max_disk_mib = self.max_disk_mib

        max_exec_timeout_s: int | None | Unset
        if isinstance(self.max_exec_timeout_s, Unset):
            max_exec_timeout_s = UNSET
        else:
            max_exec_timeout_s = self.max_exec_timeout_s

        max_idle_timeout_s: int | None | Unset
        if isinstance(self.max_idle_timeout_s, Unset):
            max_idle_timeout_s = UNSET
        else:
            max_idle_timeout_s = self.max_idle_timeout_s

        max_lifetime_s: int | None | Unset
        if isinstance(self.max_lifetime_s, Unset):
            max_lifetime_s = UNSET
        else:
            max_lifetime_s = self.max_lifetime_s

        max_memory_mib: int | None | Unset
        if isinstance(self.max_memory_mib, Unset):
            max_memory_mib = UNSET
        else:
            max_memory_mib = self.max_memory_mib

        max_paused_mib: int | None | Unset
        if isinstance(self.max_paused_mib, Unset):
            max_paused_mib = UNSET
        else:
            max_paused_mib = self.max_paused_mib

        max_paused_s: int | None | Unset
        if isinstance(self.max_paused_s, Unset):
            max_paused_s = UNSET
        else:
            max_paused_s = self.max_paused_s

        max_paused_sandboxes: int | None | Unset
        if isinstance(self.max_paused_sandboxes, Unset):
            max_paused_sandboxes = UNSET
        else:
            max_paused_sandboxes = self.max_paused_sandboxes

        max_port_connections: int | None | Unset
        if isinstance(self.max_port_connections, Unset):
            max_port_connections = UNSET
        else:
            max_port_connections = self.max_port_connections

        max_queued_builds: int | None | Unset
        if isinstance(self.max_queued_builds, Unset):
            max_queued_builds = UNSET
        else:
            max_queued_builds = self.max_queued_builds

        max_queued_reviews: int | None | Unset
        if isinstance(self.max_queued_reviews, Unset):
            max_queued_reviews = UNSET
        else:
            max_queued_reviews = self.max_queued_reviews

        max_running_execs: int | None | Unset
        if isinstance(self.max_running_execs, Unset):
            max_running_execs = UNSET
        else:
            max_running_execs = self.max_running_execs

        max_running_transfers: int | None | Unset
        if isinstance(self.max_running_transfers, Unset):
            max_running_transfers = UNSET
        else:
            max_running_transfers = self.max_running_transfers

        max_sandbox_ttl_s: int | None | Unset
        if isinstance(self.max_sandbox_ttl_s, Unset):
            max_sandbox_ttl_s = UNSET
        else:
            max_sandbox_ttl_s = self.max_sandbox_ttl_s

        max_sandboxes: int | None | Unset
        if isinstance(self.max_sandboxes, Unset):
            max_sandboxes = UNSET
        else:
            max_sandboxes = self.max_sandboxes

        max_stored_output_mib: int | None | Unset
        if isinstance(self.max_stored_output_mib, Unset):
            max_stored_output_mib = UNSET
        else:
            max_stored_output_mib = self.max_stored_output_mib

        max_token_ttl_s: int | None | Unset
        if isinstance(self.max_token_ttl_s, Unset):
            max_token_ttl_s = UNSET
        else:
            max_token_ttl_s = self.max_token_ttl_s

        max_upload_mib: int | None | Unset
        if isinstance(self.max_upload_mib, Unset):
            max_upload_mib = UNSET
        else:
            max_upload_mib = self.max_upload_mib

        max_vcpus: int | None | Unset
        if isinstance(self.max_vcpus, Unset):
            max_vcpus = UNSET
        else:
            max_vcpus = self.max_vcpus

        network_open_allowed: bool | None | Unset
        if isinstance(self.network_open_allowed, Unset):
            network_open_allowed = UNSET
        else:
            network_open_allowed = self.network_open_allowed

        network_private_cidrs: list[str] | None | Unset
        if isinstance(self.network_private_cidrs, Unset):
            network_private_cidrs = UNSET
        elif isinstance(self.network_private_cidrs, list):
            network_private_cidrs = self.network_private_cidrs

        else:
            network_private_cidrs = self.network_private_cidrs

        output_retention_days: int | None | Unset
        if isinstance(self.output_retention_days, Unset):
            output_retention_days = UNSET
        else:
            output_retention_days = self.output_retention_days

        port_requests_per_s: int | None | Unset
        if isinstance(self.port_requests_per_s, Unset):
            port_requests_per_s = UNSET
        else:
            port_requests_per_s = self.port_requests_per_s

        reads_per_s: int | None | Unset
        if isinstance(self.reads_per_s, Unset):
            reads_per_s = UNSET
        else:
            reads_per_s = self.reads_per_s

        writes_per_s: int | None | Unset
        if isinstance(self.writes_per_s, Unset):
            writes_per_s = UNSET
        else:
            writes_per_s = self.writes_per_s

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if audit_retention_days is not UNSET:
            field_dict["audit_retention_days"] = audit_retention_days
        if bundle_retention_days is not UNSET:
            field_dict["bundle_retention_days"] = bundle_retention_days
        if default_idle_timeout_s is not UNSET:
            field_dict["default_idle_timeout_s"] = default_idle_timeout_s
        if exec_calls_per_s is not UNSET:
            field_dict["exec_calls_per_s"] = exec_calls_per_s
        if execs_per_minute is not UNSET:
            field_dict["execs_per_minute"] = execs_per_minute
        if max_bundles is not UNSET:
            field_dict["max_bundles"] = max_bundles
        if max_disk_mib is not UNSET:
            field_dict["max_disk_mib"] = max_disk_mib
        if max_exec_timeout_s is not UNSET:
            field_dict["max_exec_timeout_s"] = max_exec_timeout_s
        if max_idle_timeout_s is not UNSET:
            field_dict["max_idle_timeout_s"] = max_idle_timeout_s
        if max_lifetime_s is not UNSET:
            field_dict["max_lifetime_s"] = max_lifetime_s
        if max_memory_mib is not UNSET:
            field_dict["max_memory_mib"] = max_memory_mib
        if max_paused_mib is not UNSET:
            field_dict["max_paused_mib"] = max_paused_mib
        if max_paused_s is not UNSET:
            field_dict["max_paused_s"] = max_paused_s
        if max_paused_sandboxes is not UNSET:
            field_dict["max_paused_sandboxes"] = max_paused_sandboxes
        if max_port_connections is not UNSET:
            field_dict["max_port_connections"] = max_port_connections
        if max_queued_builds is not UNSET:
            field_dict["max_queued_builds"] = max_queued_builds
        if max_queued_reviews is not UNSET:
            field_dict["max_queued_reviews"] = max_queued_reviews
        if max_running_execs is not UNSET:
            field_dict["max_running_execs"] = max_running_execs
        if max_running_transfers is not UNSET:
            field_dict["max_running_transfers"] = max_running_transfers
        if max_sandbox_ttl_s is not UNSET:
            field_dict["max_sandbox_ttl_s"] = max_sandbox_ttl_s
        if max_sandboxes is not UNSET:
            field_dict["max_sandboxes"] = max_sandboxes
        if max_stored_output_mib is not UNSET:
            field_dict["max_stored_output_mib"] = max_stored_output_mib
        if max_token_ttl_s is not UNSET:
            field_dict["max_token_ttl_s"] = max_token_ttl_s
        if max_upload_mib is not UNSET:
            field_dict["max_upload_mib"] = max_upload_mib
        if max_vcpus is not UNSET:
            field_dict["max_vcpus"] = max_vcpus
        if network_open_allowed is not UNSET:
            field_dict["network_open_allowed"] = network_open_allowed
        if network_private_cidrs is not UNSET:
            field_dict["network_private_cidrs"] = network_private_cidrs
        if output_retention_days is not UNSET:
            field_dict["output_retention_days"] = output_retention_days
        if port_requests_per_s is not UNSET:
            field_dict["port_requests_per_s"] = port_requests_per_s
        if reads_per_s is not UNSET:
            field_dict["reads_per_s"] = reads_per_s
        if writes_per_s is not UNSET:
            field_dict["writes_per_s"] = writes_per_s

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)

        def _parse_audit_retention_days(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        audit_retention_days = _parse_audit_retention_days(d.pop("audit_retention_days", UNSET))

        def _parse_bundle_retention_days(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        bundle_retention_days = _parse_bundle_retention_days(d.pop("bundle_retention_days", UNSET))

        def _parse_default_idle_timeout_s(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        default_idle_timeout_s = _parse_default_idle_timeout_s(d.pop("default_idle_timeout_s", UNSET))

        def _parse_exec_calls_per_s(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        exec_calls_per_s = _parse_exec_calls_per_s(d.pop("exec_calls_per_s", UNSET))

        def _parse_execs_per_minute(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        execs_per_minute = _parse_execs_per_minute(d.pop("execs_per_minute", UNSET))

        def _parse_max_bundles(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_bundles = _parse_max_bundles(d.pop("max_bundles", UNSET))

        def _parse_max_disk_mib(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_disk_mib = _parse_max_disk_mib(d.pop("max_disk_mib", UNSET))

        def _parse_max_exec_timeout_s(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_exec_timeout_s = _parse_max_exec_timeout_s(d.pop("max_exec_timeout_s", UNSET))

        def _parse_max_idle_timeout_s(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_idle_timeout_s = _parse_max_idle_timeout_s(d.pop("max_idle_timeout_s", UNSET))

        def _parse_max_lifetime_s(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_lifetime_s = _parse_max_lifetime_s(d.pop("max_lifetime_s", UNSET))

        def _parse_max_memory_mib(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_memory_mib = _parse_max_memory_mib(d.pop("max_memory_mib", UNSET))

        def _parse_max_paused_mib(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_paused_mib = _parse_max_paused_mib(d.pop("max_paused_mib", UNSET))

        def _parse_max_paused_s(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_paused_s = _parse_max_paused_s(d.pop("max_paused_s", UNSET))

        def _parse_max_paused_sandboxes(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_paused_sandboxes = _parse_max_paused_sandboxes(d.pop("max_paused_sandboxes", UNSET))

        def _parse_max_port_connections(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_port_connections = _parse_max_port_connections(d.pop("max_port_connections", UNSET))

        def _parse_max_queued_builds(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_queued_builds = _parse_max_queued_builds(d.pop("max_queued_builds", UNSET))

        def _parse_max_queued_reviews(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_queued_reviews = _parse_max_queued_reviews(d.pop("max_queued_reviews", UNSET))

        def _parse_max_running_execs(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_running_execs = _parse_max_running_execs(d.pop("max_running_execs", UNSET))

        def _parse_max_running_transfers(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_running_transfers = _parse_max_running_transfers(d.pop("max_running_transfers", UNSET))

        def _parse_max_sandbox_ttl_s(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_sandbox_ttl_s = _parse_max_sandbox_ttl_s(d.pop("max_sandbox_ttl_s", UNSET))

        def _parse_max_sandboxes(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_sandboxes = _parse_max_sandboxes(d.pop("max_sandboxes", UNSET))

        def _parse_max_stored_output_mib(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_stored_output_mib = _parse_max_stored_output_mib(d.pop("max_stored_output_mib", UNSET))

        def _parse_max_token_ttl_s(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_token_ttl_s = _parse_max_token_ttl_s(d.pop("max_token_ttl_s", UNSET))

        def _parse_max_upload_mib(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_upload_mib = _parse_max_upload_mib(d.pop("max_upload_mib", UNSET))

        def _parse_max_vcpus(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_vcpus = _parse_max_vcpus(d.pop("max_vcpus", UNSET))

        def _parse_network_open_allowed(data: object) -> bool | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        network_open_allowed = _parse_network_open_allowed(d.pop("network_open_allowed", UNSET))

        def _parse_network_private_cidrs(data: object) -> list[str] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                network_private_cidrs_type_0 = cast(list[str], data)

                return network_private_cidrs_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | None | Unset, data)

        network_private_cidrs = _parse_network_private_cidrs(d.pop("network_private_cidrs", UNSET))

        def _parse_output_retention_days(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        output_retention_days = _parse_output_retention_days(d.pop("output_retention_days", UNSET))

        def _parse_port_requests_per_s(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        port_requests_per_s = _parse_port_requests_per_s(d.pop("port_requests_per_s", UNSET))

        def _parse_reads_per_s(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        reads_per_s = _parse_reads_per_s(d.pop("reads_per_s", UNSET))

        def _parse_writes_per_s(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        writes_per_s = _parse_writes_per_s(d.pop("writes_per_s", UNSET))

        quotas_patch = cls(
            audit_retention_days=audit_retention_days,
            bundle_retention_days=bundle_retention_days,
            default_idle_timeout_s=default_idle_timeout_s,
            exec_calls_per_s=exec_calls_per_s,
            execs_per_minute=execs_per_minute,
            max_bundles=max_bundles,
            max_disk_mib=max_disk_mib,
            max_exec_timeout_s=max_exec_timeout_s,
            max_idle_timeout_s=max_idle_timeout_s,
            max_lifetime_s=max_lifetime_s,
            max_memory_mib=max_memory_mib,
            max_paused_mib=max_paused_mib,
            max_paused_s=max_paused_s,
            max_paused_sandboxes=max_paused_sandboxes,
            max_port_connections=max_port_connections,
            max_queued_builds=max_queued_builds,
            max_queued_reviews=max_queued_reviews,
            max_running_execs=max_running_execs,
            max_running_transfers=max_running_transfers,
            max_sandbox_ttl_s=max_sandbox_ttl_s,
            max_sandboxes=max_sandboxes,
            max_stored_output_mib=max_stored_output_mib,
            max_token_ttl_s=max_token_ttl_s,
            max_upload_mib=max_upload_mib,
            max_vcpus=max_vcpus,
            network_open_allowed=network_open_allowed,
            network_private_cidrs=network_private_cidrs,
            output_retention_days=output_retention_days,
            port_requests_per_s=port_requests_per_s,
            reads_per_s=reads_per_s,
            writes_per_s=writes_per_s,
        )

        return quotas_patch
