from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="Quotas")


@_attrs_define
class Quotas:
    """
    Attributes:
        audit_retention_days (int | Unset):  Default: 90.
        bundle_retention_days (int | Unset):  Default: 7.
        default_idle_timeout_s (int | Unset):  Default: 0.
        exec_calls_per_s (int | Unset):  Default: 200.
        execs_per_minute (int | Unset):  Default: 120.
        max_bundles (int | Unset):  Default: 10.
        max_disk_mib (int | Unset):  Default: 16384.
        max_exec_timeout_s (int | Unset):  Default: 600.
        max_idle_timeout_s (int | Unset):  Default: 86400.
        max_lifetime_s (int | Unset):  Default: 604800.
        max_memory_mib (int | Unset):  Default: 16384.
        max_paused_mib (int | Unset):  Default: 16384.
        max_paused_s (int | Unset):  Default: 604800.
        max_paused_sandboxes (int | Unset):  Default: 10.
        max_port_connections (int | Unset):  Default: 256.
        max_queued_builds (int | Unset):  Default: 3.
        max_queued_reviews (int | Unset):  Default: 10.
        max_running_execs (int | Unset):  Default: 16.
        max_running_transfers (int | Unset):  Default: 16.
        max_sandbox_ttl_s (int | Unset):  Default: 3600.
        max_sandboxes (int | Unset):  Default: 10.
        max_stored_output_mib (int | Unset):  Default: 1024.
        max_token_ttl_s (int | Unset):  Default: 900.
        max_upload_mib (int | Unset):  Default: 100.
        max_vcpus (int | Unset):  Default: 8.
        network_open_allowed (bool | Unset):  Default: False.
        network_private_cidrs (list[str] | Unset):
        output_retention_days (int | Unset):  Default: 7.
        port_requests_per_s (int | Unset):  Default: 200.
        reads_per_s (int | Unset):  Default: 100.
        writes_per_s (int | Unset):  Default: 50.
    """

    audit_retention_days: int | Unset = 90
    bundle_retention_days: int | Unset = 7
    default_idle_timeout_s: int | Unset = 0
    exec_calls_per_s: int | Unset = 200
    execs_per_minute: int | Unset = 120
    max_bundles: int | Unset = 10
    max_disk_mib: int | Unset = 16384
    max_exec_timeout_s: int | Unset = 600
    max_idle_timeout_s: int | Unset = 86400
    max_lifetime_s: int | Unset = 604800
    max_memory_mib: int | Unset = 16384
    max_paused_mib: int | Unset = 16384
    max_paused_s: int | Unset = 604800
    max_paused_sandboxes: int | Unset = 10
    max_port_connections: int | Unset = 256
    max_queued_builds: int | Unset = 3
    max_queued_reviews: int | Unset = 10
    max_running_execs: int | Unset = 16
    max_running_transfers: int | Unset = 16
    max_sandbox_ttl_s: int | Unset = 3600
    max_sandboxes: int | Unset = 10
    max_stored_output_mib: int | Unset = 1024
    max_token_ttl_s: int | Unset = 900
    max_upload_mib: int | Unset = 100
    max_vcpus: int | Unset = 8
    network_open_allowed: bool | Unset = False
    network_private_cidrs: list[str] | Unset = UNSET
    output_retention_days: int | Unset = 7
    port_requests_per_s: int | Unset = 200
    reads_per_s: int | Unset = 100
    writes_per_s: int | Unset = 50

    def to_dict(self) -> dict[str, Any]:
        audit_retention_days = self.audit_retention_days

        bundle_retention_days = self.bundle_retention_days

        default_idle_timeout_s = self.default_idle_timeout_s

        exec_calls_per_s = self.exec_calls_per_s

        execs_per_minute = self.execs_per_minute

        max_bundles = self.max_bundles

        max_disk_mib = self.max_disk_mib

        max_exec_timeout_s = self.max_exec_timeout_s

        max_idle_timeout_s = self.max_idle_timeout_s

        max_lifetime_s = self.max_lifetime_s

        max_memory_mib = self.max_memory_mib

        max_paused_mib = self.max_paused_mib

        max_paused_s = self.max_paused_s

        max_paused_sandboxes = self.max_paused_sandboxes

        max_port_connections = self.max_port_connections

        max_queued_builds = self.max_queued_builds

        max_queued_reviews = self.max_queued_reviews

        max_running_execs = self.max_running_execs

        max_running_transfers = self.max_running_transfers

        max_sandbox_ttl_s = self.max_sandbox_ttl_s

        max_sandboxes = self.max_sandboxes

        max_stored_output_mib = self.max_stored_output_mib

        max_token_ttl_s = self.max_token_ttl_s

        max_upload_mib = self.max_upload_mib

        max_vcpus = self.max_vcpus

        network_open_allowed = self.network_open_allowed

        network_private_cidrs: list[str] | Unset = UNSET
        if not isinstance(self.network_private_cidrs, Unset):
            network_private_cidrs = self.network_private_cidrs

        output_retention_days = self.output_retention_days

        port_requests_per_s = self.port_requests_per_s

        reads_per_s = self.reads_per_s

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
        audit_retention_days = d.pop("audit_retention_days", UNSET)

        bundle_retention_days = d.pop("bundle_retention_days", UNSET)

        default_idle_timeout_s = d.pop("default_idle_timeout_s", UNSET)

        exec_calls_per_s = d.pop("exec_calls_per_s", UNSET)

        execs_per_minute = d.pop("execs_per_minute", UNSET)

        max_bundles = d.pop("max_bundles", UNSET)

        max_disk_mib = d.pop("max_disk_mib", UNSET)

        max_exec_timeout_s = d.pop("max_exec_timeout_s", UNSET)

        max_idle_timeout_s = d.pop("max_idle_timeout_s", UNSET)

        max_lifetime_s = d.pop("max_lifetime_s", UNSET)

        max_memory_mib = d.pop("max_memory_mib", UNSET)

        max_paused_mib = d.pop("max_paused_mib", UNSET)

        max_paused_s = d.pop("max_paused_s", UNSET)

        max_paused_sandboxes = d.pop("max_paused_sandboxes", UNSET)

        max_port_connections = d.pop("max_port_connections", UNSET)

        max_queued_builds = d.pop("max_queued_builds", UNSET)

        max_queued_reviews = d.pop("max_queued_reviews", UNSET)

        max_running_execs = d.pop("max_running_execs", UNSET)

        max_running_transfers = d.pop("max_running_transfers", UNSET)

        max_sandbox_ttl_s = d.pop("max_sandbox_ttl_s", UNSET)

        max_sandboxes = d.pop("max_sandboxes", UNSET)

        max_stored_output_mib = d.pop("max_stored_output_mib", UNSET)

        max_token_ttl_s = d.pop("max_token_ttl_s", UNSET)

        max_upload_mib = d.pop("max_upload_mib", UNSET)

        max_vcpus = d.pop("max_vcpus", UNSET)

        network_open_allowed = d.pop("network_open_allowed", UNSET)

        network_private_cidrs = cast(list[str], d.pop("network_private_cidrs", UNSET))

        output_retention_days = d.pop("output_retention_days", UNSET)

        port_requests_per_s = d.pop("port_requests_per_s", UNSET)

        reads_per_s = d.pop("reads_per_s", UNSET)

        writes_per_s = d.pop("writes_per_s", UNSET)

        quotas = cls(
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

        return quotas
