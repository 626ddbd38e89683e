"""OpenInference (Arize Phoenix): Phoenix's span export JSON, or OTLP JSON with OpenInference attributes.

Phoenix span JSON: a list of spans, ``{"data": [...]}`` (the REST API) or JSON Lines; each span has
``name``, ``context.trace_id`` / ``context.span_id`` (``0x`` prefixes are dropped), ``parent_id`` (or
``parent_span_id``), ``start_time`` / ``end_time`` (ISO 8601), ``status_code`` (``OK`` / ``ERROR`` /
``UNSET``; another value is read as ``UNSET`` and warned about in the import report) / ``status_message``
(or ``status.status_code`` / ``status.description``), ``attributes`` (flattened dotted keys or nested)
and ``events``.

Attribute names read: ``openinference.span.kind`` (``TOOL`` -> tool, ``LLM`` -> model call, ``AGENT``
-> agent, ``CHAIN`` -> container; others are not steps), ``tool.name``, ``input.value`` (a tool call's
arguments; ``tool.parameters`` is the tool's definition and is not read), ``output.value`` (its result),
``llm.input_messages.N.message.role|content`` / ``llm.output_messages.N.message.content``,
``session.id``, ``metadata`` (JSON: turn fields), ``exception`` events (``exception.type``,
``exception.message``); database spans of other instrumentations (``db.query.text`` / ``db.statement``,
``db.response.returned_rows``) are read as in :mod:`.otel`.
"""

from __future__ import annotations

from typing import Any

from .otlp import (
    OtlpSpan,
    attributes,
    exception_of,
    indexed_messages,
    is_otlp,
    read_otlp,
)
from .spans import (
    ExportFormatError,
    SourceSpan,
    elapsed_between,
    flatten,
    maybe_json,
    parse_time,
)

_KINDS = {"TOOL": "tool", "LLM": "llm", "AGENT": "agent", "CHAIN": "chain"}
#: Phoenix ``status_code`` (with or without ``STATUS_CODE_``); any other value is read as ``unset`` and warned
_PHOENIX_STATUS = {"OK": "ok", "ERROR": "error", "UNSET": "unset", "NONE": "unset", "": "unset"}


def _hex(v: Any) -> str:
    text = str(v or "")
    return text[2:] if text.lower().startswith("0x") else text


def _source(span: OtlpSpan) -> SourceSpan:
    a = span.attributes
    meta = maybe_json(a.get("metadata"))
    if isinstance(meta, dict):
        a = {**{k: v for k, v in flatten(meta).items() if k not in a}, **a}
    src = SourceSpan(trace_id=span.trace_id, span_id=span.span_id, parent_id=span.parent_id, name=span.name,
                     kind="other", index=span.index, start=span.start,
                     elapsed_ms=span.extra.get("elapsed_ms", span.elapsed_ms), status=span.status,
                     unmapped_status=span.unmapped_status, error=span.status_message, attributes=a,
                     resource=span.resource)
    kind = str(src.take(a, "openinference.span.kind") or span.extra.get("span_kind") or "").upper()
    src.take(a, "session.id")
    query = src.take(a, "db.query.text", "db.statement")
    if query is not None and kind != "TOOL":
        src.kind, src.query = "db", str(query)
        rows = src.take(a, "db.response.returned_rows")
        if isinstance(rows, int) and not isinstance(rows, bool) and rows >= 0:
            src.returned_rows = rows
    else:
        src.kind = _KINDS.get(kind, "chain" if span.parent_id is None else "other")
    if src.kind == "tool":
        src.tool_name = str(src.take(a, "tool.name") or span.name)
        src.args = maybe_json(src.take(a, "input.value"))
        src.result = src.take(a, "output.value")
    else:
        value = src.take(a, "input.value")
        flat_in = indexed_messages(a, "llm.input_messages", "message.")
        if flat_in:
            src.read.append("llm.input_messages.N.message.role|content")
        src.input = maybe_json(value) if value is not None else flat_in
        if src.kind == "llm" and flat_in:
            src.input = flat_in
        out = src.take(a, "output.value")
        flat_out = indexed_messages(a, "llm.output_messages", "message.")
        if flat_out:
            src.read.append("llm.output_messages.N.message.role|content")
        src.output = maybe_json(out) if out is not None else (
            [{"role": m.get("role", "assistant"), "content": m.get("content")} for m in flat_out] if flat_out else None)
    src.error_type = src.take(a, "error.type")
    etype, emsg = exception_of(span)
    if etype or emsg:
        src.read.append("event exception")
        src.error_type = src.error_type or etype
        src.error = src.error or emsg
    return src


def _phoenix_spans(docs: list[Any]) -> list[OtlpSpan]:
    items: list[Any] = []
    for d in docs:
        if isinstance(d, list):
            items.extend(d)
        elif isinstance(d, dict) and isinstance(d.get("data"), list):
            items.extend(d["data"])
        elif isinstance(d, dict) and isinstance(d.get("spans"), list):
            items.extend(d["spans"])
        else:
            items.append(d)
    out: list[OtlpSpan] = []
    for sp in items:
        if not isinstance(sp, dict) or not isinstance(sp.get("context"), dict):
            raise ExportFormatError("not a Phoenix span export: a span without 'context' (trace_id, span_id)")
        st = sp.get("status") if isinstance(sp.get("status"), dict) else {}
        raw_code = sp.get("status_code", st.get("status_code", "UNSET"))
        code = str(raw_code).upper()
        status = _PHOENIX_STATUS.get(code.removeprefix("STATUS_CODE_"))
        message = sp.get("status_message", st.get("description")) or None
        attrs = sp.get("attributes") or {}
        attrs = flatten(attrs) if isinstance(attrs, dict) else attributes(attrs)
        start, end = parse_time(sp.get("start_time")), parse_time(sp.get("end_time"))
        parent = sp.get("parent_id", sp.get("parent_span_id"))
        events = [{"name": e.get("name"), "attributes": flatten(e.get("attributes") or {})}
                  for e in sp.get("events") or [] if isinstance(e, dict)]
        span = OtlpSpan(trace_id=_hex(sp["context"].get("trace_id")), span_id=_hex(sp["context"].get("span_id")),
                        parent_id=_hex(parent) or None, name=str(sp.get("name", "")), start_ns=None, end_ns=None,
                        status=status or "unset", status_message=message, attributes=attrs, events=events,
                        resource={}, scope=None,
                        index=len(out), extra={"span_kind": sp.get("span_kind"),
                                               "elapsed_ms": elapsed_between(start, end), "start": start},
                        unmapped_status=None if status else ("status_code", raw_code))
        out.append(span)
    return out


def read(docs: list[Any]) -> tuple[list[SourceSpan], dict[str, dict[str, Any]]]:
    flat = [x for d in docs for x in (d if isinstance(d, list) else [d])]
    if any(is_otlp(d) for d in flat):
        return [_source(s) for s in read_otlp(docs)], {}
    spans = _phoenix_spans(docs)
    out = []
    for s in spans:
        src = _source(s)
        src.start = s.extra["start"]
        out.append(src)
    return out, {}
