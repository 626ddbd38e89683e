"""Benchmark of study 02's statistics (:mod:`axon_eval.stats.sensitivity`), part of the ``studies`` section.

Targets, on synthetic segments (``bench.synthetic_frame``: integer subscores 0-10, ~15% null
faithfulness, ~10% of each cap fact):

* :func:`~axon_eval.stats.sensitivity.sweep_weights` for 10,000 weight vectors (uniform on the
  +-0.05 box on the simplex) x 100,000 segments -- 10^9 segment-scores with every reduction (max
  |delta|, rise and fall, band flips per vector and per segment, mean score, share good, Kendall's
  tau-b) -- in under 30 s, with peak memory under 1.5 GB. It runs in a fresh process
  (:func:`axon_eval.bench.memory.run_fresh`) so that the peak resident set size (``VmHWM``: interpreter,
  imports, data and the sweep) is its own, not the bench process's high-water mark that ``ru_maxrss``
  carries over exec; one small warm-up call loads the compiled loop first and is not timed.
* the same work as a loop of ``score_frame`` calls, one per vector, with the same reductions
  (Kendall's tau from ``scipy.stats.kendalltau``): timed on a subset of the vectors and extrapolated
  linearly to all of them (the full loop would take many minutes). Its reductions are checked equal to
  the sweep's for that subset, so the ratio compares two ways of computing the same numbers.
* :func:`~axon_eval.stats.sensitivity.worst_case` (exact LPs) for 100,000 segments at d = 0.05 in
  under 60 s.

``quick=True`` shrinks every size (for tests); the targets are then not judged.
"""

from __future__ import annotations

import json
import time
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import kendalltau

from .memory import MEANING, run_fresh
from ..rubric import CAP_FACTS, DIMENSIONS, Rubric
from ..scoring import score_frame

SWEEP_TARGET_SECONDS = 30.0
SWEEP_TARGET_MB = 1500.0
LP_TARGET_SECONDS = 60.0


def _row(name: str, value: float, unit: str, target: str = "", ok: bool | None = None, **extra: Any) -> dict[str, Any]:
    return {"section": "studies", "name": name, "value": value, "unit": unit, "target": target, "ok": ok, **extra}


def _segments_frame(n_segments: int, seed: int) -> pd.DataFrame:
    from .scoring import synthetic_frame

    df = synthetic_frame(n_segments, seed)
    df.insert(0, "segment_id", [f"bench-{i:06d}" for i in range(n_segments)])
    return df


def _sweep_worker(n_vectors: int, n_segments: int, seed: int) -> dict[str, Any]:
    """Run in the fresh process: time one sweep (its peak RSS is measured around it by ``run_fresh``)."""
    from ..stats.sensitivity import Segments, box_simplex_sample, sweep_weights

    rubric = Rubric.default()
    df = _segments_frame(n_segments, seed)
    segments = Segments.from_arrays(df[list(DIMENSIONS)].to_numpy(), df[list(CAP_FACTS)].to_numpy(), df["segment_id"])
    design = box_simplex_sample(rubric, 0.05, n_vectors, seed)
    sweep_weights(segments, design.weights[:2], rubric)  # loads (or compiles) the compiled loop; not timed
    t0 = time.perf_counter()
    sweep = sweep_weights(segments, design, rubric)
    seconds = time.perf_counter() - t0
    return {"seconds": seconds, "n_groups": sweep.n_groups,
            "per_vector": sweep.per_vector[["max_abs_delta", "n_band_flips", "kendall_tau"]].to_dict("list")}


