"""Benchmark of study 03's statistics (:func:`axon_eval.stats.noise.judge_noise_summary`).

Target: every statistic for 10,000 segments x 10 samples in under 10 s. The samples table
is SIMULATED, vectorised with the same noise model as the ``simulate(...)`` judge (integer subscores,
noise ``sd * m_s * (edge + (1 - edge) 4p(1-p))``, per-segment difficulty ``m_s``, a shared per-sample
component) so the ICC, flip curve and ensemble bootstrap see realistic, not degenerate, data; building
it is not timed. Timed: pivoting, within-segment SDs, ICCs, band instability, the flip-curve fit,
variance components, the decision study and the mean and median ensemble bootstrap for k = 1..10.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pandas as pd

from ..rubric import BANDS, CAP_FACTS, DIMENSIONS, Rubric
from ..scoring import score_arrays
from ..stats.noise import judge_noise_summary

TARGET_SECONDS = 10.0


def simulated_samples_table(n_segments: int, n_samples: int, *, seed: int = 0, sd: float = 1.0,
                            difficulty: float = 0.5, edge: float = 0.3, corr: float = 0.5) -> pd.DataFrame:
    """A SIMULATED tidy samples table (one row per segment and sample), scored by the default rubric.

    Base subscores are integers 0-10 drawn per segment; ~15% of segments have no answer (null
    faithfulness on every sample) and ~5% carry each cap fact. Costs are fixed per call so the
    ensemble's cost columns are exercised.
    """
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 11, (n_segments, len(DIMENSIONS))).astype(np.float64)
    p = base / 10.0
    shape = edge + (1 - edge) * 4 * p * (1 - p)
    multiplier = np.exp(difficulty * rng.standard_normal(n_segments) - difficulty ** 2)
    shared = rng.standard_normal((n_segments, n_samples, 1))
    own = rng.standard_normal((n_segments, n_samples, len(DIMENSIONS)))
    z = np.sqrt(corr) * shared + np.sqrt(1 - corr) * own
    noisy = base[:, None, :] + sd * multiplier[:, None, None] * shape[:, None, :] * z
    subs = np.clip(np.floor(noisy + 0.5), 0, 10)
    subs[rng.random(n_segments) < 0.15, :, 3] = np.nan
    facts = rng.random((n_segments, len(CAP_FACTS))) < 0.05
    flat = subs.reshape(-1, len(DIMENSIONS))
    fact_rows = np.repeat(facts, n_samples, axis=0)
    _raw, score, code = score_arrays(flat, fact_rows)
    frame = pd.DataFrame(flat, columns=list(DIMENSIONS))
    frame.insert(0, "segment_id", np.repeat(np.array([f"bench-{i:06d}" for i in range(n_segments)]), n_samples))
    frame.insert(1, "sample_index", np.tile(np.arange(n_samples), n_segments))
    frame["score"] = score
    frame["band"] = np.asarray(BANDS, dtype=object)[code]
    for j, fact in enumerate(CAP_FACTS):
        frame[fact] = fact_rows[:, j]
    frame["judge_id"] = (f"simulated(sd={sd:g},difficulty={difficulty:g},edge={edge:g},corr={corr:g},"
                         f"seed={seed})[bench]")
    frame["cost_usd"] = 0.0021
    frame["input_tokens"] = 1900.0
    frame["output_tokens"] = 160.0
    frame["cache_read_tokens"] = 1500.0
    return frame


def bench_noise(n_segments: int = 10_000, n_samples: int = 10, seed: int = 0) -> list[dict[str, Any]]:
    """Time :func:`judge_noise_summary` on a SIMULATED ``n_segments x n_samples`` table (one warm-up on 200 segments)."""
    from .table import row

    table = simulated_samples_table(n_segments, n_samples, seed=seed)
    rubric = Rubric.default()
    judge_noise_summary(table[table["segment_id"] < "bench-000200"], rubric, 0.05, seed)  # warm-up: imports, caches
    t0 = time.perf_counter()
    summary = judge_noise_summary(table, rubric, 0.05, seed)
    seconds = time.perf_counter() - t0
    name = f"judge_noise_summary, {n_segments:,} segments x {n_samples} samples (SIMULATED)"
    return [
        row("studies", name, round(seconds, 2), "s", f"< {TARGET_SECONDS:g}", seconds < TARGET_SECONDS,
            n_boot=summary.ensemble.n_boot, recommended_k=summary.recommended.k),
        row("studies", "judge_noise_summary throughput", round(n_segments * n_samples / seconds), "samples/s"),
    ]
