"""Paired comparison of two runs: band transitions, dimensions, the score, share and mean differences.

This is the one implementation of a paired comparison in the workbench: ``python -m axon_eval compare``,
``gate``-style decisions, notebook 02 and the API all call :func:`compare_runs` here. Two runs (two
judges, two rubrics, two agent versions over the same questions) are paired on a key: ``segment_id`` by
default, or any column the user names (``pair_by="question"`` pairs two agent versions that answered the
same questions in different turns). A repeated run's samples are first averaged per segment
(:func:`axon_eval.summaries.segment_table`). :func:`compare_runs` gives a :class:`PairedComparison`:

* **Band transition table**: rows the band in run A, columns the band in run B (good, partial, poor).
  Its test asks whether the band *shares* differ (marginal homogeneity). Only the bands **in play**
  enter it: a band with no discordant cell (no segment moved into or out of it) carries no information
  on the difference of shares, whatever its diagonal count. With three bands in play, the
  Stuart-Maxwell test (Stuart 1955; Maxwell 1970; ``statsmodels`` ``SquareTable.homogeneity``):
  ``d' S^-1 d`` on the margin differences ``d_i = n_i. - n_.i``, ``S_ii = n_i. + n_.i - 2 n_ii``,
  ``S_ij = -(n_ij + n_ji)``, chi-square with 2 df. ``S`` is the Laplacian of the graph whose edges are
  the pairs of bands with moves between them, so it is invertible exactly when that graph is connected,
  which every table with three bands in play is: dropping the bands out of play is the same as the
  generalised inverse with ``df = rank(S)``, and no singular matrix is ever inverted. With two bands in
  play, McNemar's test on them (exact binomial on the discordant pairs when they number fewer than
  :data:`MCNEMAR_EXACT_BELOW`, else the continuity-corrected chi-square; ``statsmodels`` ``mcnemar``).
  Bowker's symmetry test (are the moves A->B and B->A balanced cell by cell) is reported beside a
  three-band test: ``sum (n_ij - n_ji)^2 / (n_ij + n_ji)`` over the pairs with any move, with that many
  degrees of freedom (Bowker 1948); a pair with no move adds nothing and no degree of freedom.
* **Signed-rank tests** (the score and each dimension): the Wilcoxon signed-rank test of the paired
  differences with the **zero differences dropped first** (Wilcoxon's convention) and the p-value from
  the **exact** permutation distribution of the statistic given the observed ranks (midranks for tied
  ``|d|``), computed by :func:`signed_rank_null` for up to :data:`SIGNED_RANK_EXACT_MAX` non-zero pairs,
  the normal approximation with scipy's tie correction above. Integer subscores give many unchanged
  pairs and many ties: a normal approximation there is anti-conservative (five moved pairs, all up, have
  the exact two-sided p = 2 / 2^5 = 0.0625, the smallest attainable). The dimension p-values are
  Holm-Bonferroni adjusted across the four dimensions (Holm 1979;
  ``statsmodels.stats.multitest.multipletests(method="holm")``).
* **Share and mean differences**: B minus A for each band's share and the mean score, with a paired
  cluster bootstrap percentile interval: the per-pair differences resampled **by turn** (A's turn), so a
  bundled turn's segments move together, as every other interval of the workbench
  (:func:`axon_eval.stats.intervals.cluster_bootstrap`).

The **verdict** is plain: ``"difference detected at alpha=0.05"`` when the band test's p-value or any
Holm-adjusted dimension p-value is below ``alpha``, else ``"no difference detected at alpha=0.05"``.
The band and signed-rank tests treat pairs as independent (bundled turns are rare; the intervals do
cluster them). Units present in only one run are counted, never silently dropped.
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
#: The signed-rank p-value is exact (the permutation distribution given the ranks) up to this many
#: non-zero differences; above it the normal approximation (tie-corrected) is within about 1e-3.
SIGNED_RANK_EXACT_MAX = 400
#: The default key that pairs two runs (the same captured segment judged twice).
PAIR_BY = "segment_id"


@dataclass(frozen=True)
class BandTest:
    """A test on the band transition table: ``name``, ``statistic``, ``df``, ``pvalue``, the bands
    ``categories`` in play (bands with at least one move into or out of them) and a ``note``."""

    name: str
    statistic: float
    df: float
    pvalue: float
    categories: tuple[str, ...]
    note: str = ""


@dataclass(frozen=True)
class SignedRankTest:
    """A Wilcoxon signed-rank test of paired differences (zeros dropped).

    ``n`` pairs with a value on both sides, ``n_nonzero`` of them differing; ``statistic`` is
    ``min(W+, W-)`` on the ranks of ``|d|`` (midranks for ties); ``method`` is ``"exact"`` or
    ``"normal approximation (tie-corrected)"``; ``pvalue`` two-sided (1 when no pair differs)."""

    statistic: float
    pvalue: float
    n: int
    n_nonzero: int
    method: str
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


def bowker_test(counts: np.ndarray, categories: tuple[str, ...]) -> BandTest:
    """Bowker's symmetry test of a square table: ``sum_{i<j} (n_ij - n_ji)^2 / (n_ij + n_ji)`` over the
    pairs with ``n_ij + n_ji > 0``, chi-square with one degree of freedom per such pair (Bowker 1948,
    JASA 43:572). With every pair in use this is ``statsmodels``' ``SquareTable.symmetry("bowker")``."""
    from scipy.stats import chi2

    k = len(counts)
    stat, df = 0.0, 0
    for i in range(k):
        for j in range(i + 1, k):
            moved = counts[i, j] + counts[j, i]
            if moved > 0:
                stat += (counts[i, j] - counts[j, i]) ** 2 / moved
                df += 1
    if df == 0:
        return BandTest("Bowker", 0.0, 0.0, 1.0, categories, "no segment changed band")
    return BandTest("Bowker", float(stat), float(df), float(chi2.sf(stat, df)), categories)


