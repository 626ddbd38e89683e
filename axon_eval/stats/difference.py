"""Human-corrected differences between two judged runs: PPI++ applied to a difference.

A difference between two judged runs mixes the agents' difference with the judge's error on each run:
a judge that is half a point harsher on agent B's style of answer makes B look worse by half a point,
and no amount of judged traffic shrinks that bias. When human labels exist on a subset, the difference
is corrected toward the human standard (prediction-powered inference, Angelopoulos et al., Science
382:669, 2023; PPI++ power tuning, Angelopoulos, Duchi & Zrnic 2023, arXiv:2311.01453), in one of two
designs:

* **Paired** (the runs answer the same questions; units paired on a key such as ``segment_id`` or
  ``question``). Each pair ``i`` has a judged difference ``Dhat_i = J_B,i - J_A,i`` and, when both of
  its sides are labelled, a human difference ``D_i = H_B,i - H_A,i``. The corrected difference is the
  PPI++ mean of ``D`` with predictions ``Dhat`` (:func:`axon_eval.stats.ppi.ppi_mean`)::

      theta = lam * mean_unlabelled(Dhat) + mean_labelled(D - lam * Dhat)
      se^2  = var(lam * Dhat_u) / N + var(D - lam * Dhat) / n,      interval theta -/+ z se

  with the power-tuned ``lam`` in [0, 1]: from :data:`~axon_eval.stats.ppi.SMALL_SAMPLE_LABELLED`
  labelled pairs on exactly ``ppi_py.ppi_mean_ci(D, Dhat, Dhat_u)``; below it the small-sample rule of
  :mod:`axon_eval.stats.ppi` applies (``lam = 1`` and a Student-t interval, whose coverage ppi.py
  measures). Pairing cancels what the two sides share (the question's difficulty), so the paired design
  is the narrower.
* **Independent** (different traffic): each run's figure is corrected on its own labelled subset and
  the difference of the two PPI++ estimates has ``se^2 = se_A^2 + se_B^2`` (the runs' samples are
  independent; half-widths add in quadrature, exact for normal intervals and a close approximation for
  the Student-t intervals of small labelled samples).

**Design weights.** Labels drawn with unequal inclusion probabilities ``pi`` (a stratified or active
labelling pack, :mod:`axon_eval.stats.label_budget`) carry the weight ``w = 1/pi``: each run's (or each
pair's) correction is then the weighted PPI++ of :mod:`axon_eval.stats.ppi` (the imputed term over every
judged unit, the rectifier's mean weighted by ``w``). A pair's weight is the weight its two sides share
(one pack drawn on the pairs), or when the runs were labelled from different packs the product of the two
(each side drawn independently). Which of the two is decided by where the labels came from (one file
or pack, or two), never by whether the two weights happen to be equal. Without weights the labelled units are treated as a simple random
sample.

Beside each corrected difference the **judge-only** difference is given with its normal interval on
the same units: it covers the sampling of units but not the judge's bias, so its coverage of the true
difference falls as the judge's bias differs between the runs (the tests measure both in a seeded
SIMULATED population). Figures: the mean score (points) and each band's share (fractions). The unit is
the segment (pairs are treated as independent, as in :mod:`axon_eval.stats.ppi`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..rubric import BANDS
from .intervals import CONFIDENCE, Interval, figure_values, z_value
from .paired import PAIR_BY, pair_units
from .ppi import MIN_INFORMATIVE_LABELS, MIN_LABELLED, PPIResult, classical_mean, ppi_mean

#: The figures a corrected difference is given for (a share capped has no human value).
DIFFERENCE_FIGURES: tuple[str, ...] = ("mean score", *(f"share {b}" for b in BANDS))
#: The two designs of :func:`corrected_differences`.
DESIGNS = ("paired", "independent")
#: What the corrected interval covers, in one sentence.
DIFFERENCE_COVERS = ("The corrected interval covers the sampling of units and of the labelled subset, for the "
                     "difference the human labels define; the judge-only interval covers sampling alone and "
                     "carries any difference in the judge's bias between the runs.")


@dataclass(frozen=True)
class CorrectedDifference:
    """One figure's difference B - A: ``judge_only`` (normal interval over the judged units) and
    ``corrected`` (PPI++), ``labels_only`` (the labelled units alone), the tuning ``lam`` (paired) or
    ``lam_a``/``lam_b`` (independent), the counts and the ``design``."""

    figure: str
    kind: str
    design: str
    judge_only: Interval
    corrected: Interval
    labels_only: Interval
    lam: float | None
    lam_a: float | None
    lam_b: float | None
    n_labelled: int
    n_unlabelled: int
    note: str = ""

    def row(self) -> dict[str, Any]:
        """A flat row: ``figure``, ``kind``, ``design``, ``estimate``/``lo``/``hi`` (corrected),
        ``judge_estimate``/``judge_lo``/``judge_hi``, ``labels_estimate``/``labels_lo``/``labels_hi``,
        ``lam``/``lam_a``/``lam_b``, ``n_labelled``, ``n_unlabelled``, ``confidence``, ``note``, and the
        corrected interval's ``method``."""
        c, j, lab = self.corrected, self.judge_only, self.labels_only
        return {"figure": self.figure, "kind": self.kind, "design": self.design, "estimate": c.estimate,
                "lo": c.lo, "hi": c.hi, "judge_estimate": j.estimate, "judge_lo": j.lo, "judge_hi": j.hi,
                "labels_estimate": lab.estimate, "labels_lo": lab.lo, "labels_hi": lab.hi, "lam": self.lam,
                "lam_a": self.lam_a, "lam_b": self.lam_b, "n_labelled": self.n_labelled,
                "n_unlabelled": self.n_unlabelled, "confidence": c.confidence, "note": self.note,
                "method": c.method}

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _method(base: str, res: PPIResult) -> str:
    """``"PPI++ normal, paired differences"``, or with the small-sample rule ``"PPI++ Student-t (df 29),
    lam = 1, paired differences"``."""
    if res.df is None:
        return f"PPI++ normal, {base}"
    return f"PPI++ Student-t (df {res.df:.0f}), lam = {res.lam:g}, {base}"


