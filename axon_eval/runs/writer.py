"""What a run writes as it goes: :class:`RunWriter` (verdicts, audit, results and members, appended chunk by
chunk and moved into place on commit), :class:`Usage` (tokens and cost so far) and :data:`BUDGET_ERROR`.

Shared by the streaming :func:`~.evaluate.evaluate`, the Message Batches path (:mod:`.batch`) and
``rescore`` (:mod:`.derive`), so none of them imports another for these.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from ..rubric import Rubric
from .io import JsonlAppender, ParquetAppender, read_parquet
from .manifest import RunCounts
from .rows import SegmentItem, empty_results, results_frame, score_pair

if TYPE_CHECKING:  # pragma: no cover
    from ..judges.base import JudgeRecord

#: The error text of a segment left unjudged because the ``max_cost_usd`` budget would be exceeded.
BUDGET_ERROR = "not judged: the max_cost_usd budget of ${budget:.4f} would be exceeded (reported so far ${spent:.4f})"


class Usage:
    """Running totals of tokens and cost of the calls made in this run (cached records cost nothing)."""

    FIELDS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_creation_tokens", "cost_usd")

    def __init__(self) -> None:
        self.totals: dict[str, Any] = {f: None for f in self.FIELDS}
        self.cached = 0
        self.records = 0

    def add(self, records: Iterable[JudgeRecord]) -> None:
        for r in records:
            self.records += 1
            if r.cached:
                self.cached += 1
                continue
            for f in self.FIELDS:
                v = getattr(r, f)
                if v is not None:
                    self.totals[f] = (self.totals[f] or 0) + v

    @property
    def spent(self) -> float:
        return float(self.totals["cost_usd"] or 0.0)


class RunWriter:
    """The growing files of a run folder (verdicts, audit, results) and its running counts."""

    def __init__(self, folder: Path, *, compress_audit: bool = False) -> None:
        self.folder = folder
        self.verdicts = JsonlAppender(folder / "verdicts.jsonl")
        self.audit = JsonlAppender(folder / ("audit.jsonl.gz" if compress_audit else "audit.jsonl"),
                                   compress=compress_audit)
        self.results = ParquetAppender(folder / "results.parquet")
        self.members = ParquetAppender(folder / "members.parquet")  # ensembles: one row per member
        self.counts = RunCounts()

    def add(self, items: Sequence[SegmentItem], records: Sequence[JudgeRecord], rubric: Rubric,
            n_turns: int) -> pd.DataFrame:
        """Score and write the records of one chunk: ``records`` are view-major, ``samples`` per item."""
        samples = (len(records) // len(items)) if items else 1
        if items and samples * len(items) != len(records):
            raise RuntimeError(f"judge returned {len(records)} records for {len(items)} views")
        aligned = [items[i // samples] for i in range(len(records))]
        for i, (item, record) in enumerate(zip(aligned, records, strict=True)):
            if record.segment_id != item.segment_id:
                raise RuntimeError(f"judge returned records out of order: record {i} is for "
                                   f"{record.segment_id!r}, expected {item.segment_id!r}")
        return self.add_scored(aligned, records, rubric, n_turns)

    def add_scored(self, items: Sequence[SegmentItem], records: Sequence[JudgeRecord], rubric: Rubric,
                   n_turns: int) -> pd.DataFrame:
        """Score and write ``records``, ``items[i]`` being the segment of ``records[i]``."""
        rows, audit = [], []
        for item, record in zip(items, records, strict=True):
            row, entry = score_pair(item, record, rubric)
            rows.append(row)
            audit.append(entry)
        frame = results_frame(rows)
        self.verdicts.write(r.model_dump_json() for r in records)
        self.audit.write(audit)
        if len(frame):
            self.results.write(frame)  # not kept: the table is read back once, after the last chunk
        ensemble = [r for r in records if isinstance(r.extra, dict) and isinstance(r.extra.get("members"), list)]
        if ensemble:
            from ..stats.noise import members_frame

            self.members.write(members_frame(ensemble))
        self._count(frame, n_turns)
        return frame

    def _count(self, frame: pd.DataFrame, n_turns: int) -> None:
        c = self.counts
        c.turns += n_turns
        if len(frame):
            judged_by_segment = (frame["status"] == "judged").groupby(frame["segment_id"], sort=False).all()
            c.segments += len(judged_by_segment)
            c.judged += int(judged_by_segment.sum())
            c.unjudged = c.segments - c.judged
            c.samples += len(frame)
            c.unjudged_samples += int((frame["status"] != "judged").sum())

    def results_frame(self) -> pd.DataFrame:
        """The committed ``results.parquet`` (one copy in memory, read after the last chunk)."""
        path = self.folder / "results.parquet"
        return read_parquet(path) if path.exists() else empty_results()

    def commit(self) -> None:
        self.verdicts.commit()
        self.audit.commit()
        self.results.commit(empty=empty_results())
        if self.members.count:
            self.members.commit()

    def abort(self) -> None:
        for appender in (self.verdicts, self.audit, self.results, self.members):
            appender.abort(keep=True)