def band_test(table: pd.DataFrame) -> tuple[BandTest, BandTest | None]:
    """The marginal-homogeneity test of a transition table and Bowker's symmetry test (``None`` unless
    three bands are in play; with two, Bowker is McNemar).

    Only the bands in play enter (the module docstring says why): a band whose off-diagonal row and
    column are empty is dropped whatever its diagonal, so the choice of test never depends on the count
    of unchanged segments. Three in play: Stuart-Maxwell with 2 df; two: McNemar; none (no segment
    changed band): statistic 0, p = 1.
    """
    from statsmodels.stats.contingency_tables import SquareTable, mcnemar

    counts = table.to_numpy(dtype=np.float64)
    off = counts - np.diag(np.diag(counts))
    in_play = (off.sum(axis=0) + off.sum(axis=1)) > 0
    cats = tuple(b for b, u in zip(table.index, in_play, strict=True) if u)
    used = tuple(b for b, u in zip(table.index, (counts.sum(axis=0) + counts.sum(axis=1)) > 0, strict=True) if u)
    left_out = [b for b in used if b not in cats]
    note = (f"band(s) {', '.join(left_out)} had no segment move in or out and carry no information on the "
            "difference: left out" if left_out and cats else "")
    if not cats:
        why = "every segment is in one band in both runs" if len(used) < 2 else "no segment changed band"
        name = "Stuart-Maxwell" if len(used) == 3 else "McNemar" if len(used) == 2 else "none"
        return BandTest(name, 0.0, 0.0, 1.0, used, why), None
    sub = counts[np.ix_(in_play, in_play)]
    if len(cats) == 2:
        discordant = sub[0, 1] + sub[1, 0]
        exact = discordant < MCNEMAR_EXACT_BELOW
        res = mcnemar(sub, exact=exact, correction=True)
        name = "McNemar exact" if exact else "McNemar chi-square (continuity-corrected)"
        return BandTest(name, float(res.statistic), 1.0, float(res.pvalue), cats, note), None
    sm = SquareTable(sub, shift_zeros=False).homogeneity(method="stuart_maxwell")
    return (BandTest("Stuart-Maxwell", float(sm.statistic), float(sm.df), float(sm.pvalue), cats, note),
            bowker_test(sub, cats))


def signed_rank_null(doubled_ranks: np.ndarray) -> np.ndarray:
    """The exact null distribution of ``2 W+`` given the doubled ranks ``2 r_i`` (integers; midranks of
    ties become integers when doubled): under the null every sign is +/- with probability 1/2
    independently, so ``P(2W+ = s)`` is the coefficient of ``x^s`` in ``prod_i (1 + x^{2 r_i}) / 2``.
    Returns the probabilities for ``s = 0 .. sum(2 r_i)``. Cost ``O(n * sum(r))``; this is the
    conditional (permutation) distribution that ``scipy.stats.wilcoxon`` enumerates with
    ``method=PermutationMethod()``, and the classical exact table when there are no ties."""
    ranks = np.asarray(doubled_ranks, dtype=np.int64)
    total = int(ranks.sum())
    dist = np.zeros(total + 1)
    dist[0] = 1.0
    top = 0
    for r in ranks:
        top += int(r)
        shifted = np.zeros_like(dist)
        shifted[r: top + 1] = dist[: top + 1 - r]
        dist = 0.5 * (dist + shifted)
    return dist