def _nan_interval(n: int, method: str, confidence: float, note: str) -> Interval:
    return Interval(math.nan, math.nan, math.nan, n, n, method, confidence, note=note)


def _difference_interval(a: Interval, b: Interval, method: str, note: str = "") -> Interval:
    """``b - a`` of two independent estimates: half-widths add in quadrature (``se^2 = se_a^2 + se_b^2``
    for normal intervals)."""
    est = b.estimate - a.estimate
    half = math.hypot((a.hi - a.lo) / 2, (b.hi - b.lo) / 2)
    return Interval(est, est - half, est + half, a.n + b.n, a.n_clusters + b.n_clusters, method, a.confidence,
                    note=note)


def _human_on(units: pd.DataFrame, human: pd.DataFrame) -> pd.DataFrame:
    """``human``'s rows aligned to ``units`` by ``segment_id`` (NaN where a unit has no label)."""
    h = human.drop_duplicates("segment_id").set_index("segment_id")
    return h.reindex(units["segment_id"].astype(str)).reset_index()


def paired_difference(judge_a: np.ndarray, judge_b: np.ndarray, human_a: np.ndarray, human_b: np.ndarray, *,
                      figure: str = "mean score", kind: str = "mean", confidence: float = CONFIDENCE,
                      weights: np.ndarray | None = None) -> CorrectedDifference:
    """The paired design on aligned arrays (one entry per pair; ``NaN`` human values = not labelled);
    ``weights``: each pair's design weight ``1/pi`` (``None``: a simple random sample of pairs)."""
    ja, jb, ha, hb = (np.asarray(x, dtype=np.float64) for x in (judge_a, judge_b, human_a, human_b))
    if not len(ja) == len(jb) == len(ha) == len(hb):
        raise ValueError(f"paired arrays differ in length: {len(ja)}, {len(jb)}, {len(ha)}, {len(hb)}")
    judged = np.isfinite(ja) & np.isfinite(jb)
    labelled = judged & np.isfinite(ha) & np.isfinite(hb)
    dhat, d = jb - ja, hb - ha
    n_lab, n_unl = int(labelled.sum()), int((judged & ~labelled).sum())
    judge_iv = (classical_mean(dhat[judged], confidence=confidence).interval("normal (CLT), judged pairs")
                if judged.sum() >= 2 else _nan_interval(int(judged.sum()), "none", confidence, "fewer than 2 pairs"))
    if n_lab < MIN_LABELLED:
        note = f"{n_lab} labelled pair(s), fewer than {MIN_LABELLED}: no correction"
        missing = _nan_interval(n_lab, "none", confidence, note)
        return CorrectedDifference(figure, kind, "paired", judge_iv, missing, missing, None, None, None, n_lab, n_unl,
                                   note)
    w = None if weights is None else np.asarray(weights, dtype=np.float64)[labelled]
    labels = classical_mean(d[labelled], w=w, confidence=confidence)
    unlabelled = dhat[judged & ~labelled] if w is None else dhat[judged]  # weighted: imputed over every unit
    res = ppi_mean(d[labelled], dhat[labelled], unlabelled, w=w, confidence=confidence)
    return CorrectedDifference(figure, kind, "paired", judge_iv, res.interval(_method("paired differences", res)),
                               labels.interval("normal (CLT), labelled pairs only"), float(res.lam), None, None,
                               n_lab, n_unl)


