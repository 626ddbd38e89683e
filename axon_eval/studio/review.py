"""``label review``: the adjudication queue, and adjudicated labels kept apart from the raw ones.

:func:`review_queue` (pure) lists the overlap segments whose raters differ: different verdicts, or a
dimension whose labels span more than ``threshold`` points (max - min). An adjudicated label is a record
of ``labels/adjudicated.jsonl`` (same journal, same fsync, same idempotent id) naming the reviewer and the
raw labels it settles; the raw labels are never changed.

The judge's grades may be shown to a reviewer only for segments the reviewer has labelled themself
(their own record is saved in their journal first); each showing is written to
``labels/reveals.jsonl`` before it is printed, and an adjudicated label made after a showing says so
(``judge_shown_before``), so studies can leave such labels out. The command line
(``label review --adjudicate`` / ``--show-judge``) and the studio's review page (:class:`ReviewSession`,
served by ``label review --serve``) share these rules: :func:`reviewer_labelled`, :func:`record_reveal`,
:func:`judge_shown` and :func:`adjudication_record`.
"""

from __future__ import annotations

import json
import re
import statistics
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, BinaryIO

import pandas as pd

from ..rubric import BANDS, DIMENSIONS
from .collect import latest_labels
from .ledger import Journal, _default_opener, read_records
from .pack import ADJUDICATED, GUIDE_FILE, LABELS_DIR, STUDIO_DIR, EvidenceStore, read_assignment, read_design
from .session import OWN_LABEL_FIELDS, LabelInvalid, check_label, pack_key

DEFAULT_THRESHOLD = 2
#: The journal of the showings of the judge's grades to reviewers, in the pack's ``labels/`` folder.
REVEALS_FILE = "reveals.jsonl"
#: The pattern of a reviewer's name.
REVIEWER = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


def review_queue(labels: pd.DataFrame, overlap: Sequence[str], threshold: int = DEFAULT_THRESHOLD
                 ) -> list[dict[str, Any]]:
    """Overlap segments labelled by two or more raters who differ (module docstring), with each rater's
    label side by side and each dimension's spread, in the order of ``overlap``."""
    lab = labels[(labels["kind"] == "label") & labels["segment_id"].isin(set(overlap))]
    out = []
    for sid in overlap:
        rows = lab[lab["segment_id"] == sid]
        if rows["rater"].nunique() < 2:
            continue
        spread = {}
        for d in DIMENSIONS:
            vals = pd.to_numeric(rows[d], errors="coerce").dropna()
            spread[d] = int(vals.max() - vals.min()) if len(vals) >= 2 else 0
        verdicts = sorted(set(rows["verdict"]))
        if len(verdicts) < 2 and max(spread.values()) <= threshold:
            continue
        out.append({"segment_id": sid, "verdicts_differ": len(verdicts) > 1, "spread": spread,
                    "labels": {r.rater: {**{d: (None if pd.isna(getattr(r, d)) else int(getattr(r, d)))
                                            for d in DIMENSIONS},
                                         "verdict": r.verdict, "comment": r.comment, "source": r.source}
                               for r in rows.itertuples(index=False)}})
    return out


def reviewer_labelled(pack: str | Path, reviewer: str) -> set[str]:
    """The segments ``reviewer`` has labelled themself (a label or a skip saved in their own journal);
    empty when the reviewer is not one of the assignment's raters. The judge's grades of a segment may be
    shown to the reviewer only when it is in this set (module docstring)."""
    if reviewer not in read_assignment(pack).raters:
        return set()
    return set(latest_labels(pack, [reviewer])["segment_id"])


def judge_shown(pack: str | Path, reviewer: str, segment_id: str) -> bool:
    """Whether ``labels/reveals.jsonl`` records a showing of the judge's grades of ``segment_id`` to
    ``reviewer``."""
    return any(r.get("reviewer") == reviewer and r.get("segment_id") == segment_id
               for _, r in read_records(Path(pack) / LABELS_DIR / REVEALS_FILE))