def signed_rank_test(differences: np.ndarray | pd.Series) -> SignedRankTest:
    """Two-sided Wilcoxon signed-rank test of paired ``differences`` (B - A), zeros dropped first.

    Ranks of ``|d|`` among the non-zero differences (midranks for ties); ``W+`` the sum of the ranks of
    the positive ones. Up to :data:`SIGNED_RANK_EXACT_MAX` non-zero differences the p-value is exact:
    ``min(1, 2 min(P(W+ <= w), P(W+ >= w)))`` under :func:`signed_rank_null`; above it,
    ``scipy.stats.wilcoxon(method="asymptotic")`` (tie-corrected normal). Missing values are left out.
    """
    from scipy.stats import rankdata, wilcoxon

    d = pd.to_numeric(pd.Series(np.asarray(differences, dtype=object)), errors="coerce").to_numpy(dtype=np.float64)
    d = d[np.isfinite(d)]
    nonzero = d[d != 0]
    n, m = len(d), len(nonzero)
    if m == 0:
        return SignedRankTest(0.0, 1.0, n, 0, "exact", "no pair differs" if n else "no pair with values in both runs")
    ranks = rankdata(np.abs(nonzero))  # midranks: multiples of 1/2
    w_plus = float(ranks[nonzero > 0].sum())
    statistic = min(w_plus, float(ranks.sum()) - w_plus)
    if m > SIGNED_RANK_EXACT_MAX:
        res = wilcoxon(nonzero, alternative="two-sided", method="asymptotic")
        return SignedRankTest(statistic, float(res.pvalue), n, m, "normal approximation (tie-corrected)")
    doubled = np.rint(2 * ranks).astype(np.int64)
    dist = signed_rank_null(doubled)
    observed = int(round(2 * w_plus))
    lower, upper = float(dist[: observed + 1].sum()), float(dist[observed:].sum())
    return SignedRankTest(statistic, min(1.0, 2 * min(lower, upper)), n, m, "exact")


def dimension_tests(a: pd.DataFrame, b: pd.DataFrame, *, alpha: float = ALPHA) -> pd.DataFrame:
    """Per dimension, the paired signed-rank test (:func:`signed_rank_test`) of ``b`` against ``a``
    (rows aligned), with Holm-adjusted p-values across the dimensions.

    Columns: ``dimension``, ``n`` (pairs with both values), ``n_nonzero`` (pairs that differ),
    ``mean_difference`` (B - A), ``statistic``, ``pvalue``, ``method``, ``p_holm``, ``reject``
    (``p_holm < alpha``), ``note``. A dimension with no differing pair gets p = 1 (nothing differs; it
    still counts in Holm's m).
    """
    from statsmodels.stats.multitest import multipletests

    rows = []
    for d in DIMENSIONS:
        x = pd.to_numeric(a[d], errors="coerce").to_numpy(dtype=np.float64)
        y = pd.to_numeric(b[d], errors="coerce").to_numpy(dtype=np.float64)
        both = np.isfinite(x) & np.isfinite(y)
        diff = y[both] - x[both]
        test = signed_rank_test(diff)
        note = test.note if both.any() else "no pair with values in both runs"
        if (~both).any():
            note = "; ".join(filter(None, [note, f"{int((~both).sum())} segment(s) without a value in one run left out"]))
        rows.append({"dimension": d, "n": int(both.sum()), "n_nonzero": test.n_nonzero,
                     "mean_difference": float(diff.mean()) if len(diff) else math.nan,
                     "statistic": test.statistic, "pvalue": test.pvalue, "method": test.method, "note": note})
    out = pd.DataFrame(rows)
    _, p_holm, _, _ = multipletests(out["pvalue"].to_numpy(), alpha=alpha, method="holm")
    out["p_holm"] = p_holm
    out["reject"] = p_holm < alpha
    return out[["dimension", "n", "n_nonzero", "mean_difference", "statistic", "pvalue", "method", "p_holm",
                "reject", "note"]]


def share_differences(a: pd.DataFrame, b: pd.DataFrame, clusters: np.ndarray, *, n_boot: int = N_BOOT,
                      seed: int | None = SEED, confidence: float = CONFIDENCE) -> pd.DataFrame:
    """B minus A for each band's share (fractions) and the mean score (points), with a paired cluster
    bootstrap percentile interval: the per-pair differences ``1[b = band] - 1[a = band]`` (and
    ``score_b - score_a``) resampled by ``clusters`` (turns); one seed, so every row uses the same
    replicates. Columns: ``figure``, ``kind``, ``estimate``, ``lo``, ``hi``, ``n``, ``n_clusters``,
    ``method``, ``seed``, ``n_boot``."""
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