def independent_difference(judge_a: np.ndarray, human_a: np.ndarray, judge_b: np.ndarray, human_b: np.ndarray, *,
                           figure: str = "mean score", kind: str = "mean", confidence: float = CONFIDENCE,
                           weights_a: np.ndarray | None = None, weights_b: np.ndarray | None = None
                           ) -> CorrectedDifference:
    """The independent design: each run's arrays are its own units (``NaN`` human value = not labelled);
    ``weights_a``/``weights_b``: each unit's design weight ``1/pi`` (``None``: a simple random sample)."""
    parts = []
    weights = []
    for what, j, h, w in (("A", judge_a, human_a, weights_a), ("B", judge_b, human_b, weights_b)):
        j, h = np.asarray(j, dtype=np.float64), np.asarray(h, dtype=np.float64)
        if len(j) != len(h):
            raise ValueError(f"run {what}: {len(j)} judged values but {len(h)} human values")
        judged = np.isfinite(j)
        lab = judged & np.isfinite(h)
        parts.append((j, h, judged, lab))
        weights.append(None if w is None else np.asarray(w, dtype=np.float64)[lab])
    n_lab = int(sum(p[3].sum() for p in parts))
    n_unl = int(sum((p[2] & ~p[3]).sum() for p in parts))
    judge_ivs = [classical_mean(j[judged], confidence=confidence).interval("normal (CLT)") if judged.sum() >= 2
                 else _nan_interval(int(judged.sum()), "none", confidence, "fewer than 2 units")
                 for j, _, judged, _ in parts]
    judge_iv = _difference_interval(*judge_ivs, "normal (CLT), judged units, independent runs")
    short = [w for w, (_, _, _, lab) in zip("AB", parts, strict=True) if lab.sum() < MIN_LABELLED]
    if short:
        note = f"run(s) {', '.join(short)} have fewer than {MIN_LABELLED} labelled units: no correction"
        missing = _nan_interval(n_lab, "none", confidence, note)
        return CorrectedDifference(figure, kind, "independent", judge_iv, missing, missing, None, None, None, n_lab,
                                   n_unl, note)
    fits = [ppi_mean(h[lab], j[lab], j[judged & ~lab] if w is None else j[judged], w=w, confidence=confidence)
            for (j, h, judged, lab), w in zip(parts, weights, strict=True)]
    labels = [classical_mean(h[lab], w=w, confidence=confidence).interval("labels")
              for (_, h, _, lab), w in zip(parts, weights, strict=True)]
    corrected = _difference_interval(fits[0].interval("PPI++"), fits[1].interval("PPI++"),
                                     _method("independent runs", fits[0]) if fits[0].df is not None
                                     else _method("independent runs", fits[1]))
    return CorrectedDifference(figure, kind, "independent", judge_iv, corrected,
                               _difference_interval(*labels, "normal (CLT), labelled units only"), None,
                               float(fits[0].lam), float(fits[1].lam), n_lab, n_unl)


