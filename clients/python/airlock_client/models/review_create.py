from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define

from ..models.review_create_size import ReviewCreateSize, check_review_create_size
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.review_credentials import ReviewCredentials
    from ..models.sandbox_network import SandboxNetwork


T = TypeVar("T", bound="ReviewCreate")


@_attrs_define
class ReviewCreate:
    """A pull request to review: fetched on the host, tested in a fresh sandbox, judged.

    Attributes:
        head (str):
        repo (str):
        base (str | Unset):  Default: 'main'.
        credentials (None | ReviewCredentials | Unset):
        install (list[str] | None | Unset):
        model (None | str | Unset):
        network (SandboxNetwork | Unset): Egress of a sandbox: `none` (the default), `allowlist` (only `allow`) or
            `open` (where
            the operator allowed it for the tenant). The host, link-local addresses (cloud metadata)
            and other sandboxes are never reachable.
        size (ReviewCreateSize | Unset):  Default: 'small'.
        template (None | str | Unset):
        test (list[str] | Unset):
        timeout_s (int | Unset):  Default: 300.
    """

    head: str
    repo: str
    base: str | Unset = "main"
    credentials: None | ReviewCredentials | Unset = UNSET
    install: list[str] | None | Unset = UNSET
    model: None | str | Unset = UNSET
    network: SandboxNetwork | Unset = UNSET
    size: ReviewCreateSize | Unset = "small"
    template: None | str | Unset = UNSET
    test: list[str] | Unset = UNSET
    timeout_s: int | Unset = 300

    def to_dict(self) -> dict[str, Any]:
        from ..models.review_credentials import ReviewCredentials

        head = self.head

        repo = self.repo

        base = self.base

        credentials: dict[str, Any] | None | Unset
        if isinstance(self.credentials, Unset):
            credentials = UNSET
        elif isinstance(self.credentials, ReviewCredentials):
            credentials = self.credentials.to_dict()
        else:
            credentials = self.credentials

        install: list[str] | None | Unset
        if isinstance(self.install, Unset):
            install = UNSET
        elif isinstance(self.install, list):
            install = self.install

        else:
            install = self.install

        model: None | str | Unset
        if isinstance(self.model, Unset):
            model = UNSET
        else:
            model = self.model

        network: dict[str, Any] | Unset = UNSET
        if not isinstance(self.network, Unset):
            network = self.network.to_dict()

        size: str | Unset = UNSET
        if not isinstance(self.size, Unset):
            size = self.size

        template: None | str | Unset
        if isinstance(self.template, Unset):
            template = UNSET
        else:
            template = self.template

        test: list[str] | Unset = UNSET
        if not isinstance(self.test, Unset):
            test = self.test

        timeout_s = self.timeout_s

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "head": head,
                "repo": repo,
            }
        )
        if base is not UNSET:
            field_dict["base"] = base
        if credentials is not UNSET:
            field_dict["credentials"] = credentials
        if install is not UNSET:
            field_dict["install"] = install
        if model is not UNSET:
            field_dict["model"] = model
        if network is not UNSET:
            field_dict["network"] = network
        if size is not UNSET:
            field_dict["size"] = size
        if template is not UNSET:
            field_dict["template"] = template
        if test is not UNSET:
            field_dict["test"] = test
        if timeout_s is not UNSET:
            field_dict["timeout_s"] = timeout_s

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.review_credentials import ReviewCredentials
        from ..models.sandbox_network import SandboxNetwork

        d = dict(src_dict)
        head = d.pop("head")

        repo = d.pop("repo")

        base = d.pop("base", UNSET)

        def _parse_credentials(data: object) -> None | ReviewCredentials | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                credentials_type_0 = ReviewCredentials.from_dict(data)

                return credentials_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | ReviewCredentials | Unset, data)

        credentials = _parse_credentials(d.pop("credentials", UNSET))

        def _parse_install(data: object) -> list[str] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                install_type_0 = cast(list[str], data)

                return install_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | None | Unset, data)

        install = _parse_install(d.pop("install", UNSET))

        def _parse_model(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        model = _parse_model(d.pop("model", UNSET))

        _network = d.pop("network", UNSET)
        network: SandboxNetwork | Unset
        if isinstance(_network, Unset):
            network = UNSET
        else:
            network = SandboxNetwork.from_dict(_network)

        _size = d.pop("size", UNSET)
        size: ReviewCreateSize | Unset
        if isinstance(_size, Unset):
            size = UNSET
        else:
            size = check_review_create_size(_size)

        def _parse_template(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        template = _parse_template(d.pop("template", UNSET))

        test = cast(list[str], d.pop("test", UNSET))

        timeout_s = d.pop("timeout_s", UNSET)

        review_create = cls(
            head=head,
            repo=repo,
            base=base,
            credentials=credentials,
            install=install,
            model=model,
            network=network,
            size=size,
            template=template,
            test=test,
            timeout_s=timeout_s,
        )

        return review_create
