"""Contains all the data models used in inputs/outputs"""

from .api_key import ApiKey
from .api_key_create import ApiKeyCreate
from .api_key_create_scopes_type_0_item import ApiKeyCreateScopesType0Item
from .api_key_created import ApiKeyCreated
from .api_key_page import ApiKeyPage
from .archive_written import ArchiveWritten
from .audit_event_out import AuditEventOut
from .audit_event_out_details import AuditEventOutDetails
from .audit_page import AuditPage
from .audit_verification import AuditVerification
from .broken_link import BrokenLink
from .bundle import Bundle
from .capacity import Capacity
from .cleaned import Cleaned
from .context import Context
from .context_create import ContextCreate
from .context_create_env import ContextCreateEnv
from .context_create_language import ContextCreateLanguage
from .context_language import ContextLanguage
from .context_list import ContextList
from .context_state import ContextState
from .diff_stat import DiffStat
from .exec_ import Exec
from .exec_create import ExecCreate
from .exec_create_env import ExecCreateEnv
from .exec_create_secrets import ExecCreateSecrets
from .exec_env import ExecEnv
from .exec_page import ExecPage
from .exec_state import ExecState
from .exec_summary import ExecSummary
from .exec_summary_state import ExecSummaryState
from .file_info import FileInfo
from .file_info_kind import FileInfoKind
from .file_list import FileList
from .file_written import FileWritten
from .health import Health
from .health_checks import HealthChecks
from .jwks import JWKS
from .jwks_keys_item import JWKSKeysItem
from .leftovers import Leftovers
from .list_reviews_state_type_0_item import ListReviewsStateType0Item
from .network_change import NetworkChange
from .network_change_mode import NetworkChangeMode
from .network_policy import NetworkPolicy
from .network_policy_mode import NetworkPolicyMode
from .node import Node
from .node_capacity import NodeCapacity
from .node_labels import NodeLabels
from .node_list import NodeList
from .node_state import NodeState
from .pool_overview import PoolOverview
from .pool_overview_snapshots import PoolOverviewSnapshots
from .pool_status import PoolStatus
from .pool_status_mode_type_0 import PoolStatusModeType0
from .pool_status_ready_by_node import PoolStatusReadyByNode
from .pool_target_set import PoolTargetSet
from .pool_target_set_size import PoolTargetSetSize
from .preview_link import PreviewLink
from .preview_link_create import PreviewLinkCreate
from .problem import Problem
from .problem_errors_item import ProblemErrorsItem
from .quotas import Quotas
from .quotas_patch import QuotasPatch
from .regression import Regression
from .review import Review
from .review_accepted import ReviewAccepted
from .review_accepted_state import ReviewAcceptedState
from .review_create import ReviewCreate
from .review_create_size import ReviewCreateSize
from .review_credentials import ReviewCredentials
from .review_gate import ReviewGate
from .review_page import ReviewPage
from .review_state import ReviewState
from .review_summary import ReviewSummary
from .review_summary_state import ReviewSummaryState
from .run import Run
from .run_create import RunCreate
from .run_error import RunError
from .run_result import RunResult
from .run_result_data import RunResultData
from .sandbox import Sandbox
from .sandbox_create import SandboxCreate
from .sandbox_create_env import SandboxCreateEnv
from .sandbox_create_labels import SandboxCreateLabels
from .sandbox_create_preset_type_0 import SandboxCreatePresetType0
from .sandbox_create_size_type_0 import SandboxCreateSizeType0
from .sandbox_env import SandboxEnv
from .sandbox_fork import SandboxFork
from .sandbox_fork_labels_type_0 import SandboxForkLabelsType0
from .sandbox_labels import SandboxLabels
from .sandbox_metrics import SandboxMetrics
from .sandbox_network import SandboxNetwork
from .sandbox_network_mode import SandboxNetworkMode
from .sandbox_page import SandboxPage
from .sandbox_update import SandboxUpdate
from .secret import Secret
from .secret_page import SecretPage
from .secret_put import SecretPut
from .stage import Stage
from .state import State
from .stdin_written import StdinWritten
from .template import Template
from .template_create import TemplateCreate
from .template_create_env import TemplateCreateEnv
from .template_create_size import TemplateCreateSize
from .template_page import TemplatePage
from .template_state import TemplateState
from .template_version import TemplateVersion
from .template_version_env import TemplateVersionEnv
from .template_version_start_mode_type_0 import TemplateVersionStartModeType0
from .template_version_state import TemplateVersionState
from .tenant import Tenant
from .tenant_create import TenantCreate
from .tenant_created import TenantCreated
from .tenant_page import TenantPage
from .tenant_status import TenantStatus
from .tenant_update import TenantUpdate
from .tenant_update_status_type_0 import TenantUpdateStatusType0
from .tenant_usage import TenantUsage
from .terminal_size import TerminalSize
from .test_counts import TestCounts
from .token_create import TokenCreate
from .token_create_scopes_type_0_item import TokenCreateScopesType0Item
from .token_created import TokenCreated
from .transition import Transition

