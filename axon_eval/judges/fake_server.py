"""A local fake Anthropic / OpenAI-compatible server for offline tests and benchmarks.

``FakeJudgeServer`` listens on ``127.0.0.1`` (a free port), answers

* ``POST /v1/messages``          with an Anthropic ``message`` carrying a verdict JSON text,
* ``POST /v1/chat/completions``  with an OpenAI ``chat.completion`` carrying the same,

after ``delay_s`` seconds (simulated model latency), from a thread per connection. Both SDKs talk to it
unchanged through ``base_url``. It is bounded and stops by itself: after ``lifetime_s`` seconds a timer
shuts it down, and after ``max_requests`` requests it answers 503. Use it as a context manager.

``responder(path, body) -> (status, headers, body)`` replaces the default answers (for scripted
failures); ``requests`` counts every request received.

The helpers :func:`anthropic_message_json` and :func:`openai_completion_json` build response bodies and
are reused by tests that answer through ``httpx2.MockTransport``.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ..view import NO_ANSWER_MARKER

Responder = Callable[[str, dict[str, Any]], tuple[int, dict[str, str], Any]]


def default_verdict(request_text: str) -> dict[str, Any]:
    """A fixed, schema-valid verdict; faithfulness null when the view says no answer was captured."""
    no_answer = NO_ANSWER_MARKER in request_text
    return {"intent_understood": 9, "sql_quality": 8, "result_relevance": 8,
            "answer_faithfulness": None if no_answer else 9, "verdict": "good",
            "explanation": "Step 2 returned the rows the question needs and the answer repeats them."}


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


def default_responder(path: str, body: dict[str, Any]) -> tuple[int, dict[str, str], Any]:
    verdict_text = json.dumps(default_verdict(_request_text(body)))
    if path.endswith("/v1/messages"):
        return 200, {}, anthropic_message_json(verdict_text, model=str(body.get("model", "claude-fake")))
    if path.endswith("/chat/completions"):
        return 200, {}, openai_completion_json(verdict_text, model=str(body.get("model", "gpt-fake")))
    return 404, {}, {"type": "error", "error": {"type": "not_found_error", "message": f"no route {path}"}}


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # listen() backlog: a burst of concurrent connects must not overflow it


class FakeJudgeServer:
    """See the module docstring. ``url`` is ``http://127.0.0.1:<port>`` once started."""

    def __init__(self, *, delay_s: float = 0.0, responder: Responder | None = None,
                 lifetime_s: float = 60.0, max_requests: int = 10_000) -> None:
        self.delay_s = float(delay_s)
        self.responder = responder or default_responder
        self.lifetime_s = float(lifetime_s)
        self.max_requests = int(max_requests)
        self.requests = 0
        self.paths: list[str] = []
        self._count_lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._timer: threading.Timer | None = None

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("the fake server is not running")
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

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

            def do_POST(self) -> None:  # noqa: N802 (stdlib name)
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                with outer._count_lock:
                    outer.requests += 1
                    outer.paths.append(self.path)
                    over = outer.requests > outer.max_requests
                if over:
                    status, headers, body = 503, {}, {"type": "error", "error": {
                        "type": "overloaded_error", "message": "fake server request budget exhausted"}}
                else:
                    if outer.delay_s:
                        time.sleep(outer.delay_s)
                    try:
                        payload = json.loads(raw or b"{}")
                    except json.JSONDecodeError:
                        payload = {}
                    status, headers, body = outer.responder(self.path, payload)
                data = body if isinstance(body, bytes) else (body.encode() if isinstance(body, str)
                                                             else json.dumps(body).encode())
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

        server = _Server(("127.0.0.1", 0), Handler)
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="fake-judge-server", daemon=True)
        self._thread.start()
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

    def __enter__(self) -> FakeJudgeServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
