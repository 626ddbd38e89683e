"""Judge noise: the study 03 summary (:class:`JudgeNoiseSummary`, the ``study.json`` keys)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ...rubric import Rubric
from .bands import BandInstability, FlipCurve, _flip_curve, _instability
from .common import (
    COST_COLUMNS,
    ENSEMBLE_REDUCERS,
    NOISE_COLUMNS,
    SIMULATED_MARKERS,
    STUDY_NAME,
    _check_table,
    pivot_samples,
)
from .components import VarianceComponents, _components, decision_study, samples_for_reliability
from .ensembles import EnsembleCurve, Recommendation, _ensemble, recommend_k
from .icc import _icc_frame
from .within import _segment_table, _within_table


# =============================================================================================
# The study summary
# =============================================================================================
@dataclass(frozen=True, eq=False)
class JudgeNoiseSummary:
    """Everything study 03 reports; :meth:`to_json` gives the ``study.json`` keys (:data:`STUDY_KEYS`).

    ``n_segments``: distinct segments in the table; ``n_samples``: judgements per segment (the number
    of distinct raters). ``sd``: pooled within-segment SD per dimension and score. ``icc``: the full
    :func:`icc_table`. ``segments``: :func:`segment_noise`. ``samples_for_target``: Spearman-Brown
    samples for ``reliability_target`` from the score's ICC(1,1) (None = unreachable).
    """

    judge_id: str
    simulated: bool
    rater: str
    n_segments: int
    n_samples: int
    rubric_id: str
    seed: int
    flip_target: float
    sd: dict[str, float]
    icc: pd.DataFrame
    band: BandInstability
    flip: FlipCurve
    variance: VarianceComponents | None
    decision: pd.DataFrame
    reliability_target: float
    samples_for_target: int | None
    ensemble: EnsembleCurve
    recommended: Recommendation
    segments: pd.DataFrame
    notes: tuple[str, ...] = field(default=())

    def icc1(self) -> dict[str, dict[str, float]]:
        """``{column: {"value", "ci_low", "ci_high"}}`` of ICC(1,1)."""
        return {str(r["column"]): {"value": r["icc1"], "ci_low": r["icc1_ci_low"], "ci_high": r["icc1_ci_high"]}
                for r in self.icc.to_dict("records")}

    def to_json(self) -> dict[str, Any]:
        """The ``study.json`` payload: exactly :data:`STUDY_KEYS`, JSON-ready (NaN -> null)."""
        ensemble_rows = [{"k": int(r["k"]), "reducer": r["reducer"], "flip_rate": r["flip_rate"], "sd": r["sd"],
                          "cost_usd": r["cost_usd"], "cost_usd_per_1000_segments": r["cost_usd_per_1000_segments"]}
                         for r in self.ensemble.table.to_dict("records")]
        payload = {
            "study": STUDY_NAME,
            "judge_id": self.judge_id,
            "simulated": self.simulated,
            "n_segments": self.n_segments,
            "n_samples": self.n_samples,
            "sd": self.sd,
            "icc1": self.icc1(),
            "band_flip_rate": self.band.flip_rate,
            "ensemble": ensemble_rows,
            "recommended_k": self.recommended.to_dict(),
        }
        return _json_ready(payload)


def _json_ready(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _json_ready(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_ready(v) for v in value]
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        return None if not math.isfinite(float(value)) else float(value)
    return value


def _judge_id_of(samples_df: pd.DataFrame) -> str:
    for column in ("ensemble_judge_id", "judge_id"):
        if column in samples_df.columns:
            ids = sorted({str(v) for v in samples_df[column].dropna().unique()})
            if len(ids) == 1:
                return ids[0]
            if ids and column == "judge_id":
                return "members[" + ", ".join(ids) + "]"
    raise ValueError("the samples table has no judge_id column; pass judge_id=")


def judge_noise_summary(samples_df: pd.DataFrame, rubric: Rubric | None = None, flip_target: float = 0.05,
                        seed: int = 0, *, judge_id: str | None = None, simulated: bool | None = None,
                        rater: str | None = None, reducers: Sequence[str] = ENSEMBLE_REDUCERS,
                        n_boot: int | None = None, reliability_target: float = 0.9, confidence: float = 0.95,
                        ) -> JudgeNoiseSummary:
    """Run every statistic of study 03 on one tidy samples table (repeat samples or ensemble members).

    ``rubric``: the rubric the table was scored with (default ``axon-v1``; band edges come from it).
    ``flip_target``: largest acceptable ensemble flip rate (share) for :func:`recommend_k`. ``seed``:
    the bootstrap seed. ``judge_id``: default the table's single ``judge_id`` (or
    ``ensemble_judge_id``). ``simulated``: default True when the judge id marks a simulated judge
    (``simulated(`` or ``noise(``) or a ``simulated`` column is true anywhere.
    """
    rubric = Rubric.default() if rubric is None else rubric
    _check_table(samples_df, rubric)
    judge_id = _judge_id_of(samples_df) if judge_id is None else judge_id
    if simulated is None:
        simulated = any(marker in judge_id for marker in SIMULATED_MARKERS) or (
            "simulated" in samples_df.columns and bool(samples_df["simulated"].fillna(False).astype(bool).any()))
    columns = [*NOISE_COLUMNS, *[c for c in COST_COLUMNS if c in samples_df.columns]]
    sm = pivot_samples(samples_df, columns, rater)
    notes: list[str] = []
    within = _within_table(sm, NOISE_COLUMNS)
    icc = _icc_frame(sm, NOISE_COLUMNS, confidence)
    try:
        variance: VarianceComponents | None = _components(sm, "score")
        decision = decision_study(variance, range(1, max(10, sm.n_raters) + 1))
    except ValueError as exc:
        variance, decision = None, pd.DataFrame(columns=["k", "g_relative", "phi_absolute"])
        notes.append(f"variance components not estimable: {exc}")
    score_icc = float(icc.loc[icc["column"] == "score", "icc1"].iloc[0])
    ensemble = _ensemble(sm, rubric, seed=seed, reducers=reducers, n_boot=n_boot, draw=None, max_k=None)
    incomplete = sm.n_segments - ensemble.n_segments
    if incomplete:
        notes.append(f"{incomplete} segment(s) lack a judged score in some judgement and are left out of the "
                     "ICC, variance components and ensembles")
    return JudgeNoiseSummary(
        judge_id=judge_id, simulated=bool(simulated), rater=sm.rater, n_segments=sm.n_segments,
        n_samples=sm.n_raters, rubric_id=rubric.id, seed=int(seed), flip_target=flip_target,
        sd={str(r["column"]): float(r["sd_pooled"]) for r in within.to_dict("records")}, icc=icc,
        band=_instability(sm, rubric), flip=_flip_curve(sm, rubric, None, confidence), variance=variance,
        decision=decision, reliability_target=reliability_target,
        samples_for_target=samples_for_reliability(score_icc, reliability_target),
        ensemble=ensemble, recommended=recommend_k(ensemble, flip_target), segments=_segment_table(sm, rubric),
        notes=tuple(notes),
    )
