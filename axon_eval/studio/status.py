"""``label status``: each rater's progress, and agreement between raters on the overlap so far.

Agreement is measured on the overlap segments (planned at ``init``, :mod:`axon_eval.studio.assignment`)
that two or more raters have labelled (skips left out). Per pair of raters, Cohen's kappa of their
verdicts (:func:`axon_eval.stats.agreement.kappa_from_codes`) with a seeded percentile bootstrap
interval over segments and the asymptotic one (:func:`kappa_interval`); over all raters, Krippendorff's alpha of the verdicts
(ordinal) and of each dimension (interval) (:func:`axon_eval.stats.agreement.rater_alpha`) with a
percentile bootstrap interval over segments: resample the overlap segments with replacement, keep each
resampled segment's labels from every rater, recompute alpha (Hayes and Krippendorff 2007, "Answering
the call for a standard reliability measure for coding data", *Communication Methods and Measures*
1(1), 77-89). The resamples are computed at once: a resample's coincidence matrix (or confusion table) is
the sum of its segments', each counted as often as it was drawn, so no resample rebuilds a table.
Reference for the coincidence matrix and the metrics: Krippendorff, K. (2004), *Content Analysis*, 2nd
ed., ch. 11. Pure: frames in, records out.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..rubric import DIMENSIONS
from scipy.stats import norm

from ..stats.agreement import band_codes, kappa_from_codes, rater_alpha

CONFIDENCE = 0.95


def rater_progress(labels: pd.DataFrame, queues: Mapping[str, Sequence[str]],
                   overlap: Sequence[str]) -> list[dict[str, Any]]:
    """Per rater: queue length, labelled, skipped, still to do, overlap labelled, median seconds."""
    shared = set(overlap)
    out = []
    for rater, queue in queues.items():
        mine = labels[labels["rater"] == rater]
        mine = mine[mine["segment_id"].isin(set(queue))]
        done = mine[mine["kind"] == "label"]
        secs = [float(s) for s in mine["seconds"] if s is not None and not (isinstance(s, float) and math.isnan(s))]
        out.append({"rater": rater, "total": len(queue), "labelled": len(done),
                    "skipped": int((mine["kind"] == "skip").sum()), "todo": len(queue) - len(mine),
                    "overlap_labelled": int(done["segment_id"].isin(shared).sum()), "overlap": len(shared),
                    "median_seconds": statistics.median(secs) if secs else None})
    return out


def _alpha(frame: pd.DataFrame, value: str, level: str) -> float | None:
    res = rater_alpha(frame, value=value, level=level)
    a = res["alpha"]
    return None if a is None or (isinstance(a, float) and math.isnan(a)) else float(a)


def _grid(labels: pd.DataFrame, value: str) -> np.ndarray:
    """The reliability matrix (raters x segments, ``NaN`` where a rater did not label) of ``value``,
    coded as :func:`~axon_eval.stats.agreement.rater_alpha` codes it (verdicts 0/1/2)."""
    vals = band_codes(labels["verdict"].tolist()).astype(float) if value == "verdict" else \
        pd.to_numeric(labels[value], errors="coerce").to_numpy(dtype=float)
    raters, r = np.unique(labels["rater"].astype(str).to_numpy(dtype=object), return_inverse=True)
    units, u = np.unique(labels["segment_id"].astype(str).to_numpy(dtype=object), return_inverse=True)
    grid = np.full((len(raters), len(units)), np.nan)
    keep = ~np.isnan(vals)
    grid[r[keep], u[keep]] = vals[keep]  # one label per (segment, rater): the newest record
    return grid


def unit_coincidences(grid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(each unit's coincidence matrix, units x V x V; the V distinct values). A unit with ``m >= 2``
    values adds ``1 / (m - 1)`` for every ordered pair of its values from different raters
    (Krippendorff 2004, sec. 11.3.2); units with fewer values add nothing."""
    values = np.unique(grid[~np.isnan(grid)])
    present = ~np.isnan(grid)
    v, n_units = len(values), grid.shape[1]
    codes = np.searchsorted(values, grid[present])
    unit = np.broadcast_to(np.arange(n_units), grid.shape)[present]
    counts = np.bincount(unit * v + codes, minlength=n_units * v).reshape(n_units, v).astype(float)
    m = counts.sum(axis=1)
    pairs = counts[:, :, None] * counts[:, None, :] - counts[:, :, None] * np.eye(v)[None]
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where((m >= 2)[:, None, None], pairs / (m - 1)[:, None, None], 0.0)
    return out, values


