"""Intervals on headline figures: Wilson, a vectorised cluster bootstrap, and every headline of a run.

Every headline figure a report publishes (mean score, share in each band, share capped, each
dimension's mean) carries a 95% interval and its n (DESIGN section 6). :func:`headline_intervals`
computes them from a run's ``results`` frame:

* **The unit is the segment** (a repeated run's samples are first collapsed into one row per segment by
  :func:`axon_eval.summaries.segment_table`, so the estimate is exactly the figure the summary prints);
  **the resampled unit is the turn** (``turn_id``): the segments of a bundled turn, and with them every
  sample of a repeated run, move together. This is a cluster bootstrap: each replicate draws the turns
  with replacement (multinomial counts), and a mean is the ratio ``sum_c m_c S_c / sum_c m_c N_c`` of
  the replicate's cluster sums ``S_c`` and sizes ``N_c`` (Davison & Hinkley 1997, section 3.8; Field &
  Welsh 2007, "Bootstrapping clustered data", JRSS B 69:369).
* The interval is the bootstrap **percentile** interval (the ``alpha/2`` and ``1 - alpha/2`` quantiles
  of the replicates, numpy's default linear interpolation); the seed is recorded on every row.
* A share whose units are independent (every turn has one segment) gets the **Wilson** score interval
  instead (Wilson 1927; Brown, Cai & DasGupta 2001, Statistical Science 16:101), which is exact in
  form and needs no seed.

:data:`INTERVAL_COVERS` says in one sentence what these intervals cover; show it beside them.

The meaningful numbers of the intervals of :mod:`axon_eval.stats` (confidence, resamples, seed) live
here: :data:`CONFIDENCE`, :data:`ALPHA`, :data:`N_BOOT`, :data:`SEED`; :mod:`~axon_eval.stats.ppi` and
:mod:`~axon_eval.stats.paired` import them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..rubric import BANDS, DIMENSIONS, Rubric
from ..summaries import check_homogeneous, judged, segment_table, split_caps

#: Default confidence level of every interval (two-sided).
CONFIDENCE = 0.95
#: Default significance level of every test -- ``1 - CONFIDENCE``.
ALPHA = round(1 - CONFIDENCE, 12)
#: Default bootstrap replicates. With 2,000 the Monte Carlo error of a 2.5% quantile is about 0.35
#: percentage points of coverage (Efron & Tibshirani 1993, ch. 19): small beside a run's sampling error.
N_BOOT = 2000
#: Default seed of every bootstrap (recorded on the result).
SEED = 0
#: What the intervals of this module cover, in one sentence (show it beside them).
INTERVAL_COVERS = ("Each interval covers the sampling of turns (another set of turns like these, judged the "
                   "same way), not judge error, the rubric's weights, or a human's disagreement with the judge.")
#: Above this many floats per block the bootstrap weights are built in chunks of replicates.
_BLOCK_FLOATS = 4_000_000
#: Multinomial counts per block of :func:`headline_table`'s shared replicates (8 MB of int64).
_SHARED_BLOCK_COUNTS = 1_000_000

#: A vectorised statistic -- ``f(values[n], weights[B, n]) -> estimates[B]`` (weights are the units'
#: multinomial counts; the point estimate is ``f(values, ones[1, n])[0]``).
Statistic = Callable[[np.ndarray, np.ndarray], np.ndarray]


def z_value(confidence: float) -> float:
    """The two-sided standard normal quantile ``Phi^-1((1 + confidence) / 2)`` (1.96 at 0.95)."""
    from scipy.stats import norm

    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    return float(norm.ppf(0.5 + confidence / 2))


@dataclass(frozen=True)
class Interval:
    """An estimate with its two-sided interval.

    ``n`` is the number of units (segments, or labelled segments for a labels-only estimate),
    ``n_clusters`` the number of independent resampled units (turns); ``method`` names the interval
    (``"wilson"``, ``"cluster bootstrap percentile"``, ``"normal (CLT)"``, ``"PPI++ normal"`` ...);
    ``seed`` and ``n_boot`` are set for a bootstrap; ``note`` says why an interval is missing (``lo``
    and ``hi`` are then ``NaN``) or anything else a reader must know.
    """

    estimate: float
    lo: float
    hi: float
    n: int
    n_clusters: int
    method: str
    confidence: float = CONFIDENCE
    seed: int | None = None
    n_boot: int | None = None
    note: str = ""

    @property
    def width(self) -> float:
        return self.hi - self.lo

    def contains(self, value: float) -> bool:
        """True when ``lo <= value <= hi``."""
        return bool(self.lo <= value <= self.hi)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def text(self, *, share: bool = False, unit: str = "segments") -> str:
        """For people, the way every headline reads (:func:`axon_eval.display.fmt_estimate`):
        ``"62% (55% to 69%), n = 120 segments"``; a mean ``"71.4 (68.0 to 74.9), n = 120 segments in 90
        turns"`` (the turns named when they differ from ``n``). Shares are percentages; the estimate and its
        bounds share their decimals; a missing bound reads ``"no interval"`` (never ``nan``)."""
        from ..display import fmt_estimate, fmt_number

        shown = fmt_estimate(self.estimate, self.lo, self.hi, share=share)
        if math.isnan(self.lo) or math.isnan(self.hi):
            shown += " (no interval)"
        clusters = f" in {fmt_number(self.n_clusters)} turns" if self.n_clusters != self.n else ""
        return f"{shown}, n = {fmt_number(self.n)} {unit}{clusters}"


def format_value(x: float, *, share: bool = False) -> str:
    """A number for people: a share as a percentage (``"62%"``, ``"3.4%"``), a mean with 2-3
    significant digits (``"71.4"``, ``"7.12"``, ``"100"``); ``NaN`` reads ``"-"``."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    if share:
        pct = 100 * float(x)
        return f"{pct:.0f}%" if abs(pct) >= 10 or pct == 0 else f"{pct:.1f}%"
    a = abs(float(x))
    return f"{x:.0f}" if a >= 100 else f"{x:.1f}" if a >= 10 else f"{x:.2f}"


