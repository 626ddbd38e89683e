"""Benchmark section ``fitted_judge``: the fitted offline judge (spec ``heuristic-fitted``, OPT-IN candidate).

``bench_fitted_judge()`` returns bench rows:

* the leave-one-domain-out table of :func:`axon_eval.stats.lodo.validate` on every labelled set of
  the repository: per domain and pooled, ROC AUC of P(good) and of the score, verdict kappa,
  expected calibration error of P(good) and the share of good-labelled segments judged good, each
  with its bootstrap interval, the share of equivalent rewrites judged good, and the rule judge
  (``heuristic-rules``, the default ``heuristic`` by another name) on the same folds beside;
* the goals (pooled AUC >= 0.80, no domain below 0.65, equivalent rewrites judged good >= 90%,
  ECE <= 0.08), each stated met or NOT MET. The judge is a candidate, not the default, so a shortfall
  is reported in the row's name and never fails ``make bench``;
* the ablation (each signal family dropped: change in pooled LODO AUC);
* IN-SAMPLE pooled figures, labelled so, for beside only;
* speed: segments/s of the fitted judge on distinct views with every cache cleared before each pass
  (best of three passes; target >= 500 segments/s, as for the rule judge), with the rule judge's rate
  on the same views measured moments apart and the ratio of the two.

The labels are CONSTRUCTED from seeded defects, not human judgements (see :mod:`axon_eval.labels`).
"""

from __future__ import annotations

import gc
import time
from typing import Any

from ..evidence import load_turns
from ..judges.heuristic import clear_caches
from ..judges.heuristic.fitted import FittedHeuristicJudge
from ..judges.heuristic.signals import statement_facts
from ..calibration.training import labelled_sets, training_frame
from ..rubric import Rubric
from ..stats.lodo import validate
from ..view import build_views
from .heuristic import heuristic_throughput
from .table import BenchRow, row

SECTION = "fitted_judge"
THROUGHPUT_GOAL = 500.0


def _r(value: Any, digits: int = 3) -> float:
    return round(float(value), digits)


def _r_or_none(value: Any, digits: int = 3) -> float | None:
    """:func:`_r`, or ``None`` for an undefined figure (NaN: a domain with no equivalent rewrites)."""
    v = float(value)
    return None if v != v else round(v, digits)


def fitted_throughput(views: list[Any], passes: int = 3) -> tuple[float, int]:
    """Segments/s of the fitted judge on ``views`` with cold caches (best of ``passes``)."""
    judge = FittedHeuristicJudge()
    best = float("inf")
    for _ in range(max(1, passes)):
        clear_caches()
        statement_facts.cache_clear()
        gc.collect()
        t0 = time.perf_counter()
        records = [judge.judge(v) for v in views]
        best = min(best, time.perf_counter() - t0)
        errors = [r for r in records if r.verdict is None]
        if errors:
            raise RuntimeError(f"{len(errors)} fitted judgements failed, e.g. {errors[0].error}")
    return len(views) / best, len(views)


def bench_fitted_judge(n_boot: int = 500, passes: int = 3) -> list[BenchRow]:
    """The ``fitted_judge`` section of ``make bench`` (see the module docstring)."""
    sets = labelled_sets()
    frame = training_frame(sets)
    report = validate(frame, n_boot=n_boot, seed=0)
    judge_id = FittedHeuristicJudge().judge_id
    rows: list[BenchRow] = []
    for _, r in report.table.iterrows():
        label = f"LODO {r['domain']}"
        for key, title in (("auc_p_good", "ROC AUC of P(good)"), ("auc_score", "ROC AUC of the score"),
                           ("kappa", "verdict kappa"), ("ece", "ECE of P(good)"),
                           ("good_kept", "good-labelled judged good"),
                           ("equivalent_good", "equivalent rewrites judged good")):
            if r[key] != r[key]:  # NaN: a domain with no equivalent rewrites
                continue
            rows.append(row(SECTION, f"{label}: {title}", _r(r[key]), "", "", None, n=int(r["n"]),
                            low=_r(r[f"{key}_low"]), high=_r(r[f"{key}_high"]), judge_id=judge_id))
        rows.append(row(SECTION, f"{label}: rule judge heuristic-rules beside (AUC score / kappa)",
                        _r(r["rule_auc_score"]), "AUC", "", None, kappa=_r(r["rule_kappa"]),
                        good_kept=_r_or_none(r["rule_good_kept"]),
                        equivalent_good=_r_or_none(r["rule_equivalent_good"])))
    for name, g in report.goals.items():
        where = f" ({g['domain']})" if g.get("domain") else ""
        rows.append(row(SECTION, f"goal {name}{where}: {'met' if g['met'] else 'NOT MET'} (candidate: reported, never fails)",
                        _r(g["value"]), "", g["goal"], None, met=g["met"]))
    for _, r in report.ablation.iterrows():
        rows.append(row(SECTION, f"ablation: without {r['family']} (change in pooled LODO AUC of P(good))",
                        _r(r["delta_auc_p_good"]), "AUC", "", None, auc=_r(r["auc_p_good"]), signals=int(r["signals"])))
    rows.append(row(SECTION, "families dropped (negative out-of-domain contribution): "
                    + (", ".join(report.dropped) or "none"), len(report.dropped), "families"))
    pooled_in = report.in_sample[report.in_sample["domain"] == "pooled"].iloc[0]
    rows.append(row(SECTION, "IN-SAMPLE pooled ROC AUC of P(good) (beside only, not a validation figure)",
                    _r(pooled_in["auc_p_good"]), "AUC"))
    seen: set[str] = set()
    views = []
    for s in sets:
        turns, _ = load_turns(s.turns)
        for v in build_views(turns, Rubric.default()):
            if v.sha256 not in seen:
                seen.add(v.sha256)
                views.append(v)
    rate, n = fitted_throughput(views, passes)
    rule_rate = heuristic_throughput(views=views, passes=passes)[0]
    rows.append(row(SECTION, f"throughput, cold caches, {n} distinct views (best of {passes})", round(rate, 1),
                    "segments/s", f">= {THROUGHPUT_GOAL:g} ({'met' if rate >= THROUGHPUT_GOAL else 'NOT MET'}; "
                    "the default judge's goal, reported for this opt-in candidate)", None,
                    rule_judge_rate=round(rule_rate, 1), ratio_to_rule_judge=round(rate / rule_rate, 3)))
    return rows
