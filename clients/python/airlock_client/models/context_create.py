from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define

from ..models.context_create_language import ContextCreateLanguage, check_context_create_language
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.context_create_env import ContextCreateEnv


T = TypeVar("T", bound="ContextCreate")


@_attrs_define
class ContextCreate:
    """A Python interpreter in the sandbox, kept between runs: it runs as an exec would (the
    sandbox's user unless `user`, its environment with `env` added, in `cwd`).

        Attributes:
            cwd (str | Unset):  Default: '/work'.
            env (ContextCreateEnv | Unset):
            language (ContextCreateLanguage | Unset):  Default: 'python'.
            user (None | str | Unset):
    """

    cwd: str | Unset = "/work"
    env: ContextCreateEnv | Unset = UNSET
    language: ContextCreateLanguage | Unset = "python"
    user: None | str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        cwd = self.cwd

        env: dict[str, Any] | Unset = UNSET
        if not isinstance(self.env, Unset):
            env = self.env.to_dict()

        language: str | Unset = UNSET
        if not isinstance(self.language, Unset):
            language = self.language

        user: None | str | Unset
        if isinstance(self.user, Unset):
            user = UNSET
        else:
            user = self.user

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if cwd is not UNSET:
            field_dict["cwd"] = cwd
        if env is not UNSET:
            field_dict["env"] = env
        if language is not UNSET:
            field_dict["language"] = language
        if user is not UNSET:
            field_dict["user"] = user

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.context_create_env import ContextCreateEnv

        d = dict(src_dict)
        cwd = d.pop("cwd", UNSET)

        _env = d.pop("env", UNSET)
        env: ContextCreateEnv | Unset
        if isinstance(_env, Unset):
            env = UNSET
        else:
            env = ContextCreateEnv.from_dict(_env)

        _language = d.pop("language", UNSET)
        language: ContextCreateLanguage | Unset
        if isinstance(_language, Unset):
            language = UNSET
        else:
            language = check_context_create_language(_language)

        def _parse_user(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        user = _parse_user(d.pop("user", UNSET))

        context_create = cls(
            cwd=cwd,
            env=env,
            language=language,
            user=user,
        )

        return context_create
