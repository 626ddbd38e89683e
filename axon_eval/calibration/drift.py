"""Judge drift of a run comparison: the run glue over :mod:`axon_eval.stats.drift` (study 06, ``drift`` verb).

:func:`judge_drift` turns a :class:`~axon_eval.runs.compare.RunComparison` (anchor A, candidate B) into a
:class:`~axon_eval.stats.drift.JudgeDrift` decided against thresholds; :func:`drift_json` is its JSON record.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..rubric import BANDS
from ..runs.io import to_jsonable
from ..stats.drift import (
    DriftThresholds,
    JudgeDrift,
    bland_altman,
    decide,
    dimension_drift,
    measured_figures,
)

if TYPE_CHECKING:  # pragma: no cover
    from ..runs.compare import RunComparison


def judge_drift(comparison: RunComparison, thresholds: DriftThresholds, *, simulated: bool = False,
                n_boot: int | None = None, seed: int | None = None) -> JudgeDrift:
    """The drift record of ``comparison`` (``compare_runs(anchor, candidate)``) decided against
    ``thresholds`` (required: from :func:`load_thresholds`).

    The mean difference, its CI, the Wilcoxon test and the band transitions are the comparison's; its
    confidence level must be the thresholds file's (``compare_runs(..., confidence=thresholds.confidence)``)
    and ``n_boot``/``seed`` default to the comparison's. ``simulated`` marks a simulated candidate.
    """
    import dataclasses

    if not isinstance(thresholds, DriftThresholds):
        raise TypeError("judge_drift needs thresholds from load_thresholds(<file>) (the packaged file is "
                        "packaged_thresholds_path()): there are no default thresholds in code")
    n_boot = comparison.n_boot if n_boot is None else n_boot
    seed = comparison.seed if seed is None else seed
    confidence = thresholds.confidence
    deltas = comparison.deltas
    ba = bland_altman(deltas["score_a"], deltas["score_b"], confidence=confidence)
    dims = dimension_drift(deltas, n_boot=n_boot, seed=seed, confidence=confidence)
    n_unjudged, n_unmatched = len(comparison.unjudged), len(comparison.unmatched_a)
    n_anchor = comparison.n_matched + n_unmatched
    n = comparison.n_compared
    notes = list(comparison.notes)
    if comparison.unmatched_b:
        notes.append(f"{len(comparison.unmatched_b)} candidate row(s) have no anchor row (left out)")
    draft = JudgeDrift(
        anchor_run=comparison.run_a, candidate_run=comparison.run_b, anchor_judge_id=comparison.judge_a,
        candidate_judge_id=comparison.judge_b, rubric_id=comparison.rubric_b, n_anchor=n_anchor, n_compared=n,
        n_unjudged=n_unjudged, n_unmatched=n_unmatched,
        unjudged_share=(n_unjudged + n_unmatched) / n_anchor if n_anchor else None,
        mean_delta=comparison.mean_delta, mean_delta_ci=comparison.mean_delta_ci,
        wilcoxon_statistic=comparison.wilcoxon_statistic, wilcoxon_p=comparison.wilcoxon_p,
        n_band_changes=comparison.n_band_changes, band_change_share=comparison.n_band_changes / n if n else None,
        transitions=comparison.transitions, bland_altman=ba, dimensions=dims, deltas=deltas,
        decision=None, simulated=bool(simulated), confidence=confidence, n_boot=n_boot, seed=seed,  # type: ignore[arg-type]
        notes=notes)
    vacuous = {}
    if n and comparison.wilcoxon_p is None:
        vacuous["min_wilcoxon_p"] = "every score difference is 0, so there is no shift to test"
    decision = decide(measured_figures(draft), thresholds, vacuous)
    return dataclasses.replace(draft, decision=decision)


def drift_json(drift: JudgeDrift) -> dict[str, Any]:
    """Everything of ``drift`` but the per-segment deltas, as plain JSON types (NaN -> null)."""
    return to_jsonable({
        "anchor_run": drift.anchor_run, "candidate_run": drift.candidate_run,
        "anchor_judge_id": drift.anchor_judge_id, "candidate_judge_id": drift.candidate_judge_id,
        "rubric_id": drift.rubric_id, "simulated": drift.simulated,
        "n_anchor": drift.n_anchor, "n": drift.n_compared, "n_unjudged": drift.n_unjudged,
        "n_unmatched": drift.n_unmatched, "unjudged_share": drift.unjudged_share,
        "mean_delta": drift.mean_delta, "mean_delta_ci": list(drift.mean_delta_ci) if drift.mean_delta_ci else None,
        "confidence": drift.confidence, "n_boot": drift.n_boot, "seed": drift.seed,
        "wilcoxon_statistic": drift.wilcoxon_statistic, "wilcoxon_p": drift.wilcoxon_p,
        "n_band_changes": drift.n_band_changes, "band_change_share": drift.band_change_share,
        "transitions": {a: {b: int(drift.transitions.loc[a, b]) for b in BANDS} for a in BANDS},
        "bland_altman": drift.bland_altman.to_json(),
        "dimensions": drift.dimensions.to_dict(orient="records"),
        "decision": drift.decision.decision, "decision_detail": drift.decision.to_json(),
        "measured": drift.measured, "notes": drift.notes,
    })
