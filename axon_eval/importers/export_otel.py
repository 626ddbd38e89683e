"""Our evidence as OTLP JSON (OpenTelemetry GenAI + database conventions): the inverse of :mod:`.otel`.

Per turn, one trace (trace id: the first 32 hex digits of ``sha256(turn_id)``):

* root ``invoke_agent assistant``: ``gen_ai.operation.name`` ``invoke_agent``, ``gen_ai.input.messages``
  (the question as a user message), ``gen_ai.output.messages`` (the answer; absent when none was
  captured), ``axon_eval.turn_id`` / ``.client`` / ``.surface`` / ``.region`` (/ ``.segments``); starts at
  ``captured_at``;
* a tool step: ``execute_tool <name>`` with ``gen_ai.tool.name``, ``gen_ai.tool.call.arguments``,
  ``gen_ai.tool.call.result`` and ``axon_eval.step.status`` (the step's full status: ``ok`` / ``error``
  / ``timeout`` / ``blocked``, which the importers read by default);
* a SQL step: ``execute_tool run_sql`` (arguments ``{"sql": ...}``, result ``{"columns", "rows"}``,
  ``axon_eval.step.status``) with a child database span (``db.system.name`` ``other_sql``,
  ``db.query.text``, ``db.response.returned_rows`` when the count is known); a blocked statement never
  ran, so it has no database span;
* failures: span status ``STATUS_CODE_ERROR`` with the error text as message and ``error.type``
  (``timeout`` for a timeout, ``blocked`` for a guardrail refusal, ``_OTHER`` otherwise), for tools that
  do not read ``axon_eval.step.status``.

``import-traces FILE --format otel`` with no flag reads the export back to the same evidence, byte for
byte (tested on the bundled sample).

Steps follow each other from ``captured_at`` (1 microsecond apart), each lasting its ``elapsed_ms``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..evidence import SqlStep, ToolStep, Turn
from .spans import STEP_STATUS_ATTRIBUTE

SQL_TOOL_NAME = "run_sql"
BLOCKED_ERROR_TYPE = "blocked"


def _value(v: Any) -> dict[str, Any]:
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v}
    if isinstance(v, str):
        return {"stringValue": v}
    return {"stringValue": json.dumps(v, ensure_ascii=False)}


def _attrs(d: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"key": k, "value": _value(v)} for k, v in d.items() if v is not None]


def _hex(text: str, n: int) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:n]


def _ns(ms: float | None) -> int:
    return 0 if ms is None else round(float(ms) * 1_000_000)


def _status(step: ToolStep | SqlStep) -> tuple[dict[str, Any], str | None]:
    if step.status == "ok":
        return {"code": 1}, None
    etype = {"timeout": "timeout", "blocked": BLOCKED_ERROR_TYPE}.get(step.status, "_OTHER")
    st: dict[str, Any] = {"code": 2}
    if step.error is not None:
        st["message"] = step.error
    return st, etype


def _span(trace_id: str, span_id: str, parent: str | None, name: str, start: int, end: int,
          attrs: dict[str, Any], status: dict[str, Any], kind: int = 1) -> dict[str, Any]:
    span = {"traceId": trace_id, "spanId": span_id, "name": name, "kind": kind,
            "startTimeUnixNano": str(start), "endTimeUnixNano": str(end), "attributes": _attrs(attrs),
            "status": status}
    if parent:
        span["parentSpanId"] = parent
    return span


def turn_spans(turn: Turn) -> list[dict[str, Any]]:
    trace_id = _hex(turn.turn_id, 32)
    root_id = _hex(turn.turn_id + "/root", 16)
    t0 = int(turn.captured_at.timestamp()) * 1_000_000_000 + turn.captured_at.microsecond * 1000
    spans: list[dict[str, Any]] = []
    cursor = t0
    for i, step in enumerate(turn.steps):
        sid = _hex(f"{turn.turn_id}/step/{i}", 16)
        start, end = cursor, cursor + _ns(step.elapsed_ms)
        cursor = end + 1000
        status, etype = _status(step)
        if isinstance(step, ToolStep):
            spans.append(_span(trace_id, sid, root_id, f"execute_tool {step.name}", start, end, {
                "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": step.name,
                "gen_ai.tool.call.id": f"call_{i}",
                "gen_ai.tool.call.arguments": json.dumps(step.args, ensure_ascii=False),
                "gen_ai.tool.call.result": step.output if isinstance(step.output, str) or step.output is None
                else json.dumps(step.output, ensure_ascii=False),
                "error.type": etype, STEP_STATUS_ATTRIBUTE: step.status}, status))
            continue
        result = None
        if step.status == "ok":
            result = json.dumps({"columns": step.columns, "rows": step.rows}, ensure_ascii=False)
        spans.append(_span(trace_id, sid, root_id, f"execute_tool {SQL_TOOL_NAME}", start, end, {
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": SQL_TOOL_NAME,
            "gen_ai.tool.call.id": f"call_{i}",
            "gen_ai.tool.call.arguments": json.dumps({"sql": step.sql}, ensure_ascii=False),
            "gen_ai.tool.call.result": result, "error.type": etype, STEP_STATUS_ATTRIBUTE: step.status}, status))
        if step.status == "blocked":
            continue  # refused before execution: no database call happened
        operation = (step.sql.split() or ["query"])[0].upper()
        spans.append(_span(trace_id, _hex(f"{turn.turn_id}/db/{i}", 16), sid, operation, start, end, {
            "db.system.name": "other_sql", "db.operation.name": operation, "db.query.text": step.sql,
            "db.response.returned_rows": step.row_count if step.status == "ok" and step.row_count_known else None,
            "error.type": etype}, status, kind=3))
    root_attrs: dict[str, Any] = {
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "assistant",
        "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text", "content": turn.question}]}],
                                            ensure_ascii=False),
        "gen_ai.output.messages": None if turn.answer is None else json.dumps(
            [{"role": "assistant", "parts": [{"type": "text", "content": turn.answer}], "finish_reason": "stop"}],
            ensure_ascii=False),
        "axon_eval.turn_id": turn.turn_id, "axon_eval.client": turn.client, "axon_eval.surface": turn.surface,
        "axon_eval.region": turn.region,
        "axon_eval.segments": json.dumps(list(turn.segments), ensure_ascii=False) if turn.segments else None,
    }
    root = _span(trace_id, root_id, None, "invoke_agent assistant", t0, max(cursor, t0), root_attrs, {"code": 1})
    return [root, *spans]


def export_otlp(turns: Iterable[Turn], service_name: str = "axon_eval-export") -> dict[str, Any]:
    """One OTLP JSON ``ExportTraceServiceRequest`` holding every turn as a trace."""
    spans = [s for t in turns for s in turn_spans(t)]
    return {"resourceSpans": [{
        "resource": {"attributes": _attrs({"service.name": service_name})},
        "scopeSpans": [{"scope": {"name": "axon_eval.importers.export_otel", "version": "1"}, "spans": spans}]}]}


def write_otlp(turns: Iterable[Turn], path: str | Path) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(export_otlp(turns), ensure_ascii=False) + "\n", encoding="utf-8")
    return p