def corrected_differences(judge_a: pd.DataFrame, judge_b: pd.DataFrame, human_a: pd.DataFrame,
                          human_b: pd.DataFrame, *, design: str = "paired", pair_by: str = PAIR_BY,
                          figures: Sequence[str] = DIFFERENCE_FIGURES, confidence: float = CONFIDENCE,
                          weights_a: pd.Series | None = None, weights_b: pd.Series | None = None,
                          same_pack: bool | None = None) -> pd.DataFrame:
    """The corrected difference B - A of each figure (one row per figure, :meth:`CorrectedDifference.row`).

    ``judge_a``/``judge_b``: each run's judged units, one row per segment
    (:func:`axon_eval.stats.intervals.headline_segments`); ``human_a``/``human_b``: the human values of
    each run's labelled segments (``segment_id``, ``score``, ``band``;
    :func:`axon_eval.stats.estimates.human_values`). ``design``: ``"paired"`` (units paired on
    ``pair_by``, unique within each run) or ``"independent"``. ``confidence``: two-sided level.
    ``weights_a``/``weights_b``: the labelled segments' design weights ``1/pi`` by ``segment_id`` (module
    docstring; ``None``: a simple random sample). ``same_pack``: where the labels of a paired design came
    from when both runs carry weights: ``True`` one pack drawn on the pairs (a pair's weight is the weight
    its sides share), ``False`` two packs drawn independently (the product ``1/(pi_A pi_B)``). It is
    required then (a ``ValueError`` otherwise): equal weights on both sides do not show that the labels
    came from one draw, since two independent packs of the same design carry equal weights too.
    ``attrs["notes"]`` says what was left out.
    """
    if design not in DESIGNS:
        raise ValueError(f"design must be one of {DESIGNS}, got {design!r}")
    z_value(confidence)
    unknown = [f for f in figures if f not in DIFFERENCE_FIGURES]
    if unknown:
        raise ValueError(f"unknown figure(s) {unknown}; expected some of {list(DIFFERENCE_FIGURES)}")
    notes: list[str] = []
    if design == "paired":
        a, b, only_a, only_b = pair_units(judge_a, judge_b, pair_by)
        if only_a or only_b:
            notes.append(f"{len(only_a)} unit(s) only in A and {len(only_b)} only in B are not paired and left out")
        ha, hb = _human_on(a, human_a), _human_on(b, human_b)
    else:
        a, b = judge_a.reset_index(drop=True), judge_b.reset_index(drop=True)
        ha, hb = _human_on(a, human_a), _human_on(b, human_b)
    wa = None if weights_a is None else a["segment_id"].astype(str).map(weights_a).to_numpy(dtype=np.float64)
    wb = None if weights_b is None else b["segment_id"].astype(str).map(weights_b).to_numpy(dtype=np.float64)
    pair_w = None
    if design == "paired" and (wa is not None or wb is not None):
        if wa is None or wb is None:
            pair_w = wa if wb is None else wb
        elif same_pack is None:
            raise ValueError("both runs' labels carry design weights: say whether they come from one labelling pack "
                             "drawn on the pairs (same_pack=True) or from two packs drawn independently "
                             "(same_pack=False); equal weights do not tell")
        elif same_pack:
            both = np.isfinite(wa) & np.isfinite(wb)
            if not np.allclose(wa[both], wb[both]):
                bad = int(np.flatnonzero(both & ~np.isclose(wa, wb))[0])
                raise ValueError(f"one labelling pack gives a pair one weight, but pair {a['segment_id'].iloc[bad]!r} "
                                 f"has {wa[bad]:g} in A and {wb[bad]:g} in B")
            pair_w = np.where(np.isfinite(wa), wa, wb)
        else:
            pair_w = wa * wb
            notes.append("the two runs' labels come from different packs: a pair's weight is the product of its "
                         "two sides' weights (each side drawn independently)")
    rows = []
    for figure in figures:
        kind = "mean" if figure == "mean score" else "share"
        args = dict(figure=figure, kind=kind, confidence=confidence)
        if design == "paired":
            rec = paired_difference(figure_values(a, figure), figure_values(b, figure), figure_values(ha, figure),
                                    figure_values(hb, figure), weights=_usable(pair_w, ha, hb, figure, notes), **args)
        else:
            rec = independent_difference(figure_values(a, figure), figure_values(ha, figure),
                                         figure_values(b, figure), figure_values(hb, figure),
                                         weights_a=_usable(wa, ha, None, figure, notes),
                                         weights_b=_usable(wb, hb, None, figure, notes), **args)
        rows.append(rec.row())
    out = pd.DataFrame(rows)
    out.attrs["notes"] = list(dict.fromkeys(notes))
    out.attrs["design"] = design
    out.attrs["pair_by"] = pair_by
    return out


