"""What study 10 (judge panel design) reports: the ``study.json`` keys of study 10 built from a
:class:`~axon_eval.stats.panels.PanelStudy`, and which panels the escalation curve shows. Pure: a study in,
plain JSON types out (NaN -> ``None``; the escalation threshold ``inf``, "escalate only on differing
verdicts", -> ``None`` with ``rule`` saying so).

Keys (besides ``study``, ``simulated`` and ``source_run``, which :func:`axon_eval.runs.study.write_study`
sets): ``members`` (per member: ``id``, ``simulated``, ``cost_per_1k_turns`` USD, ``cost_source``,
``band_kappa`` and ``band_kappa_ci`` ``[lo, hi]``), ``n_panels``, ``panels`` (the Pareto-frontier rows,
cheapest first: ``panel_id``, ``members``, ``reducer``, ``samples``, ``band_kappa``, ``band_kappa_ci``,
``false_pass_rate`` (fraction), ``cost_per_1k_turns``, ``n_eff``), ``recommended`` (the chosen panel's
row, or ``panel_id = None`` when no panel qualifies, with ``mode``, ``reason``, ``runner_up`` and the
cluster-bootstrap ``confirmation``), ``escalation`` (per threshold of :func:`escalation_panels`'s first
panel: ``t``, ``rule``, ``share_escalated``, ``band_kappa``, ``band_kappa_ci``, ``n_left``) and
``escalation_panel``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from .panels import PanelResult, PanelStudy

#: Panels drawn on the escalation curve by default.
N_ESCALATION_PANELS = 3


def _num(x: Any) -> float | None:
    if x is None:
        return None
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return round(v, 6) if math.isfinite(v) else None


def panel_row(panel: PanelResult) -> dict[str, Any]:
    """One panel as a ``study.json`` row (the issue's fields)."""
    return {"panel_id": panel.panel_id, "members": list(panel.members), "reducer": panel.reducer,
            "samples": int(panel.samples), "k": int(panel.k), "n": int(panel.n),
            "band_kappa": _num(panel.band_kappa), "band_kappa_ci": [_num(panel.band_kappa_lo), _num(panel.band_kappa_hi)],
            "false_pass_rate": _num(panel.false_pass_rate), "cost_per_1k_turns": _num(panel.cost_per_1k_turns),
            "n_eff": _num(panel.n_eff), "simulated": bool(panel.simulated)}


def escalation_panels(study: PanelStudy, n: int = N_ESCALATION_PANELS) -> list[str]:
    """Up to ``n`` panels of two or more votes for the escalation curve, in this order: the recommended
    panel, its runner-up, then the frontier's panels by their band kappa lower bound (best first). A
    one-vote panel has nothing to disagree about, so it is skipped."""
    rec = study.recommendation
    ids = [p.panel_id for p in (rec.chosen, rec.runner_up) if p is not None and p.n_votes >= 2]
    front = study.frontier()
    front = front[front["n_votes"] >= 2].sort_values(["band_kappa_lo", "cost_per_1k_turns"], ascending=[False, True])
    ids += front["panel_id"].tolist()
    if len(ids) < n:  # a frontier of single panels: the best multi-vote panels overall
        rest = study.panels[study.panels["n_votes"] >= 2].sort_values(["band_kappa_lo", "cost_per_1k_turns"],
                                                                     ascending=[False, True])
        ids += rest["panel_id"].tolist()
    return list(dict.fromkeys(ids))[:n]


def escalation_rows(study: PanelStudy, panel_id: str) -> list[dict[str, Any]]:
    """The escalation table of one panel as ``study.json`` rows, by threshold ascending (``inf`` last, as
    ``t = None``)."""
    rows = study.escalation[study.escalation["panel_id"] == panel_id].sort_values("t")
    return [{"t": _num(r.t), "rule": r.rule, "share_escalated": _num(r.share_escalated),
             "band_kappa": _num(r.band_kappa), "band_kappa_ci": [_num(r.band_kappa_lo), _num(r.band_kappa_hi)],
             "n_left": int(r.n_left), "reaches_target": bool(r.reaches_target)} for r in rows.itertuples(index=False)]


def study_payload(study: PanelStudy) -> dict[str, Any]:
    """The issue's ``study.json`` keys (module docstring), plus ``n_segments``, ``n_labelled``,
    ``n_turns``, ``notes``, ``labels_note`` and ``parameters``."""
    members = [{"id": r["member"], "simulated": bool(r["simulated"]), "n_samples": int(r["n_samples"]),
                "cost_per_1k_turns": _num(r["cost_per_1k_turns"]), "cost_source": r["cost_source"],
                "band_kappa": _num(r["band_kappa"]), "band_kappa_ci": [_num(r["band_kappa_lo"]), _num(r["band_kappa_hi"])]}
               for r in study.members.to_dict("records")]
    frontier = [panel_row(PanelResult.from_row(r)) for r in study.frontier().to_dict("records")]
    rec = study.recommendation
    recommended: dict[str, Any] = (panel_row(rec.chosen) if rec.chosen is not None else {"panel_id": None})
    recommended.update({"mode": rec.mode, "metric": rec.metric, "target": rec.target, "budget": rec.budget,
                        "reason": rec.reason, "runner_up_reason": rec.runner_up_reason,
                        "runner_up": None if rec.runner_up is None else panel_row(rec.runner_up),
                        "confirmation": {k: {kk: (_num(vv) if isinstance(vv, float | np.floating) else vv)
                                             for kk, vv in v.items()} for k, v in rec.confirmation.items()}})
    shown = escalation_panels(study, 1)
    params = study.to_json()["parameters"]
    return {"members": members, "n_panels": int(len(study.panels)), "panels": frontier, "recommended": recommended,
            "escalation_panel": shown[0] if shown else None,
            "escalation": escalation_rows(study, shown[0]) if shown else [],
            "n_segments": int(study.n_segments), "n_labelled": int(study.n_labelled), "n_turns": int(study.n_turns),
            "notes": list(study.notes), "labels_note": study.labels_note, "parameters": params}


def panels_for_people(panels: pd.DataFrame) -> pd.DataFrame:
    """The columns of a panels table a person reads, in reading order (the notebook formats them with
    :func:`axon_eval.display.people_table`)."""
    cols = ["panel_id", "k", "samples", "n", "band_kappa", "band_kappa_lo", "band_kappa_hi", "verdict_kappa",
            "band_accuracy", "false_pass_rate", "false_fail_rate", "mae", "score_mae", "cost_per_1k_turns",
            "latency_s", "rho_bar", "n_eff", "simulated"]
    return panels.loc[:, [c for c in cols if c in panels.columns]].reset_index(drop=True)