def p_text(p: float) -> str:
    """``p = 0.013``, ``p = 0.42`` or ``p < 0.001``: never scientific notation."""
    return "p < 0.001" if p < 0.001 else f"p = {p:.3f}" if p < 0.1 else f"p = {p:.2f}"


def pair_units(seg_a: pd.DataFrame, seg_b: pd.DataFrame, pair_by: str = PAIR_BY
               ) -> tuple[pd.DataFrame, pd.DataFrame, list[str], list[str]]:
    """The units of two runs paired on ``pair_by``: ``(a, b, only_a, only_b)`` with ``a`` and ``b``
    aligned row for row (A's order) and the keys present in one run only. A key must be unique within
    each run (a ``ValueError`` names the first repeated one) and present (a missing key is an error,
    not a silent drop)."""
    for label, seg in (("A", seg_a), ("B", seg_b)):
        if pair_by not in seg.columns:
            raise ValueError(f"run {label} has no column {pair_by!r} to pair by; it has {sorted(seg.columns)}")
        keys = seg[pair_by]
        if keys.isna().any():
            raise ValueError(f"run {label}: {int(keys.isna().sum())} unit(s) have no {pair_by!r} to pair by")
        dup = keys[keys.duplicated()]
        if len(dup):
            raise ValueError(f"run {label}: {pair_by!r} value {dup.iloc[0]!r} names {int((keys == dup.iloc[0]).sum())} "
                             "segments; pair by a key that is unique within each run")
    ka, kb = pd.Index(seg_a[pair_by].astype(str)), pd.Index(seg_b[pair_by].astype(str))
    common = ka.intersection(kb, sort=False)
    a = seg_a.set_index(ka).loc[common].reset_index(drop=True)
    b = seg_b.set_index(kb).loc[common].reset_index(drop=True)
    return a, b, ka.difference(kb, sort=False).tolist(), kb.difference(ka, sort=False).tolist()


@dataclass(frozen=True)
class PairedComparison:
    """Two runs compared on their paired judged units (see the module docstring).

    ``n_pairs`` units in both runs, ``n_only_a`` / ``n_only_b`` judged in one run only; ``pair_by``
    the key; ``transition`` the 3x3 band table; ``band_test`` (and ``bowker``); ``score_test`` the
    signed-rank test of the score differences; ``dimensions`` (:func:`dimension_tests`); ``shares``
    (:func:`share_differences`: band shares and the mean score, B - A); ``verdict`` and the
    ``reasons`` behind it; ``alpha``, ``seed``, ``n_boot``, ``confidence``; ``pairs`` the paired units
    (``key``, ``segment_id_a``, ``segment_id_b``, ``cluster``, ``score_a``, ``score_b``, ``band_a``,
    ``band_b``).
    """

    label_a: str
    label_b: str
    n_pairs: int
    n_only_a: int
    n_only_b: int
    transition: pd.DataFrame
    band_test: BandTest
    bowker: BandTest | None
    score_test: SignedRankTest
    dimensions: pd.DataFrame
    shares: pd.DataFrame
    verdict: str
    reasons: tuple[str, ...]
    alpha: float
    seed: int | None
    n_boot: int
    confidence: float
    pair_by: str = PAIR_BY
    pairs: pd.DataFrame = field(default_factory=pd.DataFrame)
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def detected(self) -> bool:
        return self.verdict.startswith("difference detected")

    @property
    def mean_difference(self) -> Interval:
        """The mean score difference B - A (points) with its turn-clustered bootstrap interval."""
        r = self.shares.set_index("figure").loc["mean score"]
        return Interval(float(r["estimate"]), float(r["lo"]), float(r["hi"]), int(r["n"]), int(r["n_clusters"]),
                        str(r["method"]), self.confidence, self.seed, self.n_boot)

    @property
    def n_band_changes(self) -> int:
        """Paired units whose band differs between the runs."""
        t = self.transition.to_numpy()
        return int(t.sum() - np.trace(t))

    def lines(self) -> list[str]:
        """The comparison in plain sentences (shares as percentage points)."""
        bt = self.band_test
        key = "" if self.pair_by == PAIR_BY else f", paired by {self.pair_by}"
        out = [f"{self.label_b} vs {self.label_a}: {self.verdict} ({self.n_pairs} paired segments{key})",
               f"  bands: {bt.name} {p_text(bt.pvalue)}" + (f" ({bt.note})" if bt.note else "")]
        if self.bowker is not None and self.bowker.name != bt.name:
            out.append(f"  band moves balanced (Bowker, df {self.bowker.df:g}): {p_text(self.bowker.pvalue)}")
        from ..display import fmt_estimate, fmt_signed

        st = self.score_test
        out.append(f"  score: signed-rank {p_text(st.pvalue)} ({st.method}, {st.n_nonzero} of {st.n} pairs differ)")
        for r in self.dimensions.itertuples(index=False):
            diff = "-" if math.isnan(r.mean_difference) else fmt_signed(r.mean_difference)
            out.append(f"  {r.dimension}: mean difference {diff}, Wilcoxon {p_text(r.pvalue)}, Holm-adjusted "
                       f"{p_text(r.p_holm)}")
        for r in self.shares.itertuples(index=False):
            share = r.kind == "share"
            out.append(f"  {r.figure}: {fmt_estimate(r.estimate, r.lo, r.hi, share=share, signed=True)}"
                       + (" percentage points" if share else ""))
        out.extend(f"  note: {n}" for n in self.notes)
        return out


