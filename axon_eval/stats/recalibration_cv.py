"""Weight recalibration, the check: agreement of each fitting method on held-out folds.

(c) Cross-validated agreement (:func:`cross_validate`, :func:`cv_folds`)
-------------------------------------------------------------------------
``K`` stratified folds by labelled verdict, seeded (:func:`cv_folds`): within each verdict the segments
are permuted by ``numpy.random.default_rng(seed)`` and dealt to folds in turn, continuing the count across
verdicts so fold sizes differ by at most one. The SAME folds serve every method. For fold ``k`` each
method fits on the other folds; the held-out segments are scored by the scorer itself
(:func:`axon_eval.scoring.score_arrays`: renormalisation, caps, rounding, bands) under
``base.with_weights(w_hat)`` and Cohen's kappa (unweighted) of that band against the labelled verdict is
the fold's kappa (each fold's least-squares fit keeps the floor ``m`` of the whole data set; a fold's
weights that leave a held-out segment unscorable predict nothing there, with a note). The nominal rubric
(and any reference rubric, e.g. ``axon-v1-faithcap``) is scored on the same held-out folds without
fitting. Reported: the per-fold kappas, their mean (folds with an undefined kappa are left out and
counted), and the pooled kappa of all held-out predictions.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..rubric import BANDS, DIMENSIONS, Rubric
from ..scoring import UNSCORABLE_CODE, score_arrays, score_frame
from .agreement import cohens_kappa
from .recalibration_data import LabelledSegments, METHODS, MIN_OBSERVED_WEIGHT, unscorable_segments
from .recalibration_fits import fit_least_squares, fit_ordinal


# =============================================================================================
# (c) cross-validation
# =============================================================================================
def cv_folds(verdict: Sequence[str], n_folds: int = 5, seed: int = 0) -> np.ndarray:
    """Fold number (0..K-1) of each segment: stratified by verdict, seeded (module docstring, (c))."""
    v = np.asarray(list(verdict), dtype=object)
    if n_folds < 2:
        raise ValueError(f"n_folds must be at least 2, got {n_folds}")
    if n_folds > len(v):
        raise ValueError(f"n_folds = {n_folds} exceeds the {len(v)} labelled segments")
    rng = np.random.default_rng(seed)
    folds = np.empty(len(v), dtype=int)
    position = 0
    for band in BANDS:
        idx = np.flatnonzero(v == band)
        for i in rng.permutation(idx):
            folds[i] = position % n_folds
            position += 1
    return folds


def band_kappa(data: LabelledSegments, rubric: Rubric) -> float:
    """Cohen's kappa of the scorer's band under ``rubric`` against the labelled verdict (all of ``data``).

    A rubric that leaves a segment unscorable gives it no band (never poor): refused with a
    ``ValueError`` naming the segments and the scorer's reason."""
    _raw, _score, code = score_arrays(data.subscores, data.facts, rubric)
    bad = np.flatnonzero(code == UNSCORABLE_CODE)
    if len(bad):
        reason = score_frame(data.frame().iloc[bad[:1]], rubric)["unscorable_reason"].iloc[0]
        raise ValueError(f"band_kappa: rubric {rubric.label} leaves {len(bad)} segment(s) unscorable (first ids "
                         f"{[str(i) for i in data.segment_ids[bad[:5]]]}; {reason}); they have no band to compare")
    return cohens_kappa([BANDS[c] for c in code], list(data.verdict))


@dataclass(frozen=True)
class CrossValidation:
    """``per_fold``: one row per (method, fold): the fold's weights (fitted methods), ``n_test``, ``kappa``
    (NaN when undefined), ``note``. ``summary``: one row per method: ``kappa_mean`` over defined folds,
    ``kappa_sd``, ``n_defined``, ``kappa_pooled`` over all held-out predictions. ``folds``: each segment's
    fold (the same for every method). ``predictions``: held-out band of every segment under each method."""

    n_folds: int
    seed: int
    folds: np.ndarray
    per_fold: pd.DataFrame
    summary: pd.DataFrame
    predictions: pd.DataFrame


