"""Judge panel design, the decision: the cost-agreement frontier, the recommendation and escalation.

The frontier and the recommendation
    A panel is Pareto-optimal when no other panel costs no more and agrees at least as well (band kappa
    lower bound), one of the two strictly. The recommendation is the cheapest panel whose band kappa lower
    bound reaches ``target`` (:data:`TARGET_KAPPA`), or with ``budget`` the best one costing at most the
    budget; with the runner-up and why it lost.

Escalation ("trust or escalate")
    A segment goes to a person when the panel's votes disagree by at least ``t`` points on some
    dimension (range over the judged votes, as the ensemble's ``disagree_at``) or their verdicts differ.
    For ``t`` over :data:`ESCALATION_GRID`: the share escalated and the agreement on what is left (the
    person's grade is not counted), and per panel the smallest share that reaches the target.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from .panel_members import DEFAULT_METRIC, TARGET_KAPPA
from .panel_records import panel_id, PanelResult, Recommendation


# =============================================================================================
# Frontier, recommendation, escalation
# =============================================================================================
def pareto_optimal(cost: Sequence[float] | np.ndarray, agreement: Sequence[float] | np.ndarray) -> np.ndarray:
    """Boolean mask: no other point has ``cost <=`` and ``agreement >=`` with one of them strict (lower
    cost is better, higher agreement is better). Points with a NaN coordinate are never optimal and never
    dominate. Equal points are all optimal."""
    c, a = np.asarray(cost, dtype=np.float64), np.asarray(agreement, dtype=np.float64)
    ok = np.isfinite(c) & np.isfinite(a)
    out = np.zeros(len(c), dtype=bool)
    ci, ai = c[ok], a[ok]
    if not len(ci):
        return out
    order = np.lexsort((-ai, ci))  # cost ascending, then agreement descending
    cs, as_ = ci[order], ai[order]
    # best agreement among points strictly cheaper, and among points of the same cost
    best_before = np.full(len(cs), -np.inf)
    running = -np.inf
    i = 0
    while i < len(cs):
        j = i
        while j < len(cs) and cs[j] == cs[i]:
            j += 1
        best_before[i:j] = running
        running = max(running, as_[i:j].max())
        i = j
    group_max = pd.Series(as_).groupby(cs).transform("max").to_numpy()
    optimal_sorted = (as_ > best_before) & (as_ == group_max)
    idx = np.flatnonzero(ok)[order]
    out[idx] = optimal_sorted
    return out


def _fmt(x: float, digits: int = 2) -> str:
    return "-" if x is None or not math.isfinite(float(x)) else f"{float(x):.{digits}f}"


def _usd(x: float) -> str:
    if x is None or not math.isfinite(float(x)):
        return "unknown cost"
    x = float(x)
    return f"${x:.0f}" if x >= 100 else f"${x:.2f}" if x >= 0.1 or x == 0 else f"${x:.2g}"


def recommend(panels: pd.DataFrame, *, target: float = TARGET_KAPPA, budget: float | None = None,
              metric: str = DEFAULT_METRIC) -> Recommendation:
    """The cheapest panel whose ``metric`` reaches ``target``, or with ``budget`` (USD per 1,000 turns) the
    best ``metric`` within it; with the runner-up and why it lost (see :class:`Recommendation`).
    Panels with an unknown cost or metric are not candidates."""
    if metric not in panels.columns:
        raise ValueError(f"unknown metric {metric!r}; expected a column of the panels table, e.g. {DEFAULT_METRIC}")
    p = panels[np.isfinite(panels["cost_per_1k_turns"].astype(float)) & np.isfinite(panels[metric].astype(float))]
    label = f"{metric} "
    if budget is None:
        qual = p[p[metric] >= target].sort_values([ "cost_per_1k_turns", metric, "n_votes", "panel_id"],
                                                  ascending=[True, False, True, True])
        if qual.empty:
            best = p.sort_values([metric, "cost_per_1k_turns", "panel_id"], ascending=[False, True, True])
            runner = PanelResult.from_row(best.iloc[0].to_dict()) if len(best) else None
            reason = (f"no panel reaches {label}>= {target:g}" +
                      (f"; the best is {runner.panel_id} with {_fmt(getattr(runner, metric))} at "
                       f"{_usd(runner.cost_per_1k_turns)} per 1,000 turns" if runner else "") + ".")
            return Recommendation("target", metric, target, None, None, runner, reason, "", {})
        chosen = PanelResult.from_row(qual.iloc[0].to_dict())
        reason = (f"{chosen.panel_id} is the cheapest panel reaching {label}>= {target:g}: "
                  f"{_fmt(getattr(chosen, metric))} at {_usd(chosen.cost_per_1k_turns)} per 1,000 turns.")
        if len(qual) > 1:
            runner = PanelResult.from_row(qual.iloc[1].to_dict())
            if runner.cost_per_1k_turns > chosen.cost_per_1k_turns:
                why = (f"it also reaches the target ({_fmt(getattr(runner, metric))}) but costs "
                       f"{_usd(runner.cost_per_1k_turns - chosen.cost_per_1k_turns)} more per 1,000 turns")
            elif getattr(runner, metric) < getattr(chosen, metric):
                why = f"same cost, lower {metric} ({_fmt(getattr(runner, metric))})"
            else:
                why = f"same cost and {metric}, more votes or later in order ({runner.n_votes} votes)"
        else:
            rest = p[p["panel_id"] != chosen.panel_id].sort_values([metric, "cost_per_1k_turns"], ascending=[False, True])
            runner = PanelResult.from_row(rest.iloc[0].to_dict()) if len(rest) else None
            why = (f"its {metric} {_fmt(getattr(runner, metric))} misses the target {target:g}" if runner else "")
        runner_reason = f"Runner-up {runner.panel_id}: {why}." if runner else ""
        return Recommendation("target", metric, target, None, chosen, runner, reason, runner_reason, {})
    within = p[p["cost_per_1k_turns"] <= budget].sort_values([metric, "cost_per_1k_turns", "n_votes", "panel_id"],
                                                             ascending=[False, True, True, True])
    if within.empty:
        cheapest = p.sort_values(["cost_per_1k_turns", metric], ascending=[True, False])
        runner = PanelResult.from_row(cheapest.iloc[0].to_dict()) if len(cheapest) else None
        reason = (f"no panel costs at most {_usd(budget)} per 1,000 turns" +
                  (f"; the cheapest is {runner.panel_id} at {_usd(runner.cost_per_1k_turns)}" if runner else "") + ".")
        return Recommendation("budget", metric, target, budget, None, runner, reason, "", {})
    chosen = PanelResult.from_row(within.iloc[0].to_dict())
    reaches = "reaches" if getattr(chosen, metric) >= target else "does not reach"
    reason = (f"{chosen.panel_id} has the best {metric} within {_usd(budget)} per 1,000 turns: "
              f"{_fmt(getattr(chosen, metric))} at {_usd(chosen.cost_per_1k_turns)}; it {reaches} the target {target:g}.")
    runner = PanelResult.from_row(within.iloc[1].to_dict()) if len(within) > 1 else None
    runner_reason = ""
    if runner is not None:
        if getattr(runner, metric) < getattr(chosen, metric):
            why = f"lower {metric} ({_fmt(getattr(runner, metric))} vs {_fmt(getattr(chosen, metric))})"
        elif runner.cost_per_1k_turns > chosen.cost_per_1k_turns:
            why = f"same {metric}, costs {_usd(runner.cost_per_1k_turns - chosen.cost_per_1k_turns)} more per 1,000 turns"
        else:
            why = f"same {metric} and cost, more votes or later in order ({runner.n_votes} votes)"
        runner_reason = f"Runner-up {runner.panel_id}: {why}."
    return Recommendation("budget", metric, target, budget, chosen, runner, reason, runner_reason, {})


def trust_or_escalate(escalation: pd.DataFrame, panels: pd.DataFrame, *, target: float = TARGET_KAPPA) -> pd.DataFrame:
    """Per panel, the smallest share of segments to escalate to a person so that the band kappa lower bound
    on what is left reaches ``target``: ``panel_id``, ``reached`` (bool), ``share_escalated`` (0 when the
    panel reaches it alone), ``t`` (the threshold; NaN alone; ``inf`` = verdict differences only),
    ``rule``, ``band_kappa_lo`` on what is left, ``n_left``, ``cost_per_1k_turns``. Ties in share go to
    the larger ``t``. Sorted: reached first, then by share, then cost."""
    rows = []
    esc = escalation.groupby("panel_id", sort=False)
    groups = dict(iter(esc)) if len(escalation) else {}
    for r in panels.itertuples(index=False):
        if r.band_kappa_lo >= target:
            rows.append({"panel_id": r.panel_id, "reached": True, "share_escalated": 0.0, "t": math.nan,
                         "rule": "no escalation", "band_kappa_lo": r.band_kappa_lo, "n_left": r.n,
                         "cost_per_1k_turns": r.cost_per_1k_turns})
            continue
        g = groups.get(r.panel_id)
        hit = g[g["band_kappa_lo"] >= target] if g is not None else None
        if hit is None or hit.empty:
            rows.append({"panel_id": r.panel_id, "reached": False, "share_escalated": math.nan, "t": math.nan,
                         "rule": "no threshold of the grid reaches the target", "band_kappa_lo": math.nan,
                         "n_left": 0, "cost_per_1k_turns": r.cost_per_1k_turns})
            continue
        best = hit.sort_values(["share_escalated", "t"], ascending=[True, False]).iloc[0]
        rows.append({"panel_id": r.panel_id, "reached": True, "share_escalated": float(best["share_escalated"]),
                     "t": float(best["t"]), "rule": best["rule"], "band_kappa_lo": float(best["band_kappa_lo"]),
                     "n_left": int(best["n_left"]), "cost_per_1k_turns": r.cost_per_1k_turns})
    out = pd.DataFrame(rows, columns=["panel_id", "reached", "share_escalated", "t", "rule", "band_kappa_lo",
                                      "n_left", "cost_per_1k_turns"])
    return out.sort_values(["reached", "share_escalated", "cost_per_1k_turns"],
                           ascending=[False, True, True], na_position="last").reset_index(drop=True)
