"""Langfuse: the JSON of the observations API (v2; v1 reads the same), optionally with the traces.

Accepted: ``{"data": [observation, ...], "meta": {...}}`` (an API page), a list of observations, JSON
Lines of either, or ``{"traces": [...], "observations": [...]}``. Observation fields read: ``id``,
``traceId``, ``parentObservationId`` (null on the root), ``type`` (``TOOL`` -> tool; ``GENERATION`` ->
model call; ``AGENT`` -> agent; ``SPAN`` / ``CHAIN`` / ``EVENT`` ... are containers unless their
input holds SQL or their name is given by ``--sql-tool``), ``name``, ``startTime`` / ``endTime``,
``input`` / ``output`` (strings holding JSON are decoded), ``level`` (``ERROR`` is a failure; a level
other than ``DEBUG`` / ``DEFAULT`` / ``WARNING`` / ``ERROR`` is read as unset and warned about),
``statusMessage`` (the error text), ``metadata`` (turn fields; ``error.type``; database attributes of
OpenTelemetry-ingested spans: ``db.query.text`` / ``db.statement``, ``db.response.returned_rows``).
Trace fields (when the traces are given): ``id``, ``timestamp``, ``input`` / ``output`` (the turn's
question and answer take precedence over the root observation's), ``sessionId``, ``metadata``.
"""

from __future__ import annotations

from typing import Any

from .spans import (
    ExportFormatError,
    SourceSpan,
    elapsed_between,
    flatten,
    maybe_json,
    parse_time,
)

_KINDS = {"TOOL": "tool", "GENERATION": "llm", "AGENT": "agent", "EMBEDDING": "llm"}
#: Langfuse observation levels; only ``ERROR`` is a failure. Another level is read as not failed and warned
#: about in the import report.
LEVELS = ("DEBUG", "DEFAULT", "WARNING", "ERROR")


def _metadata(obs: dict[str, Any]) -> dict[str, Any]:
    meta = maybe_json(obs.get("metadata"))
    if isinstance(meta, str):
        meta = maybe_json(meta)
    return flatten(meta) if isinstance(meta, dict) else {}


def _collect(docs: list[Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    observations: list[dict[str, Any]] = []
    traces: list[dict[str, Any]] = []
    for d in docs:
        for item in (d if isinstance(d, list) else [d]):
            if not isinstance(item, dict):
                continue
            if isinstance(item.get("observations"), list) or isinstance(item.get("traces"), list):
                observations.extend(item.get("observations") or [])
                traces.extend(item.get("traces") or [])
            elif isinstance(item.get("data"), list):
                for o in item["data"]:
                    (observations if isinstance(o, dict) and "traceId" in o else traces).append(o)
            elif "traceId" in item:
                observations.append(item)
            elif "timestamp" in item and "id" in item:
                traces.append(item)
    if not observations:
        raise ExportFormatError("not a Langfuse observations export: no observation with a 'traceId'")
    return observations, traces


def read(docs: list[Any]) -> tuple[list[SourceSpan], dict[str, dict[str, Any]]]:
    observations, traces = _collect(docs)
    trace_by_id = {str(t.get("id")): t for t in traces if isinstance(t, dict)}
    out: list[SourceSpan] = []
    for i, obs in enumerate(observations):
        meta = _metadata(obs)
        start, end = parse_time(obs.get("startTime")), parse_time(obs.get("endTime"))
        level = str(obs.get("level") or "DEFAULT").upper()
        typ = str(obs.get("type") or "SPAN").upper()
        src = SourceSpan(trace_id=str(obs.get("traceId")), span_id=str(obs.get("id")),
                         parent_id=obs.get("parentObservationId") or None, name=str(obs.get("name") or typ.lower()),
                         kind=_KINDS.get(typ, "chain" if not obs.get("parentObservationId") else "other"), index=i,
                         start=start, elapsed_ms=elapsed_between(start, end),
                         status="error" if level == "ERROR" else "ok" if level in LEVELS else "unset",
                         unmapped_status=None if level in LEVELS else ("level", obs.get("level")),
                         error=obs.get("statusMessage") if level == "ERROR" else None,
                         attributes=meta)
        src.read.extend(["type", "startTime", "level"])
        if level == "ERROR":
            src.read.append("statusMessage")
        src.error_type = src.take(meta, "error.type")
        inp, outp = maybe_json(obs.get("input")), maybe_json(obs.get("output"))
        query = src.take(meta, "db.query.text", "db.statement", "attributes.db.query.text", "attributes.db.statement")
        if query is not None:
            src.kind, src.query = "db", str(query)
            rows = src.take(meta, "db.response.returned_rows", "attributes.db.response.returned_rows")
            if isinstance(rows, int) and not isinstance(rows, bool):
                src.returned_rows = rows
        elif src.kind == "tool" or (typ in ("SPAN", "CHAIN") and obs.get("parentObservationId")
                                    and isinstance(inp, dict) and ("sql" in inp or "query" in inp)):
            src.kind = "tool"
            src.tool_name = src.name
            src.args, src.result = inp, obs.get("output")
            src.read.extend(["input", "output"])
        else:
            src.input, src.output = inp, outp
        if src.kind == "other" and obs.get("parentObservationId"):
            src.kind = "chain" if typ in ("SPAN", "CHAIN") else "other"
        out.append(src)
    # the root observation takes the trace's question, answer and time when the traces were exported
    meta_by_trace: dict[str, dict[str, Any]] = {}
    for tid, t in trace_by_id.items():
        meta_by_trace[tid] = {k: v for k, v in flatten(maybe_json(t.get("metadata")) or {}).items()} \
            if isinstance(maybe_json(t.get("metadata")), dict) else {}
        roots = [s for s in out if s.trace_id == tid and s.parent_id is None]
        for r in roots:
            if t.get("input") is not None:
                r.input = maybe_json(t.get("input"))
                r.read.append("trace.input")
            if "output" in t:
                r.output = maybe_json(t.get("output"))
                r.read.append("trace.output")
            r.start = parse_time(t.get("timestamp")) or r.start
        if t.get("sessionId"):
            meta_by_trace[tid]["sessionId"] = t["sessionId"]
    return out, meta_by_trace
