"""OpenTelemetry GenAI + database semantic conventions, from OTLP JSON.

Attribute names read (new names first, then the older ones many instrumentations still emit):

=====================  ======================================================================
span role              ``gen_ai.operation.name`` (``invoke_agent`` / ``create_agent`` -> agent,
                       ``execute_tool`` -> tool, ``chat`` / ``text_completion`` /
                       ``generate_content`` / ``embeddings`` -> model call); a span name
                       ``execute_tool ...``; ``gen_ai.tool.name`` (tool); ``gen_ai.system`` /
                       ``gen_ai.provider.name`` / ``gen_ai.request.model`` (model call);
                       ``db.query.text`` / ``db.statement`` (database)
tool call              ``gen_ai.tool.name``, ``gen_ai.tool.call.arguments``, ``gen_ai.tool.call.result``
database call          ``db.query.text`` (``db.statement``), ``db.response.returned_rows``,
                       ``db.response.status_code``, ``db.system.name`` (``db.system``)
errors                 span status (``STATUS_CODE_ERROR`` + message), ``error.type``, the
                       ``exception`` event (``exception.type``, ``exception.message``)
input / output         ``gen_ai.input.messages`` / ``gen_ai.output.messages``; older:
                       ``gen_ai.prompt`` / ``gen_ai.completion`` (attribute or the
                       ``gen_ai.content.prompt`` / ``gen_ai.content.completion`` events),
                       flattened ``gen_ai.prompt.N.role|content`` / ``gen_ai.completion.N.content``,
                       per-message events ``gen_ai.user.message`` / ``gen_ai.choice``
                       (``content`` / ``message`` / ``gen_ai.event.content``)
turn fields            ``axon_eval.turn_id`` / ``.client`` / ``.surface`` / ``.region`` /
                       ``.segments`` (our exporter), resource ``service.name`` / ``cloud.region``
=====================  ======================================================================
"""

from __future__ import annotations

from typing import Any

from .otlp import OtlpSpan, exception_of, indexed_messages, read_otlp
from .spans import SourceSpan, maybe_json

_LLM_OPS = {"chat", "text_completion", "generate_content", "embeddings", "completion"}
_AGENT_OPS = {"invoke_agent", "create_agent"}


def _event_messages(span: OtlpSpan, output: bool) -> tuple[Any, str | None]:
    msgs: list[dict[str, Any]] = []
    for e in span.events:
        name, a = e.get("name") or "", e["attributes"]
        if not output and name == "gen_ai.content.prompt" and a.get("gen_ai.prompt") is not None:
            return maybe_json(a["gen_ai.prompt"]), "event gen_ai.content.prompt"
        if output and name == "gen_ai.content.completion" and a.get("gen_ai.completion") is not None:
            return maybe_json(a["gen_ai.completion"]), "event gen_ai.content.completion"
        body = maybe_json(a.get("gen_ai.event.content", a.get("content", a.get("message"))))
        role = None
        if not output and name in ("gen_ai.user.message", "gen_ai.system.message", "gen_ai.assistant.message"):
            role = name.split(".")[1]
        if output and name == "gen_ai.choice":
            role = "assistant"
            if isinstance(body, dict) and "message" in body:
                body = body["message"]
        if role:
            content = body.get("content") if isinstance(body, dict) else body
            msgs.append({"role": role, "content": content})
    if msgs:
        return msgs, "events gen_ai.*.message" if not output else "events gen_ai.choice"
    return None, None


def _io(span: OtlpSpan, src: SourceSpan, output: bool) -> Any:
    a = span.attributes
    new, old = ("gen_ai.output.messages", "gen_ai.completion") if output else ("gen_ai.input.messages", "gen_ai.prompt")
    value = src.take(a, new, old)
    if value is not None:
        return maybe_json(value)
    flat = indexed_messages(a, old)
    if flat:
        src.read.append(f"{old}.N.role|content")
        return flat
    value, how = _event_messages(span, output)
    if value is not None and how:
        src.read.append(how)
    return value


def to_source(span: OtlpSpan) -> SourceSpan:
    a = span.attributes
    src = SourceSpan(trace_id=span.trace_id, span_id=span.span_id, parent_id=span.parent_id, name=span.name,
                     kind="other", index=span.index, start=span.start, elapsed_ms=span.elapsed_ms,
                     status=span.status, unmapped_status=span.unmapped_status, error=span.status_message,
                     attributes=a, resource=span.resource)
    op = str(src.take(a, "gen_ai.operation.name") or "").lower()
    query = src.take(a, "db.query.text", "db.statement")
    if query is not None:
        src.kind = "db"
        src.query = str(query)
        src.take(a, "db.system.name", "db.system")
        rows = src.take(a, "db.response.returned_rows")
        if isinstance(rows, int | float) and not isinstance(rows, bool) and rows >= 0:
            src.returned_rows = int(rows)
        code = src.take(a, "db.response.status_code")
        if span.status == "error" and not src.error and code is not None:
            src.error = f"database status code {code}"
    elif op == "execute_tool" or span.name.startswith("execute_tool") or (
            "gen_ai.tool.name" in a and op not in _LLM_OPS | _AGENT_OPS):
        src.kind = "tool"
        name = src.take(a, "gen_ai.tool.name")
        src.tool_name = str(name) if name else (span.name.removeprefix("execute_tool").strip() or span.name)
        src.args = maybe_json(src.take(a, "gen_ai.tool.call.arguments"))
        src.result = src.take(a, "gen_ai.tool.call.result")
    elif op in _AGENT_OPS or span.name.startswith("invoke_agent"):
        src.kind = "agent"
    elif op in _LLM_OPS or any(k in a for k in ("gen_ai.system", "gen_ai.provider.name", "gen_ai.request.model")):
        src.kind = "llm"
    elif span.parent_id is None:
        src.kind = "chain"
    src.error_type = src.take(a, "error.type")
    etype, emsg = exception_of(span)
    if etype or emsg:
        src.read.append("event exception")
        src.error_type = src.error_type or etype
        src.error = src.error or emsg
    if src.kind in ("agent", "llm", "chain"):
        src.input = _io(span, src, output=False)
        src.output = _io(span, src, output=True)
    return src


def read(docs: list[Any]) -> tuple[list[SourceSpan], dict[str, dict[str, Any]]]:
    return [to_source(s) for s in read_otlp(docs)], {}
