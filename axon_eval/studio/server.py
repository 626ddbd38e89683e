"""The studio's web server: tornado on 127.0.0.1, a fresh token per start, guarded on every request.

Tornado is used because it is a well-kept asynchronous web framework already installed with Jupyter
Server (the workbench depends on JupyterLab), so the studio adds no new stack; it gives routing, a
request body size limit enforced while reading (``max_body_size``), and a server that runs in a
background thread of a notebook kernel as well as from the command line.

Every response carries a strict Content-Security-Policy (:data:`CSP`: scripts, styles and connections
only from the server itself, no inline script, no frames, no forms) and ``nosniff``, ``no-referrer``,
``no-store`` and ``DENY`` framing headers. Every request is checked (:meth:`Guarded.prepare`): the
``Host`` must be this server's loopback address and port (a DNS-rebinding page has another host), an
``Origin``, when sent, must be this server's origin, and ``Sec-Fetch-Site``, when sent, must be
``same-origin`` or ``none`` (a page on another loopback port is ``same-site`` and is refused), except
for opening the page itself by a link (a top-level navigation, e.g. from a notebook on another loopback
port: the page holds no data, and the token it needs is in the link). Every
``/api/`` call needs ``Authorization: Bearer <token>`` (compared in constant time); the token is made
with :func:`secrets.token_urlsafe` at each start and travels in the URL's fragment, which browsers never
send to a server. A ``POST`` must be ``application/json`` (a cross-site form cannot send it without a
pre-flight the server never answers) and at most :data:`MAX_BODY_BYTES`.

Routes: ``/`` (the page), ``/static/<file>`` (the allow-listed assets), ``GET /api/session``, ``GET
/api/item/<position>``, ``POST /api/label``. In review mode (:meth:`StudioApp.for_review`, ``label review
--serve``) the same routes serve a :class:`~axon_eval.studio.review.ReviewSession` (``/`` is the review
page, ``/api/label`` saves an adjudicated label) behind the same checks, plus ``POST /api/judge`` (the
judge's grades of a segment the reviewer has labelled themself, recorded before they are sent).
"""

from __future__ import annotations

import asyncio
import hmac
import json
import os
import secrets
import socket
import threading
import time
from importlib import resources
from pathlib import Path
from typing import Any

import tornado.httpserver
import tornado.netutil
import tornado.web

from .ledger import JournalWriteError
from .review import DEFAULT_THRESHOLD, JudgeHidden, ReviewSession
from .session import LabelInvalid, RaterSession

HOST = "127.0.0.1"
#: Largest request body accepted (a label is a few hundred bytes).
MAX_BODY_BYTES = 64 * 1024
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
       "font-src 'none'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
#: The page's assets and their content types.
STATIC_FILES: dict[str, str] = {
    "index.html": "text/html; charset=utf-8", "studio.css": "text/css; charset=utf-8",
    "app.js": "text/javascript; charset=utf-8", "api.js": "text/javascript; charset=utf-8",
    "render.js": "text/javascript; charset=utf-8", "keys.js": "text/javascript; charset=utf-8",
    "form.js": "text/javascript; charset=utf-8", "review.html": "text/html; charset=utf-8",
    "review.js": "text/javascript; charset=utf-8", "page.js": "text/javascript; charset=utf-8",
}
#: Seconds the server waits after a label's fsync before it answers (tests of a crash in between only).
ACK_DELAY_ENV = "AXON_EVAL_STUDIO_ACK_DELAY_S"


def static_bytes(name: str) -> bytes:
    """The asset ``name`` of the page (``KeyError`` for a file not in :data:`STATIC_FILES`)."""
    if name not in STATIC_FILES:
        raise KeyError(name)
    return (resources.files("axon_eval.studio") / "static" / name).read_bytes()