def cross_validate(data: LabelledSegments, base: Rubric | None = None, *, n_folds: int = 5, seed: int = 0,
                   references: Mapping[str, Rubric] | None = None, apply_caps: bool = True,
                   exclude_capped: bool = True) -> CrossValidation:
    """K-fold cross-validated kappa of nominal, least squares, ordinal (and unfitted references), same folds."""
    base = base or Rubric.default()
    folds = cv_folds(data.verdict, n_folds, seed)
    fixed = {"nominal": base, **dict(references or {})}
    names = ["nominal", *METHODS, *[k for k in fixed if k != "nominal"]]
    predicted = {m: np.full(data.n, None, dtype=object) for m in names}
    # every fold's least-squares fit keeps weight where the whole data set needs it to score every segment
    floor = MIN_OBSERVED_WEIGHT if np.isnan(data.subscores[:, 3]).any() else 0.0
    rows = []
    for k in range(n_folds):
        test = folds == k
        train, held = data.subset(np.flatnonzero(~test)), data.subset(np.flatnonzero(test))
        rubrics: dict[str, tuple[Rubric | None, dict[str, float] | None, str]] = {
            m: (r, None, "") for m, r in fixed.items()}
        lsq = fit_least_squares(train, base, apply_caps=apply_caps, min_observed_weight=floor)
        rubrics["least_squares"] = (base.with_weights(lsq.weights, normalise=True), lsq.weights,
                                    "" if lsq.converged else f"not converged: {lsq.message}")
        try:
            ordf = fit_ordinal(train, base, exclude_capped=exclude_capped)
            if ordf.weights is None:
                rubrics["ordinal"] = (None, None, "no positive coefficient: no weights")
            else:
                rubrics["ordinal"] = (base.with_weights(ordf.weights, normalise=True), ordf.weights,
                                      "separation suspected" if ordf.separation_suspected else "")
        except ValueError as exc:
            rubrics["ordinal"] = (None, None, str(exc))
        for m in names:
            rub, w, note = rubrics[m]
            kappa = float("nan")
            unscorable = unscorable_segments(held, rub.weights.as_dict()) if rub is not None else {}
            if unscorable:
                rub, note = None, (note + "; " if note else "") + (
                    f"weights leave {len(unscorable)} held-out segment(s) unscorable: no prediction")
            if rub is not None:
                _raw, _score, code = score_arrays(held.subscores, held.facts, rub)
                bands = [BANDS[c] for c in code]
                predicted[m][test] = bands
                kappa = cohens_kappa(bands, list(held.verdict))
                if math.isnan(kappa):
                    note = (note + "; " if note else "") + "kappa undefined on this fold"
            rows.append({"method": m, "fold": k, "n_test": int(test.sum()), "kappa": kappa, "note": note,
                         **{f"w_{d}": (w or (rub.weights.as_dict() if rub is not None else {})).get(d, np.nan)
                            for d in DIMENSIONS}})
    per_fold = pd.DataFrame(rows)
    summary_rows = []
    for m in names:
        kap = per_fold.loc[per_fold["method"] == m, "kappa"].to_numpy(dtype=float)
        defined = kap[~np.isnan(kap)]
        pred = predicted[m]
        ok = np.array([p is not None for p in pred])
        pooled = cohens_kappa(list(pred[ok]), list(data.verdict[ok])) if ok.any() else float("nan")
        summary_rows.append({"method": m, "kappa_mean": float(defined.mean()) if len(defined) else float("nan"),
                             "kappa_sd": float(defined.std(ddof=1)) if len(defined) > 1 else float("nan"),
                             "n_defined": int(len(defined)), "kappa_pooled": pooled,
                             "n_predicted": int(ok.sum())})
    summary = pd.DataFrame(summary_rows).set_index("method")
    predictions = pd.DataFrame({"segment_id": data.segment_ids, "fold": folds, "verdict": data.verdict,
                                **{m: predicted[m] for m in names}})
    return CrossValidation(n_folds, seed, folds, per_fold, summary, predictions)
