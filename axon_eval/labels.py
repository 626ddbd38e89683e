"""Constructed labels of the bundled sample (``data/turns/labels.csv``).

The labels are CONSTRUCTED FROM THE SEEDED DEFECTS of the fixture generator, NOT HUMAN JUDGEMENTS:
each segment carries the defect its scenario seeded and the subscore ranges / verdict a careful
grader would give for that defect. Agreement with them measures whether a judge finds the seeded
defects; it is not judge-to-human agreement. No judge may read them.

Columns (one row per segment)::

    segment_id, turn_id, scenario, defect,
    intent_understood_min, intent_understood_max, sql_quality_min, sql_quality_max,
    result_relevance_min, result_relevance_max, answer_faithfulness_min, answer_faithfulness_max,
    verdict, unsupported_claims, note

``answer_faithfulness_min/max`` are both empty when no answer was captured (the expected subscore is
null). ``unsupported_claims`` is a ``;``-separated list of exact substrings of the answer that the
rows do not support (empty when none).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from .rubric import BANDS, DIMENSIONS

#: The caveat every output built on the constructed labels prints beside its figures.
LABELS_NOTE = ("labels are CONSTRUCTED from the fixture generator's seeded defects, not human judgements: "
               "agreement measures whether the judge finds the seeded defects, not agreement with people")
RANGE_COLUMNS: tuple[str, ...] = tuple(f"{d}_{side}" for d in DIMENSIONS for side in ("min", "max"))
LABEL_COLUMNS: tuple[str, ...] = ("segment_id", "turn_id", "scenario", "defect", *RANGE_COLUMNS,
                                  "verdict", "unsupported_claims", "note")


class LabelError(ValueError):
    """A labels file that cannot be used; the message names the line (1-based, header = 1) and value."""


def load_labels(path: str | Path) -> pd.DataFrame:
    """Read and validate a labels CSV; returns one row per segment indexed 0..n-1.

    Checks: every column of :data:`LABEL_COLUMNS` present; ``segment_id`` non-empty and unique;
    range bounds integers in [0, 10] with ``min <= max`` and both-or-neither given (only
    ``answer_faithfulness`` may be empty); ``verdict`` one of good/partial/poor. A violation raises
    :class:`LabelError` naming the file, the line number and the offending value. Range columns come
    back as pandas nullable ``Int64``; ``unsupported_claims`` as a list of strings per row (column
    ``claims``) besides the raw text. ``df.attrs["note"]`` states that the labels are constructed.
    """
    p = Path(path)
    try:
        df = pd.read_csv(p, dtype=str, keep_default_na=False)
    except pd.errors.ParserError as exc:
        raise LabelError(f"{p}: not a readable CSV: {exc}") from exc
    missing = [c for c in LABEL_COLUMNS if c not in df.columns]
    if missing:
        raise LabelError(f"{p}: missing column(s) {missing}; expected {list(LABEL_COLUMNS)}")
    df = df.loc[:, list(LABEL_COLUMNS)].copy()

    def fail(i: int, column: str, message: str) -> LabelError:
        return LabelError(f"{p}:{i + 2}: {column}: {message} (segment {df.at[i, 'segment_id']!r})")

    for i, sid in enumerate(df["segment_id"]):
        if not sid.strip():
            raise fail(i, "segment_id", "empty segment id")
    dup = df["segment_id"].duplicated(keep="first")
    if dup.any():
        i = int(dup.to_numpy().nonzero()[0][0])
        raise fail(i, "segment_id", f"duplicate segment id {df.at[i, 'segment_id']!r}")
    for d in DIMENSIONS:
        lo_col, hi_col = f"{d}_min", f"{d}_max"
        los, his = [], []
        for i in range(len(df)):
            raw_lo, raw_hi = df.at[i, lo_col].strip(), df.at[i, hi_col].strip()
            if not raw_lo and not raw_hi:
                if d != "answer_faithfulness":
                    raise fail(i, lo_col, "range is empty; only answer_faithfulness may be null")
                los.append(pd.NA)
                his.append(pd.NA)
                continue
            if not raw_lo or not raw_hi:
                raise fail(i, lo_col if not raw_lo else hi_col, f"give both bounds or neither (got {raw_lo!r}..{raw_hi!r})")
            bounds = []
            for col, raw in ((lo_col, raw_lo), (hi_col, raw_hi)):
                try:
                    v = float(raw)
                except ValueError:
                    raise fail(i, col, f"not a number: {raw!r}") from None
                if not v.is_integer() or not 0 <= v <= 10:
                    raise fail(i, col, f"must be an integer 0-10, got {raw!r}")
                bounds.append(int(v))
            if bounds[0] > bounds[1]:
                raise fail(i, lo_col, f"min {bounds[0]} > max {bounds[1]}")
            los.append(bounds[0])
            his.append(bounds[1])
        df[lo_col] = pd.array(los, dtype="Int64")
        df[hi_col] = pd.array(his, dtype="Int64")
    for i, v in enumerate(df["verdict"]):
        if v not in BANDS:
            raise fail(i, "verdict", f"must be one of {list(BANDS)}, got {v!r}")
    df["claims"] = [[c for c in raw.split(";") if c.strip()] for raw in df["unsupported_claims"]]
    df.attrs["note"] = LABELS_NOTE
    return df
