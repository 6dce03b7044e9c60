"""What the OpenAPI schema promises besides the bodies: input constraints and the error responses.

The schema must describe the server exactly (schemathesis checks both directions): every input it allows is
accepted, every input the handlers refuse is outside it, and every status and media type they answer with
is declared. Text inputs are refused when they hold a NUL character (PostgreSQL cannot store one) or are
longer than the limit; required ones also when blank. The constraints here state the default `Limits`;
tighter configured limits are enforced by the handlers on top of them.

Constraints on body fields are `KwargDefinition`s, which Litestar renders into the schema (also inside
lists, where msgspec's `Meta` is lost) and does not enforce: the handlers do, with messages that say which
field and which limit.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from litestar._openapi.schema_generation import SchemaCreator
from litestar.openapi.datastructures import ResponseSpec
from litestar.openapi.spec import Schema
from litestar.params import KwargDefinition, QueryParameter
from litestar.plugins import OpenAPISchemaPlugin
from litestar.typing import FieldDefinition

from api.settings import (
    DEFAULT_MAX_DOCUMENT_SENTENCES,
    DEFAULT_MAX_K,
    DEFAULT_MAX_QUERY_CHARS,
    DEFAULT_MAX_QUESTION_CHARS,
)

__all__ = [
    "MAX_ID",
    "MAX_RADIUS",
    "PROBLEM_JSON",
    "BodyName",
    "BodyQuestion",
    "ClosedStructs",
    "DocumentLimit",
    "DocumentOffset",
    "Problem",
    "QueryK",
    "QueryName",
    "QueryText",
    "SentenceRadius",
    "problem_responses",
]

PROBLEM_JSON = "application/problem+json"
MAX_ID = 2**63 - 1
"""The largest bigint: ids past it cannot exist."""
MAX_OFFSET = 10**15
"""A document offset past any document's length; exact as a JSON number, unlike `MAX_ID`."""

NO_NUL = r"^[^\x00]*$"
NOT_BLANK = r"^[^\x00]*[^\x00\s][^\x00]*$"
"""At least one character that is not whitespace, and no NUL anywhere."""

BodyQuestion = Annotated[
    str, KwargDefinition(min_length=1, max_length=DEFAULT_MAX_QUESTION_CHARS, pattern=NOT_BLANK)
]
BodyName = Annotated[str, KwargDefinition(max_length=DEFAULT_MAX_QUERY_CHARS, pattern=NO_NUL)]
"""An optional filter value (a repository, a path prefix): blank means no filter."""

QueryText = Annotated[
    str, QueryParameter(min_length=1, max_length=DEFAULT_MAX_QUERY_CHARS, pattern=NOT_BLANK)
]
QueryName = Annotated[str, QueryParameter(max_length=DEFAULT_MAX_QUERY_CHARS, pattern=NO_NUL)]
QueryK = Annotated[int, QueryParameter(ge=1, le=DEFAULT_MAX_K)]
DocumentOffset = Annotated[int, QueryParameter(ge=0, le=MAX_OFFSET)]
DocumentLimit = Annotated[int, QueryParameter(ge=1, le=DEFAULT_MAX_DOCUMENT_SENTENCES)]
MAX_RADIUS = 20
"""The most neighbours a sentence is served with on each side (`GET /v1/sentences/{id}?radius=`)."""
SentenceRadius = Annotated[int, QueryParameter(ge=0, le=MAX_RADIUS)]


class Problem(msgspec.Struct):
    """An RFC 9457 problem: the body of every error; `errors` lists a validation failure's fields.

    Some problems carry more members (readiness adds the backlog's age and the limit)."""

    type: str
    title: str
    status: int
    detail: str
    instance: str | None = None
    errors: list[dict[str, Any]] | None = None


_DESCRIPTIONS = {
    400: "The request is malformed or breaks a limit; `detail` (and `errors`) say which",
    401: "Keys are configured and the request carries no known bearer key",
    403: "The key may not read a repository the request names, or the request comes from another origin",
    404: "Nothing with that id or path, or nothing this key may read",
    413: "The body is larger than the limit",
    415: "The body is not declared as JSON (`Content-Type: application/json`)",
    503: "The database is unreachable (see Retry-After), or no answer engine runs in this process",
}


def problem_responses(*statuses: int) -> dict[int, ResponseSpec]:
    """The declared error responses of a route: problem+json bodies for each of `statuses`."""
    return {
        status: ResponseSpec(
            Problem, description=_DESCRIPTIONS[status], media_type=PROBLEM_JSON, generate_examples=False
        )
        for status in statuses
    }


class ClosedStructs(OpenAPISchemaPlugin):
    """Request models that forbid unknown fields say so in the schema (`additionalProperties: false`).

    Litestar renders a Struct the same whether or not it forbids unknown fields; this plugin comes first,
    lets the plugin after it render the Struct, and closes the resulting component."""

    def is_plugin_supported_field(self, field_definition: FieldDefinition) -> bool:
        return (
            not field_definition.is_union
            and field_definition.is_subclass_of(msgspec.Struct)
            and bool(field_definition.type_.__struct_config__.forbid_unknown_fields)
        )

    def to_openapi_schema(self, field_definition: FieldDefinition, schema_creator: SchemaCreator) -> Schema:
        renderer = next(
            plugin
            for plugin in schema_creator.plugins
            if plugin is not self
            and isinstance(plugin, OpenAPISchemaPlugin)
            and plugin.is_plugin_supported_field(field_definition)
        )
        schema = renderer.to_openapi_schema(field_definition, schema_creator)
        schema.additional_properties = False
        return schema
