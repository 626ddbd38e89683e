"""Study 09: every headline figure with its interval, and corrected by the human labels.

:func:`corrected_study` puts the pieces together for one run:

* **naive**: every headline figure of the run with its interval and n
  (:func:`axon_eval.stats.intervals.headline_table`: cluster bootstrap over turns for means, Wilson
  for shares of independent units);
* **judge only / labels only / PPI** side by side
  (:func:`axon_eval.stats.ppi.corrected_estimates`), with the effective number of labels PPI was worth;
  the judge-only figure is the run's own headline and carries its one interval, the naive (clustered) one
  (:func:`with_headline_intervals`), so a headline reads the same here as in the report, notebook 01
  and ``trend``;
  a stratified labelling sample is weighted by its design weights ``N_h / n_h`` (weighted PPI++);
* **full labels**: when every judged segment has a label (the constructed labels are a census), the
  labels-only mean over all of them, the value the estimates from the subset are aiming at;
* **calibration**: the record study 05 wrote (:mod:`axon_eval.stats.calibration_record`), whether it
  is stale for this run (judge or rubric differs) and whether comparative claims are allowed
  (:func:`~axon_eval.stats.calibration_record.calibration_status`). With a stale record no corrected
  figures are given (the labels grade a different judge or rubric) and the record says why. A record
  given without the run's manifest cannot be checked: it allows no claim, and the claims sentence says
  it was not checked.

The human values of a labelled segment are its raters' subscores scored by the rubric with the
segment's own cap facts (:func:`axon_eval.stats.agreement.score_human_labels`), averaged over raters:
``score`` is the mean of the raters' scores, ``band`` the band of those scores (ordinal median over
raters, a tie to the worse band; like for like with the judge's band), each dimension the raters' mean.
``share capped`` has no human value (caps follow from trajectory facts) and is not corrected.

Pure: frames and mappings in, a frozen record out; the notebook reads and writes the files.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..rubric import DIMENSIONS
from .agreement import consensus, score_human_labels
from .calibration_record import NOT_ALLOWED, CalibrationRecord, calibration_status, claims_verdict, staleness
from .intervals import CONFIDENCE, HEADLINE_FIGURES, INTERVAL_COVERS, N_BOOT, SEED, figure_values, headline_table, \
    headline_segments
from .ppi import PPI_COVERS, WEIGHTED_DESIGN, corrected_estimates, simulated_coverage_at

STUDY = "09_corrected_estimates"


def human_values(labels: pd.DataFrame, results_df: pd.DataFrame, rubric: Any = None) -> pd.DataFrame:
    """One row per labelled and judged segment: ``segment_id``, ``score``, ``band``, the four dimensions
    (raters averaged; see the module docstring) and ``n_raters``. Label rows of segments the run did not
    judge are left out (the caller counts them)."""
    scored = score_human_labels(labels, results_df, rubric)
    if scored.empty:
        return pd.DataFrame(columns=["segment_id", "score", "band", *DIMENSIONS, "n_raters"])
    cons = consensus(scored).rename(columns={"human_score": "score", "human_score_band": "band"})
    dims = scored.assign(**{d: pd.to_numeric(scored[d], errors="coerce").astype(float) for d in DIMENSIONS}) \
        .groupby("segment_id")[list(DIMENSIONS)].mean()
    out = cons[["segment_id", "score", "band", "n_raters"]].merge(dims, left_on="segment_id", right_index=True)
    return out[["segment_id", "score", "band", *DIMENSIONS, "n_raters"]].reset_index(drop=True)


def full_label_values(human: pd.DataFrame) -> dict[str, float]:
    """The mean of each correctable headline figure over every labelled segment (unweighted): with a
    census of labels, the human-standard value the estimates aim at."""
    out = {}
    for figure, _ in HEADLINE_FIGURES:
        if figure == "share capped":
            continue
        v = figure_values(human, figure)
        v = v[np.isfinite(v)]
        out[figure] = float(v.mean()) if len(v) else math.nan
    return out


def _f(x: Any) -> float | None:
    return None if x is None or pd.isna(x) or not math.isfinite(float(x)) else float(x)


@dataclass(frozen=True)
class CorrectedStudy:
    """What study 09 reports for one run (see the module docstring). ``corrected`` is ``None`` when the
    calibration record is stale (``withheld`` says why)."""

    naive: pd.DataFrame
    corrected: pd.DataFrame | None
    full_labels: dict[str, float] | None
    calibration: CalibrationRecord | None
    stale: list[str]
    claims_allowed: bool
    claims_text: str
    n_labelled: int
    n_unlabelled: int
    design: str
    labels_constructed: bool
    seed: int | None
    n_boot: int
    confidence: float
    withheld: str = ""
    notes: list[str] = field(default_factory=list)

    def _per_figure(self, prefix: str) -> dict[str, dict[str, Any]]:
        if self.corrected is None:
            return {}
        return {r["figure"]: {"estimate": _f(r[f"{prefix}_estimate"]), "interval": [_f(r[f"{prefix}_lo"]), _f(r[f"{prefix}_hi"])]}
                for _, r in self.corrected.iterrows()}

    def to_json(self) -> dict[str, Any]:
        """The ``study.json`` payload: ``n_labelled``, ``n_unlabelled``, ``naive``, ``labels_only``, ``ppi``
        (per figure ``estimate`` and ``interval`` ``[lo, hi]``; shares as fractions), ``effective_labels``,
        ``simulated_coverage`` (per figure: the SIMULATED coverage of its PPI interval at the nearest simulated
        n, the sentence quoting it, and the interval's method), ``calibration`` (``record``, ``stale``,
        ``reasons``), ``claims_allowed`` and details."""
        naive = {r.figure: {"estimate": _f(r.estimate), "interval": [_f(r.lo), _f(r.hi)], "n": int(r.n),
                            "n_clusters": int(r.n_clusters), "method": r.method, "note": r.note}
                 for r in self.naive.itertuples(index=False)}
        eff = {} if self.corrected is None else {r.figure: _f(r.effective_labels) for r in self.corrected.itertuples(index=False)}
        lam = {} if self.corrected is None else {r.figure: _f(r.lam) for r in self.corrected.itertuples(index=False)}
        coverage = {} if self.corrected is None else {
            r.figure: {"ppi": _f(r.simulated_coverage), "note": r.coverage_note, "method": r.ppi_method}
            for r in self.corrected.itertuples(index=False) if r.coverage_note}
        return {
            "n_labelled": self.n_labelled, "n_unlabelled": self.n_unlabelled,
            "naive": naive, "judge_only": self._per_figure("judge"), "labels_only": self._per_figure("labels"),
            "ppi": self._per_figure("ppi"), "effective_labels": eff, "lam": lam, "simulated_coverage": coverage,
            "full_labels": None if self.full_labels is None else {k: _f(v) for k, v in self.full_labels.items()},
            "calibration": {"record": None if self.calibration is None else self.calibration.to_json(),
                            "stale": bool(self.stale) if self.calibration is not None else None,
                            "reasons": list(self.stale)},
            "claims_allowed": self.claims_allowed, "claims": self.claims_text,
            "corrected_withheld": self.withheld or None, "design": self.design,
            "labels_constructed": self.labels_constructed, "seed": self.seed, "n_boot": self.n_boot,
            "confidence": self.confidence, "interval_covers": INTERVAL_COVERS, "ppi_covers": PPI_COVERS,
            "notes": list(self.notes),
        }


def with_headline_intervals(corrected: pd.DataFrame, naive: pd.DataFrame) -> pd.DataFrame:
    """``corrected`` (:func:`~axon_eval.stats.ppi.corrected_estimates`) with each figure's judge-only
    bounds replaced by the run's headline interval for that figure (``naive``:
    :func:`~axon_eval.stats.intervals.headline_table`, turns resampled), so the judge's figure has one
    interval everywhere; the estimate is the same figure over the same judged segments."""
    out = corrected.copy()
    by = naive.set_index("figure")
    known = out["figure"].isin(by.index)
    for end in ("lo", "hi"):
        out.loc[known, f"judge_{end}"] = out.loc[known, "figure"].map(by[end]).astype(float)
    return out


def corrected_study(results_df: pd.DataFrame, labels: pd.DataFrame, *, rubric: Any = None,
                    labelled_ids: Sequence[str] | None = None, design: pd.DataFrame | None = None,
                    calibration: CalibrationRecord | None = None, manifest: Mapping[str, Any] | Any | None = None,
                    labels_constructed: bool = False, n_boot: int = N_BOOT, seed: int | None = SEED,
                    confidence: float = CONFIDENCE) -> CorrectedStudy:
    """Study 09 for one run (see the module docstring).

    ``labels``: tidy per-rater labels (``labelling.import_labels`` / ``labels_from_constructed`` output).
    ``labelled_ids``: keep only these segments' labels as the labelled subset (the rest count as
    unlabelled); ``None`` keeps every label. When the labels cover every judged segment before this
    selection, their full-label values are reported beside the estimates. ``design``: ``segment_id`` and
    ``weight`` (``N_h / n_h``) of a stratified sample, and optionally its ``stratum`` (the ``lam`` rule of
    :func:`~axon_eval.stats.ppi.ppi_rule` counts labels per stratum): weighted PPI++; ``None``: a simple
    random sample.
    ``calibration`` and ``manifest`` (the run's, for :func:`staleness`): a stale record withholds the
    corrected figures; a record without a manifest cannot be checked and allows no claim
    (:func:`~axon_eval.stats.calibration_record.calibration_status`).
    """
    naive = headline_table(results_df, rubric, n_boot=n_boot, seed=seed, confidence=confidence)
    judge_all = headline_segments(results_df, rubric)
    human_all = human_values(labels, results_df, rubric)
    judged_ids = set(judge_all["segment_id"])
    notes = []
    outside = sorted(set(labels["segment_id"]) - judged_ids)
    if outside:
        notes.append(f"{len(outside)} labelled segment(s) not judged in this run are left out (e.g. {outside[:3]})")
    census = judged_ids <= set(human_all["segment_id"])
    full = full_label_values(human_all) if census else None
    human = human_all
    if labelled_ids is not None:
        wanted = set(labelled_ids)
        unknown = sorted(wanted - set(human_all["segment_id"]))
        if unknown:
            notes.append(f"{len(unknown)} segment(s) chosen for labelling have no label and are left out (e.g. {unknown[:3]})")
        human = human_all[human_all["segment_id"].isin(wanted)].reset_index(drop=True)
    weight_col = stratum_col = None
    if design is not None:
        missing = sorted(set(human["segment_id"]) - set(design["segment_id"]))
        if missing:
            raise ValueError(f"{len(missing)} labelled segment(s) are not in the design (e.g. {missing[:3]}); "
                             "the design must list every labelled segment with its weight")
        human = human.merge(design[["segment_id", *(c for c in ("weight", "stratum") if c in design.columns)]],
                            on="segment_id", how="left")
        weight_col = "weight"
        stratum_col = "stratum" if "stratum" in design.columns else None

    stale = staleness(calibration, manifest) if calibration is not None and manifest is not None else []
    if calibration is not None and manifest is None:
        notes.append("no run manifest given: the calibration record could not be checked for staleness")
    claims_allowed, reasons = calibration_status(calibration, manifest)
    claims_text = claims_verdict(calibration, [])[1] if claims_allowed else f"{NOT_ALLOWED}: " + "; ".join(reasons)
    table = with_headline_intervals(corrected_estimates(judge_all, human, weight_col=weight_col,
                                                        stratum_col=stratum_col, confidence=confidence), naive)
    notes.extend(table.attrs.get("notes", []))
    design_text = table.attrs["design"]
    n_lab = len(set(human["segment_id"]) & judged_ids)
    n_unl = len(judged_ids) - n_lab  # judged segments without a label (the imputed term may cover all judged)
    withheld = ""
    corrected: pd.DataFrame | None = table
    if stale:
        withheld = "no corrected figures: " + "; ".join(stale)
        corrected = None
    return CorrectedStudy(naive=naive, corrected=corrected, full_labels=full, calibration=calibration, stale=stale,
                          claims_allowed=claims_allowed, claims_text=claims_text, n_labelled=n_lab,
                          n_unlabelled=n_unl, design=design_text, labels_constructed=labels_constructed,
                          seed=seed, n_boot=n_boot, confidence=confidence, withheld=withheld, notes=notes)


def side_by_side(study: CorrectedStudy) -> pd.DataFrame:
    """A table for people: one row per corrected figure with the judge-only figure and its headline
    (clustered) interval, labels only, PPI and the full-label value, as text (shares as percentages), the
    effective labels, and the SIMULATED coverage of the PPI interval at the nearest simulated n."""
    from ..display import fmt_estimate, fmt_value

    weighted = study.design == WEIGHTED_DESIGN

    if study.corrected is None:
        return pd.DataFrame({"figure": [], "note": []})
    naive = study.naive.set_index("figure")
    rows = []
    for r in study.corrected.itertuples(index=False):
        share = r.kind == "share"

        def iv(est: float, lo: float, hi: float) -> str:
            if not math.isfinite(est):
                return "-"
            if not (math.isfinite(lo) and math.isfinite(hi)):
                return fmt_value(est, share=share)
            return fmt_estimate(est, lo, hi, share=share)

        nv = naive.loc[r.figure]
        full = None if study.full_labels is None else study.full_labels.get(r.figure)
        rows.append({
            "figure": r.figure,
            "judge only (the run's headline, turns resampled)": iv(nv["estimate"], nv["lo"], nv["hi"]),
            "labels only": iv(r.labels_estimate, r.labels_lo, r.labels_hi),
            "PPI++": iv(r.ppi_estimate, r.ppi_lo, r.ppi_hi),
            "all labels": "-" if full is None or not math.isfinite(full) else fmt_value(full, share=share),
            "n labelled": r.n_labelled,
            "effective labels": "-" if not math.isfinite(r.effective_labels) else f"{r.effective_labels:.0f}",
            "PPI coverage (SIMULATED)": "-" if not math.isfinite(r.simulated_coverage) else
            f"{r.simulated_coverage:.0%} at n = {simulated_coverage_at(r.n_labelled, r.kind, weighted).n_labelled}",
            "note": r.note,
        })
    return pd.DataFrame(rows)