# -- Wilson ------------------------------------------------------------------------------------------
def wilson_interval(k: int, n: int, confidence: float = CONFIDENCE) -> Interval:
    """Wilson score interval for a proportion ``k / n`` of independent units.

    ``centre = (p + z^2/(2n)) / (1 + z^2/n)``, ``half = z sqrt(p(1-p)/n + z^2/(4n^2)) / (1 + z^2/n)``
    with ``p = k/n`` and ``z`` the two-sided normal quantile (Wilson 1927; Brown, Cai & DasGupta 2001).
    Equals ``statsmodels.stats.proportion.proportion_confint(k, n, 1 - confidence, method="wilson")``.
    Bounds lie in [0, 1]. ``n = 0`` gives ``NaN`` with a note; ``k`` outside ``0..n`` is a ``ValueError``.
    """
    if int(k) != k or int(n) != n or n < 0 or not 0 <= k <= n:
        raise ValueError(f"wilson_interval needs integers 0 <= k <= n, got k={k!r}, n={n!r}")
    k, n = int(k), int(n)
    if n == 0:
        return Interval(math.nan, math.nan, math.nan, 0, 0, "wilson", confidence, note="no units")
    z = z_value(confidence)
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    lo = 0.0 if k == 0 else min(p, max(0.0, centre - half))  # exact at the edges (no 2e-19 for k = 0)
    hi = 1.0 if k == n else max(p, min(1.0, centre + half))
    return Interval(p, lo, hi, n, n, "wilson", confidence)


