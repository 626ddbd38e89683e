"""OTLP JSON (the OpenTelemetry collector's file exporter format) decoded to plain span records.

Accepted: one ``ExportTraceServiceRequest`` object (``{"resourceSpans": [...]}``), JSON Lines of them
(what the file exporter writes), or a list of them. Attribute values (``AnyValue``: ``stringValue``,
``intValue`` (a string in JSON), ``doubleValue``, ``boolValue``, ``arrayValue``, ``kvlistValue``,
``bytesValue``) become Python values; ids are the hex strings of OTLP JSON; times are
``startTimeUnixNano`` / ``endTimeUnixNano``; status codes may be numbers or ``STATUS_CODE_*`` names.
The conventions (GenAI, database, OpenInference) are read by the format modules, not here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from .spans import ExportFormatError, elapsed_from_nanos

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass
class OtlpSpan:
    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start_ns: int | None
    end_ns: int | None
    status: str                     # ok | error | unset
    status_message: str | None
    attributes: dict[str, Any]
    events: list[dict[str, Any]]    # {"name", "attributes"}
    resource: dict[str, Any]
    scope: str | None
    index: int
    extra: dict[str, Any] = field(default_factory=dict)
    #: ``("status.code", raw)`` when the status code is none of the three OTLP knows (read as ``unset``)
    unmapped_status: tuple[str, Any] | None = None

    @property
    def start(self) -> datetime | None:
        if self.start_ns is None:
            return None
        return _EPOCH + timedelta(microseconds=self.start_ns // 1000)

    @property
    def elapsed_ms(self) -> int | float | None:
        return elapsed_from_nanos(self.start_ns, self.end_ns)


def any_value(v: Any) -> Any:
    """Decode an OTLP JSON ``AnyValue``."""
    if not isinstance(v, dict):
        return v
    if "stringValue" in v:
        return v["stringValue"]
    if "boolValue" in v:
        return bool(v["boolValue"])
    if "intValue" in v:
        try:
            return int(v["intValue"])
        except (TypeError, ValueError):
            return v["intValue"]
    if "doubleValue" in v:
        return float(v["doubleValue"])
    if "arrayValue" in v:
        return [any_value(x) for x in (v["arrayValue"] or {}).get("values", [])]
    if "kvlistValue" in v:
        return {kv.get("key"): any_value(kv.get("value")) for kv in (v["kvlistValue"] or {}).get("values", [])}
    if "bytesValue" in v:
        return v["bytesValue"]
    return None


def attributes(items: Any) -> dict[str, Any]:
    if isinstance(items, dict):  # already a mapping (lenient)
        return dict(items)
    return {kv.get("key"): any_value(kv.get("value")) for kv in items or [] if isinstance(kv, dict)}


def indexed_messages(attrs: dict[str, Any], prefix: str, infix: str = "") -> list[dict[str, Any]] | None:
    """Messages flattened into numbered attributes, in index order: ``<prefix>.<i>.<infix>role`` and
    ``<prefix>.<i>.<infix>content`` (``gen_ai.prompt.0.role``; OpenInference's
    ``llm.input_messages.0.message.role`` with ``infix="message."``); ``None`` when there are none."""
    pattern = re.compile(rf"^{re.escape(prefix)}\.(\d+)\.{re.escape(infix)}(role|content)$")
    found: dict[int, dict[str, Any]] = {}
    for key, value in attrs.items():
        m = pattern.match(key)
        if m:
            found.setdefault(int(m.group(1)), {})[m.group(2)] = value
    return [found[i] for i in sorted(found)] or None


def _nanos(v: Any) -> int | None:
    try:
        return int(v) if v not in (None, "", 0, "0") else None
    except (TypeError, ValueError):
        return None


def _status(st: Any) -> tuple[str, str | None, tuple[str, Any] | None]:
    """``(status, message, unmapped)``: OTLP's three codes (0 unset, 1 ok, 2 error, as numbers or
    ``STATUS_CODE_*`` names); any other code is read as ``unset`` and returned as ``unmapped``."""
    if not isinstance(st, dict):
        return "unset", None, None
    code = st.get("code", 0)
    text = str(code).upper()
    message = st.get("message") or None
    if code == 2 or text in ("2", "STATUS_CODE_ERROR", "ERROR"):
        return "error", message, None
    if code == 1 or text in ("1", "STATUS_CODE_OK", "OK"):
        return "ok", message, None
    if code is None or code == 0 or text in ("0", "", "STATUS_CODE_UNSET", "UNSET"):
        return "unset", message, None
    return "unset", message, ("status.code", code)


def is_otlp(doc: Any) -> bool:
    return isinstance(doc, dict) and ("resourceSpans" in doc or "resource_spans" in doc)


def read_otlp(docs: list[Any]) -> list[OtlpSpan]:
    """Spans of every OTLP JSON document in ``docs`` (a document may also be a list of them)."""
    flat: list[Any] = []
    for d in docs:
        flat.extend(d if isinstance(d, list) else [d])
    if not any(is_otlp(d) for d in flat):
        raise ExportFormatError("not OTLP JSON: no 'resourceSpans' found")
    out: list[OtlpSpan] = []
    for doc in flat:
        if not is_otlp(doc):
            continue
        for rs in doc.get("resourceSpans", doc.get("resource_spans")) or []:
            resource = attributes((rs.get("resource") or {}).get("attributes"))
            for ss in rs.get("scopeSpans", rs.get("scope_spans", rs.get("instrumentationLibrarySpans"))) or []:
                scope = (ss.get("scope") or ss.get("instrumentationLibrary") or {}).get("name")
                for sp in ss.get("spans") or []:
                    status, message, unmapped = _status(sp.get("status"))
                    out.append(OtlpSpan(
                        trace_id=str(sp.get("traceId", sp.get("trace_id", ""))),
                        span_id=str(sp.get("spanId", sp.get("span_id", ""))),
                        parent_id=(sp.get("parentSpanId") or sp.get("parent_span_id") or None),
                        name=str(sp.get("name", "")),
                        start_ns=_nanos(sp.get("startTimeUnixNano")),
                        end_ns=_nanos(sp.get("endTimeUnixNano")),
                        status=status, status_message=message,
                        attributes=attributes(sp.get("attributes")),
                        events=[{"name": e.get("name"), "attributes": attributes(e.get("attributes"))}
                                for e in sp.get("events") or []],
                        resource=resource, scope=scope, index=len(out), unmapped_status=unmapped))
    return out


def exception_of(span: OtlpSpan) -> tuple[str | None, str | None]:
    """``(type, message)`` of the span's ``exception`` event, if any."""
    for e in span.events:
        if e.get("name") == "exception":
            a = e["attributes"]
            return a.get("exception.type"), a.get("exception.message")
    return None, None
