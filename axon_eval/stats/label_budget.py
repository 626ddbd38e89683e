"""Label budgets: where to spend human labels, and how many a corrected figure needs.

Study 09 corrects a run's headline figures with PPI++ (:mod:`axon_eval.stats.ppi`). Its interval
narrows as labels are added, and *which* segments are labelled decides how fast. This module gives the
three labelling designs, an unbiased estimator for each, and a planner that says how many labels each
needs for a target half-width. Units: the figure's own (points of 0-100 for a mean score, fractions for a
share); ``N`` judged segments in the run, ``n`` labels; ``r_i = Y_i - lam * Yhat_i`` the rectifier of
segment ``i`` (human value ``Y``, judge value ``Yhat``).

The work is split by job; every name below stays importable from this module:

:mod:`axon_eval.stats.label_designs`
    inclusion probabilities of the three designs and the draw
:mod:`axon_eval.stats.label_estimators`
    the corrected mean of each design (inverse-probability-weighted,
    stratified, labels only, batch-sequential)
:mod:`axon_eval.stats.label_planner`
    the uncertainty signals and the planner

Pure: arrays and frames in, frozen records out. The SIMULATED checks of these formulas are in
:mod:`axon_eval.stats.label_budget_sim`.
"""

from __future__ import annotations

from .label_designs import (active_probabilities, ASSURANCE, DESIGNS, DETECT_POWER, FIRST_BATCH_SHARE, LABELS_ONLY,
    LAM_GRID, MIN_MODEL_LABELS, MIN_PER_STRATUM, MIX_UNIFORM, neyman_allocation, SHRINK_LABELS, SIGNAL_FLOOR,
    signal_intensity, stratified_probabilities, systematic_sample, uniform_probabilities, useless_signal_inflation, _cap)  # noqa: F401 - re-exported
from .label_estimators import (batch_weights, DesignEstimate, ht_kernel, ht_lam, ht_ppi, kish_n, labels_only,
    population_term, stratified_kernel, stratified_lam, stratified_ppi, uniform_ppi, _quantile)  # noqa: F401 - re-exported
from .label_planner import (correlation_model, DesignPlan, detect_half_width, error_model, LabelPlan, panel_spread,
    pilot_model, plan_labels, WorkingModel)  # noqa: F401 - re-exported
from .ppi import MIN_LABELLED, PLAIN_PPI_LAM, SMALL_SAMPLE_LABELLED  # noqa: F401 - re-exported (the planner's floors)
