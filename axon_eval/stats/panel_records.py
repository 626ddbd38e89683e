"""Judge panel design, the records: one :class:`PanelResult` per panel (:data:`PANEL_COLUMNS`), the
:class:`Recommendation`, and the whole :class:`PanelStudy` with its escalation table
(:data:`ESCALATION_COLUMNS`).

Each record is a frozen dataclass with a ``to_dict`` that writes plain JSON values (NaN -> ``None``), so a
study's ``study.json`` can be read back without this package. The figures in them are defined where they
are computed: agreement and cost in :mod:`axon_eval.stats.panel_votes` and
:mod:`axon_eval.stats.panel_members`, the frontier and escalation in :mod:`axon_eval.stats.panel_frontier`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
import pandas as pd

from .panel_members import DEFAULT_METRIC
from .panel_votes import MemberDiagnostics


# =============================================================================================
# Records
# =============================================================================================
@dataclass(frozen=True)
class PanelResult:
    """One panel's row of :attr:`PanelStudy.panels` (the module docstring defines every figure).

    Shares are fractions 0-1; ``mae*`` in subscore points, ``score_mae`` in score points (0-100);
    ``cost_per_1k_turns`` in USD (NaN unknown); latencies in seconds; ``n`` labelled segments compared,
    ``n_unscored`` labelled segments the panel could not score (every vote failed).
    """

    panel_id: str
    members: tuple[str, ...]
    reducer: str
    k: int
    samples: int
    n_votes: int
    n: int
    n_unscored: int
    band_kappa: float
    band_kappa_lo: float
    band_kappa_hi: float
    band_kappa_se: float
    band_accuracy: float
    verdict_kappa: float
    verdict_kappa_lo: float
    verdict_kappa_hi: float
    mae: float
    mae_intent_understood: float
    mae_sql_quality: float
    mae_result_relevance: float
    mae_answer_faithfulness: float
    score_mae: float
    false_pass_rate: float
    n_labelled_not_good: int
    false_fail_rate: float
    n_labelled_good: int
    cost_per_1k_turns: float
    latency_s: float
    latency_p95_s: float
    rho_bar: float
    n_eff: float
    simulated: bool
    pareto: bool = False
    reaches_target: bool = False

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> PanelResult:
        kw = {f.name: row[f.name] for f in fields(cls)}
        kw["members"] = tuple(kw["members"])
        for name in ("k", "samples", "n_votes", "n", "n_unscored", "n_labelled_not_good", "n_labelled_good"):
            kw[name] = int(kw[name])
        for name in ("simulated", "pareto", "reaches_target"):
            kw[name] = bool(kw[name])
        return cls(**kw)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields(self):
            v = getattr(self, f.name)
            out[f.name] = list(v) if isinstance(v, tuple) else _jf(v) if isinstance(v, float) else v
        return out


PANEL_COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(PanelResult))
ESCALATION_COLUMNS: tuple[str, ...] = ("panel_id", "t", "rule", "share_escalated", "n_escalated", "n_left",
                                       "band_kappa", "band_kappa_lo", "band_kappa_hi", "reaches_target")


def _jf(x: Any) -> float | None:
    if x is None:
        return None
    x = float(x)
    return None if not math.isfinite(x) else round(x, 6)


@dataclass(frozen=True)
class Recommendation:
    """The panel to use and the runner-up.

    ``mode`` ``"target"``: the cheapest panel whose ``metric`` reaches ``target`` (ties: better metric,
    fewer votes); ``"budget"``: the best ``metric`` among panels costing at most ``budget`` USD per 1,000
    turns (ties: cheaper). ``chosen`` is ``None`` when nothing qualifies (``reason`` says what came
    closest, which is then ``runner_up``). ``confirmation``: by ``panel_id``, the band kappa of the chosen
    panel and the runner-up with a seeded cluster-bootstrap percentile interval over turns
    (:func:`axon_eval.stats.intervals.cluster_bootstrap`: the segments of a turn are resampled together,
    which the asymptotic interval of the panels table does not do) and whether its lower bound reaches
    the target; empty when not asked for.
    """

    mode: str
    metric: str
    target: float | None
    budget: float | None
    chosen: PanelResult | None
    runner_up: PanelResult | None
    reason: str
    runner_up_reason: str
    confirmation: dict[str, dict[str, Any]]

    def text(self) -> str:
        return " ".join(filter(None, [self.reason, self.runner_up_reason]))

    def to_json(self) -> dict[str, Any]:
        return {"mode": self.mode, "metric": self.metric, "target": self.target, "budget": self.budget,
                "chosen": None if self.chosen is None else self.chosen.to_json(),
                "runner_up": None if self.runner_up is None else self.runner_up.to_json(),
                "reason": self.reason, "runner_up_reason": self.runner_up_reason,
                "confirmation": self.confirmation}


@dataclass(frozen=True, eq=False)
class PanelStudy:
    """Everything study 10 reports.

    ``panels``: one row per panel (:data:`PANEL_COLUMNS`), ``pareto`` marking the frontier;
    ``escalation``: one row per panel of two or more votes and threshold (:data:`ESCALATION_COLUMNS`);
    ``trust``: per panel the smallest escalation share that reaches the target (:func:`trust_or_escalate`);
    ``members``: :meth:`MemberSet.summary` with each member's own agreement; ``diagnostics``;
    ``recommendation``; ``parameters`` (every number used); ``notes`` (what was found in the input,
    what was skipped and why, and :data:`SIMULATED_NOTE` when a member is simulated); ``labels_note``.
    """

    panels: pd.DataFrame
    escalation: pd.DataFrame
    trust: pd.DataFrame
    members: pd.DataFrame
    diagnostics: MemberDiagnostics
    recommendation: Recommendation
    parameters: dict[str, Any]
    notes: tuple[str, ...]
    n_segments: int
    n_labelled: int
    n_turns: int
    labels_note: str | None = None

    def panel(self, panel_id: str) -> PanelResult:
        rows = self.panels[self.panels["panel_id"] == panel_id]
        if rows.empty:
            raise ValueError(f"no panel {panel_id!r}; e.g. {self.panels['panel_id'].head(3).tolist()}")
        return PanelResult.from_row(rows.iloc[0].to_dict())

    def frontier(self) -> pd.DataFrame:
        """The Pareto-optimal panels, cheapest first."""
        metric = self.parameters.get("metric", DEFAULT_METRIC)
        return self.panels[self.panels["pareto"]].sort_values(["cost_per_1k_turns", metric],
                                                              ascending=[True, False]).reset_index(drop=True)

    def to_json(self) -> dict[str, Any]:
        """``study.json`` payload: counts, parameters, the recommendation, the frontier, the members and
        the trust-or-escalate summary (NaN -> ``None``)."""
        def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
            out = []
            for row in frame.to_dict("records"):
                out.append({k: (list(v) if isinstance(v, tuple) else _jf(v) if isinstance(v, float) else
                                bool(v) if isinstance(v, np.bool_) else int(v) if isinstance(v, np.integer) else v)
                            for k, v in row.items()})
            return out
        params = {k: (None if isinstance(v, float) and not math.isfinite(v) else v)
                  for k, v in self.parameters.items() if k != "escalation_grid"}
        params["escalation_grid"] = [None if not math.isfinite(t) else t for t in self.parameters["escalation_grid"]]
        return {"n_segments": self.n_segments, "n_labelled": self.n_labelled, "n_turns": self.n_turns,
                "n_panels": int(len(self.panels)), "parameters": params,
                "recommendation": self.recommendation.to_json(), "frontier": records(self.frontier()),
                "members": records(self.members), "trust": records(self.trust), "notes": list(self.notes),
                "labels_note": self.labels_note}


def panel_id(members: Sequence[str], reducer: str, samples: int) -> str:
    """``"<reducer>[<m1>, <m2>, ...] x<samples>"``, e.g. ``"mean[heuristic, simulated:harsh] x1"``."""
    return f"{reducer}[{', '.join(members)}] x{samples}"
