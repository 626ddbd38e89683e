"""What a run writes as it goes: :class:`RunWriter` (verdicts, audit, results and members, appended chunk by
chunk and moved into place on commit), :class:`Usage` (tokens and cost so far) and :data:`BUDGET_ERROR`.

A run's results are a parquet dataset, ``results/part-<index>.parquet``: a single-process run writes part
0 and keeps its verdicts and audit at the folder's top; a partition of a partitioned run
(:mod:`.partitioned`) writes its own part and ``parts/verdicts-<index>.jsonl`` / ``parts/audit-<index>.jsonl``,
which the driver merges at the end.

Shared by the streaming :func:`~.evaluate.evaluate`, the Message Batches path (:mod:`.batch`) and
``rescore`` (:mod:`.derive`), so none of them imports another for these.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from ..rubric import Rubric
from .io import JsonlAppender, ParquetAppender, read_parquet, write_json
from .manifest import RunCounts
from .rows import SegmentItem, empty_results, results_frame, score_pair

if TYPE_CHECKING:  # pragma: no cover
    from ..judges.base import JudgeRecord

#: The sub-folder of a run holding its results dataset, and the one holding a partitioned run's parts
#: (verdicts, audit and records of each partition).
RESULTS_DIR = "results"
PARTS_DIR = "parts"
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

    def __init__(self, folder: Path, *, compress_audit: bool = False, part: int | None = None) -> None:
        self.folder = folder
        self.part = part
        audit_name = "audit.jsonl.gz" if compress_audit else "audit.jsonl"
        (folder / RESULTS_DIR).mkdir(parents=True, exist_ok=True)
        if part is None:
            top = folder
            verdicts, audit, members = top / "verdicts.jsonl", top / audit_name, top / "members.parquet"
        else:
            parts = folder / PARTS_DIR
            parts.mkdir(exist_ok=True)
            stem = f"{part:05d}"
            verdicts, audit = parts / f"verdicts-{stem}.jsonl", parts / audit_name.replace("audit", f"audit-{stem}")
            members = parts / f"members-{stem}.parquet"
        # the verdicts file is flushed chunk by chunk: it is the journal a resumed run reads back
        self.verdicts = JsonlAppender(verdicts, flush=True)
        self.audit = JsonlAppender(audit, compress=compress_audit)
        self.results = ParquetAppender(folder / RESULTS_DIR / f"part-{(part or 0):05d}.parquet")
        self.members = ParquetAppender(members)  # ensembles: one row per member
        self.counts = RunCounts()
        self._budget_errors = 0

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
        self._budget_errors += sum(1 for r in records if (r.error or "").startswith(BUDGET_ERROR.split("$")[0]))
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

    def budget_errors(self, template: str = BUDGET_ERROR) -> int:
        """Records left unjudged by the budget so far."""
        return self._budget_errors

    def results_frame(self) -> pd.DataFrame:
        """This writer's committed results part (one copy in memory, read after the last chunk)."""
        path = self.results.path
        return read_parquet(path) if path.exists() else empty_results()

    def commit(self, record: tuple[Path, dict[str, Any]] | None = None) -> None:
        """Move every file into place; ``record`` (a path and its JSON) is written after the verdicts,
        audit and members and before the results part, so a partition with a record is complete."""
        self.verdicts.commit()
        self.audit.commit()
        if self.members.count:
            self.members.commit()
        if record is not None:
            write_json(record[0], record[1])
        try:
            self.results.commit(empty=empty_results())
        except BaseException:  # no record without its results part (a full disk): the partition is unfinished
            if record is not None:
                Path(record[0]).unlink(missing_ok=True)
            raise

    def abort(self, *, torn: bool = False) -> None:
        """Close without committing. A single-process run keeps what it wrote under the final names (a
        failed run keeps what it had); a partition keeps its verdict journal (read back on resume) and
        drops its unfinished results part, which only a finished partition may have. A file that cannot
        be closed whole (a full disk) never gets its final name: the verdicts stay in their partial file
        (whole lines are read back on resume), the audit, members and results partial files are deleted
        (a resume writes them again). ``torn``: a write already failed (a full disk), so no file is
        trusted whole even if it closes: none gets its final name, the same way."""
        self.verdicts.abort(keep=not torn, keep_unclosed=True)
        if torn:  # the verdicts stay as the partial file, read back line by line on resume
            for appender in (self.audit, self.members, self.results):
                appender.abort(keep=False)
            return
        for appender in (self.audit, self.members):
            appender.abort(keep=True)
        self.results.abort(keep=self.part is None)
