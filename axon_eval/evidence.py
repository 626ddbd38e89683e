"""Evidence model: one captured assistant turn, loaded from JSON Lines.

A *turn* is what the telemetry captured for one user question (or one relay of several questions):
the question, every step of the agent's trajectory (tool calls and SQL statements with their status,
columns, a snapshot of the rows and the full row count) and the answer text, or ``None`` when the
client's own AI composed the answer and it was never transmitted.

Nothing here ever re-queries a database: ``rows`` is the point-in-time snapshot the agent saw.

Public names
------------
``Turn``, ``ToolStep``, ``SqlStep``    pydantic v2 models of DESIGN §3 (``schema_version`` 1 or 2)
``load_turns(path)``                    -> ``(turns, invalid)``; every bad line becomes an ``InvalidTurn``
``invalid_lines(invalid)``              -> ``{line: ["field: problem", ...]}`` (count bad *lines* with ``len``)
``describe_invalid_lines(invalid)``     one text per bad line listing all of its problems
``parse_turn_lines(lines)``             the same on an iterable of strings or bytes
``iter_turns(path)``                    streams ``Turn`` / ``InvalidTurn`` records line by line
``iter_bounded_lines(fh)``              the lines of a binary file, a line over the size limit as ``LongLine``
``split_segments(turn)``                bundled questions -> ``Segment`` records (``turn_id#k``)
``trajectory_facts(turn)``              -> ``TrajectoryFacts`` (what the deterministic caps read)
``turn_json_schema()``                  the JSON Schema of one evidence line (both versions)
``escape_control(text)``                evidence text made safe to print on a terminal (controls escaped)

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

Hostile lines
-------------
Every line is read and checked on its own, so a hostile line costs only itself (an :class:`InvalidTurn`
naming its line and the reason) and the rest of the file loads:

* a line longer than :data:`MAX_LINE_BYTES` (16 MiB, not counting its line end; the ``max_line_bytes``
  keyword of the loaders changes it) is skipped unread: a file is read in pieces of at most the limit, so
  the line is never held whole nor parsed;
* a line nested deeper than :data:`MAX_NESTING_DEPTH` (100 levels of arrays and objects, the line's own
  object being level 1; keyword ``max_depth``) is refused, also when it is too deep for the JSON parser
  itself, without a ``RecursionError``;
* ``NaN``, ``Infinity`` and ``-Infinity`` (which Python's JSON parser accepts although JSON has no such
  numbers) and numbers too large for a 64-bit float (``1e400``, read as infinity) are refused at parsing,
  naming the field where they stand;
* ``turn_id`` may hold no ``#``, no whitespace, no control character and no invisible format or
  bidirectional character of the Basic Multilingual Plane (:data:`TURN_ID_PATTERN`): no mark, embedding,
  override or isolate (U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069), no zero-width character, no
  byte order mark, no lone surrogate;
* the texts of an :class:`InvalidTurn` (field, message, turn id) are stored with
  :func:`escape_control` applied, so printing one never sends a control sequence to a terminal. Text of a
  valid turn (question, answer, rows) is kept as captured; :func:`escape_control` is the helper for
  printing it.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
import unicodedata
from collections.abc import Iterable, Iterator, Mapping
from itertools import chain, compress
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    ValidationError,
    WithJsonSchema,
    field_serializer,
    model_serializer,
    model_validator,
)

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

#: The longest line the loaders parse, in bytes, not counting the line end (16 MiB). A longer line is one
#: :class:`InvalidTurn` and is never read whole. The ``max_line_bytes`` keyword of :func:`load_turns`,
#: :func:`iter_turns`, :func:`iter_turn_lines` and :func:`iter_turns_range` overrides it per call; a
#: changed value here applies to later calls in this process (and to worker processes it forks).
MAX_LINE_BYTES = 16 * 1024 * 1024
#: The deepest nesting of arrays and objects a line may have (its own object is level 1, ``steps`` 2,
#: a step 3, ``rows`` 4, a row 5). The ``max_depth`` keyword of the loaders overrides it per call.
MAX_NESTING_DEPTH = 100

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
#: A count: an integer, at least 0.
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
        """Full result size: ``row_count`` when captured, else the number of stored rows (when the count
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


#: Explicit question segments: at least one, none blank (the non-blank rule is the ``\S`` pattern of the
#: JSON Schema; :class:`Turn` checks it).
Segments = Annotated[list[Annotated[str, Field(json_schema_extra={"pattern": r"\S"})]], Field(min_length=1)]


def _turn_schema(schema: dict[str, Any]) -> None:
    """The turn's JSON Schema: a version-1 turn has no sanitised SQL step (``sanitized`` needs version 2)."""
    schema["if"] = {"properties": {"schema_version": {"const": 1}}}
    schema["then"] = {"properties": {"steps": {"items": {"properties": {"sanitized": {"const": False}}}}}}


class Turn(_Model):
    """One captured turn (DESIGN §3). ``answer`` is ``None`` when no answer text was captured."""

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


# --------------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class InvalidTurn:
    """A line of an evidence file that could not be used, and why.

    ``line`` is 1-based; ``field`` is a dotted path into the JSON object (``steps.2.status``) or
    ``"<line>"`` when the line is not JSON at all (or too long or too deep to parse). The loaders store
    ``field``, ``message`` and ``turn_id`` with :func:`escape_control` applied: they quote the line, which
    may hold control or bidirectional characters.
    """

    source: str
    line: int
    field: str
    message: str
    turn_id: str | None = None

    def __str__(self) -> str:
        """``source:line (turn id): field: message``, control characters escaped (:func:`escape_control`)."""
        tid = f" (turn {escape_control(self.turn_id)})" if self.turn_id else ""
        return escape_control(f"{self.source}:{self.line}") + f"{tid}: {escape_control(self.field)}: " \
            f"{escape_control(self.message)}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _loc_to_path(loc: tuple[Any, ...]) -> str:
    # pydantic puts the discriminator tag into the location (steps.0.sql.status); drop it.
    parts = [str(p) for p in loc if p not in ("tool", "sql")]
    return ".".join(parts) or "<root>"


def _invalid(source: str, line: int, field: str, message: str, turn_id: str | None = None) -> InvalidTurn:
    """An :class:`InvalidTurn` whose texts are passed through :func:`escape_control` (they quote the line)."""
    return InvalidTurn(source, line, escape_control(field), escape_control(message),
                       None if turn_id is None else escape_control(turn_id))


def _shown(value: Any, limit: int = 200) -> str:
    """``repr(value)``, cut to ``limit`` characters (with the full length) when longer."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text):,} characters)"


def _limit(value: int | None, default: int, name: str) -> int:
    if value is None:
        value = default
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a whole number >= 1, got {value!r}")
    return value


@dataclass(frozen=True)
class LongLine:
    """A line longer than the line limit, skipped without being held: ``size`` bytes without its line
    end, ``nbytes`` with it (what it occupies in the file). Yielded by the bounded line readers in place
    of the line; the loaders turn it into an :class:`InvalidTurn`."""

    size: int
    nbytes: int

    def __len__(self) -> int:
        return self.nbytes


def _body_size(raw: bytes | str) -> int:
    """Length of a line without its line end (``\\n`` or ``\\r\\n``)."""
    end = raw[-2:]
    return len(raw) - (2 if end in (b"\r\n", "\r\n") else 1 if end[-1:] in (b"\n", "\n") else 0)


def iter_bounded_lines(fh: Any, max_line_bytes: int | None = None) -> Iterator[bytes | LongLine]:
    """The lines of a binary file as ``bytes``, except that a line longer than ``max_line_bytes``
    (default :data:`MAX_LINE_BYTES`; not counting the line end) is read past in pieces (of at most 1 MiB)
    and yielded as a :class:`LongLine`, so memory holds at most ``max_line_bytes + 2`` bytes of it."""
    limit = _limit(max_line_bytes, MAX_LINE_BYTES, "max_line_bytes")
    readline = fh.readline
    piece = limit + 2
    while True:
        raw = readline(piece)
        if not raw:
            return
        if raw.endswith(b"\n") or len(raw) < piece:
            size = _body_size(raw)
            yield raw if size <= limit else LongLine(size, len(raw))
            continue
        total, last, skip = len(raw), raw, min(piece, 1 << 20)
        while not last.endswith(b"\n"):
            last = readline(skip)
            if not last:
                break
            total += len(last)
        yield LongLine(total - (1 if last.endswith(b"\n") else 0), total)


def _line_size(raw: str | bytes | LongLine, limit: int) -> int | None:
    """The size in bytes of a line over ``limit`` (line end not counted), else ``None``."""
    if isinstance(raw, LongLine):
        return raw.size
    if isinstance(raw, str):
        if len(raw) * 4 <= limit:  # a character is at most 4 bytes of UTF-8
            return None
        raw = raw.encode("utf-8", "surrogatepass")
    if len(raw) <= limit:
        return None
    size = _body_size(raw)
    return size if size > limit else None


def _decode_line(raw: str | bytes, lineno: int) -> tuple[str | None, str | None]:
    """``(text, None)`` or ``(None, why)`` for one raw line (bytes are decoded as UTF-8 here, per line,
    so one bad byte costs only its own line)."""
    if isinstance(raw, str):
        return raw, None
    data = raw[3:] if lineno == 1 and raw.startswith(b"\xef\xbb\xbf") else raw  # UTF-8 byte order mark
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        return None, (f"not UTF-8: byte 0x{data[exc.start]:02x} at byte offset {exc.start} of the line "
                      f"cannot be decoded ({exc.reason})")


class _NonFinite:
    """Stands in, while a line is checked, for a number JSON does not have (``NaN``, ``Infinity``,
    ``-Infinity``) or one that overflows a 64-bit float (its text kept)."""

    __slots__ = ("overflow", "text")

    def __init__(self, text: str, overflow: bool = False) -> None:
        self.text = text
        self.overflow = overflow


def _parse_json(text: str) -> tuple[Any, bool]:
    """``(value, found)``: the line parsed with Python's JSON parser, non-finite numbers replaced by
    :class:`_NonFinite` (``found`` says whether any was). Raises what ``json.loads`` raises."""
    found: list[bool] = []

    def constant(name: str) -> _NonFinite:
        found.append(True)
        return _NonFinite(name)

    def number(literal: str, _float: type[float] = float) -> float | _NonFinite:
        value = _float(literal)
        if value in (math.inf, -math.inf):
            found.append(True)
            return _NonFinite(literal, overflow=True)
        return value

    value = json.JSONDecoder(parse_constant=constant, parse_float=number).decode(text)
    return value, bool(found)


_CONTAINERS = (dict, list)
_CONTAINER_SET = frozenset(_CONTAINERS)


def _children(node: dict[str, Any] | list[Any]) -> Iterable[tuple[str, Any]]:
    return ((str(k), v) for k, v in (node.items() if type(node) is dict else enumerate(node)))


def _path_text(path: tuple[str, ...], shown: int = 8) -> str:
    return ".".join(path[:shown]) + (".…" if len(path) > shown else "") if path else "<root>"


def _too_deep(obj: Any, text: str, max_depth: int) -> tuple[str, ...] | None:
    """``None`` when ``obj`` nests at most ``max_depth`` levels of arrays and objects (``obj`` itself is
    level 1), else the path of a container below that level. Breadth first, one level at a time, with
    the per-element work done by C-level iterators (a line of a million rows costs milliseconds)."""
    if text.count("[") + text.count("{") <= max_depth:  # not enough brackets to be that deep
        return None
    level, depth = [obj], 1
    while depth <= max_depth:
        kinds = set(map(type, level))
        if dict not in kinds:
            children = list(chain.from_iterable(level))
        elif list not in kinds:
            children = list(chain.from_iterable(map(dict.values, level)))
        else:
            children = list(chain.from_iterable(n.values() if type(n) is dict else n for n in level))
        found = set(map(type, children))
        if not found & _CONTAINER_SET:
            return None
        level = children if found <= _CONTAINER_SET else \
            list(compress(children, map(_CONTAINER_SET.__contains__, map(type, children))))
        depth += 1
    stack: list[tuple[Any, tuple[str, ...]]] = [(obj, ())]
    while stack:  # depth first, to name where it is
        node, path = stack.pop()
        if len(path) >= max_depth:
            return path
        stack.extend((v, path + (k,)) for k, v in _children(node) if type(v) in _CONTAINERS)
    return None  # pragma: no cover - the breadth-first pass found a deeper container


def _non_finite(obj: Any) -> tuple[tuple[str, ...], _NonFinite] | None:
    """The path and stand-in of the first non-finite number in ``obj``, in document order."""
    stack: list[tuple[Any, tuple[str, ...]]] = [(obj, ())]
    while stack:
        node, path = stack.pop()
        if isinstance(node, _NonFinite):
            return path, node
        if type(node) in _CONTAINERS:
            stack.extend(reversed([(v, path + (k,)) for k, v in _children(node)]))
    return None


def _non_finite_message(number: _NonFinite) -> str:
    if number.overflow:
        return (f"the number {_shown(number.text, 40)[1:-1]} is too large for a 64-bit float (it would read as "
                f"infinity); non-finite numbers are refused")
    return (f"{number.text} is not a JSON number; non-finite numbers (NaN, Infinity, -Infinity) are refused")


def iter_numbered_turn_lines(lines: Iterable[str | bytes | LongLine], source: str = "<memory>", *,
                             first_line: int = 1, max_line_bytes: int | None = None,
                             max_depth: int | None = None) -> Iterator[tuple[int, Turn | InvalidTurn]]:
    """Validate JSON Lines of evidence one line at a time, yielding a :class:`Turn` or one or more
    :class:`InvalidTurn` records per non-blank line, in file order (constant memory per line).

    ``lines`` may be text or bytes (bytes are decoded as UTF-8 line by line: a line with a bad byte
    becomes an invalid record and the other lines still load), or :class:`LongLine` markers from
    :func:`iter_bounded_lines`. A ``turn_id`` seen on an earlier line is invalid (the first is kept).
    ``first_line`` is the file line number of the first of ``lines`` (a byte range of a file,
    :func:`iter_turns_range`, starts inside it). Each item comes with its file line:
    ``(line, Turn | InvalidTurn)``; :func:`iter_turn_lines` gives the items alone.

    A line over ``max_line_bytes`` (default :data:`MAX_LINE_BYTES`) is not parsed; one nested deeper than
    ``max_depth`` (default :data:`MAX_NESTING_DEPTH`) or holding a non-finite number is refused (module
    docstring, *Hostile lines*): each is one :class:`InvalidTurn`.
    """
    limit = _limit(max_line_bytes, MAX_LINE_BYTES, "max_line_bytes")
    depth_limit = _limit(max_depth, MAX_NESTING_DEPTH, "max_depth")
    seen: dict[str, int] = {}
    for lineno, raw in enumerate(lines, start=first_line):
        size = _line_size(raw, limit)
        if size is not None:
            yield lineno, _invalid(source, lineno, "<line>",
                                   f"line is {size:,} bytes, over the limit of {limit:,} bytes per line "
                                   f"(MAX_LINE_BYTES, or the loader's max_line_bytes); not parsed")
            continue
        decoded, why = _decode_line(raw, lineno)  # type: ignore[arg-type]
        if decoded is None:
            yield lineno, _invalid(source, lineno, "<line>", why or "cannot be decoded")
            continue
        text = decoded.strip()
        if not text:
            continue
        try:
            obj, non_finite = _parse_json(text)
        except json.JSONDecodeError as exc:
            yield lineno, _invalid(source, lineno, "<line>", f"not valid JSON: {exc.msg} at column {exc.colno}")
            continue
        except RecursionError:
            yield lineno, _invalid(source, lineno, "<line>",
                                   f"nested too deeply to parse (arrays and objects inside one another beyond "
                                   f"the parser's recursion limit; at most {depth_limit} levels are allowed)")
            continue
        except ValueError as exc:  # e.g. an integer of more than 4300 digits
            yield lineno, _invalid(source, lineno, "<line>", f"not valid JSON: {str(exc).splitlines()[0]}")
            continue
        if not isinstance(obj, dict):
            yield lineno, _invalid(source, lineno, "<root>", f"expected a JSON object, got {type(obj).__name__}")
            continue
        tid = obj.get("turn_id")
        tid = tid if isinstance(tid, str) else None
        deep = _too_deep(obj, text, depth_limit)
        if deep is not None:
            yield lineno, _invalid(source, lineno, _path_text(deep),
                                   f"nested more than {depth_limit} levels deep (arrays and objects inside one "
                                   f"another; MAX_NESTING_DEPTH, or the loader's max_depth)", tid)
            continue
        if non_finite:
            path, number = _non_finite(obj) or ((), _NonFinite("NaN"))
            yield lineno, _invalid(source, lineno, _path_text(path, shown=len(path)), _non_finite_message(number),
                                   tid)
            continue
        try:
            turn = Turn.model_validate(obj)
        except ValidationError as exc:
            for err in exc.errors():
                value = err.get("input")
                shown = "" if isinstance(value, dict | list) else f" (got {_shown(value)})"
                yield lineno, _invalid(source, lineno, _loc_to_path(err["loc"]), f"{err['msg']}{shown}", tid)
            continue
        except RecursionError:  # pragma: no cover - the depth limit keeps validation shallow
            yield lineno, _invalid(source, lineno, "<line>", "nested too deeply to validate", tid)
            continue
        if turn.turn_id in seen:
            yield lineno, _invalid(
                source, lineno, "turn_id",
                f"duplicate turn_id {turn.turn_id!r} (first seen on line {seen[turn.turn_id]}); kept the first",
                turn.turn_id)
            continue
        seen[turn.turn_id] = lineno
        yield lineno, turn


def iter_turn_lines(lines: Iterable[str | bytes | LongLine], source: str = "<memory>", *, first_line: int = 1,
                    max_line_bytes: int | None = None, max_depth: int | None = None) -> Iterator[Turn | InvalidTurn]:
    """Validate JSON Lines of evidence one line at a time, yielding a :class:`Turn` or one or more
    :class:`InvalidTurn` records per non-blank line, in file order (constant memory per line); see
    :func:`iter_numbered_turn_lines`."""
    for _line, item in iter_numbered_turn_lines(lines, source, first_line=first_line, max_line_bytes=max_line_bytes,
                                                max_depth=max_depth):
        yield item


def parse_turn_lines(lines: Iterable[str | bytes], source: str = "<memory>", *, max_line_bytes: int | None = None,
                     max_depth: int | None = None) -> tuple[list[Turn], list[InvalidTurn]]:
    """Validate JSON Lines of evidence. See :func:`load_turns`."""
    turns: list[Turn] = []
    invalid: list[InvalidTurn] = []
    for item in iter_turn_lines(lines, source, max_line_bytes=max_line_bytes, max_depth=max_depth):
        (turns if isinstance(item, Turn) else invalid).append(item)
    return turns, invalid


class EvidenceFileError(ValueError):
    """An evidence file that cannot be read at all (missing, a folder, unreadable); names the file."""


@contextlib.contextmanager
def open_evidence(path: str | Path) -> Iterator[Iterable[bytes]]:
    """Open an evidence file for reading as raw lines, or raise :class:`EvidenceFileError` naming it."""
    p = Path(path)
    if not p.exists():
        raise EvidenceFileError(f"{p}: no such evidence file")
    if p.is_dir():
        raise EvidenceFileError(f"{p}: is a folder, expected a JSON Lines evidence file")
    try:
        fh = p.open("rb")
    except OSError as exc:
        raise EvidenceFileError(f"{p}: cannot be read: {exc.strerror or exc}") from None
    with fh:
        yield fh


def iter_turns(path: str | Path, *, max_line_bytes: int | None = None,
               max_depth: int | None = None) -> Iterator[Turn | InvalidTurn]:
    """Stream an evidence file: :func:`iter_turn_lines` over its lines, read by :func:`iter_bounded_lines`
    (memory grows with one line of at most ``max_line_bytes``, default :data:`MAX_LINE_BYTES`)."""
    limit = _limit(max_line_bytes, MAX_LINE_BYTES, "max_line_bytes")
    with open_evidence(path) as fh:
        yield from iter_turn_lines(iter_bounded_lines(fh, limit), source=str(path), max_line_bytes=limit,
                                   max_depth=max_depth)


def load_turns(path: str | Path, *, max_line_bytes: int | None = None,
               max_depth: int | None = None) -> tuple[list[Turn], list[InvalidTurn]]:
    """Read an evidence file (JSON Lines, one turn per line).

    Returns ``(turns, invalid)``. Blank lines are skipped. A line that is not UTF-8, not JSON, does not
    validate, or repeats an earlier ``turn_id`` yields one or more :class:`InvalidTurn` records naming
    the line, the field and the problem; valid lines are kept. So does a hostile line (module docstring):
    one longer than ``max_line_bytes`` (default :data:`MAX_LINE_BYTES`, 16 MiB; never read whole), one
    nested deeper than ``max_depth`` (default :data:`MAX_NESTING_DEPTH`, 100 levels), one holding ``NaN``
    or ``Infinity``. Nothing is dropped silently and one bad line never stops the load. A missing or
    unreadable file raises :class:`EvidenceFileError` (a ``ValueError``) naming it. :func:`iter_turns`
    streams the same records.
    """
    turns: list[Turn] = []
    invalid: list[InvalidTurn] = []
    for item in iter_turns(path, max_line_bytes=max_line_bytes, max_depth=max_depth):
        (turns if isinstance(item, Turn) else invalid).append(item)
    return turns, invalid


def _invalid_fields(record: InvalidTurn | Mapping[str, Any]) -> tuple[int, str, str, str | None]:
    if isinstance(record, InvalidTurn):
        return record.line, record.field, record.message, record.turn_id
    return int(record["line"]), str(record.get("field") or "<line>"), str(record.get("message") or ""), \
        record.get("turn_id")


def invalid_lines(invalid: Iterable[InvalidTurn | Mapping[str, Any]]) -> dict[int, list[str]]:
    """The problems of invalid records grouped by their line: ``{line: ["field: message", ...]}``, lines
    ascending, each line's problems in the order they were found.

    One bad line may yield several :class:`InvalidTurn` records (one per field problem), so the number
    of bad lines is ``len(invalid_lines(invalid))``, not ``len(invalid)``. Accepts the records or their
    :meth:`InvalidTurn.to_dict` dicts (a run's ``invalid.jsonl``), all from one file.
    """
    grouped: dict[int, list[str]] = {}
    for record in invalid:
        line, field, message, _ = _invalid_fields(record)
        grouped.setdefault(line, []).append(f"{field}: {message}")
    return dict(sorted(grouped.items()))


def describe_invalid_lines(invalid: Iterable[InvalidTurn | Mapping[str, Any]]) -> list[str]:
    """One text per bad line, lines ascending: ``"line 3 (turn eu-0001): answer: ...; steps.0.status: ..."``
    (the turn id when the line named one), control characters escaped (:func:`escape_control`), so it
    can be printed as it is. See :func:`invalid_lines`."""
    records = list(invalid)
    turn_of: dict[int, str] = {}
    for record in records:
        line, _, _, tid = _invalid_fields(record)
        if tid and line not in turn_of:
            turn_of[line] = tid
    return [escape_control(f"line {line}" + (f" (turn {turn_of[line]})" if line in turn_of else "") + ": "
                           + "; ".join(problems))
            for line, problems in invalid_lines(records).items()]


def iter_json_lines(turns: Iterable[Turn]) -> Iterator[str]:
    for t in turns:
        yield t.to_json_line() + "\n"


# --------------------------------------------------------------------------------------------
# Segments
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Segment:
    """One question of a turn, the unit that is judged and scored.

    Every segment keeps the whole trajectory and answer of its turn; only the question differs.
    ``segment_id`` is ``turn_id`` for a single question, else ``turn_id#1``, ``turn_id#2``, ...
    """

    segment_id: str
    turn: Turn
    question: str
    index: int
    n_segments: int

    @property
    def turn_id(self) -> str:
        return self.turn.turn_id


# "1. ...", "2) ...", "(3) ..." at the start of the text or after whitespace.
_NUMBERED = re.compile(r"(?:^|(?<=\s))\(?(\d{1,2})[.)]\s+")
_QUESTION_SENTENCE = re.compile(r"[^?]*\?")


def split_questions(text: str) -> list[str]:
    """Split a relayed message into its questions (deterministic rule).

    1. Numbered items: if the text contains items numbered 1, 2, ... in order (``1.``, ``1)`` or
       ``(1)``), each item is a question.
    2. Otherwise, if the text is two or more sentences that *each* end in ``?``, each sentence is a
       question.
    3. Otherwise the whole text is one question.
    """
    stripped = text.strip()
    matches = list(_NUMBERED.finditer(stripped))
    # keep the longest run 1, 2, 3, ... of numbered markers
    run: list[re.Match[str]] = []
    for m in matches:
        if int(m.group(1)) == len(run) + 1:
            run.append(m)
    if len(run) >= 2:
        items = []
        for i, m in enumerate(run):
            end = run[i + 1].start() if i + 1 < len(run) else len(stripped)
            item = stripped[m.end():end].strip()
            if item:
                items.append(item)
        if len(items) >= 2:
            return items
    sentences = [s.strip() for s in _QUESTION_SENTENCE.findall(stripped)]
    rest = _QUESTION_SENTENCE.sub("", stripped).strip()
    if len(sentences) >= 2 and not rest:
        return sentences
    return [stripped]


def split_segments(turn: Turn) -> list[Segment]:
    """Segments of a turn: the explicit ``segments`` list when captured, else :func:`split_questions`."""
    questions = list(turn.segments) if turn.segments else split_questions(turn.question)
    n = len(questions)
    if n == 1:
        return [Segment(turn.turn_id, turn, questions[0].strip(), 1, 1)]
    return [Segment(f"{turn.turn_id}#{i}", turn, q.strip(), i, n) for i, q in enumerate(questions, start=1)]


# --------------------------------------------------------------------------------------------
# Trajectory facts
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TrajectoryFacts:
    """Facts read from step statuses only (DESIGN §3); the deterministic caps read these.

    ``recovered_errors`` counts failed SQL executions (error/timeout) that a later successful
    SQL step followed. A guardrail block is neither an execution nor a failure.
    """

    n_steps: int
    n_sql_executed: int
    n_sql_failed: int
    n_sql_blocked: int
    all_sql_failed: bool
    ended_on_failure: bool
    no_tools: bool
    recovered_errors: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def facts_from_statuses(n_steps: int, sql_statuses: list[str]) -> TrajectoryFacts:
    """Trajectory facts from the number of steps and the ordered SQL step statuses."""
    executed = [s for s in sql_statuses if s in EXECUTED_STATUSES]
    failed = [s in FAILED_STATUSES for s in executed]
    last_ok = max((i for i, s in enumerate(executed) if s == "ok"), default=-1)
    return TrajectoryFacts(
        n_steps=n_steps,
        n_sql_executed=len(executed),
        n_sql_failed=sum(failed),
        n_sql_blocked=sum(1 for s in sql_statuses if s == "blocked"),
        all_sql_failed=bool(executed) and all(failed),
        ended_on_failure=bool(executed) and failed[-1],
        no_tools=n_steps == 0,
        recovered_errors=sum(1 for i, f in enumerate(failed) if f and i < last_ok),
    )


def trajectory_facts(turn: Turn | Segment) -> TrajectoryFacts:
    """Compute :class:`TrajectoryFacts` for a turn (or a segment: same trajectory as its turn)."""
    t = turn.turn if isinstance(turn, Segment) else turn
    return facts_from_statuses(len(t.steps), [s.status for s in t.sql_steps])


# -- byte ranges: a large evidence file read in parts, never whole ---------------------------------------
@dataclass(frozen=True)
class ByteRange:
    """Part ``index`` of an evidence file: bytes ``start`` (inclusive) to ``end`` (exclusive), both on
    line boundaries, whose first line is file line ``first_line`` (1-based). One turn is one line, so a
    range never splits a turn (nor the segments of a bundled turn)."""

    index: int
    start: int
    end: int
    first_line: int


def plan_byte_ranges(path: str | Path, target_bytes: int) -> list[ByteRange]:
    """Cut an evidence file into consecutive ranges of about ``target_bytes`` each, on line boundaries,
    in one streaming pass (memory: one line, at most :data:`MAX_LINE_BYTES`; a longer line is measured,
    not held). An empty file gives one empty range. A missing file is an :class:`EvidenceFileError`
    naming it."""
    if target_bytes < 1:
        raise ValueError(f"target_bytes must be >= 1, got {target_bytes!r}")
    ranges: list[ByteRange] = []
    start, offset, line, first = 0, 0, 0, 1
    with open_evidence(path) as fh:
        for raw in iter_bounded_lines(fh):
            offset += len(raw)
            line += 1
            if offset - start >= target_bytes:
                ranges.append(ByteRange(len(ranges), start, offset, first))
                start, first = offset, line + 1
    if offset > start or not ranges:
        ranges.append(ByteRange(len(ranges), start, offset, first))
    return ranges


def iter_range_lines(path: str | Path, byte_range: ByteRange, *,
                     max_line_bytes: int | None = None) -> Iterator[bytes | LongLine]:
    """The raw lines of one :class:`ByteRange` of an evidence file, a line longer than ``max_line_bytes``
    (default :data:`MAX_LINE_BYTES`) as a :class:`LongLine` (:func:`iter_bounded_lines`)."""
    with open_evidence(path) as fh:
        fh.seek(byte_range.start)  # type: ignore[attr-defined]
        left = byte_range.end - byte_range.start
        for raw in iter_bounded_lines(fh, max_line_bytes):
            if left <= 0:
                break
            left -= len(raw)
            yield raw


def iter_turns_range(path: str | Path, byte_range: ByteRange, *, max_line_bytes: int | None = None,
                     max_depth: int | None = None) -> Iterator[tuple[int, Turn | InvalidTurn]]:
    """``(line, Turn | InvalidTurn)`` over one byte range, with file line numbers
    (:func:`iter_numbered_turn_lines`, with the same limits as :func:`load_turns`). A ``turn_id``
    repeated within the range is invalid here; one repeated across ranges is for the caller to find (it
    sees every range)."""
    limit = _limit(max_line_bytes, MAX_LINE_BYTES, "max_line_bytes")
    yield from iter_numbered_turn_lines(iter_range_lines(path, byte_range, max_line_bytes=limit), source=str(path),
                                        first_line=byte_range.first_line, max_line_bytes=limit,
                                        max_depth=max_depth)
