from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.review_state import ReviewState, check_review_state

if TYPE_CHECKING:
    from ..models.diff_stat import DiffStat
    from ..models.review_credentials import ReviewCredentials
    from ..models.review_gate import ReviewGate
    from ..models.sandbox_network import SandboxNetwork
    from ..models.stage import Stage


T = TypeVar("T", bound="Review")


@_attrs_define
class Review:
    """The report.

    Attributes:
        base (str):
        base_commit (None | str):
        created_at (str):
        credentials (None | ReviewCredentials):
        diff (DiffStat | None):
        error (None | str):
        finished_at (None | str):
        gate (None | ReviewGate):
        head (str):
        head_commit (None | str):
        id (str):
        install (list[str] | None):
        install_exit_code (int | None):
        install_outcome (None | str):
        model (None | str):
        model_verdict (None | str):
        network (SandboxNetwork): Egress of a sandbox: `none` (the default), `allowlist` (only `allow`) or `open` (where
            the operator allowed it for the tenant). The host, link-local addresses (cloud metadata)
            and other sandboxes are never reachable.
        reasoning (None | str):
        repo (str):
        sandbox_id (None | str):
        size (str):
        stages (list[Stage]):
        started_at (None | str):
        state (ReviewState):
        template (None | str):
        test (list[str]):
        test_exit_code (int | None):
        test_outcome (None | str):
        test_output (None | str):
        timeout_s (int):
        verdict (None | str):
    """

    base: str
    base_commit: None | str
    created_at: str
    credentials: None | ReviewCredentials
    diff: DiffStat | None
    error: None | str
    finished_at: None | str
    gate: None | ReviewGate
    head: str
    head_commit: None | str
    id: str
    install: list[str] | None
    install_exit_code: int | None
    install_outcome: None | str
    model: None | str
    model_verdict: None | str
    network: SandboxNetwork
    reasoning: None | str
    repo: str
    sandbox_id: None | str
    size: str
    stages: list[Stage]
    started_at: None | str
    state: ReviewState
    template: None | str
    test: list[str]
    test_exit_code: int | None
    test_outcome: None | str
    test_output: None | str
    timeout_s: int
    verdict: None | str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.diff_stat import DiffStat
        from ..models.review_credentials import ReviewCredentials
        from ..models.review_gate import ReviewGate

        base = self.base

        base_commit: None | str
        base_commit = self.base_commit

        created_at = self.created_at

        credentials: dict[str, Any] | None
        if isinstance(self.credentials, ReviewCredentials):
            credentials = self.credentials.to_dict()
        else:
            credentials = self.credentials

        diff: dict[str, Any] | None
        if isinstance(self.diff, DiffStat):
            diff = self.diff.to_dict()
        else:
            diff = self.diff

        error: None | str
        error = self.error

        finished_at: None | str
        finished_at = self.finished_at

        gate: dict[str, Any] | None
        if isinstance(self.gate, ReviewGate):
            gate = self.gate.to_dict()
        else:
            gate = self.gate

        head = self.head

        head_commit: None | str
        head_commit = self.head_commit

        id = self.id

        install: list[str] | None
        if isinstance(self.install, list):
            install = self.install

        else:
            install = self.install

        install_exit_code: int | None
        install_exit_code = self.install_exit_code

        install_outcome: None | str
        install_outcome = self.install_outcome

        model: None | str
        model = self.model

        model_verdict: None | str
        model_verdict = self.model_verdict

        network = self.network.to_dict()

        reasoning: None | str
        reasoning = self.reasoning

        repo = self.repo

        sandbox_id: None | str
        sandbox_id = self.sandbox_id

        size = self.size

        stages = []
        for stages_item_data in self.stages:
            stages_item = stages_item_data.to_dict()
            stages.append(stages_item)

        started_at: None | str
        started_at = self.started_at

        state: str = self.state

        template: None | str
        template = self.template

        test = self.test

        test_exit_code: int | None
        test_exit_code = self.test_exit_code

        test_outcome: None | str
        test_outcome = self.test_outcome

        test_output: None | str
        test_output = self.test_output

        timeout_s = self.timeout_s

        verdict: None | str
        verdict = self.verdict

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "base": base,
                "base_commit": base_commit,
                "created_at": created_at,
                "credentials": credentials,
                "diff": diff,
                "error": error,
                "finished_at": finished_at,
                "gate": gate,
                "head": head,
                "head_commit": head_commit,
                "id": id,
                "install": install,
                "install_exit_code": install_exit_code,
                "install_outcome": install_outcome,
                "model": model,
                "model_verdict": model_verdict,
                "network": network,
                "reasoning": reasoning,
                "repo": repo,
                "sandbox_id": sandbox_id,
                "size": size,
                "stages": stages,
                "started_at": started_at,
                "state": state,
                "template": template,
                "test": test,
                "test_exit_code": test_exit_code,
                "test_outcome": test_outcome,
                "test_output": test_output,
                "timeout_s": timeout_s,
                "verdict": verdict,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.diff_stat import DiffStat
        from ..models.review_credentials import ReviewCredentials
        from ..models.review_gate import ReviewGate
        from ..models.sandbox_network import SandboxNetwork
        from ..models.stage import Stage

        d = dict(src_dict)
        base = d.pop("base")

        def _parse_base_commit(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        base_commit = _parse_base_commit(d.pop("base_commit"))

        created_at = d.pop("created_at")

        def _parse_credentials(data: object) -> None | ReviewCredentials:
            if data is None:
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                credentials_type_0 = ReviewCredentials.from_dict(data)

                return credentials_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | ReviewCredentials, data)

        credentials = _parse_credentials(d.pop("credentials"))

        def _parse_diff(data: object) -> DiffStat | None:
            if data is None:
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                diff_type_0 = DiffStat.from_dict(data)

                return diff_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(DiffStat | None, data)

        diff = _parse_diff(d.pop("diff"))

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

        def _parse_gate(data: object) -> None | ReviewGate:
            if data is None:
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                gate_type_0 = ReviewGate.from_dict(data)

                return gate_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | ReviewGate, data)

        gate = _parse_gate(d.pop("gate"))

        head = d.pop("head")

        def _parse_head_commit(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        head_commit = _parse_head_commit(d.pop("head_commit"))

        id = d.pop("id")

        def _parse_install(data: object) -> list[str] | None:
            if data is None:
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                install_type_0 = cast(list[str], data)

                return install_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | None, data)

        install = _parse_install(d.pop("install"))

        def _parse_install_exit_code(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        install_exit_code = _parse_install_exit_code(d.pop("install_exit_code"))

        def _parse_install_outcome(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        install_outcome = _parse_install_outcome(d.pop("install_outcome"))

        def _parse_model(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        model = _parse_model(d.pop("model"))

        def _parse_model_verdict(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        model_verdict = _parse_model_verdict(d.pop("model_verdict"))

        network = SandboxNetwork.from_dict(d.pop("network"))

        def _parse_reasoning(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        reasoning = _parse_reasoning(d.pop("reasoning"))

        repo = d.pop("repo")

        def _parse_sandbox_id(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        sandbox_id = _parse_sandbox_id(d.pop("sandbox_id"))

        size = d.pop("size")

        stages = []
        _stages = d.pop("stages")
        for stages_item_data in _stages:
            stages_item = Stage.from_dict(stages_item_data)

            stages.append(stages_item)

        def _parse_started_at(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        started_at = _parse_started_at(d.pop("started_at"))

        state = check_review_state(d.pop("state"))

        def _parse_template(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        template = _parse_template(d.pop("template"))

        test = cast(list[str], d.pop("test"))

        def _parse_test_exit_code(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        test_exit_code = _parse_test_exit_code(d.pop("test_exit_code"))

        def _parse_test_outcome(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        test_outcome = _parse_test_outcome(d.pop("test_outcome"))

        def _parse_test_output(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        test_output = _parse_test_output(d.pop("test_output"))

        timeout_s = d.pop("timeout_s")

        def _parse_verdict(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        verdict = _parse_verdict(d.pop("verdict"))

        review = cls(
            base=base,
            base_commit=base_commit,
            created_at=created_at,
            credentials=credentials,
            diff=diff,
            error=error,
            finished_at=finished_at,
            gate=gate,
            head=head,
            head_commit=head_commit,
            id=id,
            install=install,
            install_exit_code=install_exit_code,
            install_outcome=install_outcome,
            model=model,
            model_verdict=model_verdict,
            network=network,
            reasoning=reasoning,
            repo=repo,
            sandbox_id=sandbox_id,
            size=size,
            stages=stages,
            started_at=started_at,
            state=state,
            template=template,
            test=test,
            test_exit_code=test_exit_code,
            test_outcome=test_outcome,
            test_output=test_output,
            timeout_s=timeout_s,
            verdict=verdict,
        )

        review.additional_properties = d
        return review

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
