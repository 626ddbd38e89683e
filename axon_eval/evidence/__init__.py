"""Evidence model: one captured assistant turn, loaded from JSON Lines.

A *turn* is what the telemetry captured for one user question (or one relay of several questions):
the question, every step of the agent's trajectory (tool calls and SQL statements with their status,
columns, a snapshot of the rows and the full row count) and the answer text, or ``None`` when the
client's own AI composed the answer and it was never transmitted.

Nothing here ever re-queries a database: ``rows`` is the point-in-time snapshot the agent saw.

Public names
------------
``Turn``, ``ToolStep``, ``SqlStep``    pydantic v2 models of the evidence format (v1, v2)
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

Schema versions, and the JSON Schema agreeing with the loader
-------------------------------------------------------------
What version 2 adds for evidence imported from tracing tools (an unknown ``row_count``, sanitised query
text), and the one exception to "a line is valid for ``load_turns`` exactly when it is valid under
:func:`turn_json_schema`", are set out in :mod:`axon_eval.evidence.model`, beside the models.

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

Layout
------
The package is split by job; every name stays importable from here:
:mod:`~axon_eval.evidence.model` (the models and the JSON Schema), :mod:`~axon_eval.evidence.segments`
(segments and trajectory facts); this module reads evidence files: lines, hostile lines, invalid-line
records and byte ranges.
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Iterable, Iterator, Mapping
from itertools import chain, compress
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from .model import (escape_control, EXECUTED_STATUSES, FAILED_STATUSES, LATEST_SCHEMA_VERSION, NonNegativeInt,
    NonNegativeNumber, RFC3339_PATTERN, SCHEMA_VERSION, SCHEMA_VERSIONS, Segments, SQL_STEP_RULES_NOT_IN_SCHEMA,
    SqlStep, Step, StepStatus, ToolStep, Turn, TURN_ID_PATTERN, turn_json_schema)  # noqa: F401 - re-exported
from .segments import facts_from_statuses, Segment, split_questions, split_segments, trajectory_facts, TrajectoryFacts  # noqa: F401 - re-exported

#: The longest line the loaders parse, in bytes, not counting the line end (16 MiB). A longer line is one
#: :class:`InvalidTurn` and is never read whole. The ``max_line_bytes`` keyword of :func:`load_turns`,
#: :func:`iter_turns`, :func:`iter_turn_lines` and :func:`iter_turns_range` overrides it per call; a
#: changed value here applies to later calls in this process (and to worker processes it forks).
MAX_LINE_BYTES = 16 * 1024 * 1024
#: The deepest nesting of arrays and objects a line may have (its own object is level 1, ``steps`` 2,
#: a step 3, ``rows`` 4, a row 5). The ``max_depth`` keyword of the loaders overrides it per call.
MAX_NESTING_DEPTH = 100

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
    """The turns as evidence lines, one JSON object and a newline each."""
    for t in turns:
        yield t.to_json_line() + "\n"


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
