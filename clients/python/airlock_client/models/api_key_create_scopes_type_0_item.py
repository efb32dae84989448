from typing import Literal, cast

ApiKeyCreateScopesType0Item = Literal[
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

API_KEY_CREATE_SCOPES_TYPE_0_ITEM_VALUES: set[ApiKeyCreateScopesType0Item] = {
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


def check_api_key_create_scopes_type_0_item(value: str) -> ApiKeyCreateScopesType0Item:
    if value in API_KEY_CREATE_SCOPES_TYPE_0_ITEM_VALUES:
        return cast(ApiKeyCreateScopesType0Item, value)
    raise TypeError(f"Unexpected value {value!r}. Expected one of {API_KEY_CREATE_SCOPES_TYPE_0_ITEM_VALUES!r}")