def draw_counts(rng: np.random.Generator, n_boot: int, n: int) -> np.ndarray:
    """``n_boot`` bootstrap resamples of ``n`` items as counts (n_boot x n: how often each item was drawn)."""
    draws = rng.integers(0, n, (n_boot, n))
    return np.bincount((np.arange(n_boot)[:, None] * n + draws).ravel(), minlength=n_boot * n).reshape(n_boot, n).astype(float)


def alpha_from_coincidences(o: np.ndarray, values: np.ndarray, level: str) -> np.ndarray:
    """Krippendorff's alpha of each coincidence matrix in ``o`` (B x V x V): ``1 - (n - 1) * sum o_ck d_ck /
    sum n_c n_k d_ck`` with the ``interval`` metric ``d_ck = (v_c - v_k)^2`` or the ``ordinal`` one
    ``d_ck = (sum_{g=c..k} n_g - (n_c + n_k) / 2)^2`` (Krippendorff 2004, sec. 11.4); ``nan`` where the
    expected disagreement is 0."""
    n_c = o.sum(axis=2)
    n = n_c.sum(axis=1)
    if level == "interval":
        d = np.broadcast_to((values[:, None] - values[None, :]) ** 2, o.shape)
    elif level == "ordinal":
        cum = np.cumsum(n_c, axis=1)
        lo = np.minimum.outer(np.arange(len(values)), np.arange(len(values)))
        hi = np.maximum.outer(np.arange(len(values)), np.arange(len(values)))
        between = cum[:, hi] - cum[:, lo] + n_c[:, lo]
        d = (between - (n_c[:, :, None] + n_c[:, None, :]) / 2) ** 2
    else:
        raise ValueError(f"level must be 'interval' or 'ordinal', got {level!r}")
    observed = (o * d).sum(axis=(1, 2))
    expected = np.einsum("bc,bk,bck->b", n_c, n_c, d)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(expected > 0, 1 - (n - 1) * observed / expected, np.nan)


def alpha_interval(labels: pd.DataFrame, value: str, level: str, *, n_boot: int = 500, seed: int = 0,
                   confidence: float = CONFIDENCE) -> dict[str, Any]:
    """Krippendorff's alpha of ``value`` (:func:`~axon_eval.stats.agreement.rater_alpha`) with a
    percentile bootstrap interval over segments (module docstring): each resample's coincidence matrix is
    the sum of its segments' (:func:`unit_coincidences`, counted as often as drawn), its alpha
    :func:`alpha_from_coincidences`. ``lo``/``hi`` are ``None`` with fewer than 3 segments or when fewer
    than half the resamples give a defined alpha."""
    point = _alpha(labels, value, level)
    units = labels["segment_id"].nunique()
    out = {"value": value, "level": level, "alpha": point, "lo": None, "hi": None, "n_units": int(units),
           "n_boot": n_boot, "seed": seed, "confidence": confidence}
    if point is None or units < 3:
        return out
    per_unit, values = unit_coincidences(_grid(labels, value))
    rng = np.random.default_rng(seed)
    times = draw_counts(rng, n_boot, per_unit.shape[0])
    o = (times @ per_unit.reshape(per_unit.shape[0], -1)).reshape(n_boot, len(values), len(values))
    alphas = alpha_from_coincidences(o, values, level)
    alphas = alphas[np.isfinite(alphas)]
    if len(alphas) >= n_boot // 2:
        tail = (1 - confidence) / 2
        out["lo"], out["hi"] = (float(np.quantile(alphas, tail)), float(np.quantile(alphas, 1 - tail)))
    return out


