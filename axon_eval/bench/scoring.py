"""The ``scoring`` section of ``make bench``: vectorised ``score_frame`` against a per-row ``score_turn`` loop.

Rows/s of each on the same synthetic segments, their ratio, and a check that both give the same scores.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pandas as pd

from ..rubric import CAP_FACTS, DIMENSIONS, Rubric
from ..scoring import score_frame, score_turn
from .table import BenchRow, row


def synthetic_frame(n: int, seed: int = 0) -> pd.DataFrame:
    """``n`` random segments: integer subscores 0-10, ~15% null faithfulness, ~10% of each cap fact."""
    rng = np.random.default_rng(seed)
    data: dict[str, Any] = {d: rng.integers(0, 11, n).astype(np.float64) for d in DIMENSIONS}
    data["answer_faithfulness"][rng.random(n) < 0.15] = np.nan
    for f in CAP_FACTS:
        data[f] = rng.random(n) < 0.10
    return pd.DataFrame(data)


def bench_scoring(n_rows: int = 1_000_000, loop_rows: int | None = None, seed: int = 0) -> list[BenchRow]:
    """``score_frame`` on ``n_rows`` synthetic rows vs a plain per-row Python loop (``score_turn``).

    The loop calls :func:`score_turn` row by row over the same rows (``loop_rows`` limits it, for quick
    checks); ratio = vectorised rows/s / loop rows/s. The loop's scores are checked equal to the
    vectorised ones, so the ratio compares two ways of computing the same numbers.
    """
    loop_rows = n_rows if loop_rows is None else loop_rows
    rubric = Rubric.default()
    df = synthetic_frame(n_rows, seed)
    score_frame(df.head(1000), rubric)  # warm-up
    t0 = time.perf_counter()
    scored = score_frame(df, rubric)
    vec_s = time.perf_counter() - t0
    vec_rate = n_rows / vec_s

    head = df.head(loop_rows)
    records = head.to_dict("records")
    t0 = time.perf_counter()
    loop_scores = []
    for r in records:
        subs = {d: (None if np.isnan(r[d]) else r[d]) for d in DIMENSIONS}
        loop_scores.append(score_turn(subs, {f: bool(r[f]) for f in CAP_FACTS}, rubric).score)
    loop_s = time.perf_counter() - t0
    loop_rate = loop_rows / loop_s
    identical = bool(np.array_equal(np.asarray(loop_scores), scored["score"].to_numpy()[:loop_rows]))
    ratio = vec_rate / loop_rate
    return [
        row("scoring", f"score_frame, {n_rows:,} rows", round(vec_rate), "rows/s", ">= 1,000,000", vec_rate >= 1e6,
            seconds=round(vec_s, 3)),
        row("scoring", f"score_turn loop, {loop_rows:,} rows", round(loop_rate), "rows/s", "", None, seconds=round(loop_s, 3)),
        row("scoring", "vectorised / loop", round(ratio, 1), "x", ">= 50", ratio >= 50),
        row("scoring", "loop scores == vectorised scores", int(identical), "bool", "1", identical),
    ]
