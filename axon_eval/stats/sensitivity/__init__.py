"""Weight sensitivity of the rubric score: sampled designs, exact worst cases, the pair test and Sobol indices.

One module per job: :mod:`.common` (the score model, segments, nominal weights, grouping), :mod:`.designs`
(perturbation designs), :mod:`.sweep` (K weight vectors over T segments), :mod:`.worst_case` (exact LPs and
the bound), :mod:`.pairs` (good below poor), :mod:`.sobol` (global indices), :mod:`.summary` (the study
summary). Pure functions, no I/O; every name is importable from here.
"""

from __future__ import annotations

from .common import (
    AGGREGATES,
    DEFAULT_CONCENTRATION,
    DEFAULT_DELTAS,
    JUDGED,
    Segments,
    box_on_simplex_bounds,
    segments_from_results,
)
from .designs import WeightDesign, box_simplex_sample, dirichlet_sample, one_at_a_time
from .pairs import GoodBelowPoor, GoodBelowPoorExample, good_below_poor
from .pairs import _pair_max_margin  # noqa: F401 - the tests pin the pair kernel directly
from .sobol import WeightSobol, sobol_indices, weight_sobol
from .summary import WeightSensitivitySummary, weight_sensitivity_summary
from .sweep import WeightSweep, score_matrix, sweep_weights
from .worst_case import ScoreShiftBound, WorstCase, score_shift_bound, worst_case

__all__ = [
    "AGGREGATES",
    "DEFAULT_CONCENTRATION",
    "DEFAULT_DELTAS",
    "JUDGED",
    "GoodBelowPoor",
    "GoodBelowPoorExample",
    "ScoreShiftBound",
    "Segments",
    "WeightDesign",
    "WeightSensitivitySummary",
    "WeightSobol",
    "WeightSweep",
    "WorstCase",
    "box_on_simplex_bounds",
    "box_simplex_sample",
    "dirichlet_sample",
    "good_below_poor",
    "one_at_a_time",
    "score_matrix",
    "score_shift_bound",
    "segments_from_results",
    "sobol_indices",
    "sweep_weights",
    "weight_sensitivity_summary",
    "weight_sobol",
    "worst_case",
]
