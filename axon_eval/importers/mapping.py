"""Shared mapping rules: the spans of one trace become one evidence turn.

Rules (the same for every format)
---------------------------------
* One trace is one turn. Its root is the one span without a parent; a trace without exactly one root
  cannot become a turn and is reported (never dropped silently).
* ``turn_id``: the root's ``axon_eval.turn_id`` attribute when present (our own exporter writes it), else
  the trace id (``#`` and whitespace replaced by ``-``). ``captured_at``: the root's start (else the
  earliest start in the trace, reported as inferred).
* ``client`` / ``surface`` / ``region``: the first attribute present among the names given on the
  command line, then ``axon_eval.<field>`` and a conventional name (``service.name``, ``surface``,
  ``cloud.region``), looked up on the root, then the resource, then any span; else the default
  (``unknown``), reported as inferred.
* question: the last user message of the root's input (messages of any common shape; a plain string is
  the question; a mapping's ``question`` / ``input`` / ``query`` / ... field is inferred); else the last
  user message of the first model call (inferred); else the trace cannot become a turn.
* answer: the text of the root's output (the last assistant message, or the plain output), ``None``
  when nothing was captured (answer faithfulness is then null).
* steps, in start-time order (file order on ties): a tool span becomes a tool step. A SQL step comes
  from a database span (``db.query.text`` / ``db.statement``) that descends from a tool span, else from a
  tool named by ``--sql-tool`` or whose arguments hold ``sql`` (or a ``query`` that reads as SQL).
  Rows come from the tool's result when it is JSON (a list of objects, or columns plus rows) or a
  Markdown / CSV table (or a Python list of tuples). The full row count comes from
  ``db.response.returned_rows`` or a count field of the result; otherwise it is unknown (``null``, schema
  version 2). A failed statement returned nothing (count 0).
* status: a ``--blocked-when`` rule matching the span, or one below it (a span name or an error type),
  makes it ``blocked`` (inferred). Else the ``axon_eval.step.status`` attribute when it holds one of
  ``ok`` / ``error`` / ``timeout`` / ``blocked`` (our exporter writes it, so its exports read back
  without flags). Else the span status: error when the span or its database span failed, ``timeout``
  when the error type says so (or the error text, inferred).
* unmapped statuses are warnings, never silent: a ``axon_eval.step.status`` value outside the four, or
  a source status the reader does not know (an OTLP status code other than 0/1/2, a Langfuse level, a
  LangSmith run status, a Phoenix status code), is listed in ``report.warnings`` with the span and the
  value. Fallback: the unknown value is ignored: the span status is read as *unset* (not failed) and
  the step's status comes from the remaining signals above (error type, error text, exception event,
  database span, ``--blocked-when``), which is ``ok`` when none says otherwise.
* Model calls, chains and other spans are not steps: they are reported as skipped with the reason.
* A query text with ``?`` outside quotes is sanitised: when the tool's arguments hold a different
  (unsanitised) statement that one is used, else the step is marked ``sanitized`` (schema version 2).
* A turn is written at schema version 1 unless it needs version 2 (an unknown count, a sanitised query).
"""

from __future__ import annotations

import ast
import csv
import io
import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from ..evidence import Turn
from .spans import STEP_STATUS_ATTRIBUTE, SourceSpan, maybe_json

DEFAULT_VALUE = "unknown"
#: attribute names tried for the turn fields after the ones given on the command line
FIELD_ATTRIBUTES: dict[str, tuple[str, ...]] = {
    "client": ("axon_eval.client", "client", "service.name"),
    "surface": ("axon_eval.surface", "surface"),
    "region": ("axon_eval.region", "region", "cloud.region"),
}
_SQL_START = re.compile(r"^\s*(?:--[^\n]*\n\s*)*\(?\s*(select|with|insert|update|delete|create|drop|alter|pragma|"
                        r"show|describe|explain|values|merge|replace|truncate)\b", re.IGNORECASE)
_TIMEOUT = re.compile(r"time[ds]?[\s_-]?out|timed out|deadline exceeded|canceling statement due to statement timeout",
                      re.IGNORECASE)
_COUNT_KEYS = ("row_count", "rowCount", "total_rows", "totalRows", "num_rows", "numRows", "total")
#: the step statuses of the evidence model (``axon_eval.evidence.StepStatus``)
STEP_STATUSES = ("ok", "error", "timeout", "blocked")


