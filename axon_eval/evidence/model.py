"""The evidence model: the pydantic models of one turn and its steps, and the JSON Schema of a line.

Schema versions
---------------
Version 2 is a backwards-compatible extension for evidence imported from tracing tools, which record
neither a full row count nor a truncation flag and may store sanitised query text:

* ``row_count: null`` on an ``ok`` SQL step means *unknown* (in version 1 it means "the stored rows are
  the whole result"); :attr:`SqlStep.row_count_known` says which, :attr:`SqlStep.total_rows` is then
  the number of stored rows (a lower bound);
* ``sanitized: true`` on a SQL step marks query text whose literals were replaced by ``?``
  (written only when true, so version-1 lines dump exactly as before).

Version-1 lines load unchanged and mean what they always meant; a version-1 line that uses
``sanitized`` is invalid (it needs version 2).

The JSON Schema and the loader agree
------------------------------------
A line is valid for ``load_turns`` exactly when it is valid under :func:`turn_json_schema` (draft
2020-12, with ``format`` asserted), except for the two rules of a SQL step that compare two of its fields
(:data:`SQL_STEP_RULES_NOT_IN_SCHEMA`, named in the schema's ``$comment``). So JSON types are not coerced:
a number given as text (``"84"``) or a boolean is not a number, ``schema_version`` is the number 1 or 2,
``sanitized`` is ``true`` or ``false``, and ``captured_at`` is RFC 3339 date-time text with its offset
(:data:`RFC3339_PATTERN`; not a Unix time).

Identifiers and text: a ``turn_id`` matches :data:`TURN_ID_PATTERN`; :func:`escape_control` escapes
controls and invisible format characters (``\\x1b`` -> ``\\x1b`` as text) so evidence prints safely.
"""

from __future__ import annotations

import json
import re
import unicodedata
from datetime import datetime, timezone
from typing import Annotated, Any, Literal

from pydantic import (AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, PrivateAttr,
    SerializerFunctionWrapHandler, WithJsonSchema, field_serializer, model_serializer, model_validator)


#: The evidence schema version whose meaning the verdict cache key records
#: (:func:`axon_eval.judges.base.cache_key`). It stays 1: a version-2 turn that uses a version-2
#: feature renders a different view text (so a different view hash and key), and one that does not
#: renders byte-identically, so cached verdicts keep holding.
SCHEMA_VERSION = 1
#: Every schema version ``load_turns`` reads; the newest is written by the trace importers when needed.
SCHEMA_VERSIONS = (1, 2)
LATEST_SCHEMA_VERSION = 2

StepStatus = Literal["ok", "error", "timeout", "blocked"]
#: Statuses that count as a SQL *execution*. ``blocked`` is a guardrail refusal: nothing ran.
EXECUTED_STATUSES = frozenset({"ok", "error", "timeout"})
#: Statuses that count as a failed execution.
FAILED_STATUSES = frozenset({"error", "timeout"})


#: An RFC 3339 date-time with its offset (``2024-05-01T09:30:00Z``, ``...T09:30:00.25+02:00``): what
#: ``captured_at`` must be in a JSON line, and the ``pattern`` the JSON Schema states for it.
RFC3339_PATTERN = (r"^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])[Tt]([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d{1,6})?"
                   r"([Zz]|[+-]([01]\d|2[0-3]):[0-5]\d)$")
_RFC3339 = re.compile(RFC3339_PATTERN)


#: Code points of the Basic Multilingual Plane that never belong in an identifier, as a regular-expression
#: character class: C0 and C1 controls, and the format characters (Unicode category Cf: soft hyphen,
#: Arabic number signs, bidirectional marks, embeddings, overrides and isolates, zero-width characters,
#: the byte order mark, interlinear annotation), line and paragraph separators, and lone surrogates.
_BMP_UNSAFE = (r"\u0000-\u001f\u007f-\u009f\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e"
               r"\u200b-\u200f\u2028-\u202e\u2060-\u206f\ud800-\udfff\ufeff\ufff9-\ufffb")
