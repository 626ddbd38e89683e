"""Judge noise under repeat sampling, and when ensembling a judge pays (study 03).

One module per job: :mod:`.common` (the samples table, constants), :mod:`.within` (within-segment SD),
:mod:`.icc` (ICC(1,1), ICC(1,k)), :mod:`.components` (variance components, decision study, Spearman-Brown),
:mod:`.bands` (band instability, flip curve), :mod:`.ensembles` (bootstrap ensembles, recommended k),
:mod:`.members` (ensemble members as a table), :mod:`.summary` (the study summary), :mod:`.study` (the
notebook's inputs). Pure functions, no I/O; every name is importable from here.
"""

from __future__ import annotations

from .bands import BandInstability, FlipCurve, band_instability, flip_curve
from .common import (
    COST_COLUMNS,
    ENSEMBLE_REDUCERS,
    NOISE_COLUMNS,
    RATER_COLUMNS,
    SIMULATED_MARKERS,
    STUDY_KEYS,
    STUDY_NAME,
    SampleMatrix,
    pivot_samples,
    resolve_rater,
)
from .components import (
    VarianceComponents,
    decision_study,
    samples_for_reliability,
    spearman_brown,
    variance_components,
)
from .ensembles import EnsembleCurve, Recommendation, ensemble_curve, recommend_k
from .ensembles import _reduce_draws  # noqa: F401 - the tests pin the reducer directly
from .icc import OneWayIcc, icc_oneway, icc_table
from .members import MEMBER_COLUMNS, members_frame
from .study import (
    BORDERLINE_POINTS,
    NOISE_STUDY_MODEL,
    SAMPLE_COLUMNS,
    NoiseStudyJudge,
    borderline_sd,
    default_noise_judge,
    noise_study_judge,
    samples_from_results,
)
from .summary import JudgeNoiseSummary, judge_noise_summary
from .within import segment_noise, within_segment_sd

__all__ = [
    "BORDERLINE_POINTS",
    "COST_COLUMNS",
    "ENSEMBLE_REDUCERS",
    "MEMBER_COLUMNS",
    "NOISE_COLUMNS",
    "NOISE_STUDY_MODEL",
    "RATER_COLUMNS",
    "SAMPLE_COLUMNS",
    "SIMULATED_MARKERS",
    "STUDY_KEYS",
    "STUDY_NAME",
    "BandInstability",
    "EnsembleCurve",
    "FlipCurve",
    "JudgeNoiseSummary",
    "NoiseStudyJudge",
    "OneWayIcc",
    "Recommendation",
    "SampleMatrix",
    "VarianceComponents",
    "band_instability",
    "borderline_sd",
    "decision_study",
    "default_noise_judge",
    "ensemble_curve",
    "flip_curve",
    "icc_oneway",
    "icc_table",
    "judge_noise_summary",
    "members_frame",
    "noise_study_judge",
    "pivot_samples",
    "recommend_k",
    "resolve_rater",
    "samples_for_reliability",
    "samples_from_results",
    "segment_noise",
    "spearman_brown",
    "variance_components",
    "within_segment_sd",
]