def _loop_reductions(df: pd.DataFrame, weights: np.ndarray, rubric: Rubric) -> tuple[float, list[tuple[float, int, float]]]:
    """The naive way: one ``score_frame`` per vector plus numpy/scipy reductions. Returns (seconds, rows)."""
    nominal = score_frame(df, rubric)
    score0, band0 = nominal["score"].to_numpy(), nominal["band"].to_numpy()
    out = []
    t0 = time.perf_counter()
    for w in weights:
        scored = score_frame(df, rubric.with_weights(dict(zip(DIMENSIONS, w.tolist()))))
        score = scored["score"].to_numpy()
        out.append((float(np.abs(score - score0).max()), int((scored["band"].to_numpy() != band0).sum()),
                    float(kendalltau(score0, score).statistic)))
    return time.perf_counter() - t0, out


def bench_sensitivity(quick: bool = False) -> list[dict[str, Any]]:
    """The study-02 rows of the ``studies`` bench section (see the module docstring)."""
    from ..stats.sensitivity import Segments, box_simplex_sample, worst_case

    n_vectors, n_segments, loop_vectors = (200, 5_000, 5) if quick else (10_000, 100_000, 20)
    seed = 0
    rubric = Rubric.default()
    worker = run_fresh(
        ["-c", "import json; from axon_eval.bench.sensitivity import _sweep_worker; "
         f"print(json.dumps(_sweep_worker({n_vectors}, {n_segments}, {seed})))"])
    if worker.returncode != 0:
        raise RuntimeError(f"sweep process exited {worker.returncode}: {worker.stderr[-2000:]}")
    sweep = json.loads(worker.stdout.strip().splitlines()[-1])
    label = f"{n_vectors:,} vectors x {n_segments:,} segments"
    rows = [
        _row(f"sensitivity sweep, {label} (max|delta|, flips, tau-b)", round(sweep["seconds"], 2), "s",
             "" if quick else f"< {SWEEP_TARGET_SECONDS:g}", None if quick else sweep["seconds"] < SWEEP_TARGET_SECONDS,
             segment_scores=n_vectors * n_segments, distinct_groups=sweep["n_groups"]),
        _row(f"sensitivity sweep: {worker.label}", round(worker.peak_mb), "MB",
             "" if quick else f"< {SWEEP_TARGET_MB:g}", None if quick else worker.peak_mb < SWEEP_TARGET_MB,
             baseline_mb=round(worker.baseline_mb, 1), measured=MEANING),
    ]

    df = _segments_frame(n_segments, seed)
    design = box_simplex_sample(rubric, 0.05, n_vectors, seed)
    loop_seconds, loop_rows = _loop_reductions(df, design.weights[:loop_vectors], rubric)
    extrapolated = loop_seconds / loop_vectors * n_vectors
    pv = sweep["per_vector"]
    same = all(abs(a - pv["max_abs_delta"][k]) == 0 and b == pv["n_band_flips"][k] and abs(c - pv["kendall_tau"][k]) < 1e-12
               for k, (a, b, c) in enumerate(loop_rows))
    rows += [
        _row(f"score_frame loop, {loop_vectors} vectors timed, extrapolated to {n_vectors:,}", round(extrapolated, 1),
             "s", "", None, timed_vectors=loop_vectors, timed_seconds=round(loop_seconds, 3)),
        _row("score_frame loop / sweep (extrapolated)", round(extrapolated / sweep["seconds"], 1), "x", "", None),
        _row("loop reductions == sweep reductions (timed subset)", int(same), "bool", "1", same),
    ]

    segments = Segments.from_arrays(df[list(DIMENSIONS)].to_numpy(), df[list(CAP_FACTS)].to_numpy(), df["segment_id"])
    t0 = time.perf_counter()
    wc = worst_case(segments, rubric, 0.05)
    lp_seconds = time.perf_counter() - t0
    rows.append(_row(f"worst-case LPs, {n_segments:,} segments, d=0.05", round(lp_seconds, 2), "s",
                     "" if quick else f"< {LP_TARGET_SECONDS:g}", None if quick else lp_seconds < LP_TARGET_SECONDS,
                     distinct_vectors=wc.n_lp_vectors, linear_programs=2 * wc.n_lp_vectors,
                     max_worst_abs_delta=wc.max_abs_delta))
    return rows
