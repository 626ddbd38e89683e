"""LangSmith: a JSON Lines export of runs (a JSON list is read too).

Run fields read: ``id``, ``trace_id`` (the root run's id; a run without one is its own trace when it
has no parent), ``parent_run_id`` (null on the root), ``name``, ``run_type`` (``tool`` -> tool,
``llm`` / ``chat_model`` -> model call, ``chain`` / ``prompt`` / ``parser`` / ``retriever`` ->
containers), ``start_time`` / ``end_time`` (ISO 8601; naive means UTC), ``dotted_order`` (order on equal
start times), ``inputs`` / ``outputs``, ``error`` (the error text; its leading exception name, as in
``TimeoutError('...')`` or ``GuardrailRefusal: ...``, is the error type), ``status`` (``error``,
``timeout`` and ``interrupted`` are failures; ``success`` / ``pending`` / ``running`` are not; another
value is read as unset and warned about in the import report), and
``extra.metadata`` (``thread_id`` / ``conversation_id`` / ``session_id`` and the turn fields).
A tool run's arguments are its ``inputs`` (``{"input": "<JSON>"}`` is decoded); its result is
``outputs.output`` (the ``content`` of a tool message).
"""

from __future__ import annotations

import re
from typing import Any

from .spans import (
    ExportFormatError,
    SourceSpan,
    elapsed_between,
    flatten,
    maybe_json,
    parse_time,
)

_KINDS = {"tool": "tool", "llm": "llm", "chat_model": "llm", "embedding": "llm"}
_EXC_NAME = re.compile(r"^\s*([A-Za-z_][\w.]*)\s*(?:[:(]|$)")
#: ``status`` values (any case; LangSmith writes ``success`` / ``error`` / ``pending``, LangGraph adds
#: ``running`` / ``timeout`` / ``interrupted``) -> failed or not. Another value is read as unset (failed
#: only when ``error`` holds text) and warned about in the import report.
RUN_STATUSES = {"success": False, "pending": False, "running": False, "error": True, "timeout": True,
                "interrupted": True}


def _args(inputs: Any) -> Any:
    inputs = maybe_json(inputs)
    if isinstance(inputs, dict) and set(inputs) == {"input"}:
        inner = maybe_json(inputs["input"])
        return inner if isinstance(inner, dict) else inputs["input"]
    return inputs


def _result(outputs: Any) -> Any:
    outputs = maybe_json(outputs)
    if isinstance(outputs, dict) and "output" in outputs and len(outputs) == 1:
        out = outputs["output"]
        if isinstance(out, dict) and "content" in out and out.get("type") in ("tool", "ToolMessage", None):
            return out["content"]
        if isinstance(out, dict) and isinstance(out.get("kwargs"), dict) and "content" in out["kwargs"]:
            return out["kwargs"]["content"]
        return out
    return outputs


def read(docs: list[Any]) -> tuple[list[SourceSpan], dict[str, dict[str, Any]]]:
    runs = [r for d in docs for r in (d if isinstance(d, list) else [d])]
    runs = [r for r in runs if isinstance(r, dict)]
    if not runs or not all("run_type" in r and "id" in r for r in runs):
        raise ExportFormatError("not a LangSmith runs export: every line must be a run with 'id' and 'run_type'")
    # order on equal start times: dotted_order, else file order
    order = sorted(range(len(runs)), key=lambda i: (str(runs[i].get("dotted_order") or ""), i))
    rank = {i: k for k, i in enumerate(order)} if all(r.get("dotted_order") for r in runs) else {i: i for i in range(len(runs))}
    out: list[SourceSpan] = []
    for i, run in enumerate(runs):
        extra = run.get("extra") if isinstance(run.get("extra"), dict) else {}
        meta = flatten(extra.get("metadata") or {})
        start, end = parse_time(run.get("start_time")), parse_time(run.get("end_time"))
        error = run.get("error") or None
        raw_status = run.get("status")
        status_text = str(raw_status or "").strip().lower()
        known = not status_text or status_text in RUN_STATUSES
        failed = bool(error) or RUN_STATUSES.get(status_text, False)
        run_type = str(run.get("run_type") or "").lower()
        parent = run.get("parent_run_id") or None
        src = SourceSpan(trace_id=str(run.get("trace_id") or (run["id"] if parent is None else parent)),
                         span_id=str(run["id"]), parent_id=str(parent) if parent else None,
                         name=str(run.get("name") or run_type), kind=_KINDS.get(run_type, "chain" if parent is None else "other"),
                         index=rank[i], start=start, elapsed_ms=elapsed_between(start, end),
                         status="error" if failed else "ok" if known else "unset",
                         unmapped_status=None if known else ("status", raw_status),
                         error=str(error) if error else None, attributes=meta)
        src.read.extend(["run_type", "start_time"])
        if error:
            src.read.append("error")
            m = _EXC_NAME.match(str(error).splitlines()[0] if str(error) else "")
            src.error_type = src.take(meta, "error.type") or (m.group(1) if m else None)
        if status_text == "timeout":
            src.error_type = src.error_type or "timeout"
        if run_type in ("chain", "prompt", "parser", "retriever") and parent is not None:
            src.kind = "chain" if run_type == "chain" else "other"
        if src.kind == "tool":
            src.tool_name = src.name
            src.args, src.result = _args(run.get("inputs")), _result(run.get("outputs"))
            src.read.extend(["inputs", "outputs"])
        else:
            src.input, src.output = maybe_json(run.get("inputs")), maybe_json(run.get("outputs"))
        for key in ("thread_id", "conversation_id", "session_id"):
            src.take(meta, key)
        out.append(src)
    return out, {}
