"""One rater's session over a pack: the queue, progress, the item to show, and the checked save.

:class:`RaterSession` joins the assignment (the rater's queue), the evidence store, the design figures and
the rater's journal. What it returns to the server is built from allow-lists: :meth:`RaterSession.item`
sends the blind evidence and the rater's *own* latest label for that segment, nothing else;
:meth:`RaterSession.save` records, server-side, the label with the segment's inclusion probability,
design weight, batch and whether it is on the overlap, and answers only whether it was saved and the
progress. :func:`check_label` validates a label sent by the page and names the field that is wrong.
"""

from __future__ import annotations

import hashlib
import json
import re
import statistics
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, BinaryIO

from ..rubric import BANDS, DIMENSIONS, REQUIRED_DIMENSIONS
from .ledger import Journal, _default_opener
from .pack import GUIDE_FILE, LABELS_DIR, STUDIO_DIR, EvidenceStore, design_info, read_assignment, read_design

#: The pattern of a label id made by the page (8-64 letters, digits, ``_`` or ``-``).
LABEL_ID = re.compile(r"^[A-Za-z0-9_-]{8,64}$")
MAX_COMMENT_CHARS = 4000
MAX_REASON_CHARS = 500
#: Fields of a stored label the rater's own page may see again (to amend it).
OWN_LABEL_FIELDS: tuple[str, ...] = ("id", "kind", *DIMENSIONS, "verdict", "comment", "skip_reason")


class LabelInvalid(ValueError):
    """A label the page sent that cannot be stored; ``str()`` names the field and what was expected."""


def _int_0_10(name: str, value: Any, *, required: bool) -> int | None:
    if value is None or value == "":
        if required:
            raise LabelInvalid(f"{name}: expected an integer 0-10, got nothing")
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 10:
        raise LabelInvalid(f"{name}: expected an integer 0-10, got {value!r}")
    return int(value)


def check_label(body: Mapping[str, Any], *, answer_captured: bool) -> dict[str, Any]:
    """The label fields of ``body``, checked: ``id``; for a label the three required dimensions 0-10,
    ``answer_faithfulness`` 0-10 when an answer was captured and absent otherwise, a verdict of
    :data:`~axon_eval.rubric.BANDS`, a comment of at most 4000 characters; for ``skip`` a reason
    ("cannot judge: ..."). :class:`LabelInvalid` naming the first bad field."""
    rid = body.get("id")
    if not isinstance(rid, str) or not LABEL_ID.match(rid):
        raise LabelInvalid(f"id: expected 8-64 letters, digits, '_' or '-', got {rid!r}")
    comment = body.get("comment") or ""
    if not isinstance(comment, str) or len(comment) > MAX_COMMENT_CHARS:
        raise LabelInvalid(f"comment: expected text of at most {MAX_COMMENT_CHARS} characters")
    amends = body.get("amends")
    if amends is not None and (not isinstance(amends, str) or not LABEL_ID.match(amends)):
        raise LabelInvalid(f"amends: expected the id of an earlier label, got {amends!r}")
    seconds = body.get("seconds")
    if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, int | float)
                                or not 0 <= seconds < 86400):
        raise LabelInvalid(f"seconds: expected a number of seconds from 0 to 86400, got {seconds!r}")
    out: dict[str, Any] = {"id": rid, "comment": comment, "amends": amends,
                           "seconds": round(float(seconds), 3) if seconds is not None else None}
    skip = body.get("skip")
    if skip is not None:
        if not isinstance(skip, str) or not skip.strip() or len(skip) > MAX_REASON_CHARS:
            raise LabelInvalid(f"skip: expected a reason of 1-{MAX_REASON_CHARS} characters (why it cannot be judged)")
        return {**out, "kind": "skip", **dict.fromkeys(DIMENSIONS), "verdict": None, "skip_reason": skip.strip()}
    scores = body.get("scores")
    if not isinstance(scores, Mapping):
        raise LabelInvalid("scores: expected an object with the four dimensions")
    unknown = sorted(set(scores) - set(DIMENSIONS))
    if unknown:
        raise LabelInvalid(f"scores: unknown dimension(s) {unknown}; expected {list(DIMENSIONS)}")
    values = {d: _int_0_10(d, scores.get(d), required=d in REQUIRED_DIMENSIONS) for d in DIMENSIONS}
    faith = values["answer_faithfulness"]
    if answer_captured and faith is None:
        raise LabelInvalid("answer_faithfulness: expected an integer 0-10 (an answer was captured)")
    if not answer_captured and faith is not None:
        raise LabelInvalid("answer_faithfulness: expected none: no answer was captured for this segment")
    verdict = body.get("verdict")
    if verdict not in BANDS:
        raise LabelInvalid(f"verdict: expected one of {', '.join(BANDS)}, got {verdict!r}")
    return {**out, "kind": "label", **values, "verdict": verdict, "skip_reason": None}


