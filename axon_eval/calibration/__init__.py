"""Calibration against people and over time: labelling packs and label imports, judge-drift anchors.

Sits above runs, stats and reporting: it reads run folders, computes with :mod:`axon_eval.stats` and draws
with :mod:`axon_eval.reporting`. Modules: :mod:`.labelling`, :mod:`.anchors`, :mod:`.drift`, :mod:`.training` (the labelled sets as training
data of the fitted offline judge).
"""

from . import anchors, drift, labelling
from .anchors import AnchorError, mark_anchor, verify_anchor
from .drift import drift_json, judge_drift
from .labelling import import_labels, sample_for_labelling, write_labelling_pack

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
    "verify_anchor",
    "write_labelling_pack",
]
