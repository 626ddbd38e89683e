"""Leave-one-domain-out validation of the fitted offline judge (pure functions over DataFrames, no I/O).

The headline figures of a fitted judge are out of domain: for each domain, the model is fitted on
every other domain and scores that one (:func:`lodo_predictions`); the out-of-fold predictions are
then summarised per domain and pooled over all domains (:func:`lodo_figures`):

``auc_score`` / ``auc_p_good``
    ROC AUC of the rubric's score and of P(good) against the label good (verdict good), by the rank
    formula ``(R1 - n1 (n1 + 1) / 2) / (n1 n0)`` with average ranks for ties (:func:`roc_auc`; the
    Mann-Whitney statistic, the same value as ``sklearn.metrics.roc_auc_score``).
``kappa``
    Cohen's kappa of the judge's verdict against the labelled verdict over good/partial/poor
    (:func:`axon_eval.stats.agreement.cohens_kappa`).
``ece``
    expected calibration error of P(good): with ``B`` equal-width bins of P(good),
    ``sum_b (n_b / n) |mean(P(good) in b) - share good in b|`` (:func:`expected_calibration_error`).
``good_kept``
    share of the segments labelled good that the verdict calls good (the controls and correct
    answers, including equivalent formulations, must not be flagged).
``equivalent_good``
    share of the equivalent rewrites (segments whose defect class starts with
    :data:`EQUIVALENT_PREFIX`: another join order, alias, CTE for a subquery, ``COUNT(*)`` for
    ``COUNT(id)``, another valid formulation, each labelled correct by executing it against the gold
    result) that the verdict calls good; NaN where a domain has none.

Each figure carries a seeded percentile bootstrap interval (segments resampled with replacement).
The rule judge's figures (``rule_auc_score``, ``rule_kappa``, ``rule_good_kept``,
``rule_equivalent_good``; the judge ``heuristic-rules``) are computed on the same folds beside them; it is
not fitted, so its figures on a fold are its figures on that domain. It gives no probability, so it has
no AUC of P(good) and no calibration error.
In-sample figures (:func:`in_sample_predictions`) are for printing beside, labelled so, never instead.
:func:`ablation` refits without each signal family and reports the change in pooled LODO AUC.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import rankdata

from ..judges.heuristic.fitted import fit_model, predict_scores
from ..judges.heuristic.signals import SIGNAL_NAMES, family_of
from ..rubric import BANDS
from .agreement import cohens_kappa

#: Goals of the fitted judge out of domain, on the pooled AUC of P(good), the lowest domain's AUC of
#: P(good), the share of equivalent rewrites judged good and the pooled expected calibration error.
GOALS = {"pooled_auc": 0.80, "domain_auc_min": 0.65, "equivalent_good": 0.90, "ece": 0.08}
#: Defect classes starting with this are equivalent rewrites of the gold SQL, labelled correct.
EQUIVALENT_PREFIX = "equivalent_"


def roc_auc(scores: Sequence[float], labels: Sequence[bool]) -> float:
    """ROC AUC of ``scores`` (higher = more likely positive) for ``labels``; NaN scores are left out.

    Returns NaN when the kept rows hold no positive or no negative (the AUC is undefined).
    """
    s = np.asarray(scores, dtype=float)
    y = np.asarray(labels, dtype=bool)
    keep = ~np.isnan(s)
    s, y = s[keep], y[keep]
    n1, n0 = int(y.sum()), int((~y).sum())
    if n1 == 0 or n0 == 0:
        return float("nan")
    ranks = rankdata(s)
    return float((ranks[y].sum() - n1 * (n1 + 1) / 2) / (n1 * n0))


def expected_calibration_error(p: Sequence[float], labels: Sequence[bool], bins: int = 10) -> float:
    """Expected calibration error of probabilities ``p`` for ``labels`` over ``bins`` equal-width bins."""
    p_arr = np.clip(np.asarray(p, dtype=float), 0.0, 1.0)
    y = np.asarray(labels, dtype=float)
    if len(p_arr) == 0:
        return float("nan")
    which = np.minimum((p_arr * bins).astype(int), bins - 1)
    total = 0.0
    for b in range(bins):
        m = which == b
        if m.any():
            total += m.sum() / len(p_arr) * abs(p_arr[m].mean() - y[m].mean())
    return float(total)


def reliability_curve(p: Sequence[float], labels: Sequence[bool], bins: int = 10) -> pd.DataFrame:
    """Per bin of P(good): its range, count, mean probability and observed share good."""
    p_arr = np.clip(np.asarray(p, dtype=float), 0.0, 1.0)
    y = np.asarray(labels, dtype=float)
    which = np.minimum((p_arr * bins).astype(int), bins - 1)
    rows = []
    for b in range(bins):
        m = which == b
        rows.append({"low": b / bins, "high": (b + 1) / bins, "n": int(m.sum()),
                     "mean_p": float(p_arr[m].mean()) if m.any() else float("nan"),
                     "share_good": float(y[m].mean()) if m.any() else float("nan")})
    return pd.DataFrame(rows)


def _kappa(a: Sequence[str], b: Sequence[str]) -> float:
    return cohens_kappa(list(a), list(b), BANDS) if len(a) else float("nan")


def _good_kept(verdict: Sequence[str], good: Sequence[bool]) -> float:
    v = np.asarray(verdict, dtype=object)
    g = np.asarray(good, dtype=bool)
    return float((v[g] == "good").mean()) if g.any() else float("nan")


def is_equivalent_rewrite(defects: Sequence[Any]) -> np.ndarray:
    """Which segments are equivalent rewrites: defect class starting with :data:`EQUIVALENT_PREFIX`."""
    return np.array([isinstance(d, str) and d.startswith(EQUIVALENT_PREFIX) for d in defects], dtype=bool)


def bootstrap_interval(statistic: Callable[[np.ndarray], float], n: int, *, n_boot: int = 1000, seed: int = 0,
                       level: float = 0.95, batched: Callable[[np.ndarray], np.ndarray] | None = None
                       ) -> tuple[float, float]:
    """Percentile interval of ``statistic(index)`` over ``n_boot`` resamples of ``range(n)`` (seeded).

    ``batched``, when given, computes the same statistic for every resample at once from the
    ``(n_boot, n)`` index matrix (the same draws: ``rng.integers(0, n, (n_boot, n))`` is the stream of
    ``n_boot`` successive draws of ``n``); resamples where the statistic is undefined (NaN) are left out;
    ``(nan, nan)`` when all are.
    """
    if n == 0 or n_boot <= 0:
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    if batched is not None:
        values = np.asarray(batched(rng.integers(0, n, (n_boot, n))), dtype=float)
    else:
        values = np.array([statistic(rng.integers(0, n, n)) for _ in range(n_boot)], dtype=float)
    values = values[~np.isnan(values)]
    if not len(values):
        return float("nan"), float("nan")
    tail = (1 - level) / 2
    return float(np.quantile(values, tail)), float(np.quantile(values, 1 - tail))


# -- the same figures for every resample at once (rows of an index matrix) -------------------------------
def _auc_rows(scores: np.ndarray, labels: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """:func:`roc_auc` of every row of ``idx`` (Mann-Whitney from mid-ranks, NaN scores left out)."""
    if np.isnan(scores).any():  # rare (an unscorable segment): the per-resample path leaves them out
        return np.array([roc_auc(scores[i], labels[i]) for i in idx])
    s, y = scores[idx], labels[idx]
    ranks = rankdata(s, axis=1)
    n1 = y.sum(axis=1).astype(float)
    n0 = y.shape[1] - n1
    with np.errstate(divide="ignore", invalid="ignore"):
        auc = ((ranks * y).sum(axis=1) - n1 * (n1 + 1) / 2) / (n1 * n0)
    return np.where((n1 > 0) & (n0 > 0), auc, np.nan)


def _codes(values: np.ndarray) -> np.ndarray:
    index = {b: i for i, b in enumerate(BANDS)}
    return np.array([index.get(v, -1) for v in values], dtype=int)


def _kappa_rows(a_values: np.ndarray, b_values: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """Unweighted Cohen's kappa (:func:`~axon_eval.stats.agreement.cohens_kappa`) of every row of ``idx``:
    ``1 - (1 - p_o) / (1 - p_e)``, NaN where the chance disagreement ``1 - p_e`` is 0."""
    a, b = _codes(a_values), _codes(b_values)
    if (a < 0).any() or (b < 0).any():  # a value outside the bands: the per-resample path raises
        return np.array([_kappa(a_values[i], b_values[i]) for i in idx])
    k, (rows, n) = len(BANDS), idx.shape
    cell = (np.arange(rows)[:, None] * k * k + a[idx] * k + b[idx]).ravel()
    table = np.bincount(cell, minlength=rows * k * k).reshape(rows, k, k) / n
    observed = 1.0 - np.trace(table, axis1=1, axis2=2)
    expected = 1.0 - (table.sum(axis=2) * table.sum(axis=1)).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(expected > 1e-15, 1.0 - observed / expected, np.nan)


def _ece_rows(p: np.ndarray, labels: np.ndarray, idx: np.ndarray, bins: int = 10) -> np.ndarray:
    """:func:`expected_calibration_error` of every row of ``idx``."""
    q = np.clip(p, 0.0, 1.0)
    which = np.minimum((q * bins).astype(int), bins - 1)
    rows, n = idx.shape
    cell = (np.arange(rows)[:, None] * bins + which[idx]).ravel()
    count = np.bincount(cell, minlength=rows * bins).reshape(rows, bins)
    sum_p = np.bincount(cell, weights=q[idx].ravel(), minlength=rows * bins).reshape(rows, bins)
    sum_y = np.bincount(cell, weights=labels[idx].ravel().astype(float), minlength=rows * bins).reshape(rows, bins)
    with np.errstate(divide="ignore", invalid="ignore"):
        gap = np.where(count > 0, np.abs(sum_p - sum_y) / count, 0.0)
    return (count / n * gap).sum(axis=1)


def _kept_rows(verdict_good: np.ndarray, among: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """:func:`_good_kept` of every row of ``idx``: the share of ``among`` whose verdict is good."""
    m = among[idx]
    total = m.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(total > 0, (m & verdict_good[idx]).sum(axis=1) / total, np.nan)


def fit_fold(frame: pd.DataFrame, signals: Sequence[str] | None = None) -> Any:
    """:func:`~axon_eval.judges.heuristic.fitted.fit_model` for a validation fold: the same model, without
    the hash of its training data (a fold's model is scored, never saved)."""
    return fit_model(frame, None if signals is None else tuple(signals), hash_data=False)


def lodo_predictions(frame: pd.DataFrame, signals: Sequence[str] | None = None, *,
                     fit: Callable[..., Any] = fit_fold, domain: str = "domain") -> pd.DataFrame:
    """Out-of-fold predictions: each domain scored by a model fitted on every other domain.

    ``frame`` is a labelled signal frame (:func:`axon_eval.calibration.training.training_frame`).
    Returns one row per segment: ``domain``, ``segment_id``, ``good``, ``label_verdict``, ``p_good``,
    ``score``, ``verdict``, and the rule judge's ``rule_score`` and ``rule_verdict`` when present.
    """
    parts = []
    for name in sorted(frame[domain].unique()):
        test = frame[frame[domain] == name]
        model = fit(frame[frame[domain] != name], signals)
        parts.append(_predictions(model, test, domain))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def in_sample_predictions(frame: pd.DataFrame, signals: Sequence[str] | None = None, *,
                          fit: Callable[..., Any] = fit_fold, domain: str = "domain") -> pd.DataFrame:
    """Predictions of one model fitted on all of ``frame`` for all of ``frame`` (IN-SAMPLE, for beside only)."""
    return _predictions(fit(frame, signals), frame, domain)


def _predictions(model: Any, test: pd.DataFrame, domain: str) -> pd.DataFrame:
    pred = predict_scores(model, test)
    out = pd.DataFrame({"domain": test[domain].to_numpy(), "segment_id": test["segment_id"].to_numpy(),
                        "good": test["good"].to_numpy(dtype=bool), "label_verdict": test["verdict"].to_numpy(),
                        "p_good": pred["p_good"].to_numpy(dtype=float), "score": pred["score"].to_numpy(dtype=float),
                        "verdict": pred["verdict"].to_numpy()})
    for col in ("rule_score", "rule_verdict", "defect"):
        if col in test.columns:
            out[col] = test[col].to_numpy()
    return out


def _figures(pred: pd.DataFrame, n_boot: int, seed: int) -> dict[str, Any]:
    good = pred["good"].to_numpy(dtype=bool)
    p = pred["p_good"].to_numpy(dtype=float)
    score = pred["score"].to_numpy(dtype=float)
    verdict = pred["verdict"].to_numpy(dtype=object)
    label = pred["label_verdict"].to_numpy(dtype=object)
    v_good = verdict == "good"
    rewrite = is_equivalent_rewrite(pred["defect"]) if "defect" in pred.columns else np.zeros(len(pred), dtype=bool)
    # each figure: (the statistic of one index vector, the same for every row of an index matrix)
    stats: dict[str, tuple[Callable[[np.ndarray], float], Callable[[np.ndarray], np.ndarray]]] = {
        "auc_score": (lambda i: roc_auc(score[i], good[i]), lambda m: _auc_rows(score, good, m)),
        "auc_p_good": (lambda i: roc_auc(p[i], good[i]), lambda m: _auc_rows(p, good, m)),
        "kappa": (lambda i: _kappa(verdict[i], label[i]), lambda m: _kappa_rows(verdict, label, m)),
        "ece": (lambda i: expected_calibration_error(p[i], good[i]), lambda m: _ece_rows(p, good, m)),
        "good_kept": (lambda i: _good_kept(verdict[i], good[i]), lambda m: _kept_rows(v_good, good, m)),
        "equivalent_good": (lambda i: _good_kept(verdict[i], rewrite[i]), lambda m: _kept_rows(v_good, rewrite, m)),
    }
    if "rule_score" in pred.columns:
        rule_score = pd.to_numeric(pred["rule_score"], errors="coerce").to_numpy(dtype=float)
        rule_verdict = pred["rule_verdict"].to_numpy(dtype=object)
        r_good = rule_verdict == "good"
        stats["rule_auc_score"] = (lambda i: roc_auc(rule_score[i], good[i]),
                                   lambda m: _auc_rows(rule_score, good, m))
        stats["rule_kappa"] = (lambda i: _kappa(rule_verdict[i], label[i]), lambda m: _kappa_rows(rule_verdict, label, m))
        stats["rule_good_kept"] = (lambda i: _good_kept(rule_verdict[i], good[i]),
                                   lambda m: _kept_rows(r_good, good, m))
        stats["rule_equivalent_good"] = (lambda i: _good_kept(rule_verdict[i], rewrite[i]),
                                         lambda m: _kept_rows(r_good, rewrite, m))
    n = len(pred)
    every = np.arange(n)
    out: dict[str, Any] = {"n": n, "n_good": int(good.sum()), "n_equivalent": int(rewrite.sum())}
    for k, (name, (fn, batched)) in enumerate(stats.items()):
        out[name] = fn(every)
        lo, hi = bootstrap_interval(fn, n, n_boot=n_boot, seed=seed + k, batched=batched)
        out[f"{name}_low"], out[f"{name}_high"] = lo, hi
    return out


def lodo_figures(predictions: pd.DataFrame, *, n_boot: int = 1000, seed: int = 0) -> pd.DataFrame:
    """Per-domain and pooled figures of out-of-fold ``predictions`` (see the module docstring).

    One row per domain (sorted) and a last row ``domain == "pooled"``; each figure has ``_low`` and
    ``_high`` columns (bootstrap, ``n_boot`` resamples, seeded by ``seed``).
    """
    rows = []
    for name in sorted(predictions["domain"].unique()):
        rows.append({"domain": name, **_figures(predictions[predictions["domain"] == name].reset_index(drop=True),
                                                n_boot, seed)})
    rows.append({"domain": "pooled", **_figures(predictions.reset_index(drop=True), n_boot, seed)})
    return pd.DataFrame(rows)


def goals_met(table: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """Each goal of :data:`GOALS` against a :func:`lodo_figures` table: the figure and whether it is met
    (a figure that is NaN, such as the equivalent rewrites' share on data with none, is not met)."""
    pooled = table[table["domain"] == "pooled"].iloc[0]
    domains = table[table["domain"] != "pooled"]
    worst = domains.loc[domains["auc_p_good"].idxmin()] if len(domains) else None
    return {
        "pooled_auc": {"value": float(pooled["auc_p_good"]), "goal": f">= {GOALS['pooled_auc']}",
                       "met": bool(pooled["auc_p_good"] >= GOALS["pooled_auc"])},
        "domain_auc_min": {"value": float(worst["auc_p_good"]) if worst is not None else float("nan"),
                           "domain": str(worst["domain"]) if worst is not None else "",
                           "goal": f">= {GOALS['domain_auc_min']}",
                           "met": bool(worst is not None and worst["auc_p_good"] >= GOALS["domain_auc_min"])},
        "equivalent_good": {"value": float(pooled.get("equivalent_good", float("nan"))),
                            "n": int(pooled.get("n_equivalent", 0)), "goal": f">= {GOALS['equivalent_good']}",
                            "met": bool(pooled.get("equivalent_good", float("nan")) >= GOALS["equivalent_good"])},
        "ece": {"value": float(pooled["ece"]), "goal": f"<= {GOALS['ece']}", "met": bool(pooled["ece"] <= GOALS["ece"])},
    }


def ablation(frame: pd.DataFrame, signals: Sequence[str] | None = None, *, fit: Callable[..., Any] = fit_fold,
             domain: str = "domain") -> pd.DataFrame:
    """Pooled LODO AUC (of P(good) and of the score) with each signal family dropped.

    Returns one row for the full model (``family == "none"``) and one per family, with the AUCs and
    their change from the full model (``delta_auc_p_good``, ``delta_auc_score``; negative = the family
    helps out of domain).
    """
    names = list(signals) if signals is not None else list(SIGNAL_NAMES)
    families = list(dict.fromkeys(family_of(n) for n in names))

    def pooled(use: list[str]) -> tuple[float, float]:
        pred = lodo_predictions(frame, use, fit=fit, domain=domain)
        return roc_auc(pred["p_good"], pred["good"]), roc_auc(pred["score"], pred["good"])

    full_p, full_s = pooled(names)
    rows = [{"family": "none", "signals": len(names), "auc_p_good": full_p, "auc_score": full_s,
             "delta_auc_p_good": 0.0, "delta_auc_score": 0.0}]
    for fam in families:
        use = [n for n in names if family_of(n) != fam]
        p_auc, s_auc = pooled(use)
        rows.append({"family": fam, "signals": len(use), "auc_p_good": p_auc, "auc_score": s_auc,
                     "delta_auc_p_good": p_auc - full_p, "delta_auc_score": s_auc - full_s})
    return pd.DataFrame(rows)


#: Changes of pooled AUC smaller than this are read as no change (a family is dropped only above it).
ABLATION_TOLERANCE = 0.002


def harmful_families(table: pd.DataFrame, tolerance: float = ABLATION_TOLERANCE) -> list[str]:
    """The families of an :func:`ablation` table whose removal raises the pooled LODO AUC of P(good)
    by more than ``tolerance``: their out-of-domain contribution is negative, so they are dropped."""
    rows = table[(table["family"] != "none") & (table["delta_auc_p_good"] > tolerance)]
    return [str(f) for f in rows["family"]]


@dataclass(frozen=True)
class ValidationReport:
    """Everything :func:`validate` measured: the signals kept, the families dropped and the tables."""

    signals: tuple[str, ...]
    dropped: tuple[str, ...]
    table: pd.DataFrame
    in_sample: pd.DataFrame
    ablation: pd.DataFrame
    goals: dict[str, dict[str, Any]]
    reliability: pd.DataFrame
    predictions: pd.DataFrame


def validate(frame: pd.DataFrame, *, drop_harmful: bool = True, n_boot: int = 1000, seed: int = 0,
             fit: Callable[..., Any] = fit_fold) -> ValidationReport:
    """The fitted judge's validation on a labelled signal frame.

    1. :func:`ablation` over every signal; with ``drop_harmful`` the :func:`harmful_families` are
       dropped (the choice is made on the LODO table itself, so the figures that follow are slightly
       optimistic about that one choice).
    2. :func:`lodo_predictions` and :func:`lodo_figures` of the kept signals, the pooled
       :func:`reliability_curve` and :func:`goals_met`.
    3. The IN-SAMPLE figures of the same signals (one model fitted on everything), for beside only.
    """
    abl = ablation(frame, fit=fit)
    dropped = tuple(harmful_families(abl)) if drop_harmful else ()
    keep = tuple(n for n in SIGNAL_NAMES if family_of(n) not in dropped)
    pred = lodo_predictions(frame, keep, fit=fit)
    table = lodo_figures(pred, n_boot=n_boot, seed=seed)
    inside = lodo_figures(in_sample_predictions(frame, keep, fit=fit), n_boot=n_boot, seed=seed)
    return ValidationReport(keep, dropped, table, inside, abl, goals_met(table),
                            reliability_curve(pred["p_good"], pred["good"]), pred)