def compare_runs(results_a: pd.DataFrame, results_b: pd.DataFrame, rubric: Rubric | None = None, *,
                 label_a: str = "A", label_b: str = "B", alpha: float = ALPHA, n_boot: int = N_BOOT,
                 seed: int | None = SEED, cluster_col: str = "turn_id", allow_mixed: bool = False,
                 pair_by: str = PAIR_BY, rubric_b: Rubric | None = None) -> PairedComparison:
    """Compare two runs' ``results`` frames on the units judged in both, paired on ``pair_by`` (see the
    module docstring).

    Each frame must be homogeneous (one judge, one rubric) unless ``allow_mixed``; the two runs may of
    course differ. ``rubric`` (and ``rubric_b`` for run B, default ``rubric``) gives the band edges for
    a repeated run's per-segment means. The intervals use ``confidence = 1 - alpha``; the bootstrap
    resamples A's turns.
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    seg_a = headline_segments(results_a, rubric, cluster_col=cluster_col, allow_mixed=allow_mixed)
    seg_b = headline_segments(results_b, rubric_b if rubric_b is not None else rubric, cluster_col=cluster_col,
                              allow_mixed=allow_mixed)
    a, b, only_a, only_b = pair_units(seg_a, seg_b, pair_by)
    notes = []
    if only_a or only_b:
        notes.append(f"{len(only_a)} segment(s) judged only in {label_a} and {len(only_b)} only in {label_b} are not "
                     "paired and left out of every test")
    if len(a) < 2:
        raise ValueError(f"the runs share {len(a)} judged segment(s) by {pair_by!r}; a paired comparison needs at least 2")
    confidence = 1 - alpha
    table = transition_table(a["band"], b["band"])
    bt, bowker = band_test(table)
    score = signed_rank_test(pd.to_numeric(b["score"], errors="coerce").to_numpy(dtype=np.float64)
                             - pd.to_numeric(a["score"], errors="coerce").to_numpy(dtype=np.float64))
    dims = dimension_tests(a, b, alpha=alpha)
    clusters = a["cluster"].to_numpy(dtype=object)
    shares = share_differences(a, b, clusters, n_boot=n_boot, seed=seed, confidence=confidence)
    pairs = pd.DataFrame({"key": a[pair_by].astype(str).to_numpy(), "segment_id_a": a["segment_id"].to_numpy(),
                          "segment_id_b": b["segment_id"].to_numpy(), "cluster": clusters,
                          "score_a": a["score"].to_numpy(), "score_b": b["score"].to_numpy(),
                          "band_a": a["band"].to_numpy(), "band_b": b["band"].to_numpy()})
    reasons = []
    if bt.pvalue < alpha:
        reasons.append(f"band shares differ ({bt.name}, {p_text(bt.pvalue)})")
    for r in dims.itertuples(index=False):
        if r.reject:
            reasons.append(f"{r.dimension} differs (Wilcoxon, Holm-adjusted {p_text(r.p_holm)})")
    verdict = f"{'difference' if reasons else 'no difference'} detected at alpha={alpha:g}"
    return PairedComparison(label_a, label_b, len(a), len(only_a), len(only_b), table, bt, bowker, score, dims,
                            shares, verdict, tuple(reasons), alpha, seed, n_boot, confidence, pair_by, pairs,
                            tuple(notes))
