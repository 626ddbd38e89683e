"""Judging a stream of turns in chunks: the one code path of every run (single-process, a partition of a
partitioned run, a resumed run).

:func:`segment_chunks` cuts whole turns into chunks of about ``chunk_size`` segments, each segment
rendered as the judge's view; :func:`judge_chunk` judges one chunk through the verdict cache and within
a budget (before each view is sent, the reported cost so far plus the view's estimate, :mod:`.budget`,
must stay within ``max_cost_usd``; views beyond it come back as error records with the reason);
:class:`InFlight` keeps the chunk being judged so an interrupt can keep what finished, and hands every
judgement to the run's paid journal (:mod:`~axon_eval.runs.journal`) the moment it finishes. With
``stop`` (a partition of a partitioned run asked to stop), no further view is sent once ``stop()`` is
true: each is an error record (:class:`RunStopped`) without a request, while those already sent finish
and are kept.

:func:`judged_chunks` is the chunk loop of a run judged in this process (a single-process run, a
partition): it judges chunk after chunk and hands each on; :func:`score_and_write` is the one writing
stage of every run, whichever way it was judged (in this process, as a Message Batch, or partition by
partition): each judged chunk's usage is added up, its rows scored and written.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from ..evidence import Turn, split_segments, trajectory_facts
from ..rubric import Rubric
from ..view import EvidenceView, render_view
from .budget import estimate_view_cost
from .rows import SegmentItem
from .writer import BUDGET_ERROR, Usage

if TYPE_CHECKING:  # pragma: no cover
    from ..judges.base import Judge, JudgeRecord
    from .writer import RunWriter


def resolve_judge(judge: Judge | str, rubric: Rubric | None = None) -> Judge:
    """A judge object, or one built from a spec string by ``axon_eval.judges.build_judge``; the
    language-model judges of a spec take the rubric's ``prompt_version`` (the rubric pins the prompt:
    it is part of the rubric id)."""
    if isinstance(judge, str):
        from ..judges import build_judge

        return build_judge(judge, **({"prompt_version": rubric.prompt_version} if rubric is not None else {}))
    for attr in ("judge_id", "model", "prompt_version", "judge_many"):
        if not hasattr(judge, attr):
            raise TypeError(f"{judge!r} is not a judge: it has no {attr!r}")
    return judge


def segment_chunks(turns: Iterator[Turn], rubric: Rubric, chunk_size: int,
                    row_sampler: str | None) -> Iterator[tuple[list[SegmentItem], list[EvidenceView], int]]:
    """``(items, views, n_turns)`` per chunk of whole turns holding about ``chunk_size`` segments."""
    items: list[SegmentItem] = []
    views: list[EvidenceView] = []
    n_turns = 0
    for turn in turns:
        n_turns += 1
        facts = trajectory_facts(turn).to_dict()
        for segment in split_segments(turn):
            view = (render_view(segment, rubric.row_horizon) if row_sampler is None
                    else render_view(segment, rubric.row_horizon, row_sampler=row_sampler))
            views.append(view)
            items.append(SegmentItem.from_view(view, turn, facts))
        if len(views) >= chunk_size:
            yield items, views, n_turns
            items, views, n_turns = [], [], 0
    if views or n_turns:
        yield items, views, n_turns


def rubric_sampler(rubric: Rubric) -> str | None:
    """The rubric's row sampler for the judge's view, ``None`` for the default (the first rows)."""
    sampler = getattr(rubric, "row_sampler", None)
    return None if sampler in (None, "head") else str(sampler)


# -- writing -------------------------------------------------------------------------------------------


INTERRUPTED_ERROR = "not judged: the run was interrupted (Ctrl-C) before this judgement finished"


class _Journalled(dict):  # type: ignore[type-arg]
    """The finished judgements of a chunk; each is handed to the paid journal as it is stored."""

    def __init__(self, journal: Any) -> None:
        super().__init__()
        self.journal = journal

    def __setitem__(self, key: int, record: Any) -> None:
        self.journal.add(record)
        super().__setitem__(key, record)


class InFlight:
    """The chunk being judged: the items and views sent to the judge and the records finished so far
    (keyed as :meth:`~axon_eval.judges.base.Judge.ajudge_many`'s ``completed``). With a ``journal``
    (:class:`~.journal.PaidJournal`), each finished record is appended to it as it arrives."""

    def __init__(self, journal: Any = None) -> None:
        self.journal = journal
        self.items: list[SegmentItem] = []
        self.views: list[EvidenceView] = []
        self.done: dict[int, JudgeRecord] = {}

    def start(self, items: Sequence[SegmentItem], views: Sequence[EvidenceView]) -> dict[int, JudgeRecord]:
        self.items, self.views = list(items), list(views)
        self.done = _Journalled(self.journal) if self.journal is not None else {}
        return self.done

    def clear(self) -> None:
        self.start([], [])

    def finished(self, judge: Judge) -> tuple[list[SegmentItem], list[JudgeRecord]]:
        """``(items, records)`` of every sent segment with at least one finished judgement, its unfinished
        samples as error records saying the run was interrupted (aligned, view-major)."""
        samples = int(getattr(judge, "default_samples", 1) or 1)
        done = dict(self.done)
        items: list[SegmentItem] = []
        records: list[JudgeRecord] = []
        for i, (item, view) in enumerate(zip(self.items, self.views, strict=True)):
            got = [done.get(i * samples + s) for s in range(samples)]
            if all(r is None for r in got):
                continue
            for s, record in enumerate(got):
                items.append(item)
                records.append(record if record is not None else judge.error_record(view, s, INTERRUPTED_ERROR))
        return items, records


class RunStopped(Exception):
    """The run was asked to stop: this judgement was not sent (it is judged on resume)."""


class StopBeforeSending:
    """The cache a stopping run judges through: ``get`` (called before every request) raises
    :class:`RunStopped` once ``stop()`` is true, so no further request is sent; otherwise it is ``cache``
    (``None``: no cache, every lookup a miss)."""

    def __init__(self, cache: Any, stop: Callable[[], bool]) -> None:
        self.cache, self.stop = cache, stop

    def get(self, key: str) -> Any:
        if self.stop():
            raise RunStopped("not sent: the run was asked to stop")
        return self.cache.get(key) if self.cache is not None else None

    def put(self, key: str, record: Any, *, view_sha256: str | None = None) -> None:
        if self.cache is not None:
            self.cache.put(key, record, view_sha256=view_sha256)


def judge_chunk(judge: Judge, views: Sequence[EvidenceView], items: Sequence[SegmentItem], *,
                 cache: Any, concurrency: int, usage: Usage, max_cost_usd: float | None,
                 inflight: InFlight | None = None, stop: Callable[[], bool] | None = None) -> list[JudgeRecord]:
    """Judge one chunk through the cache, keeping within the budget (see the module docstring); the views
    sent and the judgements finished are kept in ``inflight`` while the call runs. With ``stop``, views
    not yet sent when it turns true come back as :class:`RunStopped` error records."""
    inflight = inflight if inflight is not None else InFlight()
    sending = StopBeforeSending(cache, stop) if stop is not None else cache
    if max_cost_usd is None:
        done = inflight.start(items, views)
        return judge.judge_many(views, concurrency=concurrency, cache=sending, progress=False, completed=done)
    allowed: list[int] = []
    planned = usage.spent
    for k, view in enumerate(views):
        cost = estimate_view_cost(judge, view) or 0.0
        if cache is not None and getattr(judge, "cacheable", False) and cache.get(judge.cache_key(view, 0)) is not None:
            cost = 0.0  # served from the cache: free
        if planned + cost > max_cost_usd:
            break
        planned += cost
        allowed.append(k)
    done = inflight.start([items[k] for k in allowed], [views[k] for k in allowed])
    judged = judge.judge_many([views[k] for k in allowed], concurrency=concurrency, cache=sending,
                              progress=False, completed=done) if allowed else []
    samples = getattr(judge, "default_samples", 1) or 1
    out: list[JudgeRecord] = list(judged)
    message = BUDGET_ERROR.format(budget=max_cost_usd, spent=usage.spent)
    for view in views[len(allowed):]:
        out.extend(judge.error_record(view, s, message) for s in range(samples))
    return out


#: The judgement of one chunk as ``(items, records, n_turns)``, the items one per view, the records
#: view-major (the judge's samples per view), and the number of turns the chunk holds.
JudgedChunk = tuple[list[SegmentItem], list["JudgeRecord"], int]


class StopRequested(Exception):
    """Raised by :func:`judged_chunks` when its ``stop()`` is true before a chunk is sent or once it was
    judged (the chunk's paid verdicts are in the paid journal: a resume serves them)."""


def judged_chunks(judge: Judge, chunks: Iterable[tuple[list[SegmentItem], list[EvidenceView], int]], *,
                  cache: Any, concurrency: int, usage: Usage, max_cost_usd: float | None, inflight: InFlight,
                  stop: Callable[[], bool] | None = None) -> Iterator[JudgedChunk]:
    """Each chunk of ``chunks`` (:func:`segment_chunks`) judged by :func:`judge_chunk`, as
    ``(items, records, n_turns)``.

    The chunk in flight is kept in ``inflight`` while it is judged and cleared once its records are
    back; the next chunk is judged only when the caller asks for it, so ``usage`` (which the caller adds
    to, :func:`score_and_write`) holds the spend of every earlier chunk when the budget is checked.

    Parameters
    ----------
    judge : Judge
        The judge of the run.
    chunks : iterable of tuple
        ``(items, views, n_turns)`` per chunk.
    cache : object or None
        The verdict cache (``get``/``put``), or ``None``.
    concurrency : int
        Judgements in flight.
    usage : Usage
        The run's running totals (read for the budget).
    max_cost_usd : float or None
        The budget, in US dollars (``None``: none).
    inflight : InFlight
        Where the chunk being judged is kept (an interrupt keeps what finished).
    stop : callable, optional
        A partition asked to stop: :class:`StopRequested` is raised when it returns true before a chunk
        is sent or after it was judged.

    Yields
    ------
    tuple
        ``(items, records, n_turns)`` of each chunk.
    """
    for items, views, n_turns in chunks:
        if stop is not None and stop():
            raise StopRequested("the run was asked to stop before this chunk was sent")
        records = judge_chunk(judge, views, items, cache=cache, concurrency=concurrency, usage=usage,
                              max_cost_usd=max_cost_usd, inflight=inflight, stop=stop)
        inflight.clear()
        if stop is not None and stop():
            raise StopRequested("the run was asked to stop while this chunk was judged")
        yield items, records, n_turns


def score_and_write(judged: Iterable[JudgedChunk], writer: RunWriter, usage: Usage, rubric: Rubric, *,
                    after_chunk: Callable[[int], None] | None = None) -> None:
    """Score and write every judged chunk: the writing stage shared by every way of judging a run.

    For each ``(items, records, n_turns)`` of ``judged``, in order: the records' tokens and cost are
    added to ``usage`` (a :class:`~.writer.Usage`), the rows are scored and written by ``writer``
    (:meth:`~.writer.RunWriter.add`), then ``after_chunk(len(items))`` is called (a progress bar, a
    heartbeat).

    Parameters
    ----------
    judged : iterable of tuple
        ``(items, records, n_turns)`` per chunk, as :func:`judged_chunks` yields them.
    writer : RunWriter
        The writer of the run folder (or of one partition).
    usage : Usage
        The running totals the records are added to.
    rubric : Rubric
        The rubric the rows are scored with.
    after_chunk : callable, optional
        Called with the number of segments of each chunk once it is written.
    """
    for items, records, n_turns in judged:
        usage.add(records)
        writer.add(items, records, rubric, n_turns)
        if after_chunk is not None:
            after_chunk(len(items))
