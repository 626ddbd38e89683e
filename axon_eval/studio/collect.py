"""The labels of a pack's journals as tables: the newest record per (segment, rater), with where it is.

Read only: the journals are not repaired or opened for writing here (a half-written last line is left
out, and repaired by the next ``label serve``). Pure apart from reading the files.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..rubric import DIMENSIONS
from .ledger import read_records
from .pack import ADJUDICATED, LABELS_DIR, read_assignment

#: Columns of :func:`latest_labels`.
COLUMNS: tuple[str, ...] = ("segment_id", "rater", *DIMENSIONS, "verdict", "comment", "kind", "skip_reason",
                            "source", "overlap", "inclusion_probability", "weight", "seconds",
                            "judge_shown_before", "saved_at", "id")


def latest_labels(pack: str | Path, raters: list[str] | None = None) -> pd.DataFrame:
    """One row per (segment, rater): the newest record of each rater's journal (an amendment replaces
    the record it follows). ``raters``: default the assignment's raters. ``source`` is ``file:line``."""
    root = Path(pack)
    names = list(read_assignment(root).raters) if raters is None else list(raters)
    rows = []
    for rater in names:
        path = root / LABELS_DIR / f"{rater}.jsonl"
        latest: dict[str, dict] = {}
        for line, rec in read_records(path):
            latest[str(rec.get("segment_id"))] = {**rec, "source": f"{LABELS_DIR}/{rater}.jsonl:{line}"}
        for rec in latest.values():
            rows.append({c: rec.get(c) for c in COLUMNS} | {"rater": rec.get("rater", rater)})
    out = pd.DataFrame(rows, columns=list(COLUMNS), dtype=object)
    for d in DIMENSIONS:
        out[d] = pd.array(pd.to_numeric(out[d], errors="coerce").round(), dtype="Int64")
    return out


def adjudicated_labels(pack: str | Path) -> pd.DataFrame:
    """The adjudicated labels (``labels/adjudicated.jsonl``): the newest per segment."""
    return latest_labels(pack, [ADJUDICATED])
