"""GitHub's REST API description, and the check of the fake's exchanges against it.

The description is `tests/fixtures/github-openapi.json.gz` (OpenAPI 3.0, vendored
by `scripts/vendor-openapi`). `FakeGitHub` records every exchange here;
`tests/conftest.py` checks them after each test and fails it with one line per
violation: an undocumented operation, query parameter, request body or status,
or a body or content type the description does not allow.
"""

from __future__ import annotations

import copy
import functools
import gzip
import hashlib
import json
import re
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import orjson
import referencing
from jsonschema import Draft4Validator, FormatChecker
from jsonschema.exceptions import ValidationError, best_match
from jsonschema.validators import extend
from referencing.jsonschema import DRAFT4

__all__ = ["Description", "Exchange", "description", "drain", "record", "violations"]

DESCRIPTION_PATH = Path(__file__).parent.parent / "fixtures" / "github-openapi.json.gz"
_ROOT = "urn:github-openapi"
# Statuses GitHub may answer any request with, documented for the REST API as
# a whole rather than per operation: invalid JSON, bad credentials, rate
# limits, a resource hidden from the credentials (404), outages.
_ANY_OPERATION = frozenset({400, 401, 403, 404, 429, 500, 502, 503, 504})
_NOT_SCHEMA = frozenset({"examples", "x-github", "x-octokit"})
_DRAFT4_REF = Draft4Validator.VALIDATORS["$ref"]
# Path parameters that GitHub lets span slashes (a file path, a git ref).
_SLASHED = frozenset({"path", "ref"})


# Where GitHub's description contradicts what GitHub sends, and its own example:
# (JSON pointer, what GitHub sends there, the evidence).
_CORRECTIONS: tuple[tuple[str, Any, str], ...] = (
    (
        "/paths/~1app~1installations/get/responses/200/content/application~1json"
        "/schema/items/properties/account",
        {"$ref": "#/components/schemas/installation/properties/account"},
        "an account is a user or an enterprise (allOf: both), as the example and "
        "the installation schema say",
    ),
)


@dataclass(frozen=True, slots=True)
class Exchange:
    """One request to the fake and its answer, as they crossed the wire."""

    method: str
    route: str  # the path without the GHES prefix
    query: tuple[tuple[str, str], ...]
    accept: str
    request_type: str  # the request's content type, "" when none
    request_body: bytes
    status: int
    response_type: str  # the response's content type, "" when none
    response_body: bytes


_lock = threading.Lock()
_recorded: list[Exchange] = []


def record(exchange: Exchange) -> None:
    """Keep `exchange` for the next `drain` (the fake calls this from its thread)."""
    with _lock:
        _recorded.append(exchange)


def drain() -> list[Exchange]:
    """Every exchange recorded since the last drain, oldest first."""
    with _lock:
        taken = list(_recorded)
        _recorded.clear()
    return taken


def violations(exchanges: Sequence[Exchange]) -> list[str]:
    """One line per disagreement with GitHub's description, in order; none: conforming."""
    # GraphQL is not in the REST description: the fake's `/graphql` is checked
    # by its own two documents, not here.
    exchanges = [e for e in exchanges if not (e.method == "POST" and e.route == "/graphql")]
    if not exchanges:
        return []
    api = description()
    return [line for exchange in exchanges for line in api.check(exchange)]


@dataclass(frozen=True, slots=True)
class _Operation:
    method: str
    template: str
    pattern: re.Pattern[str]
    pointer: str  # JSON pointer to the operation in the description
    literal: int  # characters outside parameters: more is more specific
    op: Mapping[str, Any]


