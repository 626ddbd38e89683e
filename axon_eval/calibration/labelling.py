"""Human labelling of a run's segments: a sample, a blind labelling pack, validated import, a plan.

The technical reference asks for a stratified sample (by band, surface and client) double-scored by
people before any comparative claim. This is the edge where people act. The work is split by job; every
name below stays importable from this module:

:mod:`axon_eval.calibration.label_samples`
    which segments are labelled and with what probability: the proportional stratified sample
    (``n_h = min(N_h, max(m, round(n N_h / N)))``, weight ``N_h / n_h``), the uniform, stratified and
    active designs drawn by randomised systematic sampling with their inclusion probabilities ``pi`` and
    weights ``1 / pi`` (over batches ``sum_b (n_b / n) / pi_b``), and ``design.json`` read back
:mod:`axon_eval.calibration.label_signals`
    the uncertainty signals of an active design, by name: panel spread, repeat SD, a results column, a
    model of ``|label - judge|``, the fitted offline judge's ``P(not good)`` and its binary entropy, a file
:mod:`axon_eval.calibration.label_pack`
    the pack a rater works from: ``sheet.csv`` with the rater's columns only, one static page per segment
    with the evidence only (a bundled question's part marked in its message, its answer part first), the
    index; blind by construction, with everything about the draw in ``design.json``
:mod:`axon_eval.calibration.label_sheets`
    filled sheets read and validated row by row (file, line, column, what was expected), the inclusion
    probabilities put beside the labels from ``design.json``, one labels file per pack, the CONSTRUCTED
    stand-in labels, and the readers of studies 05 and 10
:mod:`axon_eval.calibration.label_plans`
    the labels so far read as a pilot, and the labels each design needs for a half-width or to detect a
    difference (``plan-labels``)

CLI: ``python -m axon_eval sample-for-labelling``, ``import-labels`` and ``plan-labels``
(:mod:`axon_eval.cli.main`).
"""

from __future__ import annotations

from .label_pack import (  # noqa: F401 - re-exported
    EVIDENCE_FIELDS,
    _audit_entries,
    answer_part,
    append_batch,
    render_segment_page,
    segment_evidence,
    write_labelling_pack,
)
from .label_plans import (  # noqa: F401 - re-exported
    Pilot,
    check_plan_units,
    figure_name,
    plan_for_runs,
    read_pilot,
)
from .label_samples import (  # noqa: F401 - re-exported
    DESIGN_FILE,
    DESIGN_NAMES,
    IMPORTED_FILE,
    INCLUSION_COLUMN,
    INCLUSION_NOTE,
    INDEX_FILE,
    PAGES_DIR,
    PROBABILITIES_FILE,
    SHEET_COLUMNS,
    SHEET_FILE,
    LabellingSample,
    Signal,
    _results_of,
    _strata_of,
    design_frame,
    draw_design_sample,
    judged_segments,
    page_name,
    sample_for_labelling,
    with_inclusion,
)
from .label_sheets import (  # noqa: F401 - re-exported
    CONSTRUCTED_NOTE,
    LabelProblem,
    LabelsFileError,
    PackMerge,
    import_labels,
    known_from_results,
    labels_from_constructed,
    labels_header,
    load_panel_labels,
    merge_pack_labels,
    read_human_labels,
    refuse_unusable,
    sheet_text,
    write_labels,
)
from .label_signals import (  # noqa: F401 - re-exported
    FITTED_DETAILS_KEY,
    FITTED_SIGNALS,
    SIGNAL_SPECS,
    binary_entropy,
    fitted_not_good,
    load_signal,
    pilot_residuals,
)
