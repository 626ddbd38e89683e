"""Reporting: every figure (one module per notebook family, styling in :mod:`.style`) and the HTML report.

Draws and writes what a finished run or study holds; it computes no statistic and judges nothing. Families,
one module each under ``axon_eval.reporting``: ``evaluation`` (notebook 01, a run's ``figures/``),
``sensitivity`` (02), ``noise`` (03), ``horizon`` (04), ``calibration`` (05), ``drift`` (06),
``recalibration`` (07), ``estimates`` (09), ``panels`` (10) and ``label_budget`` (11), with the shared
styling in ``style``. :mod:`axon_eval.reporting.report` writes ``report.html`` (its sections in the
``report_*`` modules beside it), ``comparison`` a comparison folder.
"""

from .style import (
    BAND_COLOURS,
    CELL_TEXT_COLOURS,
    MIN_TEXT_CONTRAST,
    PNG_SIGNATURE,
    SIMULATED_PREFIX,
    UNDEFINED_BAR_TEXT,
    WEIGHT_COLOURS,
    cell_text_colour,
    contrast_ratio,
    embed_png,
    figure_title,
    png_bytes,
    relative_luminance,
    save_figure,
    save_titled_figure,
)
from .evaluation import (
    band_shares_by,
    band_transition_heatmap,
    cap_frequencies,
    dimension_distributions,
    save_run_figures,
    save_standard_figures,
    score_distribution,
    score_spread,
    standard_figures,
    verdict_band_heatmap,
)
from .horizon import (
    HORIZON_SAMPLER_STYLES,
    horizon_curves,
    horizon_delta_vs_size,
    horizon_prompt_size,
    horizon_unjudged_note,
)
from .sensitivity import (
    band_flip_rates,
    flips_by_band_edge_distance,
    sobol_bars,
    weight_oat_deltas,
    weight_score_ranges,
)
from .noise import (
    NOISE_SIMULATED_PREFIX,
    noise_decision_study,
    noise_ensemble,
    noise_flip_curve,
    noise_sd_icc,
)
from .calibration import (
    calibration_by_margin,
    calibration_confusion,
    calibration_gate_figure,
    calibration_scatter,
)
from .drift import drift_bland_altman, drift_delta_histogram, drift_dimensions
from .recalibration import (
    RECAL_CONSTRUCTED,
    RECAL_METHOD_COLOURS,
    recal_cv_kappa,
    recal_fabricated,
    recal_weights,
)
from .comparison import write_comparison
from .report import compare_with_labels, esc, render_arithmetic, render_report, render_steps, write_report

__all__ = [
    "BAND_COLOURS",
    "CELL_TEXT_COLOURS",
    "HORIZON_SAMPLER_STYLES",
    "MIN_TEXT_CONTRAST",
    "NOISE_SIMULATED_PREFIX",
    "PNG_SIGNATURE",
    "RECAL_CONSTRUCTED",
    "RECAL_METHOD_COLOURS",
    "SIMULATED_PREFIX",
    "UNDEFINED_BAR_TEXT",
    "WEIGHT_COLOURS",
    "band_flip_rates",
    "band_shares_by",
    "band_transition_heatmap",
    "calibration_by_margin",
    "calibration_confusion",
    "calibration_gate_figure",
    "calibration_scatter",
    "cap_frequencies",
    "cell_text_colour",
    "compare_with_labels",
    "contrast_ratio",
    "dimension_distributions",
    "drift_bland_altman",
    "drift_delta_histogram",
    "drift_dimensions",
    "embed_png",
    "esc",
    "figure_title",
    "flips_by_band_edge_distance",
    "horizon_curves",
    "horizon_delta_vs_size",
    "horizon_prompt_size",
    "horizon_unjudged_note",
    "noise_decision_study",
    "noise_ensemble",
    "noise_flip_curve",
    "noise_sd_icc",
    "png_bytes",
    "recal_cv_kappa",
    "recal_fabricated",
    "recal_weights",
    "relative_luminance",
    "render_arithmetic",
    "render_report",
    "render_steps",
    "save_figure",
    "save_run_figures",
    "save_standard_figures",
    "save_titled_figure",
    "score_distribution",
    "score_spread",
    "sobol_bars",
    "standard_figures",
    "verdict_band_heatmap",
    "weight_oat_deltas",
    "weight_score_ranges",
    "write_comparison",
    "write_report",
]