# =============================================================================================
# Options and report
# =============================================================================================
@dataclass(frozen=True)
class BlockedRule:
    """``name=VALUE`` (span name), ``error.type=VALUE`` (error type) or a bare ``VALUE`` (either)."""

    field: str  # "name" | "error.type" | "any"
    value: str

    @classmethod
    def parse(cls, expr: str) -> BlockedRule:
        text = expr.strip()
        for prefix in ("name", "error.type"):
            for sep in ("=", ":"):
                if text.startswith(prefix + sep):
                    value = text[len(prefix) + 1:].strip()
                    if not value:
                        raise ValueError(f"--blocked-when {expr!r}: no value after {prefix}{sep}")
                    return cls(prefix, value)
        if not text:
            raise ValueError("--blocked-when needs a span name or an error type")
        return cls("any", text)

    def matches(self, span: SourceSpan) -> bool:
        if self.field in ("name", "any") and span.name == self.value:
            return True
        return self.field in ("error.type", "any") and span.error_type == self.value

    def __str__(self) -> str:
        return self.value if self.field == "any" else f"{self.field}={self.value}"


@dataclass(frozen=True)
class ImportOptions:
    sql_tools: tuple[str, ...] = ()
    blocked_when: tuple[BlockedRule, ...] = ()
    client_attrs: tuple[str, ...] = ()
    surface_attrs: tuple[str, ...] = ()
    region_attrs: tuple[str, ...] = ()
    client_default: str = DEFAULT_VALUE
    surface_default: str = DEFAULT_VALUE
    region_default: str = DEFAULT_VALUE

    @classmethod
    def make(cls, sql_tools: Iterable[str] = (), blocked_when: Iterable[str | BlockedRule] = (),
             **kw: Any) -> ImportOptions:
        rules = tuple(r if isinstance(r, BlockedRule) else BlockedRule.parse(r) for r in blocked_when)
        return cls(sql_tools=tuple(sql_tools), blocked_when=rules,
                   **{k: tuple(v) if k.endswith("_attrs") else v for k, v in kw.items()})


@dataclass
class ImportReport:
    """What an import did; written beside the evidence as ``<out>.import.json``."""

    format: str
    source: str
    traces_read: int = 0
    turns_built: int = 0
    spans_read: int = 0
    spans_used: int = 0
    spans_skipped: int = 0
    skipped_by_reason: dict[str, int] = field(default_factory=dict)
    skipped: list[dict[str, Any]] = field(default_factory=list)
    inferred_by_field: dict[str, int] = field(default_factory=dict)
    inferred: list[dict[str, Any]] = field(default_factory=list)
    not_turns: list[dict[str, Any]] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)
    #: statuses that could not be mapped, one dict each -- ``{trace_id, span_id, name, turn_id, field, value, fallback}``
    warnings: list[dict[str, Any]] = field(default_factory=list)
    attributes_read: dict[str, int] = field(default_factory=dict)
    schema_versions: dict[str, int] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    out: str | None = None

    def skip(self, span: SourceSpan, reason: str) -> None:
        self.spans_skipped += 1
        self.skipped_by_reason[reason] = self.skipped_by_reason.get(reason, 0) + 1
        self.skipped.append({"trace_id": span.trace_id, "span_id": span.span_id, "name": span.name,
                             "kind": span.kind, "reason": reason})

    def infer(self, turn_id: str, field_name: str, how: str) -> None:
        self.inferred_by_field[field_name] = self.inferred_by_field.get(field_name, 0) + 1
        self.inferred.append({"turn_id": turn_id, "field": field_name, "how": how})

    def warn(self, span: SourceSpan, turn_id: str | None, field_name: str, value: Any, fallback: str) -> None:
        self.warnings.append({"trace_id": span.trace_id, "span_id": span.span_id, "name": span.name,
                              "turn_id": turn_id, "field": field_name, "value": value, "fallback": fallback})

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def summary_lines(self) -> list[str]:
        lines = [(f"{self.source} ({self.format}): {self.traces_read} trace(s) read, {self.turns_built} turn(s) built, "
                  f"{len(self.not_turns)} trace(s) could not become a turn"),
                 f"  spans: {self.spans_read} read, {self.spans_used} used, {self.spans_skipped} skipped"]
        for reason, n in sorted(self.skipped_by_reason.items(), key=lambda kv: (-kv[1], kv[0])):
            lines.append(f"    skipped {n}: {reason}")
        if self.inferred_by_field:
            lines.append("  inferred (not read): " + ", ".join(
                f"{k} x{n}" for k, n in sorted(self.inferred_by_field.items(), key=lambda kv: (-kv[1], kv[0]))))
        if self.schema_versions:
            lines.append("  schema versions written: " + ", ".join(
                f"v{k}: {n}" for k, n in sorted(self.schema_versions.items())))
        for nt in self.not_turns:
            lines.append(f"  NOT A TURN {nt['trace_id']}: {nt['reason']}")
        for problem in self.unreadable:
            lines.append(f"  UNREADABLE {problem}")
        for w in self.warnings:
            where = f"turn {w['turn_id']}" if w["turn_id"] else f"trace {w['trace_id']}"
            lines.append(f"  WARNING {where}, span {w['name']!r} ({w['span_id']}): unknown status "
                         f"{w['field']}={w['value']!r}; {w['fallback']}")
        return lines