class Description:
    """An OpenAPI 3.0 description turned into JSON Schema (draft 4) validators."""

    def __init__(
        self,
        document: Mapping[str, Any],
        corrections: Sequence[tuple[str, Any, str]] = (),
    ) -> None:
        self._doc = _nullable_to_types(document)  # a copy: corrections stay here
        for pointer, value, _ in corrections:
            *parents, last = [_unescape(part) for part in pointer.split("/")[1:]]
            parent = functools.reduce(lambda node, key: node[key], parents, self._doc)
            parent[last] = copy.deepcopy(value)
        resource = DRAFT4.create_resource(self._doc)
        self._registry: referencing.Registry[Any] = referencing.Registry().with_resource(
            _ROOT, resource
        )
        # By method and first path segment ("" when it is a parameter, for
        # every route): a route is matched against a few templates, not all.
        self._operations: dict[tuple[str, str], list[_Operation]] = {}
        for template, item in self._doc["paths"].items():
            escaped = _escape(template)
            for method, op in item.items():
                if not isinstance(op, dict) or "responses" not in op:
                    continue
                self._operations.setdefault((method.upper(), _first(template)), []).append(
                    _Operation(
                        method.upper(),
                        template,
                        _template_pattern(template),
                        f"/paths/{escaped}/{method}",
                        len(re.sub(r"\{\w+\}", "", template)),
                        op,
                    )
                )
        self._validators: dict[str, Draft4Validator] = {}
        # (`$ref`, digest of a value) pairs found to conform: the same user,
        # repository or label comes back in exchange after exchange, and
        # following its `$ref` again is most of what a check costs. The
        # description is one resource without `id`s, so a `$ref` names the
        # same schema wherever it is met.
        self._conforming: set[tuple[str, bytes]] = set()
        self._validator_class: type[Draft4Validator] = extend(  # type: ignore[no-untyped-call]
            Draft4Validator, {"$ref": self._ref}
        )

    def match(self, method: str, route: str) -> tuple[_Operation, dict[str, str]] | None:
        """The most specific operation for `method route`, with its path parameters."""
        candidates = [
            *self._operations.get((method.upper(), _first(route)), []),
            *self._operations.get((method.upper(), ""), []),
        ]
        found = [
            (operation, m.groupdict())
            for operation in candidates
            if (m := operation.pattern.match(route))
        ]
        if not found:
            return None
        return max(found, key=lambda pair: pair[0].literal)

    def check(self, exchange: Exchange) -> Iterator[str]:
        """The violations of one exchange, each a line naming the operation."""
        matched = self.match(exchange.method, exchange.route)
        if matched is None:
            yield f"{exchange.method} {exchange.route}: no such operation in GitHub's API"
            return
        operation, path_values = matched
        name = (
            f"{operation.method} {operation.template} ({operation.op.get('operationId')}) "
            f"→ {exchange.status}"
        )
        for problem in self._request_problems(operation, path_values, exchange):
            yield f"{name}: request {problem}"
        for problem in self._response_problems(operation, exchange):
            yield f"{name}: response {problem}"

    def _request_problems(
        self, operation: _Operation, path_values: Mapping[str, str], exchange: Exchange
    ) -> Iterator[str]:
        params = {(p["in"], p["name"]): (pointer, p) for pointer, p in self._parameters(operation)}
        for name, value in path_values.items():
            entry = params.get(("path", name))
            if entry is not None:
                yield from self._parameter_problems(entry[0], entry[1], value)
        sent = {name for name, _ in exchange.query}
        for name, value in exchange.query:
            entry = params.get(("query", name))
            if entry is None:
                yield f"query parameter {name!r} is not documented"
            else:
                yield from self._parameter_problems(entry[0], entry[1], value)
        for (where, name), (_, param) in params.items():
            if where == "query" and param.get("required") and name not in sent:
                yield f"query parameter {name!r} is required"
        body_spec = self._deref(operation.op.get("requestBody"), f"{operation.pointer}/requestBody")
        if not exchange.request_body:
            if body_spec is not None and body_spec[1].get("required"):
                yield "has no body; one is required"
            return
        if body_spec is None:
            yield "has a body; the operation takes none"
            return
        pointer, spec = body_spec
        media = _media_type(exchange.request_type)
        if media not in spec.get("content", {}):
            yield f"content type {media!r} is not one of {sorted(spec.get('content', {}))}"
            return
        schema_pointer = f"{pointer}/content/{_escape(media)}/schema"
        yield from self._body_problems(schema_pointer, exchange.request_body, "body")
        yield from self._unknown_fields(schema_pointer, exchange.request_body)

    def _unknown_fields(self, pointer: str, raw: bytes) -> Iterator[str]:
        # GitHub ignores a field it does not know, so a misspelt one is lost
        # silently; the description's schemas leave additional properties open.
        try:
            value = json.loads(raw)
        except ValueError:
            return
        found = self._deref(self._at(pointer), pointer)
        schema = found[1] if found is not None else {}
        known = schema.get("properties")
        if isinstance(value, dict) and isinstance(known, dict):
            for name in value:
                if name not in known and "additionalProperties" not in schema:
                    yield f"body field {name!r} is not documented"

    def _at(self, pointer: str) -> Mapping[str, Any]:
        target: Any = self._doc
        for part in pointer.removeprefix("/").split("/"):
            target = target[_unescape(part)]
        return target  # type: ignore[no-any-return]

    def _response_problems(self, operation: _Operation, exchange: Exchange) -> Iterator[str]:
        responses = operation.op["responses"]
        status = str(exchange.status)
        media = _media_type(exchange.response_type)
        if status not in responses:
            if exchange.status not in _ANY_OPERATION:
                yield f"status {status} is not documented (only {', '.join(responses)})"
            elif exchange.response_body:
                yield from self._body_problems(
                    "/components/schemas/basic-error", exchange.response_body, "body"
                )
            return
        found = self._deref(responses[status], f"{operation.pointer}/responses/{status}")
        assert found is not None
        pointer, spec = found
        content: Mapping[str, Any] = spec.get("content", {})
        if not content:
            if exchange.response_body:
                yield "has a body; GitHub documents none for this status"
            return
        if media not in content:
            # A custom media type asked for in Accept (a diff, a patch) is
            # documented in prose, not as content; its body is not JSON.
            asked = {_media_type(part).replace(".v3.", ".") for part in exchange.accept.split(",")}
            if media.startswith("application/vnd.github.") and media in asked:
                return
            yield f"content type {media!r} is not one of {sorted(content)}"
            return
        yield from self._body_problems(
            f"{pointer}/content/{_escape(media)}/schema", exchange.response_body, "body"
        )

    def _parameters(self, operation: _Operation) -> Iterator[tuple[str, Mapping[str, Any]]]:
        for i, param in enumerate(operation.op.get("parameters", [])):
            found = self._deref(param, f"{operation.pointer}/parameters/{i}")
            if found is not None:
                yield found

    def _parameter_problems(
        self, pointer: str, param: Mapping[str, Any], raw: str
    ) -> Iterator[str]:
        value = _coerce(raw, param.get("schema", {}))
        for error in self._validator(f"{pointer}/schema").iter_errors(value):
            yield f"{param['in']} parameter {param['name']!r}={raw!r}: {error.message}"

    def _body_problems(self, pointer: str, raw: bytes, what: str) -> Iterator[str]:
        try:
            value = json.loads(raw)
        except ValueError:
            yield f"{what} is not JSON"
            return
        for error in self._validator(pointer).iter_errors(value):
            # For anyOf and oneOf, the closest alternative says what is wrong.
            deepest = error
            while deepest.context:
                deepest = best_match(deepest.context)
            yield f"{what} at {deepest.json_path}: {_short(deepest.message)}"

    def _validator(self, pointer: str) -> Draft4Validator:
        validator = self._validators.get(pointer)
        if validator is None:
            validator = self._validator_class(
                {"$ref": f"{_ROOT}#{pointer}"}, registry=self._registry, format_checker=_FORMATS
            )
            self._validators[pointer] = validator
        return validator

    def _ref(
        self, validator: Draft4Validator, ref: str, instance: Any, schema: Mapping[str, Any]
    ) -> Iterator[ValidationError]:
        """Draft 4's `$ref`, skipping a value already found to conform to what it names.

        Only conformance is remembered: a value that does not conform is
        checked again, so every error is reported as without the memo.
        """
        try:
            value = orjson.dumps(instance, option=orjson.OPT_SORT_KEYS)
        except TypeError:  # an integer beyond 64 bits: not remembered
            key = None
        else:
            key = (ref, hashlib.blake2b(value, digest_size=16).digest())
            if key in self._conforming:
                return
        conforms = True
        for error in _DRAFT4_REF(validator, ref, instance, schema):
            conforms = False
            yield error
        if key is not None and conforms:
            self._conforming.add(key)

    def _deref(
        self, node: Mapping[str, Any] | None, pointer: str
    ) -> tuple[str, Mapping[str, Any]] | None:
        """`node`, following a local `$ref`, with the JSON pointer of what it names."""
        if node is None:
            return None
        ref = node.get("$ref")
        if not isinstance(ref, str):
            return pointer, node
        return ref.removeprefix("#"), self._at(ref.removeprefix("#"))


