"""A local fake Anthropic / OpenAI-compatible server for offline tests, benchmarks and rehearsals.

``FakeJudgeServer`` listens on ``127.0.0.1`` only (a free port unless ``port`` is given) and answers

* ``POST /v1/messages``          an Anthropic ``message`` carrying a verdict: JSON text when the request
                                 has ``output_config`` (structured mode), prose otherwise (free-text mode);
                                 a reference-grading request gets :func:`reference_reply`;
* ``POST /v1/chat/completions``  an OpenAI ``chat.completion``, JSON when the request has
                                 ``response_format``, prose otherwise;
* Message Batches, as the Anthropic API: ``POST /v1/messages/batches`` (create), ``GET
  /v1/messages/batches`` (list), ``GET /v1/messages/batches/{id}`` (retrieve), ``GET
  /v1/messages/batches/{id}/results`` (JSON Lines, once ended), ``POST /v1/messages/batches/{id}/cancel``.
  A batch stays ``in_progress`` until it has been retrieved ``batch_polls`` times or ``batch_seconds``
  have passed since its creation (whichever comes first), then ``ended``; each request's result is what
  the responder answers for ``POST /v1/messages`` with its ``params`` (200 -> ``succeeded``, other
  statuses -> ``errored``). Cancelling an unfinished batch makes it ``canceling``, and at the next
  retrieve ``ended`` with every request ``canceled``;

after ``delay_s`` seconds (simulated model latency; once per HTTP request), from a thread per
connection. Both SDKs talk to it unchanged through ``base_url``. It is bounded: after ``lifetime_s``
seconds (``None``: no limit) a timer shuts it down, and after ``max_requests`` requests it answers 503.
Use it as a context manager.

What it saw: ``requests`` (count), ``paths``, ``methods`` and ``received_headers`` (one lower-cased
header dict per request, so tests can check which key, if any, a judge sent).

``responder(path, body) -> (status, headers, body)`` replaces the default answers of the two message
routes (for scripted failures).

Run it for a rehearsal of a paid run without a key or network::

    python -m axon_eval.judges.fake_server [--port 8123] [--delay 0.2] [--lifetime 3600] [--batch-polls 2]

prints its URL and the judge specs / environment to use, and serves until Ctrl-C or the lifetime ends
(:func:`main`).

The helpers :func:`anthropic_message_json`, :func:`openai_completion_json` and :func:`free_text_reply`
build response bodies and are reused by tests that answer through ``httpx2.MockTransport``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from ..view import NO_ANSWER_MARKER

Responder = Callable[[str, dict[str, Any]], tuple[int, dict[str, str], Any]]
DEFAULT_PORT = 8123
_CUSTOM_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_BATCH_PATH = re.compile(r"^/v1/messages/batches/(?P<id>[A-Za-z0-9_-]+)(?P<tail>/results|/cancel)?$")


def default_verdict(request_text: str) -> dict[str, Any]:
    """A fixed, schema-valid verdict; faithfulness null when the view says no answer was captured."""
    no_answer = NO_ANSWER_MARKER in request_text
    return {"intent_understood": 9, "sql_quality": 8, "result_relevance": 8,
            "answer_faithfulness": None if no_answer else 9, "verdict": "good",
            "explanation": "Step 2 returned the rows the question needs and the answer repeats them."}


def free_text_reply(verdict: dict[str, Any]) -> str:
    """The prose a free-text judge would write for ``verdict`` (as the free-text prompt asks)."""
    faith = verdict["answer_faithfulness"]
    faith_text = ("Answer faithfulness: not applicable, since no answer was captured." if faith is None
                  else f"Answer faithfulness: {faith}/10. Every figure in the answer appears in the rows of step 2.")
    return "\n\n".join([
        f"Intent understood: {verdict['intent_understood']}/10. The statements target the entity and the "
        "period the question names.",
        f"SQL quality: {verdict['sql_quality']}/10. The final statement filters and aggregates at the level "
        "the question needs.",
        f"Result relevance: {verdict['result_relevance']}/10. The returned rows contain what the answer needs.",
        faith_text,
        f"{verdict['explanation']}\n\nVerdict: {verdict['verdict']}",
    ])


def anthropic_message_json(text: str, *, model: str = "claude-fake", stop_reason: str = "end_turn",
                           input_tokens: int = 900, output_tokens: int = 80, cache_read: int = 1200,
                           cache_creation: int = 0, message_id: str = "msg_fake") -> dict[str, Any]:
    """Body of an Anthropic Messages API response with one text block."""
    return {"id": message_id, "type": "message", "role": "assistant", "model": model,
            "content": [{"type": "text", "text": text}], "stop_reason": stop_reason, "stop_sequence": None,
            "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens,
                      "cache_read_input_tokens": cache_read, "cache_creation_input_tokens": cache_creation}}


def openai_completion_json(text: str | None, *, model: str = "gpt-fake", finish_reason: str = "stop",
                           prompt_tokens: int = 2000, completion_tokens: int = 80, cached_tokens: int = 1024,
                           refusal: str | None = None) -> dict[str, Any]:
    """Body of an OpenAI chat completion with one choice."""
    return {"id": "chatcmpl-fake", "object": "chat.completion", "created": 1_700_000_000, "model": model,
            "choices": [{"index": 0, "finish_reason": finish_reason, "logprobs": None,
                         "message": {"role": "assistant", "content": text, "refusal": refusal}}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens,
                      "prompt_tokens_details": {"cached_tokens": cached_tokens}}}


def _request_text(body: dict[str, Any]) -> str:
    return json.dumps(body.get("messages", []))


def _error(status: int, kind: str, message: str) -> tuple[int, dict[str, str], Any]:
    return status, {}, {"type": "error", "error": {"type": kind, "message": message}}


def reference_reply(body: dict[str, Any]) -> dict[str, Any] | None:
    """For a reference-grading request (``axon_eval.reference.claude``: its output schema asks for
    ``assessments``), a schema-valid reply marking every criterion of the request's spec ``unverifiable``
    with no numeric claim, so a rehearsal exercises the whole grading path and every grade is
    review_required (never a pass); ``None`` for any other request."""
    schema = ((body.get("output_config") or {}).get("format") or {}).get("schema") or {}
    if "assessments" not in (schema.get("properties") or {}):
        return None
    content = (body.get("messages") or [{}])[0].get("content")
    try:
        spec = json.loads(str(content).split("<spec>\n", 1)[1].split("\n</spec>", 1)[0])
        ids = [str(c["id"]) for c in spec["criteria"]]
    except (IndexError, ValueError, KeyError, TypeError):
        ids = []
    return {"assessments": [{"criterion_id": i, "status": "unverifiable", "quote": "",
                             "reason": "fake server: not assessed"} for i in ids], "claims": []}


def default_responder(path: str, body: dict[str, Any]) -> tuple[int, dict[str, str], Any]:
    """Answer a message request: JSON verdict when an output schema was sent, else prose (a reference-grading
    request gets :func:`reference_reply`)."""
    verdict = default_verdict(_request_text(body))
    reference = reference_reply(body) if path.endswith("/v1/messages") else None
    if reference is not None:
        return 200, {}, anthropic_message_json(json.dumps(reference), model=str(body.get("model", "claude-fake")))
    if path.endswith("/v1/messages"):
        text = json.dumps(verdict) if "output_config" in body else free_text_reply(verdict)
        return 200, {}, anthropic_message_json(text, model=str(body.get("model", "claude-fake")))
    if path.endswith("/chat/completions"):
        text = json.dumps(verdict) if "response_format" in body else free_text_reply(verdict)
        return 200, {}, openai_completion_json(text, model=str(body.get("model", "gpt-fake")))
    return _error(404, "not_found_error", f"no route {path}")


def _rfc3339(moment: float) -> str:
    return datetime.fromtimestamp(moment, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass
class _Batch:
    """One fake Message Batch: its requests' precomputed results and its lifecycle."""

    id: str
    created: float
    results: list[dict[str, Any]]
    polls: int = 0
    ended: float | None = None
    cancel_initiated: float | None = None
    canceled: bool = False
    counts: dict[str, int] = field(default_factory=dict)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # listen() backlog: a burst of concurrent connects must not overflow it

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hung up before its answer (a cancelled or interrupted judge) is not an error."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class FakeJudgeServer:
    """See the module docstring. ``url`` is ``http://127.0.0.1:<port>`` once started."""

    def __init__(self, *, delay_s: float = 0.0, responder: Responder | None = None,
                 lifetime_s: float | None = 60.0, max_requests: int = 10_000, port: int = 0,
                 batch_polls: int = 1, batch_seconds: float | None = None) -> None:
        if batch_polls < 0:
            raise ValueError(f"batch_polls must be >= 0, got {batch_polls!r}")
        if not 0 <= port <= 65535:
            raise ValueError(f"port must be 0..65535, got {port!r}")
        self.delay_s = float(delay_s)
        self.responder = responder or default_responder
        self.lifetime_s = None if lifetime_s is None else float(lifetime_s)
        self.max_requests = int(max_requests)
        self.port = int(port)
        self.batch_polls = int(batch_polls)
        self.batch_seconds = None if batch_seconds is None else float(batch_seconds)
        self.requests = 0
        self.paths: list[str] = []
        self.methods: list[str] = []
        self.received_headers: list[dict[str, str]] = []
        self.batches: dict[str, _Batch] = {}
        self._batch_ids = itertools.count(1)
        self._count_lock = threading.Lock()
        self._batch_lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._timer: threading.Timer | None = None
        self.stopped = threading.Event()

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("the fake server is not running")
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    # -- routing -----------------------------------------------------------------------------------------
    def handle(self, method: str, path: str, payload: dict[str, Any]) -> tuple[int, dict[str, str], Any]:
        """Answer one request (after the budget check and the delay)."""
        route = path.split("?", 1)[0]
        if route == "/v1/messages/batches":
            if method == "POST":
                return self._create_batch(payload)
            if method == "GET":
                return self._list_batches()
        match = _BATCH_PATH.match(route)
        if match:
            return self._batch_route(method, match.group("id"), match.group("tail") or "")
        if method == "POST":
            return self.responder(path, payload)
        return _error(404, "not_found_error", f"no route {method} {route}")

    # -- Message Batches ---------------------------------------------------------------------------------
    def _create_batch(self, payload: dict[str, Any]) -> tuple[int, dict[str, str], Any]:
        requests = payload.get("requests")
        if not isinstance(requests, list) or not requests:
            return _error(400, "invalid_request_error", "requests: expected a non-empty list")
        seen: set[str] = set()
        results = []
        for i, item in enumerate(requests):
            custom_id = item.get("custom_id") if isinstance(item, dict) else None
            params = item.get("params") if isinstance(item, dict) else None
            if not isinstance(custom_id, str) or not _CUSTOM_ID.match(custom_id):
                return _error(400, "invalid_request_error",
                              f"requests.{i}.custom_id: {custom_id!r} does not match ^[a-zA-Z0-9_-]{{1,64}}$")
            if custom_id in seen:
                return _error(400, "invalid_request_error", f"requests.{i}.custom_id: duplicate {custom_id!r}")
            if not isinstance(params, dict):
                return _error(400, "invalid_request_error", f"requests.{i}.params: expected an object")
            seen.add(custom_id)
            status, _, body = self.responder("/v1/messages", params)
            if status == 200:
                result: dict[str, Any] = {"type": "succeeded", "message": body}
            else:
                error = body if isinstance(body, dict) and body.get("type") == "error" else {
                    "type": "error", "error": {"type": "api_error", "message": f"HTTP {status}"}}
                result = {"type": "errored", "error": error}
            results.append({"custom_id": custom_id, "result": result})
        batch = _Batch(id=f"msgbatch_fake{next(self._batch_ids):06d}", created=time.time(), results=results)
        with self._batch_lock:
            self.batches[batch.id] = batch
            self._advance(batch)  # batch_polls=0 (or batch_seconds=0): ended at once
        return 200, {}, self._batch_json(batch)

    def _advance(self, batch: _Batch) -> None:
        """End ``batch`` when its polls or seconds are reached, or when a cancel was requested."""
        if batch.ended is not None:
            return
        due_by_polls = batch.polls >= self.batch_polls
        due_by_time = self.batch_seconds is not None and time.time() - batch.created >= self.batch_seconds
        if batch.cancel_initiated is not None:
            batch.canceled = True
            batch.results = [{"custom_id": r["custom_id"], "result": {"type": "canceled"}} for r in batch.results]
            batch.ended = time.time()
        elif due_by_polls or due_by_time:
            batch.ended = time.time()

    def _batch_json(self, batch: _Batch) -> dict[str, Any]:
        counts = {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
        if batch.ended is None:
            counts["processing"] = len(batch.results)
            status = "canceling" if batch.cancel_initiated is not None else "in_progress"
        else:
            for r in batch.results:
                counts[r["result"]["type"]] += 1
            status = "ended"
        return {
            "id": batch.id, "type": "message_batch", "processing_status": status, "request_counts": counts,
            "created_at": _rfc3339(batch.created), "expires_at": _rfc3339(batch.created + 24 * 3600),
            "ended_at": _rfc3339(batch.ended) if batch.ended is not None else None,
            "cancel_initiated_at": _rfc3339(batch.cancel_initiated) if batch.cancel_initiated else None,
            "archived_at": None,
            "results_url": f"{self.url}/v1/messages/batches/{batch.id}/results" if batch.ended is not None else None,
        }

    def _list_batches(self) -> tuple[int, dict[str, str], Any]:
        with self._batch_lock:
            data = [self._batch_json(b) for b in sorted(self.batches.values(), key=lambda b: -b.created)]
        return 200, {}, {"data": data, "has_more": False, "first_id": data[0]["id"] if data else None,
                         "last_id": data[-1]["id"] if data else None}

    def _batch_route(self, method: str, batch_id: str, tail: str) -> tuple[int, dict[str, str], Any]:
        with self._batch_lock:
            batch = self.batches.get(batch_id)
            if batch is None:
                return _error(404, "not_found_error", f"no message batch {batch_id!r}")
            if tail == "" and method == "GET":
                batch.polls += 1
                self._advance(batch)
                return 200, {}, self._batch_json(batch)
            if tail == "/cancel" and method == "POST":
                if batch.ended is None and batch.cancel_initiated is None:
                    batch.cancel_initiated = time.time()
                return 200, {}, self._batch_json(batch)
            if tail == "/results" and method == "GET":
                if batch.ended is None:
                    return _error(400, "invalid_request_error",
                                  f"message batch {batch_id} is still processing; results exist once it has ended")
                lines = "\n".join(json.dumps(r) for r in batch.results) + "\n"
                return 200, {"content-type": "application/x-jsonl"}, lines.encode()
        return _error(405, "invalid_request_error", f"{method} not allowed on {tail or 'the batch'}")

    # -- life cycle --------------------------------------------------------------------------------------
    def start(self) -> FakeJudgeServer:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                # one small response per request: disable Nagle so it is not held back ~40 ms
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_GET(self) -> None:  # noqa: N802 (stdlib name)
                self._answer("GET")

            def do_POST(self) -> None:  # noqa: N802 (stdlib name)
                self._answer("POST")

            def _answer(self, method: str) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                with outer._count_lock:
                    outer.requests += 1
                    outer.paths.append(self.path.split("?", 1)[0])
                    outer.methods.append(method)
                    outer.received_headers.append({k.lower(): v for k, v in self.headers.items()})
                    over = outer.requests > outer.max_requests
                if over:
                    status, headers, body = _error(503, "overloaded_error", "fake server request budget exhausted")
                else:
                    if outer.delay_s:
                        time.sleep(outer.delay_s)
                    try:
                        payload = json.loads(raw or b"{}")
                    except json.JSONDecodeError:
                        payload = {}
                    if not isinstance(payload, dict):
                        payload = {}
                    status, headers, body = outer.handle(method, self.path, payload)
                data = body if isinstance(body, bytes) else (body.encode() if isinstance(body, str)
                                                             else json.dumps(body).encode())
                self.send_response(status)
                if "content-type" not in {k.lower() for k in headers}:
                    self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

        server = _Server(("127.0.0.1", self.port), Handler)
        self._server = server
        self.stopped.clear()
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="fake-judge-server", daemon=True)
        self._thread.start()
        if self.lifetime_s is not None:
            self._timer = threading.Timer(self.lifetime_s, self.stop)
            self._timer.daemon = True
            self._timer.start()
        return self

    def stop(self) -> None:
        """Shut the server down (idempotent; also called by the lifetime timer)."""
        server, self._server = self._server, None
        if self._timer is not None and threading.current_thread() is not self._timer:
            self._timer.cancel()
        if server is not None:
            server.shutdown()
            server.server_close()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        self.stopped.set()

    def __enter__(self) -> FakeJudgeServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