# =============================================================================================
# Messages: question and answer
# =============================================================================================
_USER_ROLES = {"user", "human", "humanmessage"}
_ASSISTANT_ROLES = {"assistant", "ai", "aimessage", "model", "bot"}
_QUESTION_KEYS = ("question", "input", "query", "prompt", "user_input", "text", "content", "message")
_ANSWER_KEYS = ("answer", "output", "response", "result", "content", "text", "final_answer", "message")


def _content_text(content: Any) -> str | None:
    """Text of a message content: a string, or parts ``[{"type": "text", "content"|"text": ...}]``."""
    content = maybe_json(content)
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict) and part.get("type", "text") in ("text", "output_text", "input_text"):
                t = part.get("content", part.get("text"))
                if isinstance(t, str):
                    texts.append(t)
        return "\n".join(texts) if texts else None
    if isinstance(content, dict):
        return _content_text(content.get("content", content.get("text")))
    return None


def _role(msg: Any) -> tuple[str | None, Any]:
    """``(role, content)`` of one message of any common shape (OpenAI, GenAI parts, LangChain)."""
    if isinstance(msg, list | tuple) and len(msg) == 2 and isinstance(msg[0], str):
        return msg[0].lower(), msg[1]
    if not isinstance(msg, dict):
        return None, None
    if msg.get("lc") and isinstance(msg.get("kwargs"), dict):   # serialised LangChain message
        ids = msg.get("id") or []
        role = str(ids[-1]).lower() if ids else None
        return role, msg["kwargs"].get("content")
    role = msg.get("role") or msg.get("type")
    if isinstance(msg.get("message"), dict):                     # {"message": {"role": ..., "content": ...}}
        return _role(msg["message"])
    content = msg["parts"] if "parts" in msg else msg.get("content", msg.get("text"))
    return (str(role).lower() if role else None), content


def _messages(value: Any) -> list[Any] | None:
    value = maybe_json(value)
    if isinstance(value, dict):
        for key in ("messages", "input_messages", "chat_history"):
            if isinstance(value.get(key), list):
                return _messages(value[key])
        return None
    if isinstance(value, list) and value:
        if all(isinstance(v, list) for v in value) and not all(len(v) == 2 and isinstance(v[0], str) for v in value):
            return [m for batch in value for m in batch]            # LangChain: a batch of message lists
        if all(_role(m)[0] is not None for m in value):
            return value
    return None


def last_message(value: Any, roles: set[str]) -> str | None:
    """The text of the last message of ``value`` (a message list, or one message) whose role is in ``roles``."""
    msgs = _messages(value)
    if not msgs:
        return None
    for msg in reversed(msgs):
        role, content = _role(msg)
        if role in roles:
            text = _content_text(content)
            if text and text.strip():
                return text
    return None


def question_from(value: Any) -> tuple[str | None, str | None]:
    """``(question, how_inferred)``: ``how`` is ``None`` when read as the last user message."""
    value = maybe_json(value)
    text = last_message(value, _USER_ROLES)
    if text:
        return text, None
    if isinstance(value, str) and value.strip():
        return value, None
    if isinstance(value, dict):
        for key in _QUESTION_KEYS:
            v = value.get(key)
            if isinstance(v, str) and v.strip():
                return v, f"the input's {key!r} field"
            if isinstance(v, dict | list):
                inner, how = question_from(v)
                if inner:
                    return inner, f"the input's {key!r} field" + (f" ({how})" if how else "")
    return None, None


def answer_from(value: Any) -> tuple[str | None, str | None]:
    """``(answer, how_inferred)`` from an output (``None`` when it holds no text)."""
    value = maybe_json(value)
    if value is None:
        return None, None
    text = last_message(value, _ASSISTANT_ROLES)
    if text:
        return text, None
    if isinstance(value, str):
        return (value, None) if value.strip() else (None, None)
    if isinstance(value, dict):
        for key in _ANSWER_KEYS:
            v = value.get(key)
            if isinstance(v, str) and v.strip():
                return v, f"the output's {key!r} field"
            if isinstance(v, dict | list):
                inner, how = answer_from(v)
                if inner:
                    return inner, f"the output's {key!r} field" + (f" ({how})" if how else "")
    return None, None