@functools.cache
def description() -> Description:
    """The vendored description, loaded once per process."""
    with gzip.open(DESCRIPTION_PATH, "rb") as stream:
        return Description(orjson.loads(stream.read()), _CORRECTIONS)


def _nullable_to_types(node: Any) -> Any:
    """OpenAPI 3.0's `nullable: true` as JSON Schema says it: `null` among the types."""
    if isinstance(node, list):
        return [_nullable_to_types(item) for item in node]
    if not isinstance(node, dict):
        return node
    # Examples are most of the description and no part of what it allows.
    converted = {
        key: _nullable_to_types(value)
        for key, value in node.items()
        if key not in _NOT_SCHEMA or not isinstance(value, dict)
    }
    if converted.get("nullable") is not True:
        return converted
    del converted["nullable"]
    kind = converted.get("type")
    if isinstance(kind, str):
        converted["type"] = [kind, "null"]
        if isinstance(converted.get("enum"), list) and None not in converted["enum"]:
            converted["enum"] = [*converted["enum"], None]
        return converted
    # A `$ref` or a composition: null, or what it says.
    return {"anyOf": [{"type": "null"}, converted]}


# The formats GitHub's schemas use most, checked without more packages:
# jsonschema's own date-time and uri checks need ones Neo does not install.
_FORMATS = FormatChecker(["date", "email"])
_DATE_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)", re.I)