# -- command line ----------------------------------------------------------------------------------------
def rehearsal_instructions(url: str) -> str:
    """What to tell a user who wants to rehearse a paid run against the server at ``url``."""
    return f"""\
fake judge server (Anthropic + OpenAI-compatible, Message Batches) listening on {url}

Rehearse a paid run offline (no key is needed or sent: a loopback endpoint gets a dummy key):
  judge spec, Claude:             anthropic:claude-haiku-4-5@{url}
  judge spec, OpenAI-compatible:  openai:gpt-4o-mini@{url}/v1
  free-text mode:                 append #free_text, e.g. anthropic:claude-haiku-4-5@{url}#free_text
  or by environment:              export ANTHROPIC_BASE_URL={url}    (spec anthropic:claude-haiku-4-5)
                                  export OPENAI_BASE_URL={url}/v1    (spec openai:gpt-4o-mini)
  for example:
    python -m axon_eval evaluate --turns data/turns/sample_turns.jsonl --judge "anthropic:claude-haiku-4-5@{url}"

Verdicts are recorded under judge ids ending in ",base={url}" and marked local, so they are never
served from the cache as the provider's. Every verdict is the same fixed answer: this rehearses the
plumbing (requests, retries, cache, batches, run folders), not judging.
Ctrl-C stops the server."""


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: start the fake server, print its URL and how to use it, serve until Ctrl-C or the
    lifetime ends. Returns 0 on a normal stop, 2 when the port cannot be bound or an option is invalid."""
    parser = argparse.ArgumentParser(
        prog="python -m axon_eval.judges.fake_server",
        description="Local fake Anthropic / OpenAI-compatible judge server (127.0.0.1 only) for rehearsing "
                    "a paid run offline.")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT,
                        help=f"port on 127.0.0.1 (default {DEFAULT_PORT}; 0 picks a free port)")
    parser.add_argument("--delay", type=float, default=0.0, metavar="S",
                        help="seconds before each answer, to simulate model latency (default 0)")
    parser.add_argument("--lifetime", type=float, default=None, metavar="S",
                        help="stop after S seconds (default: run until Ctrl-C)")
    parser.add_argument("--batch-polls", type=int, default=1, metavar="N",
                        help="a message batch ends after N status polls (default 1)")
    parser.add_argument("--batch-seconds", type=float, default=None, metavar="S",
                        help="... or after S seconds, whichever comes first")
    parser.add_argument("--max-requests", type=int, default=1_000_000, metavar="N",
                        help="answer 503 after N requests (default 1000000)")
    parser.add_argument("--url-file", default=None, metavar="PATH",
                        help="write the server's URL to PATH once it listens (with --port 0, a script reads "
                             "the free port from it)")
    args = parser.parse_args(list(argv) if argv is not None else None)
    for name in ("delay", "lifetime", "batch_seconds"):
        value = getattr(args, name)
        if value is not None and value < 0:
            print(f"error: --{name.replace('_', '-')} must be >= 0, got {value}", file=sys.stderr)
            return 2
    try:
        server = FakeJudgeServer(delay_s=args.delay, lifetime_s=args.lifetime, port=args.port,
                                 max_requests=args.max_requests, batch_polls=args.batch_polls,
                                 batch_seconds=args.batch_seconds).start()
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"error: cannot listen on 127.0.0.1:{args.port}: {exc.strerror or exc} "
              "(use --port N for another port, or --port 0 for a free one)", file=sys.stderr)
        return 2
    # Ctrl-C sets a flag instead of raising KeyboardInterrupt: an exception raised inside Event.wait can
    # leave the event's lock held, and stop() (which sets that event) then hangs for ever
    interrupted: list[bool] = []
    in_main = threading.current_thread() is threading.main_thread()  # only there can a handler be set
    previous = signal.signal(signal.SIGINT, lambda *_: interrupted.append(True)) if in_main else None
    if args.url_file:  # written whole and then moved into place: a reader never sees half a URL
        target = Path(args.url_file)
        partial = target.with_name(f".{target.name}.partial")
        partial.write_text(server.url + "\n", encoding="utf-8")
        os.replace(partial, target)
    try:
        print(rehearsal_instructions(server.url), flush=True)
        while not interrupted and not server.stopped.wait(0.2):
            pass
    finally:
        if in_main:
            signal.signal(signal.SIGINT, previous)
    if interrupted:
        server.stop()
        print(f"\nfake judge server stopped; {server.requests} requests served", flush=True)
    else:
        print(f"fake judge server stopped after its lifetime ({args.lifetime} s); "
              f"{server.requests} requests served", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
