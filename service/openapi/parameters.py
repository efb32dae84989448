"""A route's parameters in the OpenAPI document with the rules the server holds them to, where
they bind: Litestar puts an optional parameter's rules beside its `oneOf` and leaves out those
of a list's items and a bound of 0."""

from __future__ import annotations

from typing import Any

import msgspec
from litestar.enums import ParamType
from litestar.handlers import HTTPRouteHandler
from litestar.openapi.spec import (
    Operation,
    Parameter,
    Schema,
)
from litestar.openapi.spec.enums import OpenAPIType

from service.files.schemas import URL_PATH_PATTERN
from service.openapi.structs import NO_NUL


def document_parameters(operation: Operation, handler: HTTPRouteHandler) -> None:
    """Each of the operation's parameters with its rules where they apply, its strings free of
    NUL, and a files route's path with the pattern the route checks."""
    items, numbers = _list_item_rules(handler), _number_rules(handler)
    for parameter in operation.parameters or []:
        if isinstance(parameter, Parameter) and isinstance(parameter.schema, Schema):
            _constraints_where_they_apply(parameter.schema, items.get(parameter.name, {}))
            _bounds_where_they_apply(parameter.schema, numbers.get(parameter.name, {}))
            _strings_without_nul(parameter.schema)
            if parameter.name == "path" and parameter.param_in == ParamType.PATH:
                # What the files routes check (a 422 `invalid_path` otherwise), stated.
                parameter.schema.pattern = URL_PATH_PATTERN


_STRING_RULES = ("pattern", "min_length", "max_length")
_ARRAY_RULES = ("min_items", "max_items")


def _list_item_rules(handler: HTTPRouteHandler) -> dict[str, dict[str, Any]]:
    """The string rules of each repeatable query parameter's items (`list[Annotated[str,
    Meta(...)]]`), as msgspec states them: Litestar validates them but does not document them."""
    rules: dict[str, dict[str, Any]] = {}
    for name, field in handler.parsed_fn_signature.parameters.items():
        for candidate in (field, *field.inner_types):
            if candidate.origin is list and candidate.args:
                item = msgspec.json.schema(candidate.args[0])
                alias = getattr(field.kwarg_definition, "name", None) or name
                rules[alias] = {k: v for k, v in item.items() if k in _ITEM_RULES}
    return rules


def _number_rules(handler: HTTPRouteHandler) -> dict[str, dict[str, Any]]:
    """Each numeric parameter's bounds (Litestar leaves out a bound of 0 and puts the others
    beside an optional parameter's `oneOf`, where they bind nothing)."""
    rules: dict[str, dict[str, Any]] = {}
    for name, field in handler.parsed_fn_signature.parameters.items():
        kwarg = field.kwarg_definition
        bounds = {rule: getattr(kwarg, rule, None) for rule in _NUMBER_RULES}
        if any(value is not None for value in bounds.values()):
            alias = getattr(kwarg, "name", None) or name
            rules[alias] = {k: v for k, v in bounds.items() if v is not None}
    return rules


_ITEM_RULES = {"pattern": "pattern", "minLength": "min_length", "maxLength": "max_length"}
# Litestar's names of the bounds, and the Schema attributes they become.
_NUMBER_RULES = {
    "ge": "minimum",
    "le": "maximum",
    "gt": "exclusive_minimum",
    "lt": "exclusive_maximum",
}


def _constraints_where_they_apply(schema: Schema, item_rules: dict[str, Any]) -> None:
    """Litestar puts an optional parameter's constraints beside its `oneOf`, where they bind
    nothing for an array: each goes to the string (an array's items) it is about, with the
    items' own rules (`item_rules`, JSON Schema names)."""
    for branch in schema.one_of or []:
        if not isinstance(branch, Schema):
            continue
        target = branch.items if branch.type == OpenAPIType.ARRAY else branch
        if isinstance(target, Schema) and target.type == OpenAPIType.STRING:
            for rule in _STRING_RULES:
                if getattr(schema, rule) is not None:
                    setattr(target, rule, getattr(schema, rule))
            if branch.type == OpenAPIType.ARRAY:
                for key, value in item_rules.items():
                    setattr(target, _ITEM_RULES[key], value)
        if branch.type == OpenAPIType.ARRAY:
            for rule in _ARRAY_RULES:
                if getattr(schema, rule) is not None:
                    setattr(branch, rule, getattr(schema, rule))
    if schema.one_of:
        for rule in (*_STRING_RULES, *_ARRAY_RULES):
            setattr(schema, rule, None)


def _bounds_where_they_apply(schema: Schema, bounds: dict[str, Any]) -> None:
    """A numeric parameter's bounds on the number it is about (its `oneOf` branch, if any)."""
    if not bounds:
        return
    numeric = (OpenAPIType.INTEGER, OpenAPIType.NUMBER)
    targets = [b for b in schema.one_of or [] if isinstance(b, Schema) and b.type in numeric]
    for rule, value in bounds.items():
        for target in targets or [schema]:
            setattr(target, _NUMBER_RULES[rule], value)
        if targets:
            setattr(schema, _NUMBER_RULES[rule], None)


def _strings_without_nul(schema: Schema) -> None:
    """A parameter's strings (at any depth of its `oneOf` and items) state they hold no NUL."""
    if schema.type == OpenAPIType.STRING and schema.schema_not is None and schema.format is None:
        schema.schema_not = Schema(pattern=NO_NUL["pattern"])
    for inner in [*(schema.one_of or []), schema.items]:
        if isinstance(inner, Schema):
            _strings_without_nul(inner)