@_FORMATS.checks("date-time")
def _is_date_time(value: object) -> bool:
    return not isinstance(value, str) or _DATE_TIME.fullmatch(value) is not None


@_FORMATS.checks("uri")
def _is_uri(value: object) -> bool:
    if not isinstance(value, str):
        return True
    parts = urlsplit(value)
    return bool(parts.scheme) and bool(parts.netloc or parts.path) and " " not in value


def _template_pattern(template: str) -> re.Pattern[str]:
    parts = re.split(r"\{(\w+)\}", template)
    regex = "".join(
        (f"(?P<{part}>.+)" if part in _SLASHED else f"(?P<{part}>[^/]+)")
        if i % 2
        else re.escape(part)
        for i, part in enumerate(parts)
    )
    return re.compile(f"^{regex}$")


def _first(path: str) -> str:
    """The first segment of a path or template; "" when it is a `{parameter}`."""
    first = path.removeprefix("/").split("/", 1)[0]
    return "" if "{" in first else first


def _coerce(raw: str, schema: Mapping[str, Any]) -> Any:
    """A query or path string as the type its schema names, when it reads as one."""
    kinds = schema.get("type")
    kinds = [kinds] if isinstance(kinds, str) else kinds or []
    if "integer" in kinds and re.fullmatch(r"-?\d+", raw):
        return int(raw)
    if "number" in kinds:
        try:
            return float(raw)
        except ValueError:
            return raw
    if "boolean" in kinds and raw in ("true", "false"):
        return raw == "true"
    return raw


def _media_type(content_type: str) -> str:
    return content_type.split(";", 1)[0].strip().lower()


def _escape(part: str) -> str:
    return part.replace("~", "~0").replace("/", "~1")


def _unescape(part: str) -> str:
    return part.replace("~1", "/").replace("~0", "~")


def _short(message: str, limit: int = 160) -> str:
    return message if len(message) <= limit else message[: limit - 1] + "…"