class Guarded(tornado.web.RequestHandler):
    """Security headers on every response, and the Host / Origin / Sec-Fetch-Site checks on every request."""

    def initialize(self, studio: StudioApp) -> None:
        self.studio = studio

    def set_default_headers(self) -> None:
        self.clear_header("Server")
        for name, value in (("Content-Security-Policy", CSP), ("X-Content-Type-Options", "nosniff"),
                            ("Referrer-Policy", "no-referrer"), ("Cache-Control", "no-store"),
                            ("X-Frame-Options", "DENY"), ("Cross-Origin-Opener-Policy", "same-origin"),
                            ("Cross-Origin-Resource-Policy", "same-origin")):
            self.set_header(name, value)

    def refuse(self, status: int, message: str) -> None:
        self.set_status(status)
        self.set_header("Content-Type", "application/json; charset=utf-8")
        self.finish(json.dumps({"error": message}))

    def prepare(self) -> None:
        port = self.studio.port
        if self.request.host not in (f"{HOST}:{port}", f"localhost:{port}"):
            return self.refuse(403, "unknown Host: the studio answers only on its own loopback address")
        origin = self.request.headers.get("Origin")
        if origin is not None and origin not in (f"http://{HOST}:{port}", f"http://localhost:{port}"):
            return self.refuse(403, "cross-origin request refused")
        site = self.request.headers.get("Sec-Fetch-Site")
        navigation = isinstance(self, Page) and self.request.headers.get("Sec-Fetch-Mode") == "navigate"
        if site is not None and site not in ("same-origin", "none") and not navigation:
            return self.refuse(403, f"cross-site request refused (Sec-Fetch-Site: {site})")
        return None

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        self.set_header("Content-Type", "application/json; charset=utf-8")
        self.finish(json.dumps({"error": self._reason}))


class Api(Guarded):
    """``/api/``: the token on every call; JSON bodies of bounded size."""

    def prepare(self) -> None:
        super().prepare()
        if self._finished:
            return
        given = self.request.headers.get("Authorization", "")
        if not hmac.compare_digest(given.encode(), f"Bearer {self.studio.token}".encode()):
            return self.refuse(401, "missing or wrong token: open the link label serve printed")
        if self.request.method == "POST":
            kind = self.request.headers.get("Content-Type", "").split(";")[0].strip().lower()
            if kind != "application/json":
                return self.refuse(415, "expected Content-Type: application/json")
            if len(self.request.body) > MAX_BODY_BYTES:
                return self.refuse(413, f"request body over {MAX_BODY_BYTES} bytes")
        return None

    def reply(self, payload: Any) -> None:
        self.set_header("Content-Type", "application/json; charset=utf-8")
        self.finish(json.dumps(payload, ensure_ascii=False, allow_nan=False))

    def json_object(self) -> dict[str, Any] | None:
        """The request body as a JSON object, or ``None`` once a 400 has been sent."""
        try:
            body = json.loads(self.request.body)
        except ValueError:
            self.refuse(400, "the body is not JSON")
            return None
        if not isinstance(body, dict):
            self.refuse(400, "expected a JSON object")
            return None
        return body


class Page(Guarded):
    def get(self, name: str | None = None) -> None:
        name = name or self.studio.page
        try:
            body = static_bytes(name)
        except KeyError:
            return self.refuse(404, "no such file")
        self.set_header("Content-Type", STATIC_FILES[name])
        self.finish(body)
        return None


class NotFound(Guarded):
    def prepare(self) -> None:
        super().prepare()
        if not self._finished:
            self.refuse(404, "no such address")


class SessionApi(Api):
    def get(self) -> None:
        self.reply(self.studio.session.state())


class ItemApi(Api):
    def get(self, position: str) -> None:
        try:
            self.reply(self.studio.session.item(int(position)))
        except LabelInvalid as exc:
            self.refuse(404, str(exc))


class LabelApi(Api):
    def post(self) -> None:
        body = self.json_object()
        if body is None:
            return None
        try:
            self.reply(self.studio.session.save(body))
        except LabelInvalid as exc:
            self.refuse(422, str(exc))
        except JournalWriteError as exc:
            self.refuse(507, str(exc))
        return None


