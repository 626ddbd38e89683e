"""A local fake judge server that answers the first requests and holds the rest, for tests that interrupt
or kill a run at a known point (the judges talk to it through their real SDKs).

:class:`HeldServer` answers the first ``answered`` message requests at once and holds every later one
until :meth:`~HeldServer.release`. A held request is then answered normally (``on_release="answer"``) or
with an overloaded error (``"overloaded"``: no verdict, so nothing is paid for it) while later requests
are answered. ``delivered`` counts the verdicts delivered per view (the request's messages), so a test
can assert that no verdict was paid twice.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time

from axon_eval.judges.fake_server import FakeJudgeServer, _error, default_responder


class HeldServer:
    """See the module docstring. ``url`` is the server's address once entered."""

    def __init__(self, answered: int | None, *, on_release: str = "answer", lifetime_s: float = 600) -> None:
        if on_release not in ("answer", "overloaded"):
            raise ValueError(f"on_release must be 'answer' or 'overloaded', got {on_release!r}")
        self.answered = answered
        self.on_release = on_release
        self.arrived = 0
        self.delivered: dict[str, int] = {}
        self.changed = threading.Condition()
        self.released = threading.Event()
        self.server = FakeJudgeServer(responder=self.respond, lifetime_s=lifetime_s)

    @property
    def url(self) -> str:
        return self.server.url

    @staticmethod
    def view_of(body: dict) -> str:
        return hashlib.sha256(json.dumps(body.get("messages"), sort_keys=True).encode()).hexdigest()

    def respond(self, path: str, body: dict):
        with self.changed:
            self.arrived += 1
            position = self.arrived
            self.changed.notify_all()
        if self.answered is not None and position > self.answered and not self.released.is_set():
            self.released.wait(120)
            if self.on_release == "overloaded":
                return _error(529, "overloaded_error", "held by the test: no verdict")
        status, headers, payload = default_responder(path, body)
        if status == 200:
            with self.changed:
                key = self.view_of(body)
                self.delivered[key] = self.delivered.get(key, 0) + 1
        return status, headers, payload

    def wait_for(self, n: int, timeout: float = 180.0) -> None:
        """Wait until ``n`` message requests have arrived."""
        deadline = time.monotonic() + timeout
        with self.changed:
            while self.arrived < n:
                left = deadline - time.monotonic()
                assert left > 0, f"only {self.arrived} of {n} requests arrived"
                self.changed.wait(left)

    def release(self) -> None:
        self.released.set()

    def __enter__(self) -> HeldServer:
        self.server.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
        self.server.stop()