def kappa_interval(a: Sequence[str], b: Sequence[str], *, n_boot: int = 500, seed: int = 0,
                   confidence: float = CONFIDENCE) -> dict[str, Any]:
    """Cohen's kappa of two raters' verdicts (:func:`~axon_eval.stats.agreement.kappa_from_codes`), a
    percentile bootstrap interval over segments (each resample's kappa is ``kappa_from_codes`` with the
    draw counts as weights) and the asymptotic interval ``kappa +- z * SE`` of
    ``statsmodels.stats.inter_rater.cohens_kappa`` (Fleiss, Cohen and Everitt 1969)."""
    from statsmodels.stats.inter_rater import cohens_kappa as sm_kappa

    x, y = band_codes(list(a)), band_codes(list(b))
    k = 3
    out: dict[str, Any] = {"n": len(x), "kappa": None, "lo": None, "hi": None, "asymptotic": None,
                           "method": f"percentile bootstrap ({n_boot}, seed {seed})"}
    value = kappa_from_codes(x, y)
    if not math.isfinite(value):
        return out
    out["kappa"] = value
    table = np.bincount(x * k + y, minlength=k * k).reshape(k, k)
    se = float(sm_kappa(table, return_results=True)["std_kappa"])
    z = float(norm.ppf(0.5 + confidence / 2))
    out["asymptotic"] = [value - z * se, value + z * se] if math.isfinite(se) else None
    if len(x) < 3:
        return out
    rng = np.random.default_rng(seed)
    cells = np.eye(k * k)[x * k + y]  # n x 9 one-hot
    times = draw_counts(rng, n_boot, len(x))
    p = (times @ cells).reshape(n_boot, k, k) / len(x)
    p_o = np.trace(p, axis1=1, axis2=2)
    p_e = (p.sum(axis=2) * p.sum(axis=1)).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        kappas = np.where(p_e < 1, (p_o - p_e) / (1 - p_e), np.nan)
    kappas = kappas[np.isfinite(kappas)]
    if len(kappas) >= n_boot // 2:
        tail = (1 - confidence) / 2
        out["lo"], out["hi"] = float(np.quantile(kappas, tail)), float(np.quantile(kappas, 1 - tail))
    return out


def overlap_agreement(labels: pd.DataFrame, overlap: Sequence[str], *, n_boot: int = 500,
                      seed: int = 0) -> dict[str, Any]:
    """Kappa per rater pair and alpha over raters on the overlap segments labelled by two or more raters."""
    lab = labels[(labels["kind"] == "label") & labels["segment_id"].isin(set(overlap))]
    counts = lab.groupby("segment_id")["rater"].nunique()
    lab = lab[lab["segment_id"].isin(counts[counts >= 2].index)]
    pairs = []
    for a, b in itertools.combinations(sorted(lab["rater"].unique()), 2):
        both = lab[lab["rater"].isin([a, b])].pivot_table(index="segment_id", columns="rater", values="verdict",
                                                          aggfunc="first").dropna()
        entry = {"raters": [a, b], **kappa_interval(both[a].tolist(), both[b].tolist(), n_boot=n_boot, seed=seed)}
        pairs.append(entry)
    alphas = [alpha_interval(lab, "verdict", "ordinal", n_boot=n_boot, seed=seed)]
    alphas += [alpha_interval(lab.dropna(subset=[d]), d, "interval", n_boot=n_boot, seed=seed) for d in DIMENSIONS]
    return {"n_segments": int(lab["segment_id"].nunique()), "kappa": pairs, "alpha": alphas}


def format_status(progress: list[dict[str, Any]], agreement: dict[str, Any]) -> list[str]:
    """The lines ``label status`` prints."""
    def num(v: Any, fmt: str = "{:.2f}") -> str:
        return "n/a" if v is None else fmt.format(v)

    lines = ["rater        labelled  skipped  to do  overlap  median s/item"]
    for p in progress:
        lines.append(f"{p['rater']:<12} {p['labelled']:>5}/{p['total']:<4} {p['skipped']:>6} {p['todo']:>6} "
                     f"{p['overlap_labelled']:>4}/{p['overlap']:<4} {num(p['median_seconds'], '{:.1f}'):>8}")
    lines.append(f"agreement on the overlap ({agreement['n_segments']} segments labelled by 2+ raters; "
                 f"{int(CONFIDENCE * 100)}% intervals, seeded bootstrap):")
    for k in agreement["kappa"]:
        lines.append(f"  Cohen's kappa (verdict) {k['raters'][0]} vs {k['raters'][1]}: {num(k['kappa'])} "
                     f"[{num(k['lo'])}, {num(k['hi'])}] n={k['n']}")
    for a in agreement["alpha"]:
        lines.append(f"  Krippendorff's alpha ({a['value']}, {a['level']}): {num(a['alpha'])} "
                     f"[{num(a['lo'])}, {num(a['hi'])}] n={a['n_units']}")
    return lines
