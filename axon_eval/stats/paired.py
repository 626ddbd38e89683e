"""Paired comparison of two runs over the same segments: band transitions, dimensions, share differences.

Two runs (two judges, two rubrics, two agent versions over the same captured turns) are compared on the
segments judged in both, paired by ``segment_id`` (a repeated run's samples first averaged per segment,
:func:`axon_eval.summaries.segment_table`). :func:`compare_runs` gives a :class:`PairedComparison`:

* **Band transition table**: rows the band in run A, columns the band in run B (good, partial, poor).
  Its test asks whether the band *shares* differ (marginal homogeneity): with three bands in use the
  Stuart-Maxwell test (Stuart 1955; Maxwell 1970; ``statsmodels`` ``SquareTable.homogeneity``), with two
  McNemar's test (exact binomial on the discordant pairs when they number fewer than
  :data:`MCNEMAR_EXACT_BELOW`, else the continuity-corrected chi-square; ``statsmodels`` ``mcnemar``).
  Bowker's symmetry test (are the moves A->B and B->A balanced cell by cell) is reported beside it.
* **Dimensions**: per dimension the Wilcoxon signed-rank test of the paired values (``scipy.stats.wilcoxon``,
  zero differences dropped, two-sided), Holm-Bonferroni adjusted across the four dimensions
  (Holm 1979; ``statsmodels.stats.multitest.multipletests(method="holm")``).
* **Share differences**: B minus A for each band's share and the mean score, with a paired cluster
  bootstrap percentile interval (the per-segment differences resampled by turn, so a bundled turn's
  segments move together; :func:`axon_eval.stats.intervals.cluster_bootstrap`).

The **verdict** is plain: ``"difference detected at alpha=0.05"`` when the band test's p-value or any
Holm-adjusted dimension p-value is below ``alpha``, else ``"no difference detected at alpha=0.05"``.
The band test and the Wilcoxon tests treat segments as independent (bundled turns are rare; the
bootstrap interval does cluster them). Segments judged in only one run are counted, never silently
dropped.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..rubric import BANDS, DIMENSIONS, Rubric
from .intervals import ALPHA, CONFIDENCE, N_BOOT, SEED, Interval, cluster_bootstrap, headline_segments

#: McNemar's test is exact (binomial) below this many discordant pairs, chi-square (corrected) from it.
MCNEMAR_EXACT_BELOW = 25


@dataclass(frozen=True)
class BandTest:
    """A test on the band transition table: ``name``, ``statistic``, ``df``, ``pvalue``, the bands
    ``categories`` it used (bands empty in both runs are left out) and a ``note``."""

    name: str
    statistic: float
    df: float
    pvalue: float
    categories: tuple[str, ...]
    note: str = ""


def transition_table(bands_a: pd.Series, bands_b: pd.Series) -> pd.DataFrame:
    """Counts of (band in A, band in B) pairs: a 3x3 frame, index ``band_a`` and columns ``band_b`` in
    the order good, partial, poor (zeros kept). A value outside the bands is a ``ValueError``."""
    a, b = pd.Series(bands_a).astype(object).to_numpy(), pd.Series(bands_b).astype(object).to_numpy()
    if len(a) != len(b):
        raise ValueError(f"bands_a has {len(a)} values and bands_b {len(b)}; they must pair up")
    for what, arr in (("bands_a", a), ("bands_b", b)):
        bad = [v for v in arr if v not in BANDS]
        if bad:
            raise ValueError(f"{what} holds {bad[0]!r}, not one of {list(BANDS)}")
    codes = {band: i for i, band in enumerate(BANDS)}
    k = len(BANDS)
    ia = np.array([codes[v] for v in a], dtype=np.int64)
    ib = np.array([codes[v] for v in b], dtype=np.int64)
    counts = np.bincount(ia * k + ib, minlength=k * k).reshape(k, k)
    return pd.DataFrame(counts, index=pd.Index(BANDS, name="band_a"), columns=pd.Index(BANDS, name="band_b"))


def band_test(table: pd.DataFrame) -> tuple[BandTest, BandTest | None]:
    """The marginal-homogeneity test of a transition table and Bowker's symmetry test (``None`` when
    fewer than three bands are in use; with two, Bowker is McNemar).

    Bands with no segment in either run are dropped first. One band left: nothing can differ (p = 1).
    Two: McNemar. Three: Stuart-Maxwell, ``d' S^-1 d`` on the first two margin differences
    ``d_i = n_i. - n_.i`` with ``S_ii = n_i. + n_.i - 2 n_ii``, ``S_ij = -(n_ij + n_ji)``, chi-square
    with 2 df. No discordant pair at all: statistic 0, p = 1.
    """
    from statsmodels.stats.contingency_tables import SquareTable, mcnemar

    counts = table.to_numpy(dtype=np.float64)
    used = (counts.sum(axis=0) + counts.sum(axis=1)) > 0
    cats = tuple(b for b, u in zip(table.index, used, strict=True) if u)
    sub = counts[np.ix_(used, used)]
    discordant = sub.sum() - np.trace(sub)
    if len(cats) < 2:
        return BandTest("none", 0.0, 0.0, 1.0, cats, "every segment is in one band in both runs"), None
    if discordant == 0:
        name = "McNemar" if len(cats) == 2 else "Stuart-Maxwell"
        note = "no segment changed band"
        bowker = BandTest("Bowker", 0.0, 0.0, 1.0, cats, note) if len(cats) == 3 else None
        return BandTest(name, 0.0, float(len(cats) - 1), 1.0, cats, note), bowker
    if len(cats) == 2:
        exact = discordant < MCNEMAR_EXACT_BELOW
        res = mcnemar(sub, exact=exact, correction=True)
        name = "McNemar exact" if exact else "McNemar chi-square (continuity-corrected)"
        return BandTest(name, float(res.statistic), 1.0, float(res.pvalue), cats), None
    square = SquareTable(sub, shift_zeros=False)
    sm = square.homogeneity(method="stuart_maxwell")
    by = square.symmetry(method="bowker")
    bowker = BandTest("Bowker", float(by.statistic), float(by.df), float(by.pvalue), cats)
    if not math.isfinite(float(sm.pvalue)):
        return (BandTest("Bowker (Stuart-Maxwell undefined: singular covariance)", bowker.statistic, bowker.df,
                         bowker.pvalue, cats, "Stuart-Maxwell's covariance could not be inverted"), bowker)
    return BandTest("Stuart-Maxwell", float(sm.statistic), float(sm.df), float(sm.pvalue), cats), bowker


def dimension_tests(a: pd.DataFrame, b: pd.DataFrame, *, alpha: float = ALPHA) -> pd.DataFrame:
    """Per dimension, the paired Wilcoxon signed-rank test of ``b`` against ``a`` (rows aligned), with
    Holm-adjusted p-values across the dimensions.

    Columns: ``dimension``, ``n`` (pairs with both values), ``n_nonzero`` (pairs that differ),
    ``mean_difference`` (B - A), ``statistic``, ``pvalue``, ``p_holm``, ``reject`` (``p_holm < alpha``),
    ``note``. A dimension with no differing pair gets p = 1 (nothing differs; it still counts in Holm's m).
    """
    from scipy.stats import wilcoxon
    from statsmodels.stats.multitest import multipletests

    rows = []
    for d in DIMENSIONS:
        x = pd.to_numeric(a[d], errors="coerce").to_numpy(dtype=np.float64)
        y = pd.to_numeric(b[d], errors="coerce").to_numpy(dtype=np.float64)
        both = np.isfinite(x) & np.isfinite(y)
        diff = y[both] - x[both]
        nonzero = int((diff != 0).sum())
        note = ""
        if nonzero == 0:
            stat, p = 0.0, 1.0
            note = "no pair differs" if both.any() else "no pair with values in both runs"
        else:
            res = wilcoxon(y[both], x[both], zero_method="wilcox", alternative="two-sided")
            stat, p = float(res.statistic), float(res.pvalue)
        if (~both).any():
            note = "; ".join(filter(None, [note, f"{int((~both).sum())} segment(s) without a value in one run left out"]))
        rows.append({"dimension": d, "n": int(both.sum()), "n_nonzero": nonzero,
                     "mean_difference": float(diff.mean()) if len(diff) else math.nan,
                     "statistic": stat, "pvalue": p, "note": note})
    out = pd.DataFrame(rows)
    reject, p_holm, _, _ = multipletests(out["pvalue"].to_numpy(), alpha=alpha, method="holm")
    out["p_holm"] = p_holm
    out["reject"] = p_holm < alpha
    return out[["dimension", "n", "n_nonzero", "mean_difference", "statistic", "pvalue", "p_holm", "reject", "note"]]


def share_differences(a: pd.DataFrame, b: pd.DataFrame, clusters: np.ndarray, *, n_boot: int = N_BOOT,
                      seed: int | None = SEED, confidence: float = CONFIDENCE) -> pd.DataFrame:
    """B minus A for each band's share (fractions) and the mean score (points), with a paired cluster
    bootstrap percentile interval: the per-segment differences ``1[b = band] - 1[a = band]`` (and
    ``score_b - score_a``) resampled by ``clusters``; one seed, so every row uses the same replicates.
    Columns: ``figure``, ``kind``, ``estimate``, ``lo``, ``hi``, ``n``, ``n_clusters``, ``method``,
    ``seed``, ``n_boot``."""
    rows = []
    band_a, band_b = a["band"].astype(object).to_numpy(), b["band"].astype(object).to_numpy()
    for band in BANDS:
        diff = (band_b == band).astype(float) - (band_a == band).astype(float)
        iv = cluster_bootstrap(diff, clusters, n_boot=n_boot, seed=seed, confidence=confidence)
        rows.append({"figure": f"share {band}", "kind": "share", **_iv_fields(iv)})
    diff = (pd.to_numeric(b["score"], errors="coerce").to_numpy(dtype=np.float64)
            - pd.to_numeric(a["score"], errors="coerce").to_numpy(dtype=np.float64))
    iv = cluster_bootstrap(diff, clusters, n_boot=n_boot, seed=seed, confidence=confidence)
    rows.append({"figure": "mean score", "kind": "mean", **_iv_fields(iv)})
    return pd.DataFrame(rows)


def _iv_fields(iv: Interval) -> dict[str, object]:
    return {"estimate": iv.estimate, "lo": iv.lo, "hi": iv.hi, "n": iv.n, "n_clusters": iv.n_clusters,
            "method": iv.method, "seed": iv.seed, "n_boot": iv.n_boot}


def _points(share: float) -> str:
    """A difference of shares in percentage points, signed, 2-3 significant digits (``-0`` reads ``+0.0``)."""
    if math.isnan(share):
        return "-"
    pts = 100 * share + 0.0
    return f"{pts:+.1f}" if abs(pts) < 10 else f"{pts:+.0f}"


def _p(p: float) -> str:
    return "p < 0.001" if p < 0.001 else f"p = {p:.3f}" if p < 0.1 else f"p = {p:.2f}"


@dataclass(frozen=True)
class PairedComparison:
    """Two runs compared on their common judged segments (see the module docstring).

    ``n_pairs`` segments in both runs, ``n_only_a`` / ``n_only_b`` judged in one run only;
    ``transition`` the 3x3 band table; ``band_test`` (and ``bowker``); ``dimensions``
    (:func:`dimension_tests`); ``shares`` (:func:`share_differences`); ``verdict`` and the ``reasons``
    behind it; ``alpha``, ``seed``, ``n_boot``, ``confidence``.
    """

    label_a: str
    label_b: str
    n_pairs: int
    n_only_a: int
    n_only_b: int
    transition: pd.DataFrame
    band_test: BandTest
    bowker: BandTest | None
    dimensions: pd.DataFrame
    shares: pd.DataFrame
    verdict: str
    reasons: tuple[str, ...]
    alpha: float
    seed: int | None
    n_boot: int
    confidence: float
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def detected(self) -> bool:
        return self.verdict.startswith("difference detected")

    def lines(self) -> list[str]:
        """The comparison in plain sentences (shares as percentage points)."""
        bt = self.band_test
        out = [f"{self.label_b} vs {self.label_a}: {self.verdict} ({self.n_pairs} paired segments)",
               f"  bands: {bt.name} {_p(bt.pvalue)}" + (f" ({bt.note})" if bt.note else "")]
        if self.bowker is not None and self.bowker.name != bt.name:
            out.append(f"  band moves balanced (Bowker): {_p(self.bowker.pvalue)}")
        for r in self.dimensions.itertuples(index=False):
            diff = "-" if math.isnan(r.mean_difference) else f"{r.mean_difference:+.2f}"
            out.append(f"  {r.dimension}: mean difference {diff}, Wilcoxon {_p(r.pvalue)}, Holm-adjusted "
                       f"{_p(r.p_holm)}")
        for r in self.shares.itertuples(index=False):
            if r.kind == "share":
                out.append(f"  {r.figure}: {_points(r.estimate)} percentage points ({_points(r.lo)} to "
                           f"{_points(r.hi)})")
            else:
                out.append(f"  {r.figure}: {r.estimate:+.1f} ({r.lo:+.1f} to {r.hi:+.1f})")
        out.extend(f"  note: {n}" for n in self.notes)
        return out


def compare_runs(results_a: pd.DataFrame, results_b: pd.DataFrame, rubric: Rubric | None = None, *,
                 label_a: str = "A", label_b: str = "B", alpha: float = ALPHA, n_boot: int = N_BOOT,
                 seed: int | None = SEED, cluster_col: str = "turn_id", allow_mixed: bool = False) -> PairedComparison:
    """Compare two runs' ``results`` frames on the segments judged in both (see the module docstring).

    Each frame must be homogeneous (one judge, one rubric) unless ``allow_mixed``; the two runs may of
    course differ. ``rubric`` gives the band edges for a repeated run's per-segment means. The bootstrap
    intervals use ``confidence = 1 - alpha``.
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    seg_a = headline_segments(results_a, rubric, cluster_col=cluster_col, allow_mixed=allow_mixed)
    seg_b = headline_segments(results_b, rubric, cluster_col=cluster_col, allow_mixed=allow_mixed)
    ids_a, ids_b = pd.Index(seg_a["segment_id"]), pd.Index(seg_b["segment_id"])
    common = ids_a.intersection(ids_b, sort=False)
    notes = []
    n_only_a, n_only_b = len(ids_a.difference(ids_b)), len(ids_b.difference(ids_a))
    if n_only_a or n_only_b:
        notes.append(f"{n_only_a} segment(s) judged only in {label_a} and {n_only_b} only in {label_b} are not "
                     "paired and left out of every test")
    if len(common) < 2:
        raise ValueError(f"the runs share {len(common)} judged segment(s); a paired comparison needs at least 2")
    a = seg_a.set_index("segment_id").loc[common].reset_index()
    b = seg_b.set_index("segment_id").loc[common].reset_index()
    confidence = 1 - alpha
    table = transition_table(a["band"], b["band"])
    bt, bowker = band_test(table)
    dims = dimension_tests(a, b, alpha=alpha)
    shares = share_differences(a, b, a["cluster"].to_numpy(dtype=object), n_boot=n_boot, seed=seed,
                               confidence=confidence)
    reasons = []
    if bt.pvalue < alpha:
        reasons.append(f"band shares differ ({bt.name}, {_p(bt.pvalue)})")
    for r in dims.itertuples(index=False):
        if r.reject:
            reasons.append(f"{r.dimension} differs (Wilcoxon, Holm-adjusted {_p(r.p_holm)})")
    verdict = f"{'difference' if reasons else 'no difference'} detected at alpha={alpha:g}"
    return PairedComparison(label_a, label_b, len(common), n_only_a, n_only_b, table, bt, bowker, dims, shares,
                            verdict, tuple(reasons), alpha, seed, n_boot, confidence, tuple(notes))
