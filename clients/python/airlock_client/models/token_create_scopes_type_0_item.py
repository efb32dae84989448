from typing import Literal, cast

TokenCreateScopesType0Item = Literal[
    "audit:read",
    "exec",
    "files:read",
    "files:write",
    "keys:write",
    "ports",
    "reviews:read",
    "reviews:write",
    "sandboxes:read",
    "sandboxes:write",
    "secrets:read",
    "secrets:write",
    "templates:read",
    "templates:write",
]

TOKEN_CREATE_SCOPES_TYPE_0_ITEM_VALUES: set[TokenCreateScopesType0Item] = {
    "audit:read",
    "exec",
    "files:read",
    "files:write",
    "keys:write",
    "ports",
    "reviews:read",
    "reviews:write",
    "sandboxes:read",
    "sandboxes:write",
    "secrets:read",
    "secrets:write",
    "templates:read",
    "templates:write",
}


def check_token_create_scopes_type_0_item(value: str) -> TokenCreateScopesType0Item:
    if value in TOKEN_CREATE_SCOPES_TYPE_0_ITEM_VALUES:
        return cast(TokenCreateScopesType0Item, value)
    raise TypeError(f"Unexpected value {value!r}. Expected one of {TOKEN_CREATE_SCOPES_TYPE_0_ITEM_VALUES!r}")