__all__ = (
    "ApiKey",
    "ApiKeyCreate",
    "ApiKeyCreated",
    "ApiKeyCreateScopesType0Item",
    "ApiKeyPage",
    "ArchiveWritten",
    "AuditEventOut",
    "AuditEventOutDetails",
    "AuditPage",
    "AuditVerification",
    "BrokenLink",
    "Bundle",
    "Capacity",
    "Cleaned",
    "Context",
    "ContextCreate",
    "ContextCreateEnv",
    "ContextCreateLanguage",
    "ContextLanguage",
    "ContextList",
    "ContextState",
    "DiffStat",
    "Exec",
    "ExecCreate",
    "ExecCreateEnv",
    "ExecCreateSecrets",
    "ExecEnv",
    "ExecPage",
    "ExecState",
    "ExecSummary",
    "ExecSummaryState",
    "FileInfo",
    "FileInfoKind",
    "FileList",
    "FileWritten",
    "Health",
    "HealthChecks",
    "JWKS",
    "JWKSKeysItem",
    "Leftovers",
    "ListReviewsStateType0Item",
    "NetworkChange",
    "NetworkChangeMode",
    "NetworkPolicy",
    "NetworkPolicyMode",
    "Node",
    "NodeCapacity",
    "NodeLabels",
    "NodeList",
    "NodeState",
    "PoolOverview",
    "PoolOverviewSnapshots",
    "PoolStatus",
    "PoolStatusModeType0",
    "PoolStatusReadyByNode",
    "PoolTargetSet",
    "PoolTargetSetSize",
    "PreviewLink",
    "PreviewLinkCreate",
    "Problem",
    "ProblemErrorsItem",
    "Quotas",
    "QuotasPatch",
    "Regression",
    "Review",
    "ReviewAccepted",
    "ReviewAcceptedState",
    "ReviewCreate",
    "ReviewCreateSize",
    "ReviewCredentials",
    "ReviewGate",
    "ReviewPage",
    "ReviewState",
    "ReviewSummary",
    "ReviewSummaryState",
    "Run",
    "RunCreate",
    "RunError",
    "RunResult",
    "RunResultData",
    "Sandbox",
    "SandboxCreate",
    "SandboxCreateEnv",
    "SandboxCreateLabels",
    "SandboxCreatePresetType0",
    "SandboxCreateSizeType0",
    "SandboxEnv",
    "SandboxFork",
    "SandboxForkLabelsType0",
    "SandboxLabels",
    "SandboxMetrics",
    "SandboxNetwork",
    "SandboxNetworkMode",
    "SandboxPage",
    "SandboxUpdate",
    "Secret",
    "SecretPage",
    "SecretPut",
    "Stage",
    "State",
    "StdinWritten",
    "Template",
    "TemplateCreate",
    "TemplateCreateEnv",
    "TemplateCreateSize",
    "TemplatePage",
    "TemplateState",
    "TemplateVersion",
    "TemplateVersionEnv",
    "TemplateVersionStartModeType0",
    "TemplateVersionState",
    "Tenant",
    "TenantCreate",
    "TenantCreated",
    "TenantPage",
    "TenantStatus",
    "TenantUpdate",
    "TenantUpdateStatusType0",
    "TenantUsage",
    "TerminalSize",
    "TestCounts",
    "TokenCreate",
    "TokenCreated",
    "TokenCreateScopesType0Item",
    "Transition",
)