def _usable(w: np.ndarray | None, h1: pd.DataFrame, h2: pd.DataFrame | None, figure: str, notes: list[str]
            ) -> np.ndarray | None:
    """``w`` when every labelled unit of ``figure`` has a finite weight > 0, else ``None`` (a simple random
    sample), said in ``notes``."""
    if w is None:
        return None
    lab = np.isfinite(figure_values(h1, figure))
    if h2 is not None:
        lab &= np.isfinite(figure_values(h2, figure))
    ok = np.isfinite(w[lab]) & (w[lab] > 0)
    if ok.all():
        return np.where(np.isfinite(w) & (w > 0), w, 1.0)
    notes.append(f"{int((~ok).sum())} labelled unit(s) have no design weight: the labels are treated as a simple "
                 "random sample")
    return None


def format_differences(table: pd.DataFrame) -> list[str]:
    """One line per figure: the corrected difference B - A with its interval and the judge-only one
    beside it (points for the mean score, percentage points for shares), then what the interval covers."""
    def fmt(kind: str, x: float) -> str:
        if x is None or not math.isfinite(x):
            return "n/a"
        return f"{100 * x:+.1f} pp" if kind == "share" else f"{x:+.2f}"

    out = []
    for r in table.itertuples(index=False):
        pct = f"{r.confidence:.0%}"
        lam = (f"lambda {r.lam:.2f}" if r.lam is not None and math.isfinite(r.lam) else
               f"lambda {r.lam_a:.2f}/{r.lam_b:.2f}" if r.lam_a is not None and math.isfinite(r.lam_a) else "")
        corrected = (f"not informative ({r.n_labelled} labelled, fewer than {MIN_INFORMATIVE_LABELS})"
                     if math.isfinite(r.estimate) and r.n_labelled < MIN_INFORMATIVE_LABELS else
                     f"{fmt(r.kind, r.estimate)} ({pct} {fmt(r.kind, r.lo)} to {fmt(r.kind, r.hi)})"
                     if math.isfinite(r.estimate) else f"not computed ({r.note})")
        out.append(f"{r.figure} B - A, human-corrected ({r.design}, {r.n_labelled} labelled, {r.n_unlabelled} judged "
                   f"only{', ' + lam if lam else ''}): {corrected}; judge only {fmt(r.kind, r.judge_estimate)} "
                   f"({fmt(r.kind, r.judge_lo)} to {fmt(r.kind, r.judge_hi)})")
    out.append(DIFFERENCE_COVERS)
    return out
