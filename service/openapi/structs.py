"""Each msgspec Struct of a request or an answer, in the OpenAPI document as msgspec states it
(the validator the server runs), with a request's strings free of NUL."""

from __future__ import annotations

from typing import Any, get_args

import msgspec
from litestar import Litestar
from litestar.openapi.spec import (
    OpenAPI,
)
from litestar.routes import HTTPRoute

# Every string a request carries is refused with 422 if it holds a NUL (service.inputs).
NO_NUL = {"pattern": "\\x00"}


def exact_struct_schemas(app: Litestar, openapi: OpenAPI) -> None:
    """Each msgspec Struct's schema as msgspec itself states it (the validator the server runs):
    Litestar's drops the constraints of list items and unknown fields being refused. A Struct's
    `schema_rules` (rules across its fields, which its service checks) are added to it."""
    structs: set[type] = set()
    bodies: set[type] = set()
    for route in app.routes:
        if isinstance(route, HTTPRoute):
            for handler in route.route_handlers:
                body = handler.parsed_fn_signature.parameters.get("data")
                if body is not None:
                    _collect_structs(body.annotation, structs)
                    _collect_structs(body.annotation, bodies)
                _collect_structs(handler.parsed_fn_signature.return_type.annotation, structs)
                for spec in (handler.responses or {}).values():
                    _collect_structs(spec.data_container, structs)
    ordered = sorted(structs, key=lambda t: (t.__module__, t.__qualname__))
    _, components = msgspec.json.schema_components(
        ordered, ref_template="#/components/schemas/{name}"
    )
    rules = {t.__name__: t.schema_rules for t in _nested_structs(ordered) if _has_rules(t)}
    requests = {t.__name__ for t in _nested_structs(sorted(bodies, key=lambda t: t.__qualname__))}
    schemas = dict(openapi.components.schemas or {})
    for name, schema in components.items():
        schema = schema | rules.get(name, {})
        schemas[name] = _RawSchema(_without_nul(schema) if name in requests else schema)  # type: ignore[assignment]
    openapi.components.schemas = schemas


def _without_nul(schema: Any) -> Any:
    """`schema` with each string in it (not raw bytes) stating that it holds no NUL."""
    if isinstance(schema, list):
        return [_without_nul(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: _without_nul(value) for key, value in schema.items() if key != "properties"}
    if "properties" in schema:
        out["properties"] = {k: _without_nul(v) for k, v in schema["properties"].items()}
    if schema.get("type") == "string" and "format" not in schema and "not" not in schema:
        out["not"] = NO_NUL
    return out


def _nested_structs(structs: list[type]) -> set[type]:
    """The Structs given and every Struct their fields hold, at any depth."""
    found: set[type] = set()
    for info in msgspec.inspect.multi_type_info(structs):
        _walk(info, found)
    return found


def _walk(info: msgspec.inspect.Type, found: set[type]) -> None:
    if isinstance(info, msgspec.inspect.StructType):
        if info.cls in found:
            return
        found.add(info.cls)
        for field in info.fields:
            _walk(field.type, found)
    for attr in ("item_type", "key_type", "value_type", "types", "item_types"):
        value = getattr(info, attr, None)
        for inner in value if isinstance(value, tuple) else (value,):
            if isinstance(inner, msgspec.inspect.Type):
                _walk(inner, found)


def _has_rules(struct: type) -> bool:
    """A Struct states rules across its fields with `schema_rules: ClassVar[dict]`."""
    return isinstance(getattr(struct, "schema_rules", None), dict)


def _collect_structs(annotation: Any, into: set[type]) -> None:
    if isinstance(annotation, type) and issubclass(annotation, msgspec.Struct):
        into.add(annotation)
    for arg in get_args(annotation):
        _collect_structs(arg, into)


class _RawSchema(dict):  # type: ignore[type-arg]
    """A schema given as JSON already (Litestar renders `to_schema()` of each component)."""

    def to_schema(self) -> dict[str, Any]:
        return dict(self)
