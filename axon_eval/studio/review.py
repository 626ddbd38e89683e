"""``label review``: the adjudication queue, and adjudicated labels kept apart from the raw ones.

:func:`review_queue` (pure) lists the overlap segments whose raters differ: different verdicts, or a
dimension whose labels span more than ``threshold`` points (max - min). An adjudicated label is a record
of ``labels/adjudicated.jsonl`` (same journal, same fsync, same idempotent id) naming the reviewer and the
raw labels it settles; the raw labels are never changed.

The judge's grades may be shown to a reviewer only for segments the reviewer has labelled themself
(their own record is saved in their journal first); each showing is written to
``labels/reveals.jsonl`` before it is printed, and an adjudicated label made after a showing says so
(``judge_shown_before``), so studies can leave such labels out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from ..rubric import DIMENSIONS

DEFAULT_THRESHOLD = 2


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
