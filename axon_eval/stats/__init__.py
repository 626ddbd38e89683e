"""Pure statistics over judged results (agreement with constructed labels, ...)."""

from .agreement import (
    LabelAgreement,
    band_agreement,
    claim_catch_rate,
    cohens_kappa,
    confusion_table,
    label_agreement,
    measure_heuristic,
    results_from_records,
    share_in_range,
)

__all__ = [
    "LabelAgreement",
    "band_agreement",
    "claim_catch_rate",
    "cohens_kappa",
    "confusion_table",
    "label_agreement",
    "measure_heuristic",
    "results_from_records",
    "share_in_range",
]