#: The same beyond the Basic Multilingual Plane (format characters and tag characters).
_ASTRAL_UNSAFE = (r"\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
                  r"\U000e0001\U000e0020-\U000e007f")
#: What a ``turn_id`` must match (Python ``re`` and ECMA-262 read it alike): no ``#`` (it separates a
#: turn from its segment number), no whitespace, nothing of ``_BMP_UNSAFE``.
TURN_ID_PATTERN = r"^[^#\s" + _BMP_UNSAFE + r"]+$"
_ID_REFUSED = re.compile(r"[#\s" + _BMP_UNSAFE + r"]")
_UNSAFE = re.compile(r"[" + _BMP_UNSAFE + _ASTRAL_UNSAFE + r"]")
_CATEGORY_NAMES = {"Cc": "a control character", "Cs": "a lone surrogate", "Cf": "a format character",
                   "Cn": "an unassigned format code point"}


def _escape_one(match: re.Match[str]) -> str:
    cp = ord(match.group())
    return f"\\x{cp:02x}" if cp <= 0xFF else f"\\u{cp:04x}" if cp <= 0xFFFF else f"\\U{cp:08x}"


def escape_control(text: str) -> str:
    """``text`` safe to print on a terminal: every control character (C0, DEL, C1: tab and newline
    included), format character (Unicode category Cf: bidirectional marks, embeddings, overrides and
    isolates, zero-width characters, tags), line or paragraph separator and lone surrogate is replaced by
    its Python escape (``\\x1b``, ``\\u202e``, ``\\U000e0041``). Everything else is kept, backslashes
    included, so the result is for reading, not for decoding back; applying it twice changes nothing."""
    return _UNSAFE.sub(_escape_one, text) if _UNSAFE.search(text) else text


def _turn_id(value: str) -> str:
    """A ``turn_id`` holds no ``#``, whitespace, control, invisible format or bidirectional character
    (:data:`TURN_ID_PATTERN`); the message names the first such character and its position."""
    found = _ID_REFUSED.search(value)
    if found is None:
        return value
    ch, at = found.group(), found.start()
    if ch == "#":
        raise ValueError(f"must not contain '#' (it separates a turn id from its segment number), found at "
                         f"position {at}")
    name = unicodedata.name(ch, "") or _CATEGORY_NAMES.get(unicodedata.category(ch), unicodedata.category(ch))
    kind = "whitespace" if ch.isspace() and unicodedata.category(ch) not in ("Cc", "Zl", "Zp") else \
        "a control, invisible format or bidirectional character"
    raise ValueError(f"must not contain {kind}: U+{ord(ch):04X} ({name}) at position {at}")


def _json_number(value: Any) -> Any:
    """A number stays as it is; text and booleans are refused (the JSON Schema says ``number``/``integer``,
    so ``"5"`` and ``true`` are not numbers here either)."""
    if isinstance(value, str | bool):
        raise ValueError(f"must be a JSON number, not {'a string' if isinstance(value, str) else 'a boolean'}")
    return value


def _version(value: Any) -> Any:
    """``schema_version`` is the number 1 or 2: a boolean is refused (``true`` is not ``1`` in JSON)."""
    if isinstance(value, bool):
        raise ValueError("must be the number 1 or 2, not a boolean")
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _rfc3339(value: Any) -> Any:
    """``captured_at`` read from JSON must be an RFC 3339 date-time text with its offset (a ``datetime`` built
    in Python passes; its timezone is checked by :class:`Turn`)."""
    if isinstance(value, datetime):
        return value
    if not isinstance(value, str) or not _RFC3339.match(value):
        raise ValueError("must be an RFC 3339 date-time with a timezone, e.g. 2024-05-01T09:30:00Z")
    return value


