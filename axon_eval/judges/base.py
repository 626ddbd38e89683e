"""Judge protocol.

``Judge``
    base class: ``judge`` / ``ajudge`` for one view, ``judge_many`` / ``ajudge_many`` for many (bounded
    concurrency, progress bar, verdict cache, input order kept).
``cache_key``
    the verdict cache key of one judgement.
``run_sync``
    run a coroutine to completion from synchronous code (inside Jupyter too).

The records a judge returns (``Verdict``, ``JudgeRecord``, ``parse_verdict``,
``parse_free_text_verdict``, ``VerdictParseError``) live in :mod:`~axon_eval.judges.records`, below this
module and the verdict cache; they are importable from here as before.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import hashlib
import json
import threading
from collections.abc import Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from ..evidence import SCHEMA_VERSION
from .records import (
    SUBSCORE_MAX,
    SUBSCORE_MIN,
    JudgeRecord,
    Subscore,
    Verdict,
    VerdictLabel,
    VerdictParseError,
    parse_free_text_verdict,
    parse_verdict,
    verdict_json_schema,
)

if TYPE_CHECKING:
    from ..view import EvidenceView
    from .cache import VerdictCache

__all__ = [
    "SUBSCORE_MAX",
    "SUBSCORE_MIN",
    "Judge",
    "JudgeRecord",
    "MissingApiKey",
    "Subscore",
    "Verdict",
    "VerdictLabel",
    "VerdictParseError",
    "cache_key",
    "parse_free_text_verdict",
    "parse_verdict",
    "run_sync",
    "verdict_json_schema",
]

T = TypeVar("T")


class MissingApiKey(RuntimeError):
    """Raised when an API judge is built without its key in the environment (before any work)."""


def cache_key(judge_id: str, prompt_version: str, view_sha256: str, sample_index: int,
              schema_version: int = SCHEMA_VERSION) -> str:
    """Verdict cache key: hex SHA-256 (64 chars, ``[0-9a-f]``) of the five identifying parts.

    ``sha256(json([judge_id, prompt_version, view_sha256, sample_index, schema_version]))``. It also
    serves as the Message Batches ``custom_id`` (<= 64 chars of ``[a-zA-Z0-9_-]``).
    """
    blob = json.dumps([judge_id, prompt_version, view_sha256, int(sample_index), int(schema_version)],
                      separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def run_sync(factory: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run a coroutine to completion from synchronous code.

    Without a running event loop, ``asyncio.run``. Inside a running loop (Jupyter), the coroutine
    runs with its own loop in a worker thread and this call blocks until it finishes. ``factory``
    creates the coroutine in the thread that runs it. A ``KeyboardInterrupt`` (Ctrl-C, a kernel
    interrupt) cancels the coroutine, as ``asyncio.run`` does, and is re-raised once it has stopped, so
    no judgement keeps being sent (and paid for) after the interrupt.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(factory())
    started = threading.Event()
    running: dict[str, Any] = {}

    async def main() -> T:
        running["loop"], running["task"] = asyncio.get_running_loop(), asyncio.current_task()
        started.set()
        return await factory()

    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="axon-judge")
    future = pool.submit(lambda: asyncio.run(main()))
    try:
        return future.result()
    except KeyboardInterrupt:
        started.wait(timeout=5.0)
        loop, task = running.get("loop"), running.get("task")
        if loop is not None and task is not None:
            with contextlib.suppress(RuntimeError):  # the loop has already closed
                loop.call_soon_threadsafe(task.cancel)
        with contextlib.suppress(BaseException):  # wait for the cancellation to land; its error is not ours
            future.result(timeout=30.0)
        raise
    finally:
        pool.shutdown(wait=False)


class Judge:
    """Base class of every judge.

    Subclasses set ``judge_id`` (a string that fully identifies the judge's behaviour: kind, model,
    prompt version and sampling settings), ``model`` and ``prompt_version``, and implement
    :meth:`ajudge`. Wrappers that delegate to other judges override :meth:`ajudge_cached` to pass the
    cache down to their members (``cacheable = False`` at their own level).

    Records from :meth:`judge_many` are returned in input order, view-major: for views ``v0, v1`` and
    2 samples, ``[v0/s0, v0/s1, v1/s0, v1/s1]``.
    """

    judge_id: str
    model: str
    prompt_version: str
    #: Whether records of this judge are stored in / read from the verdict cache at its own level.
    cacheable: ClassVar[bool] = True
    #: Samples per view when ``judge_many(samples=None)``; ``repeat(spec, n)`` sets n.
    default_samples: int = 1
    #: The spec string this judge was built from (set by the registry), for manifests.
    spec: str | None = None

    # -- one view --------------------------------------------------------------------------------
    async def ajudge(self, view: EvidenceView, sample_index: int = 0) -> JudgeRecord:
        """Judge one view; must return an error record rather than raise for judgement failures."""
        raise NotImplementedError(f"{type(self).__name__} does not implement ajudge")

    def judge(self, view: EvidenceView, sample_index: int = 0) -> JudgeRecord:
        """Synchronous :meth:`ajudge` (works inside a running event loop too)."""
        return run_sync(lambda: self.ajudge(view, sample_index))

    def cache_key(self, view: EvidenceView, sample_index: int = 0) -> str:
        return cache_key(self.judge_id, self.prompt_version, view.sha256, sample_index)

    async def ajudge_cached(self, view: EvidenceView, sample_index: int = 0,
                            cache: VerdictCache | None = None) -> JudgeRecord:
        """Judge through the verdict cache: a hit returns the stored record (``cached=True``,
        ``segment_id`` set to this view's) without a call; a judged miss is stored; errors never are.
        """
        if cache is None or not self.cacheable:
            return await self.ajudge(view, sample_index)
        key = self.cache_key(view, sample_index)
        hit = cache.get(key)
        if hit is not None:
            return hit.model_copy(update={"segment_id": view.segment_id, "cached": True, "cache_key": key})
        record = await self.ajudge(view, sample_index)
        if record.judged:
            cache.put(key, record.model_copy(update={"cache_key": key}), view_sha256=view.sha256)
        return record

    # -- many views ------------------------------------------------------------------------------
    async def ajudge_many(self, views: Sequence[EvidenceView], *, concurrency: int = 8,
                          cache: VerdictCache | None = None, progress: bool = True,
                          samples: int | None = None,
                          completed: dict[int, JudgeRecord] | None = None) -> list[JudgeRecord]:
        """Judge every view ``samples`` times (default ``self.default_samples``).

        At most ``concurrency`` judgements are in flight (asyncio semaphore). Records come back in
        input order (view-major). A judgement that raises is turned into an error record; this method
        never raises for a single failed judgement. ``completed``, when given, receives each record as
        its judgement finishes, keyed by its position in the returned list (``view * samples + sample``),
        so a caller whose call is interrupted still has the judgements already made (and paid for).
        """
        if concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {concurrency!r}")
        n_samples = self.default_samples if samples is None else samples
        if n_samples < 1:
            raise ValueError(f"samples must be >= 1, got {samples!r}")
        jobs = [(view, s) for view in views for s in range(n_samples)]
        semaphore = asyncio.Semaphore(concurrency)
        bar = _progress_bar(len(jobs), self.judge_id, progress)

        async def one(position: int, view: EvidenceView, sample_index: int) -> JudgeRecord:
            async with semaphore:
                try:
                    record = await self.ajudge_cached(view, sample_index, cache)
                except Exception as exc:  # a bug in one judgement must not sink the run
                    record = self.error_record(view, sample_index, f"{type(exc).__name__}: {exc}")
                finally:
                    if bar is not None:
                        bar.update(1)
                if completed is not None:
                    completed[position] = record
                return record

        try:
            return list(await asyncio.gather(*(one(k, v, s) for k, (v, s) in enumerate(jobs))))
        finally:
            if bar is not None:
                bar.close()
            await self.aclose()

    def judge_many(self, views: Sequence[EvidenceView], *, concurrency: int = 8,
                   cache: VerdictCache | None = None, progress: bool = True,
                   samples: int | None = None,
                   completed: dict[int, JudgeRecord] | None = None) -> list[JudgeRecord]:
        """Synchronous :meth:`ajudge_many` (works inside a running event loop too)."""
        return run_sync(lambda: self.ajudge_many(views, concurrency=concurrency, cache=cache,
                                                 progress=progress, samples=samples, completed=completed))

    async def aclose(self) -> None:
        """Release per-event-loop resources (HTTP clients); called at the end of ``ajudge_many``."""

    # -- helpers ---------------------------------------------------------------------------------
    def error_record(self, view: EvidenceView, sample_index: int, error: str, **fields: Any) -> JudgeRecord:
        """An error record (unjudged segment) for ``view``."""
        return JudgeRecord(segment_id=view.segment_id, judge_id=self.judge_id, model=self.model,
                           prompt_version=self.prompt_version, sample_index=sample_index,
                           error=error, cache_key=self.cache_key(view, sample_index), **fields)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.judge_id!r})"


def _progress_bar(total: int, label: str, enabled: bool) -> Any:
    if not enabled or total == 0:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=f"judging [{label}]", unit="judgement")