class JudgeApi(Api):
    def post(self) -> None:
        body = self.json_object()
        if body is None:
            return None
        try:
            self.reply(self.studio.session.judge(body.get("position")))
        except JudgeHidden as exc:
            self.refuse(403, str(exc))
        except LabelInvalid as exc:
            self.refuse(422, str(exc))
        except JournalWriteError as exc:
            self.refuse(507, str(exc))
        return None


class StudioApp:
    """The server of one rater's session: :meth:`start` binds ``127.0.0.1:port`` (``0``: any free port)
    and serves in a background thread; :attr:`url` carries the token in its fragment."""

    def __init__(self, pack: str | Path, rater: str, *, port: int = 0,
                 session: RaterSession | ReviewSession | None = None, token: str | None = None) -> None:
        delay = float(os.environ.get(ACK_DELAY_ENV) or 0)
        self.session = session or RaterSession(pack, rater, before_ack=(lambda: time.sleep(delay)) if delay else None)
        self.token = token or secrets.token_urlsafe(32)
        self.requested_port = int(port)
        self.port = 0
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._sockets: list[socket.socket] = []
        self.review = isinstance(self.session, ReviewSession)
        #: The page ``/`` serves: the rater's page, or the review page in review mode.
        self.page = ReviewSession.page if self.review else "index.html"

    @classmethod
    def for_review(cls, pack: str | Path, reviewer: str, *, threshold: int = DEFAULT_THRESHOLD, port: int = 0,
                   token: str | None = None) -> StudioApp:
        """The server in review mode: ``reviewer`` adjudicates the queue of ``label review`` at
        ``threshold`` (:class:`~axon_eval.studio.review.ReviewSession`)."""
        return cls(pack, reviewer, port=port, session=ReviewSession(pack, reviewer, threshold=threshold), token=token)

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}/#t={self.token}"

    def application(self) -> tornado.web.Application:
        ctx = {"studio": self}
        routes = [(r"/", Page, ctx), (r"/static/([A-Za-z0-9_.-]+)", Page, ctx),
                  (r"/api/session", SessionApi, ctx), (r"/api/item/([0-9]{1,9})", ItemApi, ctx),
                  (r"/api/label", LabelApi, ctx)]
        if self.review:
            routes.append((r"/api/judge", JudgeApi, ctx))
        return tornado.web.Application(routes, xsrf_cookies=False, compress_response=True,
            default_handler_class=NotFound, default_handler_args=ctx, log_function=lambda handler: None)

    def bind(self) -> None:
        self._sockets = tornado.netutil.bind_sockets(self.requested_port, HOST, family=socket.AF_INET)
        self.port = self._sockets[0].getsockname()[1]

    async def serve(self) -> None:
        """Serve until :meth:`stop` (binds first when :meth:`bind` has not run)."""
        if not self._sockets:
            self.bind()
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        server = tornado.httpserver.HTTPServer(self.application(), max_body_size=MAX_BODY_BYTES * 4,
                                               idle_connection_timeout=60, body_timeout=30)
        server.add_sockets(self._sockets)
        await self._stop.wait()
        server.stop()
        await server.close_all_connections()

    def start(self) -> str:
        """Bind and serve in a daemon thread; returns :attr:`url` once the socket listens."""
        self.bind()
        ready = threading.Event()

        def run() -> None:
            async def main() -> None:
                task = asyncio.ensure_future(self.serve())
                await asyncio.sleep(0)
                ready.set()
                await task
            asyncio.run(main())

        self._thread = threading.Thread(target=run, name=f"axon-studio-{self.session.rater}", daemon=True)
        self._thread.start()
        ready.wait(10)
        return self.url

    def stop(self) -> None:
        """Stop serving and close the session's journals."""
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread is not None:
            self._thread.join(10)
        self.session.close()
