"""The neutral span every format reader produces, and the small decoders the readers share.

A reader (``otel``, ``openinference``, ``langfuse``, ``langsmith``) turns its export into
:class:`SourceSpan` records: ids, name, times, a coarse ``kind`` and the handful of facts the mapping
(:mod:`.mapping`) needs (tool name, call arguments, result, database query text, returned rows, input
and output). ``read`` lists the source attribute names a span's facts came from, for the import report.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

#: ``kind`` values: an agent/root invocation, a model call, a tool call, a database call, a container.
SPAN_KINDS = ("agent", "llm", "tool", "db", "chain", "other")
#: The span attribute holding a step's full evidence status (``ok`` / ``error`` / ``timeout`` / ``blocked``):
#: written by our exporter (:mod:`.export_otel`) and read by every format without a flag (:mod:`.mapping`).
STEP_STATUS_ATTRIBUTE = "axon_eval.step.status"


@dataclass
class SourceSpan:
    """One span (OpenTelemetry / OpenInference), observation (Langfuse) or run (LangSmith)."""

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    kind: str
    index: int                          # position in the export (ties of start time keep file order)
    start: datetime | None = None
    elapsed_ms: int | float | None = None
    status: str = "unset"               # ok | error | unset
    #: ``(source field, raw value)`` of a span status the reader does not know (read as ``unset``); the
    #: import report warns about it (:mod:`.mapping`)
    unmapped_status: tuple[str, Any] | None = None
    error: str | None = None            # error message
    error_type: str | None = None       # error.type, exception type, ...
    tool_name: str | None = None
    args: Any = None                    # the call's arguments (decoded when JSON)
    result: Any = None                  # what the tool returned (as captured)
    query: str | None = None            # database query text
    returned_rows: int | None = None    # db.response.returned_rows
    input: Any = None                   # input value / messages (root and model calls)
    output: Any = None                  # output value / messages
    attributes: dict[str, Any] = field(default_factory=dict)   # span attributes / metadata, flattened
    resource: dict[str, Any] = field(default_factory=dict)     # resource attributes (OTLP)
    read: list[str] = field(default_factory=list)              # source names the facts came from

    def take(self, attrs: dict[str, Any], *names: str) -> Any:
        """The first present attribute of ``names`` (recorded in :attr:`read`), else ``None``."""
        for name in names:
            if name in attrs and attrs[name] is not None:
                self.read.append(name)
                return attrs[name]
        return None


class ExportFormatError(ValueError):
    """The file is not an export of the named format at all (nothing could be read)."""


def maybe_json(value: Any) -> Any:
    """``value`` decoded when it is a string holding a JSON object or array, else unchanged."""
    if isinstance(value, str):
        text = value.strip()
        if text[:1] in "[{" and text[-1:] in "]}":
            try:
                return json.loads(text)
            except ValueError:
                return value
    return value


def parse_time(value: Any) -> datetime | None:
    """ISO 8601 text (``Z`` or offset; naive means UTC), or epoch seconds / milliseconds / nanoseconds."""
    if value is None or value == "":
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        v = float(value)
        seconds = v / 1e9 if v > 1e17 else v / 1e3 if v > 1e11 else v
        return datetime.fromtimestamp(seconds, tz=UTC)
    if isinstance(value, str):
        text = value.strip()
        if text.isdigit():
            return parse_time(int(text))
        if text.endswith("Z"):
            text = text[:-1] + "+00:00"
        # Python < 3.11 cannot read more than 6 decimals: cut nanoseconds
        if "." in text:
            head, _, rest = text.partition(".")
            digits = len(rest) - len(rest.lstrip("0123456789"))
            tail = rest[digits:]
            text = f"{head}.{rest[:min(digits, 6)]}{tail}"
        try:
            dt = datetime.fromisoformat(text)
        except ValueError:
            return None
        return dt if dt.tzinfo else dt.replace(tzinfo=UTC)
    return None


def elapsed_between(start: datetime | None, end: datetime | None) -> int | float | None:
    """Milliseconds between two instants (an ``int`` when whole), ``None`` when either is missing."""
    if start is None or end is None or end < start:
        return None
    micro = (end - start) // timedelta(microseconds=1)
    return micro // 1000 if micro % 1000 == 0 else micro / 1000


def elapsed_from_nanos(start_ns: int | None, end_ns: int | None) -> int | float | None:
    """Milliseconds between two epoch-nanosecond times.

    ``None`` when either is missing or the end precedes the start.
    """
    if start_ns is None or end_ns is None or end_ns < start_ns:
        return None
    d = end_ns - start_ns
    return d // 1_000_000 if d % 1_000_000 == 0 else d / 1e6


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """Nested mappings as dotted keys (``{"db": {"query": {"text": q}}}`` -> ``{"db.query.text": q}``);
    lists are kept as values."""
    out: dict[str, Any] = {}
    if isinstance(value, dict):
        for k, v in value.items():
            key = f"{prefix}.{k}" if prefix else str(k)
            if isinstance(v, dict) and v:
                out.update(flatten(v, key))
            else:
                out[key] = v
    elif prefix:
        out[prefix] = value
    return out


def read_json_documents(text: str) -> tuple[list[Any], list[str]]:
    """One JSON document, or JSON Lines (one document per non-blank line). Returns ``(documents,
    problems)``: a line that is not JSON is a problem naming the line, and the other lines still count."""
    stripped = text.strip()
    if not stripped:
        return [], []
    try:
        return [json.loads(stripped)], []
    except ValueError:
        pass
    docs: list[Any] = []
    problems: list[str] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            docs.append(json.loads(line))
        except ValueError as exc:
            problems.append(f"line {lineno}: not valid JSON ({exc.msg} at column {exc.colno})")
    if not docs and problems:
        raise ExportFormatError(f"not JSON or JSON Lines: {problems[0]}")
    return docs, problems
