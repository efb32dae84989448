from typing import Literal, cast

ContextLanguage = Literal["python"]

CONTEXT_LANGUAGE_VALUES: set[ContextLanguage] = {
    "python",
}


def check_context_language(value: str) -> ContextLanguage:
    if value in CONTEXT_LANGUAGE_VALUES:
        return cast(ContextLanguage, value)
    raise TypeError(f"Unexpected value {value!r}. Expected one of {CONTEXT_LANGUAGE_VALUES!r}")
