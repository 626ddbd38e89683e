"""Human labels applied to decisions: the corrected difference of two runs and a run's corrected figures.

The statistics are pure (:mod:`axon_eval.stats.difference`, :mod:`axon_eval.stats.estimates`); this
module reads what they need from run folders and labels files, so that ``compare``, ``gate`` and the API
share one path:

* :func:`run_labels` reads a labels file (a constructed labels CSV, an imported labels CSV, or a
  labelling pack folder with its ``design.json``) against one run, with every bad row reported, and
  refuses a file it cannot use (:class:`~axon_eval.calibration.labelling.LabelsFileError`);
* :func:`corrected_comparison` gives the human-corrected difference B - A of the headline figures of a
  :class:`~axon_eval.runs.compare.RunComparison` (paired on the comparison's key, or independent);
* :func:`corrected_headlines` gives one run's PPI++ intervals for ``gate --corrected``, refusing a
  calibration record that is stale for the run or cannot be checked.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ..rubric import Rubric
from ..runs.load import Run, load_run
from ..stats.calibration_record import CalibrationRecord, staleness
from ..stats.difference import corrected_differences
from ..stats.estimates import corrected_study, human_values
from ..stats.intervals import CONFIDENCE, N_BOOT, SEED, headline_segments
from . import labelling


class StaleCalibrationError(ValueError):
    """A calibration record that does not apply to the run (another judge, prompt or rubric)."""


@dataclass(frozen=True)
class RunLabels:
    """A run's labels: the tidy per-rater ``labels``, the per-segment ``human`` values (scored by the
    run's rubric), the ``design`` weights of a labelling pack (``None``: a simple random sample), the
    ``problems`` found (bad rows, left out) and whether the labels are ``constructed`` (not human)."""

    path: Path
    labels: pd.DataFrame
    human: pd.DataFrame
    design: pd.DataFrame | None
    constructed: bool
    problems: tuple[str, ...] = field(default_factory=tuple)

    def notes(self) -> list[str]:
        out = [f"{self.path.name}: {p}" for p in self.problems]
        if self.constructed:
            out.append(f"{self.path.name}: CONSTRUCTED labels, not human: the correction tests the machinery, "
                       "not the judge against people")
        return out


def _rubric(run: Run) -> Rubric:
    return Rubric.model_validate(run.manifest.rubric) if run.manifest.rubric else Rubric.default()


def run_labels(run: Run | str | Path, labels: str | Path, *, seed: int = SEED) -> RunLabels:
    """Read ``labels`` for ``run``. A folder is a labelling pack: its newest ``*.imported.csv`` (else its
    sheet) and ``design.json`` (design weights ``1/pi``: every design, uniform, stratified or active, and
    every batch). A labels file carrying an ``inclusion_probability`` column gives the weights ``1/pi``
    itself; one without it (a pack's sheet, which carries the rater's columns only) takes them from the
    ``design.json`` beside it. A missing file is a ``FileNotFoundError`` naming it.

    A labels file that cannot be decided on raises one
    :class:`~axon_eval.calibration.labelling.LabelsFileError` (a ``ValueError``; one line naming the file
    and what was expected): empty, not UTF-8 text ("not a UTF-8 CSV labels sheet"), a header without the
    sheet's columns (the expected ones are read from :data:`~axon_eval.calibration.labelling.SHEET_COLUMNS`
    and ``axon_eval.labels.LABEL_COLUMNS``; a semicolon-separated save is said to be one), no usable
    row (the count of bad rows and the first reason), duplicate (segment, rater) rows, or no label on a
    judged segment of this run. Some bad rows among good ones are left out and named in ``problems``."""
    r = run if isinstance(run, Run) else load_run(run)
    path = Path(labels)
    if not path.exists():
        raise FileNotFoundError(f"labels file {path} does not exist")
    design = None
    if path.is_dir():
        design_file = path / labelling.DESIGN_FILE
        if design_file.is_file():
            design = labelling.design_frame(json.loads(design_file.read_text(encoding="utf-8")))[["segment_id", "weight"]]
        imported = sorted(path.glob("*.imported.csv"))
        if not imported and not (path / labelling.SHEET_FILE).is_file():
            raise labelling.LabelsFileError(f"{path}: a folder without imported labels (*.imported.csv) or a "
                                            f"{labelling.SHEET_FILE}; expected a labelling pack folder or a labels file")
        path = imported[-1] if imported else path / labelling.SHEET_FILE
    tidy, problems, constructed = labelling.read_human_labels(path, labelling.known_from_results(r.results), seed=seed)
    column = labelling.INCLUSION_COLUMN
    if design is None and column in tidy.columns and len(tidy) and tidy[column].notna().all():
        pi = tidy.groupby("segment_id")[column].first().astype(float)
        design = pd.DataFrame({"segment_id": pi.index, "weight": 1.0 / pi.to_numpy()})
    elif design is None and not constructed and (path.parent / labelling.DESIGN_FILE).is_file():
        # a pack's sheet read directly: its probabilities are in the pack's design, never in the sheet
        design = labelling.design_frame(path.parent / labelling.DESIGN_FILE)[["segment_id", "weight"]]
    human = human_values(tidy, r.results, _rubric(r))
    if human.empty:
        example = ", ".join(sorted(map(str, tidy["segment_id"].unique()))[:3])
        such = f" (segments such as {example})" if example else ""
        raise labelling.LabelsFileError(f"{path}: none of its {len(tidy)} label row(s){such} is on a judged segment "
                                        f"of run {r.run_dir.name}; expected labels of this run's segments")
    return RunLabels(path, tidy, human, design, constructed, tuple(str(p) for p in problems))


def corrected_comparison(comparison: Any, labels_a: RunLabels, labels_b: RunLabels, *, design: str = "paired",
                         confidence: float | None = None) -> pd.DataFrame:
    """The human-corrected difference B - A of the mean score and each band's share
    (:func:`axon_eval.stats.difference.corrected_differences`) for a
    :class:`~axon_eval.runs.compare.RunComparison`: paired on its ``pair_by`` key, or ``independent``
    (different traffic). ``attrs["notes"]`` carries the labels' notes and says whether the labels' design
    weights ``1/pi`` were applied (a labelling pack's ``design.json`` or an ``inclusion_probability``
    column) or the labels were treated as a simple random sample."""
    run_a, run_b = load_run(comparison.run_a), load_run(comparison.run_b)
    seg_a = headline_segments(run_a.results, _rubric(run_a))
    seg_b = headline_segments(run_b.results, _rubric(run_b))

    def weights(lab: RunLabels) -> pd.Series | None:
        if lab.design is None:
            return None
        d = lab.design.drop_duplicates("segment_id")
        return pd.Series(d["weight"].astype(float).to_numpy(), index=d["segment_id"].astype(str))

    out = corrected_differences(seg_a, seg_b, labels_a.human, labels_b.human, design=design,
                                pair_by=comparison.pair_by,
                                confidence=comparison.confidence if confidence is None else confidence,
                                weights_a=weights(labels_a), weights_b=weights(labels_b),
                                same_pack=Path(labels_a.path).resolve() == Path(labels_b.path).resolve())
    notes = list(out.attrs.get("notes", []))
    for side, lab in (("A", labels_a), ("B", labels_b)):
        notes.extend(f"{side}: {n}" for n in lab.notes())
        notes.append(f"{side}: " + ("the labels' design weights (1 / inclusion probability) are applied"
                                    if lab.design is not None else
                                    "the labels' inclusion probabilities are unknown (no design.json, no "
                                    "inclusion_probability column): they are treated as a simple random sample"))
    out.attrs["notes"] = list(dict.fromkeys(notes))
    return out


def check_calibration(record: CalibrationRecord | None, run: Run) -> list[str]:
    """The reasons ``record`` cannot vouch for ``run`` (empty when it is current). A stale record raises
    :class:`StaleCalibrationError` naming every difference."""
    if record is None:
        return []
    stale = staleness(record, run.manifest)
    if stale:
        raise StaleCalibrationError("; ".join(stale) + f" (run {run.run_dir.name}); run study 05 on this judge "
                                    "and rubric, or gate without --corrected")
    return []


def corrected_headlines(run: Run | str | Path, labels: RunLabels, *, calibration: CalibrationRecord | None = None,
                        confidence: float = CONFIDENCE, n_boot: int = N_BOOT, seed: int | None = SEED
                        ) -> pd.DataFrame:
    """One run's headline figures as PPI++ intervals (``figure``, ``estimate``, ``lo``, ``hi``,
    ``method``, ``n``, ``note``) for a corrected gate; a stale ``calibration`` is refused
    (:func:`check_calibration`). Figures the labels cannot correct (``share capped``) are absent."""
    r = run if isinstance(run, Run) else load_run(run)
    check_calibration(calibration, r)
    study = corrected_study(r.results, labels.labels, rubric=_rubric(r), design=labels.design,
                            calibration=calibration, manifest=r.manifest, labels_constructed=labels.constructed,
                            n_boot=n_boot, seed=seed, confidence=confidence)
    if study.corrected is None:
        raise StaleCalibrationError(study.withheld)
    table = study.corrected
    # the method is the interval's own (Student-t below the small-sample rule's effective n, else normal),
    # and every row carries the SIMULATED coverage of that interval at its n into the gate's outputs
    out = pd.DataFrame({"figure": table["figure"], "estimate": table["ppi_estimate"], "lo": table["ppi_lo"],
                        "hi": table["ppi_hi"],
                        "method": table["ppi_method"].astype(str) + " (" + table["design"].astype(str) + ")",
                        "n": table["n_labelled"], "note": table["note"],
                        "coverage_note": table["coverage_note"].fillna("").astype(str),
                        "simulated_coverage": table["simulated_coverage"], "kind": table["kind"]})
    out.attrs["notes"] = [*labels.notes(), *study.notes]
    return out
