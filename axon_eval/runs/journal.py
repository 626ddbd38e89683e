"""The paid journal: every judgement a run paid for, one JSON line the moment it arrives, over every attempt.

A run appends each record that cost something (not served from a cache, and carrying tokens or a cost)
to its journal as soon as the judge returns it, flushed line by line, so a process killed at any moment
(SIGKILL, a lost machine, a full disk) leaves on disk every verdict it received. A single-process run's
journal is ``paid.jsonl`` at the top of its folder; partition ``index`` of a partitioned run (and a resumed
single-process run, which is partition 0) writes ``parts/paid-<index>.jsonl``. A journal is opened for
appending and never rewritten: a resumed run adds its records after those of the attempts before it.

Two readers: a resumed run serves the journal's judged records instead of paying for them again
(:func:`~.partitioned.journal_records`), and :func:`journal_spend` sums their tokens and cost, so a run's
recorded spend is that of every attempt, each paid judgement counted once (a judgement paid twice, in
flight when a process was killed and sent again, is counted twice: it was paid twice).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .writer import PARTS_DIR, Usage

#: A single-process run's journal, and the pattern of a partition's (``parts/paid-<index>.jsonl``).
PAID_JOURNAL = "paid.jsonl"
PART_JOURNAL_GLOB = "paid-*.jsonl"


def part_journal_path(folder: str | Path, index: int) -> Path:
    """The paid journal of partition ``index``: ``parts/paid-<index>.jsonl`` (five digits)."""
    return Path(folder) / PARTS_DIR / f"paid-{index:05d}.jsonl"


def is_paid(record: Any) -> bool:
    """Whether ``record`` was paid for by the call that made it: not served from a cache, and carrying
    tokens or a cost above zero (a code judge's records carry neither, or a cost of 0)."""
    if getattr(record, "cached", False):
        return False
    return any(getattr(record, f, None) for f in Usage.FIELDS)


class PaidJournal:
    """Appends paid records (:func:`is_paid`) to ``path``, one flushed line each; the file is created on the
    first paid record (a run that pays for nothing writes none). ``count``: lines written by this object."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._fh: Any = None
        self.count = 0

    def add(self, record: Any) -> None:
        """Append ``record`` when it was paid for (a flushed, whole line)."""
        if not is_paid(record):
            return
        if self._fh is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = self.path.open("ab")
        self._fh.write((record.to_json_line() + "\n").encode("utf-8"))
        self._fh.flush()  # in the operating system's hands: a killed process loses nothing it received
        self.count += 1

    def close(self) -> None:
        if self._fh is not None:
            try:
                self._fh.close()
            except OSError:  # a full disk: the lines already flushed are on disk
                pass
            self._fh = None


def complete_lines(path: str | Path) -> Iterator[str]:
    """The whole lines of a JSON Lines file (a line a crash cut short, with no newline, is skipped);
    nothing when the file is missing."""
    p = Path(path)
    if not p.exists():
        return
    with p.open(encoding="utf-8", errors="replace") as fh:
        for line in fh:
            if line.endswith("\n") and line.strip():
                yield line


def journal_files(folder: str | Path) -> list[Path]:
    """Every paid journal of a run folder: ``paid.jsonl``, then ``parts/paid-*.jsonl`` in order."""
    folder = Path(folder)
    top = [folder / PAID_JOURNAL] if (folder / PAID_JOURNAL).is_file() else []
    return top + sorted((folder / PARTS_DIR).glob(PART_JOURNAL_GLOB))


@dataclass
class Spend:
    """What a run paid for over every attempt: ``totals`` (the :attr:`Usage.FIELDS`; ``None`` where no
    record carried the field), ``count`` paid judgements, and the journal ``files`` read."""

    totals: dict[str, Any] = field(default_factory=lambda: {f: None for f in Usage.FIELDS})
    count: int = 0
    files: list[Path] = field(default_factory=list)


def journal_spend(folder: str | Path) -> Spend:
    """The sums of every paid journal of ``folder`` (:func:`journal_files`); unreadable lines are skipped."""
    spend = Spend(files=journal_files(folder))
    for path in spend.files:
        for line in complete_lines(path):
            try:
                data = json.loads(line)
            except ValueError:
                continue
            if not isinstance(data, dict):
                continue
            spend.count += 1
            for f in Usage.FIELDS:
                v = data.get(f)
                if isinstance(v, int | float) and not isinstance(v, bool):
                    spend.totals[f] = (spend.totals[f] or 0) + v
    return spend


def record_spend(manifest: Any, folder: str | Path, fallback: Mapping[str, Any] | None = None) -> Spend:
    """Set ``manifest``'s tokens, ``cost_usd`` and ``verdicts_paid`` to the sums of the folder's paid
    journals (every attempt); a run that wrote no journal (a Message Batches run, a code judge) takes
    ``fallback`` (this attempt's :attr:`Usage.totals`). Returns the journals' :class:`Spend`."""
    spend = journal_spend(folder)
    totals: Mapping[str, Any] = spend.totals if spend.files else (fallback or {})
    for f in Usage.FIELDS:
        setattr(manifest, f, totals.get(f))
    manifest.verdicts_paid = spend.count if spend.files else None
    return spend


def records_of(lines: Iterable[str]) -> Iterator[Any]:
    """The :class:`~axon_eval.judges.records.JudgeRecord` of each line that reads as one (others skipped)."""
    from ..judges.base import JudgeRecord

    for line in lines:
        try:
            yield JudgeRecord.model_validate_json(line)
        except ValueError:
            continue
