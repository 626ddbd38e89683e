"""Weight recalibration (study 07): rubric weights fitted to labels, two ways, with cross-validated agreement.

The technical reference says the weights are to be revisited against accumulated labels, not adjusted ad
hoc. This module does the fitting; it never changes a rubric in use. A fitted weight vector becomes a
*proposed* rubric (a new YAML file that ``extends:`` the base, with its own id) that a person may adopt
or not. With the bundled data the labels are CONSTRUCTED (:data:`axon_eval.labels.LABELS_NOTE`), not
human judgements, so the weights fitted to them must not be adopted: every record here carries that note.

The work is split by job; every name below stays importable from this module:

:mod:`axon_eval.stats.recalibration_data`
    the labelled segments, their target scores, predicted scores
:mod:`axon_eval.stats.recalibration_fits`
    (a) constrained least squares and (b) the ordinal logistic model
:mod:`axon_eval.stats.recalibration_cv`
    (c) cross-validated agreement

This module turns fitted weights into a proposed rubric, tabulates the fabricated answer and runs the study.

(d) Proposals (:func:`propose_rubric`, :func:`write_proposal`)
--------------------------------------------------------------
Weights rounded to 4 decimals (the residual of the rounding put on the largest weight so they sum to 1)
become a YAML rubric ``extends: <base>`` that gives only ``name`` and ``weights``; the returned Rubric is
loaded from that very text, so its id is the file's. Given the labelled segments, a proposal whose
rounded weights leave any of them unscorable (:func:`unscorable_segments`) is refused; the study records
the refusal (``proposal_rejected``) instead of proposing it. Nothing is written unless :func:`write_proposal` is
called, and it refuses to write inside the installed package or over an existing file.

(e) Perfect retrieval, fabricated answer (:func:`fabricated_answer_table`)
--------------------------------------------------------------------------
Subscores (10, 10, 10, 0), no trajectory cap: the score is ``100 * (1 - w_faithfulness)`` under any
weights, so 80 (good, at the edge) under ``axon-v1``; ``axon-v1-faithcap`` caps it at 49 (poor). The
table shows the score and band under each rubric given.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from ..labels import LABELS_NOTE
from ..rubric import CAP_FACTS, DIMENSIONS, Rubric
from ..scoring import score_turn
from .recalibration_data import (ALWAYS_OBSERVED, band_targets, DO_NOT_ADOPT, FABRICATED_SUBSCORES,
    labelled_segments, LabelledSegments, LSQ_ACTIVE_TOL, LSQ_GRID_STEP, LSQ_KINK_TOL, LSQ_KKT_TOL,
    LSQ_OBJECTIVE_RTOL, LSQ_POLISH_POINTS, METHODS, MIN_OBSERVED_WEIGHT, ORDINAL_ORDER, predicted_scores,
    SEPARATION_COEF, unscorable_segments, _weights_vector)  # noqa: F401 - re-exported
from .recalibration_fits import (fit_least_squares, fit_ordinal, LeastSquaresFit, ordinal_design, OrdinalFit,
    simplex_grid)  # noqa: F401 - re-exported
from .recalibration_cv import band_kappa, cross_validate, CrossValidation, cv_folds  # noqa: F401 - re-exported

# =============================================================================================
# (d) proposals
# =============================================================================================
@dataclass(frozen=True)
class Proposal:
    """A proposed rubric: ``rubric`` (loaded from ``yaml_text``, so ``rubric.id`` is the file's id)."""

    name: str
    rubric: Rubric
    yaml_text: str
    weights: dict[str, float]
    extends: str

    @property
    def id(self) -> str:
        return self.rubric.id

    @property
    def filename(self) -> str:
        return f"{self.name}.yaml"


def round_weights(weights: Mapping[str, float], decimals: int = 4) -> dict[str, float]:
    """Weights rounded to ``decimals`` with the rounding residual on the largest, so they sum to 1."""
    w = _weights_vector(weights)
    if (w < 0).any() or w.sum() <= 0:
        raise ValueError(f"weights must be non-negative with a positive sum, got {dict(weights)}")
    w = w / w.sum()
    scale = 10 ** decimals
    units = np.round(w * scale).astype(np.int64)
    units[int(np.argmax(w))] += scale - int(units.sum())
    return {d: round(int(u) / scale, decimals) for d, u in zip(DIMENSIONS, units, strict=True)}


def propose_rubric(weights: Mapping[str, float], base: Rubric | None = None, name: str | None = None, *,
                   extends: str | None = None, comment: str | None = None, decimals: int = 4,
                   data: LabelledSegments | None = None) -> Proposal:
    """A proposed rubric ``base`` with other weights, as YAML that ``extends:`` the base (never written here).

    ``extends`` defaults to ``base.name`` (a packaged rubric name or a YAML path); the text is checked to
    resolve to exactly ``base`` with the new weights. ``comment`` lines head the file. With ``data`` (the
    labelled segments fitted), weights that after rounding leave any of them unscorable are refused
    (``ValueError`` naming the segments and the reason).
    """
    base = base or Rubric.default()
    parent = extends or base.name
    name = name or f"{base.name}-proposed"
    if name == base.name:
        raise ValueError("a proposed rubric needs a name of its own")
    w = round_weights(weights, decimals)
    if data is not None:
        bad = unscorable_segments(data, w)
        if bad:
            first = next(iter(bad))
            raise ValueError(f"proposal {name!r} refused: weights {w} leave {len(bad)} of {data.n} labelled "
                             f"segment(s) unscorable (first ids {[str(i) for i in list(bad)[:5]]}; {first}: "
                             f"{bad[first]})")
    header = [f"# PROPOSED rubric (not adopted): {base.name} with fitted weights."]
    for line in (comment or "").splitlines():
        header.append(f"# {line}".rstrip())
    header.append("# Adopting it is a decision for a person; nothing in axon_eval uses it unless named explicitly.")
    body = yaml.safe_dump({"extends": parent, "name": name, "weights": w}, sort_keys=False)
    text = "\n".join(header) + "\n" + body
    rubric = Rubric.from_dict(yaml.safe_load(text), source=f"proposal {name}")
    expected = base.with_weights(w).replace(name=name)
    if rubric.canonical() != expected.canonical():
        raise ValueError(f"extends {parent!r} does not resolve to the base rubric {base.label}; pass extends=")
    return Proposal(name=name, rubric=rubric, yaml_text=text, weights=w, extends=parent)


def write_proposal(proposal: Proposal, folder: str | Path) -> Path:
    """Write ``<folder>/<name>.yaml`` (the one I/O of this module): never inside the installed package,
    never over an existing file."""
    folder = Path(folder).resolve()
    package = Path(str(resources.files("axon_eval"))).resolve()
    if folder == package or package in folder.parents:
        raise ValueError(f"refusing to write a proposed rubric inside the package ({package}): it would be adopted")
    path = folder / proposal.filename
    if path.exists():
        raise FileExistsError(f"{path} exists; a proposal is never overwritten")
    folder.mkdir(parents=True, exist_ok=True)
    path.write_text(proposal.yaml_text, encoding="utf-8")
    return path


# =============================================================================================
# (e) perfect retrieval, fabricated answer
# =============================================================================================
def fabricated_answer_table(rubrics: Mapping[str, Rubric], subscores: Mapping[str, float | None] | None = None
                            ) -> pd.DataFrame:
    """Score and band of (10, 10, 10, 0) (no trajectory cap) under each rubric, with the arithmetic's parts."""
    subs = dict(subscores or FABRICATED_SUBSCORES)
    facts = {f: False for f in CAP_FACTS}
    rows = []
    for label, rub in rubrics.items():
        r = score_turn(subs, facts, rub)
        rows.append({"rubric": label, "name": rub.name, "rubric_id": rub.id,
                     "w_answer_faithfulness": rub.weights.answer_faithfulness, "raw_score": r.raw_score,
                     "score": r.score, "band": r.band, "caps_applied": ", ".join(r.caps_applied)})
    return pd.DataFrame(rows)


# =============================================================================================
# The study
# =============================================================================================
@dataclass(frozen=True)
class RecalibrationStudy:
    """Everything study 07 reports. ``to_json`` gives the study.json keys (see the notebook).

    ``proposals``: one :class:`Proposal` per method with weights (nothing written); ``proposals_rejected``:
    method -> why its weights were not proposed (they leave a labelled segment unscorable); ``fabricated``:
    the (10,10,10,0) table under nominal, each proposal and each reference rubric."""

    n: int
    n_folds: int
    seed: int
    base: Rubric
    targets: dict[str, float]
    least_squares: LeastSquaresFit
    ordinal: OrdinalFit
    cv: CrossValidation
    in_sample_kappa: dict[str, float]
    fabricated: pd.DataFrame
    proposals: dict[str, Proposal] = field(default_factory=dict)
    n_unlabelled: int = 0
    note: str = LABELS_NOTE
    proposals_rejected: dict[str, str] = field(default_factory=dict)

    @property
    def fitted_weights(self) -> dict[str, dict[str, float] | None]:
        return {"least_squares": self.least_squares.weights, "ordinal": self.ordinal.weights}

    def weights_table(self) -> pd.DataFrame:
        """Nominal and fitted weights side by side (rows = dimensions)."""
        cols = {"nominal": self.base.weights.as_dict(),
                **{m: (w if w is not None else {d: np.nan for d in DIMENSIONS}) for m, w in self.fitted_weights.items()}}
        return pd.DataFrame(cols).reindex(list(DIMENSIONS)).rename_axis("dimension")

    def cv_table(self) -> pd.DataFrame:
        """Per method: in-sample kappa, cross-validated kappa (mean, SD, pooled), folds defined."""
        t = self.cv.summary.copy()
        t.insert(0, "kappa_in_sample", [self.in_sample_kappa.get(m, np.nan) for m in t.index])
        return t

    def to_json(self) -> dict[str, Any]:
        def num(x: Any) -> Any:
            return None if x is None or (isinstance(x, float) and math.isnan(x)) else round(float(x), 6)

        def wdict(w: Mapping[str, float] | None) -> dict[str, float] | None:
            return None if w is None else {d: round(float(w[d]), 6) for d in DIMENSIONS}

        cv_kappa = {}
        for m, row in self.cv.summary.iterrows():
            per = self.cv.per_fold.loc[self.cv.per_fold["method"] == m].sort_values("fold")["kappa"]
            cv_kappa[m] = {"mean": num(row["kappa_mean"]), "sd": num(row["kappa_sd"]),
                           "pooled": num(row["kappa_pooled"]), "per_fold": [num(k) for k in per],
                           "n_defined": int(row["n_defined"])}
        ordf, lsq = self.ordinal, self.least_squares
        return {
            "n": self.n, "n_folds": self.n_folds, "seed": self.seed, "n_unlabelled": self.n_unlabelled,
            "labels_note": self.note, "do_not_adopt": DO_NOT_ADOPT,
            "base_rubric": {"name": self.base.name, "rubric_id": self.base.id},
            "targets": {k: float(v) for k, v in self.targets.items()},
            "nominal_weights": wdict(self.base.weights.as_dict()),
            "fitted_weights": {m: wdict(w) for m, w in self.fitted_weights.items()},
            "cv_kappa": cv_kappa,
            "in_sample_kappa": {m: num(k) for m, k in self.in_sample_kappa.items()},
            "least_squares": {"rmse": num(lsq.rmse), "rmse_nominal": num(lsq.rmse_base), "n_capped": lsq.n_capped,
                              "converged": lsq.converged, "method": lsq.method, "grid_step": lsq.grid_step,
                              "rmse_grid": num(lsq.rmse_grid), "min_observed_weight": lsq.min_observed_weight,
                              "proposal_rejected": self.proposals_rejected.get("least_squares")},
            "ordinal": {"coefficients": {d: num(v) for d, v in ordf.coefficients.items()},
                        "thresholds": {k: num(v) for k, v in ordf.thresholds.items()},
                        "negative": ordf.negative, "dropped": ordf.dropped, "n": ordf.n,
                        "n_excluded_capped": ordf.n_excluded_capped, "converged": ordf.converged,
                        "separation_suspected": ordf.separation_suspected, "warnings": ordf.warnings,
                        "proposal_rejected": self.proposals_rejected.get("ordinal")},
            "fabricated_10_10_10_0": [{"rubric": r["rubric"], "name": r["name"], "rubric_id": r["rubric_id"],
                                       "score": num(r["score"]), "band": r["band"]}
                                      for r in self.fabricated.to_dict("records")],
            "proposals": {m: {"name": p.name, "rubric_id": p.id, "extends": p.extends, "weights": p.weights}
                          for m, p in self.proposals.items()},
        }


#: The packaged candidate rubrics a study on ``axon-v1`` compares by default: a faithfulness cap at 49
#: (``poor``) and at 79 (``partial``), the two forms of "an unfaithful answer cannot be good".
DEFAULT_REFERENCES = ("axon-v1-faithcap", "axon-v1-faithpartial")


def recalibration_study(data: LabelledSegments, base: Rubric | None = None, *, n_folds: int = 5, seed: int = 0,
                        references: Mapping[str, Rubric] | None = None, apply_caps: bool = True,
                        exclude_capped: bool = True, constructed: bool = True,
                        provenance: str | None = None) -> RecalibrationStudy:
    """Both fits on all labelled segments, cross-validated kappas on shared seeded folds, the proposals and
    the (10,10,10,0) table.

    ``references``: unfitted rubrics to compare on the same folds and in the (10,10,10,0) table (default:
    the packaged candidates :data:`DEFAULT_REFERENCES` when ``base`` is ``axon-v1``). The fitted
    rubrics of the in-sample kappa and the (10,10,10,0) table are the proposals themselves (weights rounded
    to 4 decimals, names ``<base>-refit-least-squares`` / ``<base>-refit-ordinal``), so the ids shown are
    the ids of the files; the cross-validation refits unrounded weights fold by fold. ``constructed`` puts
    :data:`DO_NOT_ADOPT` at the head of each proposal; ``provenance`` (e.g. the source run and labels
    file) is added to its comment. Nothing is written.
    """
    base = base or Rubric.default()
    if references is None:
        references = ({name: Rubric.packaged(name) for name in DEFAULT_REFERENCES}
                      if base.id == Rubric.default().id else {})
    lsq = fit_least_squares(data, base, apply_caps=apply_caps)
    ordf = fit_ordinal(data, base, exclude_capped=exclude_capped)
    cv = cross_validate(data, base, n_folds=n_folds, seed=seed, references=references, apply_caps=apply_caps,
                        exclude_capped=exclude_capped)
    kappa_cv = cv.summary["kappa_mean"]
    proposals: dict[str, Proposal] = {}
    rejected: dict[str, str] = {}
    for method, weights in (("least_squares", lsq.weights), ("ordinal", ordf.weights)):
        if weights is None:
            continue
        lines = [f"{DO_NOT_ADOPT}." if constructed else "",
                 f"Fitted by {method} (axon_eval.stats.recalibration) to {data.n} labelled segments.",
                 provenance or "",
                 f"Cross-validated kappa {kappa_cv[method]:.3f} against nominal {kappa_cv['nominal']:.3f} "
                 f"({n_folds} folds, seed {seed})."]
        try:
            proposals[method] = propose_rubric(weights, base, name=f"{base.name}-refit-{method.replace('_', '-')}",
                                               comment="\n".join(x for x in lines if x), data=data)
        except ValueError as exc:  # weights that leave a labelled segment unscorable: reported, not proposed
            rejected[method] = str(exc)
    fitted = {m: p.rubric for m, p in proposals.items()}
    in_sample = {"nominal": band_kappa(data, base),
                 **{m: (band_kappa(data, fitted[m]) if m in fitted else float("nan")) for m in METHODS},
                 **{m: band_kappa(data, r) for m, r in references.items()}}
    table = fabricated_answer_table({"nominal": base, **fitted, **references})
    return RecalibrationStudy(n=data.n, n_folds=n_folds, seed=seed, base=base, targets=dict(data.targets),
                              least_squares=lsq, ordinal=ordf, cv=cv, in_sample_kappa=in_sample,
                              fabricated=table, proposals=proposals, n_unlabelled=data.n_unlabelled,
                              proposals_rejected=rejected)


__all__ = [
    "DO_NOT_ADOPT", "FABRICATED_SUBSCORES", "LabelledSegments", "LeastSquaresFit", "OrdinalFit", "CrossValidation",
    "Proposal", "RecalibrationStudy", "band_kappa", "band_targets", "cross_validate", "cv_folds",
    "fabricated_answer_table", "fit_least_squares", "fit_ordinal", "labelled_segments", "ordinal_design",
    "predicted_scores", "propose_rubric", "recalibration_study", "round_weights", "write_proposal",
    "ALWAYS_OBSERVED", "LSQ_GRID_STEP", "MIN_OBSERVED_WEIGHT", "simplex_grid", "unscorable_segments",
]