# =============================================================================================
# Results: rows and counts
# =============================================================================================
@dataclass
class ParsedResult:
    columns: list[str]
    rows: list[list[Any]]
    count: int | None          # a full count stated by the result itself
    how: str                   # "json objects", "json columns+rows", "markdown table", ...


def _cell(text: str) -> Any:
    t = text.strip()
    if t == "" or t.upper() == "NULL":
        return None
    if re.fullmatch(r"[+-]?\d+", t):
        return int(t)
    if re.fullmatch(r"[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?", t):
        return float(t)
    return t


def _from_objects(items: list[dict[str, Any]]) -> tuple[list[str], list[list[Any]]]:
    columns: list[str] = []
    for item in items:
        for k in item:
            if k not in columns:
                columns.append(str(k))
    return columns, [[item.get(c) for c in columns] for item in items]


def _count_of(d: dict[str, Any]) -> int | None:
    for key in _COUNT_KEYS:
        v = d.get(key)
        if isinstance(v, int) and not isinstance(v, bool) and v >= 0:
            return v
    return None


def _parse_structured(value: Any) -> ParsedResult | None:
    if isinstance(value, list):
        if not value:
            return ParsedResult([], [], None, "json (empty list)")
        if all(isinstance(v, dict) for v in value):
            cols, rows = _from_objects(value)
            return ParsedResult(cols, rows, None, "json list of objects")
        if all(isinstance(v, list | tuple) for v in value):
            return ParsedResult([], [list(v) for v in value], None, "json list of rows (no column names)")
        return None
    if not isinstance(value, dict):
        return None
    count = _count_of(value)
    cols_raw = value.get("columns", value.get("fields", value.get("headers")))
    rows_raw = value.get("rows", value.get("data", value.get("records", value.get("results", value.get("result")))))
    if isinstance(cols_raw, list) and isinstance(rows_raw, list):
        cols = [c.get("name", str(c)) if isinstance(c, dict) else str(c) for c in cols_raw]
        if all(isinstance(r, dict) for r in rows_raw):
            rows = [[r.get(c) for c in cols] for r in rows_raw]
        elif all(isinstance(r, list | tuple) for r in rows_raw):
            rows = [list(r) for r in rows_raw]
        else:
            return None
        return ParsedResult(cols, rows, count, "json columns + rows")
    if isinstance(rows_raw, list | dict | str):
        inner = _parse_structured(maybe_json(rows_raw)) if not isinstance(rows_raw, str) else parse_result(rows_raw)
        if inner is not None:
            return ParsedResult(inner.columns, inner.rows, count if count is not None else inner.count, inner.how)
    return None


def _parse_markdown(text: str) -> ParsedResult | None:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    for i in range(len(lines) - 1):
        if lines[i].startswith("|") and re.fullmatch(r"\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?", lines[i + 1]):
            def cells(line: str) -> list[str]:
                return [c.strip() for c in line.strip().strip("|").split("|")]
            cols = cells(lines[i])
            rows = []
            for line in lines[i + 2:]:
                if not line.startswith("|"):
                    break
                row = cells(line)
                if len(row) != len(cols):
                    return None
                rows.append([_cell(c) for c in row])
            return ParsedResult(cols, rows, None, "markdown table")
    return None


def _parse_csv(text: str) -> ParsedResult | None:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    if len(lines) < 2 or "|" in lines[0]:
        return None
    try:
        dialect = csv.Sniffer().sniff("\n".join(lines[:20]), delimiters=",\t;")
    except csv.Error:
        return None
    records = list(csv.reader(io.StringIO("\n".join(lines)), dialect))
    width = len(records[0])
    if width < 2 or any(len(r) != width for r in records):
        return None
    return ParsedResult([c.strip() for c in records[0]], [[_cell(c) for c in r] for r in records[1:]], None,
                        "csv table")


def parse_result(value: Any) -> ParsedResult | None:
    """Rows of a tool result: JSON (objects, or columns plus rows), a Markdown or CSV table, or a Python
    list of tuples; ``None`` when it is none of these."""
    if value is None:
        return None
    if not isinstance(value, str):
        return _parse_structured(value)
    text = value.strip()
    if text[:1] in "[{":
        try:
            return _parse_structured(json.loads(text))
        except ValueError:
            if text.startswith("[("):
                try:
                    lit = ast.literal_eval(text)
                except (ValueError, SyntaxError):
                    return None
                if isinstance(lit, list) and all(isinstance(r, tuple) for r in lit):
                    return ParsedResult([], [list(r) for r in lit], None, "python list of tuples (no column names)")
            return None
    return _parse_markdown(text) or _parse_csv(text)