#: Milliseconds: an integer or a decimal number, at least 0 (``minimum`` in the JSON Schema).
NonNegativeNumber = Annotated[int | float, BeforeValidator(_json_number), Field(ge=0),
                              WithJsonSchema({"type": "number", "minimum": 0})]
#: A count -- an integer, at least 0.
NonNegativeInt = Annotated[int, Field(ge=0), BeforeValidator(_json_number)]


def _require_kind(schema: dict[str, Any]) -> None:
    """A step's ``kind`` is its discriminator: the input must state it, so the JSON Schema requires it."""
    schema["required"] = ["kind", *[name for name in schema.get("required", []) if name != "kind"]]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ToolStep(_Model):
    """A non-SQL tool call (schema discovery, search, ...)."""

    model_config = ConfigDict(json_schema_extra=_require_kind)

    kind: Literal["tool"] = "tool"
    name: str = Field(min_length=1)
    status: StepStatus
    args: dict[str, Any] = Field(default_factory=dict)
    output: Any = None
    error: str | None = None
    elapsed_ms: NonNegativeNumber | None = None


class SqlStep(_Model):
    """One SQL statement the agent submitted, with the snapshot of what came back.

    ``rows`` may hold fewer rows than ``row_count`` (captures store a prefix); ``row_count`` is
    the full count. A ``blocked`` statement was refused by the guardrail and never ran. In a
    schema-version-2 turn ``row_count`` may be ``null`` on an ``ok`` step, meaning the full count is
    unknown (:attr:`row_count_known`), and ``sanitized`` marks query text with ``?`` for literals.
    """

    model_config = ConfigDict(json_schema_extra=lambda schema: _sql_step_schema(schema))

    kind: Literal["sql"] = "sql"
    sql: str = Field(min_length=1)
    status: StepStatus
    error: str | None = None
    columns: list[str] = Field(default_factory=list)
    rows: list[list[Any]] = Field(default_factory=list)
    row_count: NonNegativeInt | None = None
    elapsed_ms: NonNegativeNumber | None = None
    sanitized: bool = Field(
        default=False, strict=True,
        description="Schema version 2: the query text is sanitised (literals replaced by ?). Written only when true.")

    #: set by :class:`Turn` (schema version 2, ``ok`` step, ``row_count`` null): the full count is unknown
    _count_unknown: bool = PrivateAttr(default=False)

    @model_serializer(mode="wrap")
    def _drop_default_flag(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data = handler(self)
        if isinstance(data, dict) and not data.get("sanitized"):
            data.pop("sanitized", None)  # version-1 dumps stay exactly as they were
        return data

    @model_validator(mode="after")
    def _check_shape(self) -> SqlStep:
        if self.row_count is not None and self.row_count < len(self.rows):
            raise ValueError(
                f"row_count {self.row_count} is smaller than the {len(self.rows)} stored rows"
            )
        if self.columns:
            for i, row in enumerate(self.rows):
                if len(row) != len(self.columns):
                    raise ValueError(
                        f"row {i} has {len(row)} values but there are {len(self.columns)} columns"
                    )
        if self.status != "ok" and self.rows:
            raise ValueError(f"a step with status {self.status!r} cannot carry result rows")
        return self

    @property
    def row_count_known(self) -> bool:
        """False only for an ``ok`` step of a schema-version-2 turn whose ``row_count`` is null."""
        return not self._count_unknown

    @property
    def total_rows(self) -> int:
        """Full result size -- ``row_count`` when captured, else the number of stored rows (when the count
        is unknown, :attr:`row_count_known` is false and this is only a lower bound)."""
        return self.row_count if self.row_count is not None else len(self.rows)


#: What the JSON Schema of a SQL step cannot state (it compares two fields), checked by the model.
SQL_STEP_RULES_NOT_IN_SCHEMA = (
    "row_count, when given, is at least the number of stored rows",
    "when columns are given, every row has one value per column",
)


def _sql_step_schema(schema: dict[str, Any]) -> None:
    """The SQL step's JSON Schema: ``kind`` required, no rows unless the status is ``ok``, and a comment
    naming the cross-field rules a JSON Schema cannot state."""
    _require_kind(schema)
    schema["if"] = {"properties": {"status": {"const": "ok"}}}
    schema["else"] = {"properties": {"rows": {"maxItems": 0}}}
    schema["$comment"] = ("Also checked by `python -m axon_eval validate`, not expressible in JSON Schema: "
                          + "; ".join(SQL_STEP_RULES_NOT_IN_SCHEMA) + ".")


Step = Annotated[ToolStep | SqlStep, Field(discriminator="kind")]


#: Explicit question segments -- at least one, none blank (the non-blank rule is the ``\S`` pattern of the
#: JSON Schema; :class:`Turn` checks it).
Segments = Annotated[list[Annotated[str, Field(json_schema_extra={"pattern": r"\S"})]], Field(min_length=1)]


def _turn_schema(schema: dict[str, Any]) -> None:
    """The turn's JSON Schema: a version-1 turn has no sanitised SQL step (``sanitized`` needs version 2)."""
    schema["if"] = {"properties": {"schema_version": {"const": 1}}}
    schema["then"] = {"properties": {"steps": {"items": {"properties": {"sanitized": {"const": False}}}}}}


class Turn(_Model):
    """One captured turn. ``answer`` is ``None`` when no answer text was captured."""

    model_config = ConfigDict(json_schema_extra=_turn_schema)

    schema_version: Annotated[Literal[1, 2], BeforeValidator(_version)]
    turn_id: Annotated[str, AfterValidator(_turn_id), Field(
        min_length=1, json_schema_extra={"pattern": TURN_ID_PATTERN},
        description="No '#', whitespace, control, invisible format or bidirectional character.")]
    captured_at: Annotated[datetime, BeforeValidator(_rfc3339),
                           Field(json_schema_extra={"pattern": RFC3339_PATTERN})]
    region: str = Field(min_length=1)
    surface: str = Field(min_length=1)
    client: str = Field(min_length=1)
    question: str = Field(min_length=1)
    answer: str | None = None
    steps: list[Step] = Field(default_factory=list)
    segments: Segments | None = Field(
        default=None, description="Explicit question segments; overrides automatic splitting."
    )

    @model_validator(mode="after")
    def _check_time(self) -> Turn:
        if self.captured_at.tzinfo is None:
            raise ValueError("captured_at must carry a timezone (use ...Z for UTC)")
        if self.segments is not None and (not self.segments or any(not s.strip() for s in self.segments)):
            raise ValueError("segments, when given, must be a non-empty list of non-empty questions")
        for i, step in enumerate(self.steps):
            if not isinstance(step, SqlStep):
                continue
            if self.schema_version == 1 and step.sanitized:
                raise ValueError(f"steps.{i}: 'sanitized' needs schema_version 2")
            # version 2: a null row count on a statement that returned rows means "unknown"
            step._count_unknown = self.schema_version >= 2 and step.status == "ok" and step.row_count is None
        return self

    @field_serializer("captured_at")
    def _ser_time(self, value: datetime) -> str:
        return value.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")

    @property
    def sql_steps(self) -> list[SqlStep]:
        return [s for s in self.steps if isinstance(s, SqlStep)]

    def to_json_line(self) -> str:
        """Canonical one-line JSON (what ``load_turns`` reads back to an equal ``Turn``)."""
        return json.dumps(self.model_dump(mode="json", exclude_none=False), ensure_ascii=False,
                          separators=(", ", ": "))


def turn_json_schema() -> dict[str, Any]:
    """JSON Schema (draft 2020-12) of one evidence line, as emitted by ``python -m axon_eval schema``."""
    schema = Turn.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "axon_eval captured turn (schema_version 1 or 2)"
    return schema