# -- cluster bootstrap -----------------------------------------------------------------------------
def cluster_counts(n_clusters: int, n_boot: int, seed: int | None) -> np.ndarray:
    """``(n_boot, n_clusters)`` multinomial counts: each row draws ``n_clusters`` clusters with
    replacement, equally likely (``numpy.random.default_rng(seed).multinomial``). Public so that
    several statistics (and a test) can share one set of replicates."""
    rng = np.random.default_rng(seed)
    return rng.multinomial(n_clusters, np.full(n_clusters, 1.0 / n_clusters), size=n_boot)


def _codes(clusters: Sequence[Any] | np.ndarray, n: int) -> tuple[np.ndarray, int]:
    series = pd.Series(np.asarray(clusters, dtype=object))
    if len(series) != n:
        raise ValueError(f"clusters has {len(series)} entries but values has {n}; give one cluster per value")
    if series.isna().any():
        raise ValueError(f"clusters has {int(series.isna().sum())} missing id(s) (first at position "
                         f"{int(np.flatnonzero(series.isna().to_numpy())[0])}); every unit needs its cluster")
    codes, uniques = pd.factorize(series, sort=False)
    return codes.astype(np.int64), len(uniques)


def _weighted_mean(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    return (weights @ values) / weights.sum(axis=1)


def cluster_bootstrap(values: Sequence[float] | np.ndarray, clusters: Sequence[Any] | np.ndarray,
                      statistic: str | Statistic = "mean", *, n_boot: int = N_BOOT, seed: int | None = SEED,
                      confidence: float = CONFIDENCE) -> Interval:
    """Percentile cluster-bootstrap interval of ``statistic`` of ``values`` (one per unit), resampling
    whole ``clusters`` (one id per unit) with replacement.

    Replicate ``b`` gives each cluster a multinomial count ``m_bc`` (:func:`cluster_counts`, summing to
    the number of clusters ``C``); every unit of cluster ``c`` gets weight ``m_bc``. ``"mean"`` is the
    weighted mean ``sum_c m_bc S_c / sum_c m_bc N_c`` (``S_c`` the cluster's sum, ``N_c`` its size),
    computed as one matrix product. A callable ``statistic(values[n], weights[B, n]) -> [B]`` is any
    other vectorised statistic; weights are built in chunks of replicates so memory stays bounded.
    The interval is ``quantile(replicates, [alpha/2, 1 - alpha/2])``. No Python loop per replicate.

    ``values`` must be finite: drop missing values first (a null is not a 0). Fewer than two clusters
    give ``lo = hi = NaN`` with a note (one cluster has no sampling variation to resample).
    """
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 1:
        raise ValueError(f"values must be one-dimensional, got shape {x.shape}")
    if not np.isfinite(x).all():
        bad = np.flatnonzero(~np.isfinite(x))
        raise ValueError(f"values has {len(bad)} non-finite entr(ies) (first at position {int(bad[0])}); "
                         "drop missing values before bootstrapping, they are not 0")
    if n_boot < 1:
        raise ValueError(f"n_boot must be >= 1, got {n_boot!r}")
    z_value(confidence)  # validates confidence
    n = len(x)
    codes, n_clusters = _codes(clusters, n)
    method = "cluster bootstrap percentile"
    if n == 0:
        return Interval(math.nan, math.nan, math.nan, 0, 0, method, confidence, seed, n_boot, "no units")
    stat: Statistic = _weighted_mean if statistic == "mean" else statistic  # type: ignore[assignment]
    if not callable(stat):
        raise ValueError(f"statistic must be 'mean' or a callable f(values, weights), got {statistic!r}")
    estimate = float(np.asarray(stat(x, np.ones((1, n))))[0])
    if n_clusters < 2:
        return Interval(estimate, math.nan, math.nan, n, n_clusters, method, confidence, seed, n_boot,
                        "fewer than 2 clusters: nothing to resample")
    counts = cluster_counts(n_clusters, n_boot, seed).astype(np.float64)
    if statistic == "mean":
        sums = np.bincount(codes, weights=x, minlength=n_clusters)
        sizes = np.bincount(codes, minlength=n_clusters).astype(np.float64)
        reps = (counts @ sums) / (counts @ sizes)
    else:
        block = max(1, _BLOCK_FLOATS // max(n, 1))
        reps = np.concatenate([np.asarray(stat(x, counts[i:i + block][:, codes]), dtype=np.float64)
                               for i in range(0, n_boot, block)])
    undefined = int(np.isnan(reps).sum())
    note = f"{undefined} of {n_boot} replicates undefined and left out" if undefined else ""
    alpha = 1 - confidence
    lo, hi = (np.nanquantile(reps, [alpha / 2, 1 - alpha / 2]) if undefined < n_boot else (math.nan, math.nan))
    return Interval(estimate, float(lo), float(hi), n, n_clusters, method, confidence, seed, n_boot, note)


# -- every headline of a run ---------------------------------------------------------------------------
#: The headline figures, in report order -- (figure name, kind). ``kind`` is ``"mean"`` or ``"share"``.
HEADLINE_FIGURES: tuple[tuple[str, str], ...] = (
    ("mean score", "mean"),
    *((f"share {b}", "share") for b in BANDS),
    ("share capped", "share"),
    *((f"mean {d}", "mean") for d in DIMENSIONS),
)
#: The columns of a headline table, one row per headline figure.
HEADLINE_COLUMNS: tuple[str, ...] = ("figure", "kind", "estimate", "lo", "hi", "n", "n_clusters", "method",
                                     "confidence", "seed", "n_boot", "note")


def turn_of(segment_id: str) -> str:
    """The turn id of a segment id (``"eu-0012#2"`` -> ``"eu-0012"``; an unbundled id is its own turn)."""
    return str(segment_id).split("#", 1)[0]


def headline_segments(results_df: pd.DataFrame, rubric: Rubric | None = None, *, cluster_col: str = "turn_id",
                      allow_mixed: bool = False) -> pd.DataFrame:
    """The judged segments of a run, one row each (:func:`axon_eval.summaries.segment_table`), with a
    ``cluster`` column (``cluster_col``, else the turn id read from ``segment_id``) and a boolean
    ``capped`` (some cap lowered the score). What :func:`headline_intervals` and the paired
    comparison resample."""
    check_homogeneous(results_df, allow_mixed=allow_mixed)
    seg = judged(segment_table(results_df, rubric)).reset_index(drop=True)
    if cluster_col in seg.columns and seg[cluster_col].notna().all():
        seg["cluster"] = seg[cluster_col].astype(str)
    else:
        seg["cluster"] = seg["segment_id"].map(turn_of)
    caps = seg["caps_applied"] if "caps_applied" in seg.columns else pd.Series("", index=seg.index)
    seg["capped"] = caps.map(lambda v: bool(split_caps(v))).astype(bool)
    return seg


def figure_values(segments: pd.DataFrame, figure: str) -> np.ndarray:
    """Per-segment values of a headline figure (``NaN`` where the figure has no value for a segment,
    e.g. a null faithfulness or a missing band): the score or a dimension for a mean, a 0/1 indicator
    for a share. Reads ``score``, ``band``, ``capped`` and the dimension columns."""
    if figure == "mean score":
        return pd.to_numeric(segments["score"], errors="coerce").to_numpy(dtype=np.float64)
    if figure == "share capped":
        return segments["capped"].astype(float).to_numpy()
    if figure.startswith("share "):
        band = segments["band"].astype("string")
        return (band == figure.removeprefix("share ")).astype("Float64").to_numpy(dtype=np.float64, na_value=np.nan)
    if figure.startswith("mean "):
        return pd.to_numeric(segments[figure.removeprefix("mean ")], errors="coerce").to_numpy(dtype=np.float64)
    raise ValueError(f"unknown figure {figure!r}; expected one of {[f for f, _ in HEADLINE_FIGURES]}")


def figure_interval(values: np.ndarray, clusters: np.ndarray, kind: str, *, n_boot: int = N_BOOT,
                    seed: int | None = SEED, confidence: float = CONFIDENCE) -> Interval:
    """The interval of one figure: Wilson for a share whose units are independent (each cluster one
    unit), else the cluster bootstrap. Missing values are left out and counted in the note."""
    keep = np.isfinite(values)
    x, c = values[keep], np.asarray(clusters, dtype=object)[keep]
    n_missing = int((~keep).sum())
    independent = len(pd.unique(c)) == len(c)
    if kind == "share" and independent:
        iv = wilson_interval(int(round(x.sum())), len(x), confidence)
    else:
        iv = cluster_bootstrap(x, c, "mean", n_boot=n_boot, seed=seed, confidence=confidence)
    if n_missing:
        missing = f"{n_missing} segment(s) without a value left out (null, not 0)"
        iv = Interval(**{**iv.as_dict(), "note": "; ".join(filter(None, [iv.note, missing]))})
    return iv


def headline_intervals(results_df: pd.DataFrame, rubric: Rubric | None = None, *, cluster_col: str = "turn_id",
                       n_boot: int = N_BOOT, seed: int | None = SEED, confidence: float = CONFIDENCE,
                       allow_mixed: bool = False) -> pd.DataFrame:
    """Every headline figure of a run with its interval and n: one row per figure of
    :data:`HEADLINE_FIGURES` (mean score 0-100, share good/partial/poor, share capped, each dimension's
    mean 0-10; shares as fractions 0-1).

    Columns :data:`HEADLINE_COLUMNS`: ``figure``, ``kind``, ``estimate`` (exactly the summary's figure:
    over judged segments, a repeated run's samples averaged per segment), ``lo``, ``hi``, ``n``
    (segments with a value), ``n_clusters`` (turns), ``method``, ``confidence``, ``seed``/``n_boot``
    (bootstrap rows), ``note``. Means use the cluster bootstrap over turns (``cluster_col``; without it
    the turn id is read from ``segment_id``); shares use Wilson when every turn has one segment, else
    the cluster bootstrap. All bootstrap rows share one seed, so for the figures over the same segments
    they are the same replicates. ``frame.attrs`` holds ``covers`` (:data:`INTERVAL_COVERS`),
    ``confidence``, ``n_boot``, ``seed`` and ``cluster``. Refuses mixed judge/rubric ids unless
    ``allow_mixed`` (:func:`axon_eval.summaries.check_homogeneous`).
    """
    seg = headline_segments(results_df, rubric, cluster_col=cluster_col, allow_mixed=allow_mixed)
    clusters = seg["cluster"].to_numpy(dtype=object)
    rows = []
    for figure, kind in HEADLINE_FIGURES:
        iv = figure_interval(figure_values(seg, figure), clusters, kind, n_boot=n_boot, seed=seed,
                             confidence=confidence)
        rows.append({"figure": figure, "kind": kind, **{k: v for k, v in iv.as_dict().items()
                                                        if k in HEADLINE_COLUMNS}})
    out = pd.DataFrame(rows, columns=list(HEADLINE_COLUMNS))
    out["seed"] = out["seed"].astype("Int64")
    out["n_boot"] = out["n_boot"].astype("Int64")
    out.attrs.update({"covers": INTERVAL_COVERS, "confidence": confidence, "n_boot": n_boot, "seed": seed,
                      "cluster": cluster_col if cluster_col in seg.columns else "turn id from segment_id"})
    return out


def format_headlines(table: pd.DataFrame) -> list[str]:
    """One line per figure of :func:`headline_intervals` for people (shares as percentages), then
    :data:`INTERVAL_COVERS`."""
    lines = []
    for r in table.itertuples(index=False):
        iv = Interval(r.estimate, r.lo, r.hi, int(r.n), int(r.n_clusters), r.method, r.confidence)
        lines.append(f"{r.figure}: {iv.text(share=r.kind == 'share')} [{r.method}]")
    lines.append(table.attrs.get("covers", INTERVAL_COVERS))
    return lines


# -- every headline of a run in bounded memory: the report, notebook 01, the ``summaries`` tables ------
def _shared_cluster_means(values: np.ndarray, codes: np.ndarray, n_clusters: int, *, n_boot: int,
                          seed: int | None, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """Percentile bounds of the cluster-bootstrap means of several figures (``values[n, F]``) over the
    same units, from ONE set of replicates drawn in blocks.

    The replicates are those of :func:`cluster_counts` (``default_rng(seed).multinomial`` row after row;
    drawing them in blocks of rows from one generator gives the same rows), so each column's bounds are
    those :func:`cluster_bootstrap` gives for it alone. Peak memory is a block of
    :data:`_SHARED_BLOCK_COUNTS` counts, not ``n_boot x n_clusters``."""
    sums = np.stack([np.bincount(codes, weights=values[:, j], minlength=n_clusters)
                     for j in range(values.shape[1])], axis=1)                      # [C, F]
    sizes = np.bincount(codes, minlength=n_clusters).astype(np.float64)             # [C]
    rng = np.random.default_rng(seed)
    p = np.full(n_clusters, 1.0 / n_clusters)
    block = max(1, _SHARED_BLOCK_COUNTS // n_clusters)
    reps = np.empty((n_boot, values.shape[1]))
    for start in range(0, n_boot, block):
        counts = rng.multinomial(n_clusters, p, size=min(block, n_boot - start)).astype(np.float64)
        reps[start:start + len(counts)] = (counts @ sums) / (counts @ sizes)[:, None]
    alpha = 1 - confidence
    lo, hi = np.quantile(reps, [alpha / 2, 1 - alpha / 2], axis=0)
    return lo, hi


def headline_table(results_df: pd.DataFrame, rubric: Rubric | None = None, *, cluster_col: str = "turn_id",
                   n_boot: int = N_BOOT, seed: int | None = SEED, confidence: float = CONFIDENCE,
                   allow_mixed: bool = False) -> pd.DataFrame:
    """The rows of :func:`headline_intervals` (same columns, figures, estimates, methods and ``attrs``),
    computed in memory that does not grow with ``n_boot x turns``: what the report, notebook 01 and a
    caller of the :mod:`axon_eval.summaries` tables use for the figures' intervals.

    ``summaries`` sits below ``stats`` in the layers, so its ``band_table`` / ``dimension_table`` carry
    no interval; this table is their interval companion. Its estimates go through
    :func:`~axon_eval.summaries.segment_table`, so each is exactly the figure those tables print
    (mean score 0-100, share of each band and share capped as fractions 0-1, each dimension's mean 0-10).

    Method per figure as :func:`figure_interval`: Wilson for a share whose turns have one segment each,
    else the percentile cluster bootstrap over turns, ``n_boot`` replicates, ``seed`` recorded. The
    figures over the same segments share one set of replicates (the same ones
    :func:`cluster_bootstrap` draws for each alone, since every figure restarts ``default_rng(seed)``),
    drawn in blocks of rows: on 40,000 one-segment turns this takes about a block (tens of MB) where
    :func:`headline_intervals` builds a ``2000 x 40,000`` count matrix per figure (1.3 GB, half a minute).
    """
    if n_boot < 1:
        raise ValueError(f"n_boot must be >= 1, got {n_boot!r}")
    z_value(confidence)  # validates confidence
    seg = headline_segments(results_df, rubric, cluster_col=cluster_col, allow_mixed=allow_mixed)
    clusters = seg["cluster"].to_numpy(dtype=object)
    values = {figure: figure_values(seg, figure) for figure, _ in HEADLINE_FIGURES}
    intervals: dict[str, Interval] = {}
    shared: dict[bytes, list[str]] = {}  # figures over the same kept segments share replicates
    for figure, kind in HEADLINE_FIGURES:
        keep = np.isfinite(values[figure])
        kept_clusters = clusters[keep]
        n_clusters = len(pd.unique(kept_clusters))
        if (kind == "share" and n_clusters == len(kept_clusters)) or n_clusters < 2:
            intervals[figure] = figure_interval(values[figure], clusters, kind, n_boot=n_boot, seed=seed,
                                                confidence=confidence)  # Wilson, or no interval (cheap)
        else:
            shared.setdefault(keep.tobytes(), []).append(figure)
    for key, figures in shared.items():
        keep = np.frombuffer(key, dtype=bool)
        n = int(keep.sum())
        codes, n_clusters = _codes(clusters[keep], n)
        x = np.column_stack([values[f][keep] for f in figures])
        lo, hi = _shared_cluster_means(x, codes, n_clusters, n_boot=n_boot, seed=seed, confidence=confidence)
        n_missing = len(keep) - n
        note = f"{n_missing} segment(s) without a value left out (null, not 0)" if n_missing else ""
        for j, figure in enumerate(figures):
            intervals[figure] = Interval(float(x[:, j].mean()), float(lo[j]), float(hi[j]), n, n_clusters,
                                         "cluster bootstrap percentile", confidence, seed, n_boot, note)
    rows = [{"figure": figure, "kind": kind, **{k: v for k, v in intervals[figure].as_dict().items()
                                                if k in HEADLINE_COLUMNS}} for figure, kind in HEADLINE_FIGURES]
    out = pd.DataFrame(rows, columns=list(HEADLINE_COLUMNS))
    out["seed"] = out["seed"].astype("Int64")
    out["n_boot"] = out["n_boot"].astype("Int64")
    out.attrs.update({"covers": INTERVAL_COVERS, "confidence": confidence, "n_boot": n_boot, "seed": seed,
                      "cluster": cluster_col if cluster_col in seg.columns else "turn id from segment_id"})
    return out


def interval_text(lo: float, hi: float, *, share: bool = False, note: str = "") -> str:
    """Bounds for people (:func:`axon_eval.display.fmt_interval`): ``"55% to 69%"`` for a share,
    ``"68.0 to 74.9"`` for a mean (both ends with the same decimals); a missing bound reads ``"no
    interval"`` and the note, never ``nan``."""
    from ..display import fmt_interval, is_missing

    if is_missing(lo) or is_missing(hi):
        return "no interval" + (f" ({note})" if note else "")
    return fmt_interval(lo, hi, share=share)


def format_headline_table(table: pd.DataFrame) -> pd.DataFrame:
    """:func:`headline_table` (or :func:`headline_intervals`) for people, one row per figure: ``figure``,
    ``estimate`` and ``<confidence> interval`` as text (:mod:`axon_eval.display`: shares as percentages,
    3 significant digits; ``"no interval"`` when there is none, with the reason in ``note``), ``n``
    (segments) and ``turns`` as integers, ``method``, ``note``. Its
    ``attrs`` keep ``covers`` (the one sentence of what the intervals cover), ``seed`` and ``n_boot``."""
    from ..display import estimate_parts, fmt_value, is_missing

    level = f"{table.attrs.get('confidence', CONFIDENCE):.0%} interval"
    rows = []
    for r in table.itertuples(index=False):
        share = r.kind == "share"
        note = "" if r.note is None or (isinstance(r.note, float) and math.isnan(r.note)) else str(r.note)
        # beside its interval an estimate takes the interval's decimals (69.0 beside 65.6 to 72.0)
        estimate = (fmt_value(r.estimate, share=share) if share or is_missing(r.lo) or is_missing(r.hi)
                    else estimate_parts(r.estimate, r.lo, r.hi)[0])
        rows.append({"figure": r.figure, "estimate": estimate,
                     level: interval_text(r.lo, r.hi, share=share), "n": int(r.n),
                     "turns": int(r.n_clusters), "method": r.method, "note": note})
    out = pd.DataFrame(rows, columns=["figure", "estimate", level, "n", "turns", "method", "note"])
    out.attrs.update({k: table.attrs[k] for k in ("covers", "seed", "n_boot", "confidence") if k in table.attrs})
    return out
