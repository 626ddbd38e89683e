"""Calibration against people and over time: labelling packs and label imports, judge-drift anchors.

Sits above runs, stats and reporting: it reads run folders, computes with :mod:`axon_eval.stats` and draws
with :mod:`axon_eval.reporting`. Modules: :mod:`.labelling` (the labelling workflow's names, from
:mod:`.label_samples`, :mod:`.label_signals`, :mod:`.label_pack`, :mod:`.label_sheets` and
:mod:`.label_plans`), :mod:`.anchors`, :mod:`.drift`, :mod:`.training` (the labelled sets as training
data of the fitted offline judge), :mod:`.studio_link` (:func:`studio`: the labelling studio of
:mod:`axon_eval.studio` started from a notebook).
"""

from . import anchors, drift, labelling
from .anchors import AnchorError, mark_anchor, verify_anchor
from .drift import drift_json, judge_drift
from .labelling import import_labels, sample_for_labelling, write_labelling_pack
from .studio_link import studio

__all__ = [
    "AnchorError",
    "anchors",
    "drift",
    "drift_json",
    "import_labels",
    "judge_drift",
    "labelling",
    "mark_anchor",
    "sample_for_labelling",
    "studio",
    "verify_anchor",
    "write_labelling_pack",
]