def record_reveal(journal: Journal, reviewer: str, segment_id: str) -> None:
    """Append (fsynced) the showing of the judge's grades of ``segment_id`` to ``reviewer``; call it before
    the grades are shown."""
    journal.append({"id": uuid.uuid4().hex, "reviewer": reviewer, "segment_id": segment_id,
                    "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})


def judge_grades(pack: str | Path) -> pd.DataFrame:
    """The judge's grades of the pack's source run (``design.json``'s ``source_run``), one row per
    segment (indexed by ``segment_id``), with the four dimensions and ``judge_verdict``."""
    from ..runs import load_run

    results = load_run(read_design(pack)["source_run"]).results
    return results.drop_duplicates("segment_id").set_index("segment_id")


def adjudication_record(item: Mapping[str, Any], reviewer: str, label: Mapping[str, Any], *, shown: bool
                        ) -> dict[str, Any]:
    """The ``labels/adjudicated.jsonl`` record of ``label`` (checked by
    :func:`~axon_eval.studio.session.check_label`, with its ``id``) settling the queue entry ``item``:
    the reviewer, the raw labels it settles (their journal lines) and whether the judge's grades had been
    shown to the reviewer before (``shown``)."""
    fields = dict(label)
    return {"id": fields.pop("id"), "segment_id": item["segment_id"], "rater": ADJUDICATED, "reviewer": reviewer,
            **fields, "settles": {r: v["source"] for r, v in item["labels"].items()}, "judge_shown_before": shown,
            "saved_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


class JudgeHidden(ValueError):
    """The judge's grades were asked for a segment the reviewer has not labelled themself."""


def _plain(value: Any) -> Any:
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return None
    return value.item() if hasattr(value, "item") else value


class ReviewSession:
    """The adjudication queue of ``pack`` for ``reviewer`` in the studio's page (``label review --serve``).

    The queue is :func:`review_queue` at ``threshold``, taken when the session starts. :meth:`item` sends
    a queued segment's blind evidence, each rater's label side by side and the latest adjudicated label of
    the segment, nothing of the judge; :meth:`judge` returns the judge's grades only for a segment the
    reviewer has labelled themself (:func:`reviewer_labelled`), after recording the showing
    (:func:`record_reveal`); :meth:`save` checks an adjudicated label and appends it to
    ``labels/adjudicated.jsonl`` through the fsynced, idempotent :class:`~axon_eval.studio.ledger.Journal`
    (:func:`adjudication_record`). ``opener``: the journal's file opener.
    """

    #: The page the server shows for this session.
    page = "review.html"

    def __init__(self, pack: str | Path, reviewer: str, *, threshold: int = DEFAULT_THRESHOLD,
                 opener: Callable[[Path], BinaryIO] = _default_opener) -> None:
        self.pack = Path(pack)
        if not isinstance(reviewer, str) or not REVIEWER.match(reviewer) or reviewer in (ADJUDICATED, "reveals"):
            raise ValueError(f"reviewer {reviewer!r}: expected 1-64 letters, digits, '_', '.' or '-' "
                             f"other than {ADJUDICATED!r} and 'reveals'")
        assignment = read_assignment(self.pack)
        self.rater = reviewer
        self.threshold = int(threshold)
        self.queue = review_queue(latest_labels(self.pack), assignment.overlap, self.threshold)
        self.store = EvidenceStore(self.pack)
        self.journal = Journal(self.pack / LABELS_DIR / f"{ADJUDICATED}.jsonl", opener=opener)
        self.reveals = Journal(self.pack / LABELS_DIR / REVEALS_FILE, opener=opener)
        self.guide = json.loads((self.pack / STUDIO_DIR / GUIDE_FILE).read_text(encoding="utf-8"))
        self.key = pack_key(self.pack) + ":review"
        self._grades: pd.DataFrame | None = None

    def _entry(self, position: Any) -> tuple[int, dict[str, Any]]:
        n = len(self.queue)
        if isinstance(position, bool) or not isinstance(position, int) or not 0 <= position < n:
            raise LabelInvalid(f"position: expected an integer from 0 to {n - 1}, got {position!r}"
                               if n else "position: the adjudication queue is empty")
        return position, self.queue[position]

    def progress(self) -> dict[str, Any]:
        """``done`` (queued segments with an adjudicated label) of ``total``, the first position without
        one (``next``), the median seconds per first adjudication, and each position's state."""
        latest = self.journal.latest()
        states = ["labelled" if q["segment_id"] in latest else "todo" for q in self.queue]
        firsts = [r["seconds"] for r in self.journal if r.get("amends") is None and r.get("seconds") is not None]
        return {"done": states.count("labelled"), "total": len(self.queue),
                "next": next((i for i, s in enumerate(states) if s == "todo"), None),
                "median_seconds": statistics.median(firsts) if firsts else None, "states": states}

    def state(self) -> dict[str, Any]:
        """What the page needs on load: the reviewer, pack key, threshold, progress, guide and verdicts."""
        return {"rater": self.rater, "reviewer": self.rater, "mode": "review", "pack": self.key,
                "threshold": self.threshold, "dimensions": list(DIMENSIONS), "verdicts": list(BANDS),
                "guide": self.guide, "progress": self.progress(),
                "repairs": [str(r) for r in (*self.journal.repairs, *self.reveals.repairs)]}

    def item(self, position: Any) -> dict[str, Any]:
        """The queued segment at ``position``: blind evidence, the raters' labels (scores, verdict,
        comment), each dimension's spread, the latest adjudicated label, whether the reviewer may ask for
        the judge's grades (``can_show_judge``) and whether they were shown before."""
        i, entry = self._entry(position)
        sid = entry["segment_id"]
        adj = self.journal.latest().get(sid)
        raters = [{"rater": r, **{k: v[k] for k in (*DIMENSIONS, "verdict", "comment")}}
                  for r, v in entry["labels"].items()]
        return {"position": i, "total": len(self.queue), "evidence": self.store.get(sid), "raters": raters,
                "spread": entry["spread"], "verdicts_differ": entry["verdicts_differ"],
                "label": {k: adj.get(k) for k in (*OWN_LABEL_FIELDS, "reviewer")} if adj else None,
                "can_show_judge": sid in reviewer_labelled(self.pack, self.rater),
                "judge_shown_before": judge_shown(self.pack, self.rater, sid)}

    def judge(self, position: Any) -> dict[str, Any]:
        """The judge's grades of the queued segment at ``position`` (the four dimensions, the verdict),
        recorded in ``labels/reveals.jsonl`` first. :class:`JudgeHidden` when the reviewer has not
        labelled the segment themself."""
        i, entry = self._entry(position)
        sid = entry["segment_id"]
        if sid not in reviewer_labelled(self.pack, self.rater):
            raise JudgeHidden(f"{sid}: label it yourself first (label serve --rater {self.rater}); "
                              "the judge stays hidden")
        if self._grades is None:
            self._grades = judge_grades(self.pack)
        row = self._grades.loc[sid]
        record_reveal(self.reveals, self.rater, sid)
        return {"position": i, "segment_id": sid, "judge": {**{d: _plain(row[d]) for d in DIMENSIONS},
                                                            "verdict": _plain(row["judge_verdict"])}}

    def save(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """Check and store one adjudicated label (idempotent by its id); returns ``saved``, ``duplicate``,
        ``id`` and the progress. :class:`~axon_eval.studio.session.LabelInvalid` for a bad label or a
        skip; :class:`~axon_eval.studio.ledger.JournalWriteError` when the disk refuses it."""
        i, entry = self._entry(body.get("position"))
        sid = entry["segment_id"]
        if body.get("segment_id") != sid:
            raise LabelInvalid(f"segment_id: expected {sid!r} at position {i}, got {body.get('segment_id')!r}")
        if body.get("skip") is not None:
            raise LabelInvalid("skip: an adjudicated label needs the four scores and a verdict, not a skip")
        label = check_label(body, answer_captured=self.store.get(sid)["answer_captured"])
        record = adjudication_record(entry, self.rater, label, shown=judge_shown(self.pack, self.rater, sid))
        done = self.journal.append(record)
        return {"saved": True, "duplicate": done.duplicate, "id": record["id"], "progress": self.progress()}

    def close(self) -> None:
        self.journal.close()
        self.reveals.close()
        self.store.close()
