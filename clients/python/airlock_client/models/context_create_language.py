from typing import Literal, cast

ContextCreateLanguage = Literal["python"]

CONTEXT_CREATE_LANGUAGE_VALUES: set[ContextCreateLanguage] = {
    "python",
}


def check_context_create_language(value: str) -> ContextCreateLanguage:
    if value in CONTEXT_CREATE_LANGUAGE_VALUES:
        return cast(ContextCreateLanguage, value)
    raise TypeError(f"Unexpected value {value!r}. Expected one of {CONTEXT_CREATE_LANGUAGE_VALUES!r}")