# =============================================================================================
# SQL
# =============================================================================================
def looks_sanitised(sql: str) -> bool:
    """True when ``?`` stands outside quotes and comments (literals replaced by placeholders)."""
    stripped = re.sub(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|--[^\n]*|/\*.*?\*/", " ", sql, flags=re.DOTALL)
    return "?" in stripped


def sql_in_args(args: Any, named_sql_tool: bool) -> tuple[str | None, str | None]:
    """``(sql, key)`` from a tool call's arguments: ``sql``, a ``query`` that reads as SQL, or (for a tool
    named by ``--sql-tool``) the only string argument / the plain string."""
    if isinstance(args, str):
        if named_sql_tool or _SQL_START.match(args):
            return (args, "<arguments>") if args.strip() else (None, None)
        return None, None
    if not isinstance(args, dict):
        return None, None
    for key in ("sql", "sql_query", "statement", "query"):
        v = args.get(key)
        if isinstance(v, str) and v.strip() and (key != "query" or named_sql_tool or _SQL_START.match(v)):
            return v, key
    if named_sql_tool:
        strings = [(k, v) for k, v in args.items() if isinstance(v, str) and v.strip()]
        if len(strings) == 1:
            return strings[0][1], strings[0][0]
    return None, None


# =============================================================================================
# One trace -> one turn
# =============================================================================================
class NotATurn(Exception):
    """The trace cannot become a turn (the message says why)."""


def _safe_id(text: str) -> str:
    return re.sub(r"[#\s]+", "-", text.strip()) or "trace"


def declared_status(span: SourceSpan) -> str | None:
    """The span's ``axon_eval.step.status`` when it is one of :data:`STEP_STATUSES` (any case), else ``None``
    (absent, or a value :func:`status_warnings` reports)."""
    raw = span.attributes.get(STEP_STATUS_ATTRIBUTE)
    value = str(raw).strip().lower() if raw is not None else None
    return value if value in STEP_STATUSES else None


def status_warnings(span: SourceSpan) -> list[tuple[str, Any]]:
    """``(field, value)`` of every status on ``span`` that could not be mapped: the reader's
    :attr:`~.spans.SourceSpan.unmapped_status` and a ``axon_eval.step.status`` outside :data:`STEP_STATUSES`."""
    out = [span.unmapped_status] if span.unmapped_status else []
    raw = span.attributes.get(STEP_STATUS_ATTRIBUTE)
    if raw is not None and declared_status(span) is None:
        out.append((STEP_STATUS_ATTRIBUTE, raw))
    return out


def _lookup(names: Sequence[str], places: Sequence[dict[str, Any]]) -> tuple[Any, str | None]:
    for name in names:
        for place in places:
            v = place.get(name)
            if v is not None and str(v).strip():
                return v, name
    return None, None


class _TraceMapper:
    def __init__(self, trace_id: str, spans: list[SourceSpan], options: ImportOptions, report: ImportReport,
                 trace_meta: dict[str, Any] | None = None) -> None:
        self.trace_id = trace_id
        self.spans = spans
        self.opts = options
        self.report = report
        self.meta = trace_meta or {}
        self.by_id = {s.span_id: s for s in spans}
        self.children: dict[str, list[SourceSpan]] = {}
        for s in spans:
            if s.parent_id is not None:
                self.children.setdefault(s.parent_id, []).append(s)
        self.inferred: list[tuple[str, str]] = []
        self.step_status: dict[str, str] = {}   # span id -> the status of the step it is part of
        self.used: set[str] = set()
        self.skips: list[tuple[SourceSpan, str]] = []

    # -- tree helpers ---------------------------------------------------------------------------
    def descendants(self, span: SourceSpan) -> list[SourceSpan]:
        out, stack = [], list(self.children.get(span.span_id, []))
        while stack:
            s = stack.pop()
            out.append(s)
            stack.extend(self.children.get(s.span_id, []))
        return out

    def tool_ancestor(self, span: SourceSpan, root: SourceSpan) -> SourceSpan | None:
        seen = set()
        p = self.by_id.get(span.parent_id) if span.parent_id else None
        while p is not None and p.span_id not in seen and p is not root:
            if p.kind == "tool":
                return p
            seen.add(p.span_id)
            p = self.by_id.get(p.parent_id) if p.parent_id else None
        return None

    def blocked(self, span: SourceSpan) -> BlockedRule | None:
        for s in [span, *self.descendants(span)]:
            for rule in self.opts.blocked_when:
                if rule.matches(s):
                    self.used.add(s.span_id)
                    return rule
        return None

    def infer(self, field_name: str, how: str) -> None:
        self.inferred.append((field_name, how))

    # -- the turn -------------------------------------------------------------------------------
    def root(self) -> SourceSpan:
        roots = [s for s in self.spans if s.parent_id is None or s.parent_id == ""]
        if len(roots) == 1:
            return roots[0]
        if not roots:
            missing = sorted({s.parent_id for s in self.spans if s.parent_id not in self.by_id})
            raise NotATurn(f"no root span: every span has a parent and {missing[:3]} are not in the export")
        raise NotATurn(f"{len(roots)} root spans ({', '.join(repr(r.name) for r in roots[:4])}); expected one")

    def build(self) -> Turn:
        root = self.root()
        self.used.add(root.span_id)
        places = [root.attributes, self.meta, root.resource] + [s.attributes for s in self.spans] + \
            [s.resource for s in self.spans]
        tid_attr, _ = _lookup(["axon_eval.turn_id"], [root.attributes, self.meta])
        turn_id = _safe_id(str(tid_attr)) if tid_attr else _safe_id(self.trace_id)
        self.turn_id = turn_id
        captured = root.start
        if captured is None:
            starts = [s.start for s in self.spans if s.start is not None]
            if not starts:
                raise NotATurn("no span carries a start time, so the turn has no captured_at")
            captured = min(starts)
            self.infer("captured_at", "the earliest span start (the root has none)")
        fields: dict[str, str] = {}
        for name in ("client", "surface", "region"):
            names = list(getattr(self.opts, f"{name}_attrs")) + list(FIELD_ATTRIBUTES[name])
            value, _ = _lookup(names, places)
            if value is None:
                fields[name] = getattr(self.opts, f"{name}_default")
                self.infer(name, f"default {fields[name]!r} (none of {names} present)")
            else:
                fields[name] = str(value)
        question, how = question_from(root.input)
        if question is None:
            for s in sorted(self.spans, key=lambda s: (s.start or datetime.max.replace(tzinfo=captured.tzinfo), s.index)):
                if s.kind == "llm" and s is not root:
                    q = last_message(s.input, _USER_ROLES)
                    if q:
                        question, how = q, f"the last user message of the first model call {s.name!r}"
                        break
        if not question or not question.strip():
            raise NotATurn("no user question: the root input holds no user message and no model call has one")
        if how:
            self.infer("question", how)
        answer, how = answer_from(root.output)
        if answer is not None and how:
            self.infer("answer", how)
        if answer is None and root.output not in (None, "", {}, []):
            self.infer("answer", "null: the root output holds no text")
        steps = self.steps(root)
        segments = maybe_json(root.attributes.get("axon_eval.segments"))
        needs_v2 = any(s.get("kind") == "sql" and (s.get("sanitized") or (s["status"] == "ok" and s["row_count"] is None))
                       for s in steps)
        data = {"schema_version": 2 if needs_v2 else 1, "turn_id": turn_id,
                "captured_at": captured.isoformat(), **fields, "question": question, "answer": answer,
                "steps": steps}
        if isinstance(segments, list) and segments:
            data["segments"] = segments
        try:
            return Turn.model_validate(data)
        except ValidationError as exc:
            err = exc.errors()[0]
            raise NotATurn(f"the mapped turn does not validate: {'.'.join(map(str, err['loc']))}: {err['msg']}") from None

    # -- steps ----------------------------------------------------------------------------------
    def steps(self, root: SourceSpan) -> list[dict[str, Any]]:
        far = datetime.max.replace(tzinfo=root.start.tzinfo) if root.start else None
        ordered = sorted((s for s in self.spans if s is not root),
                         key=lambda s: (s.start or far or datetime.max, s.index))
        db_under: dict[str, list[SourceSpan]] = {}
        for s in ordered:
            if s.kind == "db" and s.query:
                anc = self.tool_ancestor(s, root)
                if anc is not None:
                    db_under.setdefault(anc.span_id, []).append(s)
        out: list[dict[str, Any]] = []
        for s in ordered:
            if s.span_id in self.used:
                continue
            if s.kind == "tool":
                outer = self.tool_ancestor(s, root)
                if outer is not None:
                    self.skips.append((s, "tool span inside another tool span (that tool is the step)"))
                    continue
                self.used.add(s.span_id)
                out.extend(self.tool_step(s, db_under.get(s.span_id, [])))
            elif s.kind == "db":
                if not s.query:
                    self.skips.append((s, "database span without query text"))
                    continue
                if self.tool_ancestor(s, root) is not None:
                    continue  # handled with its tool span
                self.used.add(s.span_id)
                out.append(self.sql_step(s.query, s, None, s, "a database span outside any tool span"))
            elif s.kind == "llm":
                self.skips.append((s, "model call (not a step)"))
            elif s.kind in ("agent", "chain"):
                self.skips.append((s, f"{s.kind} span (a container, not a step)"))
            else:
                self.skips.append((s, "span with neither tool nor database attributes"))
        self.skips = [(s, r) for s, r in self.skips if s.span_id not in self.used]
        return out

    def status_of(self, spans: Sequence[SourceSpan], top: SourceSpan) -> tuple[str, str | None]:
        """Status and error text of a step from its spans (the top span and its database spans); the
        order of the signals is the module's status rule."""
        status, error = self._status_of(spans, top)
        for s in spans:
            self.step_status[s.span_id] = status
        return status, error

    def _status_of(self, spans: Sequence[SourceSpan], top: SourceSpan) -> tuple[str, str | None]:
        rule = self.blocked(top)
        failed = [s for s in spans if s.status == "error"]
        error = next((s.error for s in failed if s.error), None) or next((s.error for s in spans if s.error), None)
        if rule is not None:
            self.infer("status", f"blocked: matched --blocked-when {rule}")
            return "blocked", error
        declared = next((d for d in map(declared_status, spans) if d is not None), None)
        if declared is not None:
            if declared == "ok":
                return "ok", None
            if declared == "error" and error is None:
                etype = next((s.error_type for s in spans if s.error_type), None)
                error = etype if etype and etype != "_OTHER" else None
            return declared, error
        if not failed:
            return "ok", None
        etype = next((s.error_type for s in failed if s.error_type), None)
        if etype and _TIMEOUT.search(etype):
            return "timeout", error
        if error and _TIMEOUT.search(error):
            self.infer("status", "timeout: from the error text")
            return "timeout", error
        if error is None:
            error = etype if etype and etype != "_OTHER" else None
        return "error", error

    def tool_step(self, span: SourceSpan, dbs: list[SourceSpan]) -> list[dict[str, Any]]:
        named = (span.tool_name or span.name) in self.opts.sql_tools
        sql, key = sql_in_args(span.args, named)
        if dbs:
            self.used.update(d.span_id for d in dbs)
            result_owner = span if len(dbs) == 1 else None
            if len(dbs) > 1:
                self.infer("rows", f"tool {span.tool_name or span.name!r} ran {len(dbs)} statements: "
                           "its result is not split between them (rows unknown)")
            return [self.sql_step(d.query or "", d, result_owner, span, None, args_sql=sql if len(dbs) == 1 else None)
                    for d in dbs]
        if sql is not None:
            why = None if key == "sql" else (f"--sql-tool {span.tool_name or span.name!r}" if named and key != "query"
                                               else f"the arguments' {key!r} reads as SQL")
            return [self.sql_step(sql, None, span, span, why)]
        if named:
            self.infer("steps", f"--sql-tool {span.tool_name or span.name!r}: no SQL in its arguments, kept as a tool step")
        status, error = self.status_of([span], span)
        args = maybe_json(span.args)
        if args is None:
            args = {}
        elif not isinstance(args, dict):
            self.infer("args", f"tool {span.tool_name or span.name!r}: non-object arguments kept under 'input'")
            args = {"input": args}
        return [{"kind": "tool", "name": span.tool_name or span.name, "status": status, "args": args,
                 "output": maybe_json(span.result), "error": error if status != "ok" else None,
                 "elapsed_ms": span.elapsed_ms}]

    def sql_step(self, sql: str, db: SourceSpan | None, result_span: SourceSpan | None, top: SourceSpan,
                 why: str | None, args_sql: str | None = None) -> dict[str, Any]:
        sanitized = False
        if db is not None and looks_sanitised(sql):
            if args_sql and args_sql.strip() != sql.strip() and not looks_sanitised(args_sql):
                sql = args_sql
                self.infer("sql", "the tool arguments' statement (the database span's text is sanitised)")
            else:
                sanitized = True
        if why:
            self.infer("sql", why)
        spans = [top] + ([db] if db is not None and db is not top else [])
        status, error = self.status_of(spans, top)
        columns: list[str] = []
        rows: list[list[Any]] = []
        row_count: int | None = 0
        if status == "ok":
            parsed = parse_result(result_span.result) if result_span is not None else None
            if parsed is not None:
                columns, rows = parsed.columns, parsed.rows
                if parsed.how not in ("json columns + rows", "json list of objects", "json (empty list)"):
                    self.infer("rows", f"parsed from a {parsed.how}")
                if columns and any(len(r) != len(columns) for r in rows):
                    self.infer("rows", "dropped: rows do not match the columns")
                    columns, rows = [], []
            elif result_span is not None and result_span.result not in (None, ""):
                self.infer("rows", "unknown: the tool result is not a table (JSON, Markdown or CSV)")
            count = db.returned_rows if db is not None and db.returned_rows is not None else None
            if count is None and parsed is not None and parsed.count is not None:
                count = parsed.count
                self.infer("row_count", "a count field of the tool result")
            if count is not None and count < len(rows):
                self.infer("row_count", f"unknown: the stated count {count} is below the {len(rows)} rows captured")
                count = None
            row_count = count
            if count is None:
                self.infer("row_count", "unknown (null): no db.response.returned_rows or count in the result")
        return {"kind": "sql", "sql": sql, "status": status, "error": error if status != "ok" else None,
                "columns": columns, "rows": rows, "row_count": row_count,
                "elapsed_ms": (db.elapsed_ms if db is not None and db.elapsed_ms is not None else top.elapsed_ms),
                **({"sanitized": True} if sanitized else {})}


def build_turns(spans: Iterable[SourceSpan], options: ImportOptions, report: ImportReport,
                trace_meta: dict[str, dict[str, Any]] | None = None) -> list[Turn]:
    """Group spans by trace, map each trace to a turn and fill ``report``; turns in trace order of first
    appearance (turn ids made unique with ``-2``, ``-3``, ... when two traces map to the same id)."""
    by_trace: dict[str, list[SourceSpan]] = {}
    for s in spans:
        by_trace.setdefault(s.trace_id, []).append(s)
        s.take(s.attributes, STEP_STATUS_ATTRIBUTE)  # recorded in attributes_read when present
        report.spans_read += 1
        for name in s.read:
            report.attributes_read[name] = report.attributes_read.get(name, 0) + 1
    report.traces_read = len(by_trace)
    turns: list[Turn] = []
    seen: Counter[str] = Counter()
    for trace_id, group in by_trace.items():
        mapper = _TraceMapper(trace_id, group, options, report, (trace_meta or {}).get(trace_id))
        try:
            turn = mapper.build()
        except NotATurn as exc:
            report.not_turns.append({"trace_id": trace_id, "reason": str(exc), "spans": len(group),
                                     "span_names": [s.name for s in group[:8]]})
            for s in group:
                report.skip(s, "its trace could not become a turn")
            _warn_statuses(report, group, mapper, None)
            continue
        seen[turn.turn_id] += 1
        if seen[turn.turn_id] > 1:
            new_id = f"{turn.turn_id}-{seen[turn.turn_id]}"
            mapper.infer("turn_id", f"{new_id}: {turn.turn_id!r} was already taken by another trace")
            turn = turn.model_copy(update={"turn_id": new_id})
        turns.append(turn)
        report.turns_built += 1
        report.schema_versions[str(turn.schema_version)] = report.schema_versions.get(str(turn.schema_version), 0) + 1
        report.spans_used += len(mapper.used)
        for s, reason in mapper.skips:
            report.skip(s, reason)
        unaccounted = [s for s in group if s.span_id not in mapper.used and all(s is not k for k, _ in mapper.skips)]
        for s in unaccounted:
            report.skip(s, "not reachable as a step")
        for field_name, how in mapper.inferred:
            report.infer(turn.turn_id, field_name, how)
        _warn_statuses(report, group, mapper, turn.turn_id)
    return turns


def _warn_statuses(report: ImportReport, group: Sequence[SourceSpan], mapper: _TraceMapper,
                   turn_id: str | None) -> None:
    """One warning per status of ``group`` that could not be mapped, saying what was done instead."""
    for s in group:
        for field_name, value in status_warnings(s):
            step = mapper.step_status.get(s.span_id)
            if turn_id is None:
                fallback = "not used: its trace could not become a turn"
            elif step is None:
                fallback = "not used: the span is not a step"
            else:
                fallback = (f"ignored (the span read as unset, not failed); the step's status {step!r} comes "
                            "from its error type, error text, database span and --blocked-when rules")
            report.warn(s, turn_id, field_name, value, fallback)