def pack_key(pack: str | Path) -> str:
    """A short stable name of the pack (the browser's outbox is kept under it)."""
    return hashlib.sha256(str(Path(pack).resolve()).encode()).hexdigest()[:16]


class RaterSession:
    """The session of ``rater`` over ``pack`` (``label init`` must have run). ``opener``: the journal's
    file opener (:class:`~axon_eval.studio.ledger.Journal`); ``before_ack``: run after each fsync."""

    def __init__(self, pack: str | Path, rater: str, *, opener: Callable[[Path], BinaryIO] = _default_opener,
                 before_ack: Callable[[], None] | None = None) -> None:
        self.pack = Path(pack)
        assignment = read_assignment(self.pack)
        if rater not in assignment.queues:
            raise ValueError(f"rater {rater!r} is not assigned in {self.pack}; the raters are "
                             f"{list(assignment.raters)}")
        self.rater = rater
        self.queue: tuple[str, ...] = assignment.queues[rater]
        self.overlap = frozenset(assignment.overlap)
        self.design = design_info(read_design(self.pack))
        self.store = EvidenceStore(self.pack)
        missing = [s for s in self.queue if s not in self.store]
        if missing:
            raise ValueError(f"{self.store.path} lacks segment(s) {missing[:5]} of the queue: run label init --extend")
        self.journal = Journal(self.pack / LABELS_DIR / f"{rater}.jsonl", opener=opener)
        self.guide = json.loads((self.pack / STUDIO_DIR / GUIDE_FILE).read_text(encoding="utf-8"))
        self.key = pack_key(self.pack)
        self._before_ack = before_ack

    def _position(self, position: Any) -> int:
        if isinstance(position, bool) or not isinstance(position, int) or not 0 <= position < len(self.queue):
            raise LabelInvalid(f"position: expected an integer from 0 to {len(self.queue) - 1}, got {position!r}")
        return position

    def progress(self) -> dict[str, Any]:
        """``done`` of ``total``, the first position not yet labelled (``next``; ``None`` when all are),
        the median seconds per labelled item, and each position's state."""
        latest = self.journal.latest()
        states = [("skipped" if latest[s].get("kind") == "skip" else "labelled") if s in latest else "todo"
                  for s in self.queue]
        firsts = [r["seconds"] for r in self.journal if r.get("amends") is None and r.get("seconds") is not None]
        return {"done": sum(st != "todo" for st in states), "total": len(self.queue),
                "next": next((i for i, st in enumerate(states) if st == "todo"), None),
                "median_seconds": statistics.median(firsts) if firsts else None, "states": states}

    def state(self) -> dict[str, Any]:
        """What the page needs on load: rater, pack key, progress, the rubric guide, the verdicts."""
        return {"rater": self.rater, "pack": self.key, "dimensions": list(DIMENSIONS), "verdicts": list(BANDS),
                "guide": self.guide, "progress": self.progress(),
                "repairs": [str(r) for r in self.journal.repairs]}

    def item(self, position: Any) -> dict[str, Any]:
        """The segment at ``position`` of the queue: its blind evidence and the rater's own latest label."""
        i = self._position(position)
        sid = self.queue[i]
        own = self.journal.latest().get(sid)
        return {"position": i, "total": len(self.queue), "evidence": self.store.get(sid),
                "label": {k: own.get(k) for k in OWN_LABEL_FIELDS} if own else None}

    def save(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """Check and store one label (idempotent by its id); returns ``saved``, ``duplicate``, ``id`` and
        the progress. :class:`LabelInvalid` for a bad label;
        :class:`~axon_eval.studio.ledger.JournalWriteError` when the disk refuses it."""
        i = self._position(body.get("position"))
        sid = self.queue[i]
        if body.get("segment_id") != sid:
            raise LabelInvalid(f"segment_id: expected {sid!r} at position {i}, got {body.get('segment_id')!r}")
        d = self.design.get(sid)
        label = check_label(body, answer_captured=self.store.get(sid)["answer_captured"])
        record = {"id": label.pop("id"), "segment_id": sid, "rater": self.rater, **label, "position": i,
                  "overlap": sid in self.overlap, "batch": d.batch if d else None,
                  "inclusion_probability": d.inclusion_probability if d else None,
                  "weight": d.weight if d else None, "judge_shown_before": False,
                  "saved_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        done = self.journal.append(record, before_ack=self._before_ack)
        return {"saved": True, "duplicate": done.duplicate, "id": record["id"], "progress": self.progress()}

    def close(self) -> None:
        self.journal.close()
        self.store.close()
