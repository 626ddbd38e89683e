"""Human labelling of a run's segments: a stratified sample, a labelling pack, and validated import.

The technical reference asks for a stratified sample (by band, surface and client) double-scored by
people before any comparative claim. This module is the edge where people act:

* :func:`sample_for_labelling` -- a proportional stratified sample of a run's judged segments with a
  minimum per stratum; each sampled segment carries its design weight ``N_h / n_h`` (segments of its
  stratum in the run / sampled from it). Pure: a :class:`LabellingSample`.
* :func:`draw_design_sample` -- a sample under one of the designs of
  :mod:`axon_eval.stats.label_budget`: ``uniform``, ``stratified`` (Neyman allocation from the labels so
  far, else proportional) or ``active`` (inclusion probabilities proportional to an uncertainty signal,
  :func:`load_signal`), drawn by randomised systematic sampling; and, given an earlier pack's design, the
  next batch of a batch-sequential design. Every segment carries its inclusion probability ``pi`` and its
  design weight (``1/pi``; over several batches ``sum_b (n_b/n) / pi^(b)``); ``probabilities.csv`` keeps
  every segment's probability in every batch.
* :func:`write_labelling_pack` -- the pack a rater works from: ``sheet.csv`` (``segment_id``, the four
  dimensions, ``verdict``, ``rater``, ``comment``, all but the id blank), one static HTML page per
  segment (question, steps, SQL, the rows the judge saw with the full row count, the answer) and
  ``index.html``. The pages show **no** judge output of any kind -- no score, subscore, band, verdict
  or explanation -- so raters are not anchored. ``design.json`` keeps the strata, weights, inclusion
  probabilities, batches, seed and source run beside the sheet; a sheet of an explicit design has an
  ``inclusion_probability`` column after the rater's columns (not to be filled). :func:`append_batch`
  adds the next batch of a batch-sequential design to a pack (``sheet-<batch>.csv``).
* :func:`import_labels` -- reads filled sheets, validating every row; every bad row is reported with
  its line number and what was expected, none is dropped silently. Several raters per segment are
  allowed (one row per segment and rater). A sheet's ``inclusion_probability`` column (or, by
  :func:`with_inclusion`, the pack's ``design.json``) is kept beside the labels, so the imported file
  still says how each segment was drawn; labels whose inclusion probabilities are unknown are read as a
  simple random sample, and the readers say so.
* :func:`labels_from_constructed` -- the offline stand-in: the bundled sample's CONSTRUCTED labels
  (``data/turns/labels.csv``, derived from seeded defects) turned into per-segment, per-rater labels of
  the same shape as imported human labels. They are not human judgements and every page says so.

CLI: ``python -m axon_eval sample-for-labelling`` and ``import-labels`` (:mod:`axon_eval.cli.labelling`).
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..labels import LABEL_COLUMNS, LABELS_NOTE, LabelError, load_labels
from ..rubric import BANDS, DIMENSIONS
from ..stats.agreement import DEFAULT_STRATA, HUMAN_LABEL_COLUMNS, one_row_per_segment

#: Columns of the labelling sheet, in order.
SHEET_COLUMNS: tuple[str, ...] = ("segment_id", *DIMENSIONS, "verdict", "rater", "comment")
SHEET_FILE = "sheet.csv"
DESIGN_FILE = "design.json"
#: Every segment's inclusion probability in every batch of a pack drawn under an explicit design.
PROBABILITIES_FILE = "probabilities.csv"
#: The pack's imported labels (all batches): what ``import-labels`` writes by default.
IMPORTED_FILE = "sheet.imported.csv"
#: The sheet column carrying each segment's inclusion probability (kept on import; not for raters).
INCLUSION_COLUMN = "inclusion_probability"
INDEX_FILE = "index.html"
PAGES_DIR = "segments"
#: What a labels frame built from the constructed labels says about itself (shown on every page).
CONSTRUCTED_NOTE = ("CONSTRUCTED labels, not human: derived from the fixture generator's seeded defects "
                    "(data/turns/labels.csv); they stand in for people so the study runs offline")

_INTEGER = re.compile(r"^\s*\d+\s*$")


# =============================================================================================
# Sampling
# =============================================================================================
@dataclass
class LabellingSample:
    """A stratified sample of a run's segments.

    ``segments``: one row per sampled segment (``segment_id``, the stratifier columns, ``stratum``,
    ``weight`` = N_h / n_h, ``answer_captured``). ``strata``: one row per stratum (``population`` N_h,
    ``allocated`` n_h, ``weight``). ``n`` is the size drawn (it can differ from ``n_requested`` by
    rounding and by the minimum per stratum).
    """

    segments: pd.DataFrame
    strata: pd.DataFrame
    stratify: tuple[str, ...]
    seed: int
    n_requested: int
    min_per_stratum: int
    population: int
    source_run: str | None = None
    judge_id: str | None = None
    rubric_id: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def n(self) -> int:
        return len(self.segments)

    def design(self) -> dict[str, Any]:
        """The content of ``design.json``."""
        if "design" in self.extra:
            return self.extra["design"]
        return {
            "method": ("proportional stratified random sample without replacement: n_h = min(N_h, "
                       "max(min_per_stratum, round(n * N_h / N))); within a stratum a seeded shuffle "
                       "(pandas DataFrameGroupBy.sample) keeps the first n_h; design weight = N_h / n_h"),
            "source_run": self.source_run, "judge_id": self.judge_id, "rubric_id": self.rubric_id,
            "stratify": list(self.stratify), "seed": self.seed, "n_requested": self.n_requested,
            "n": self.n, "population": self.population, "min_per_stratum": self.min_per_stratum,
            "strata": [{"stratum": s, **{k: (int(v) if k != "weight" else float(v)) for k, v in row.items()}}
                       for s, row in self.strata[["population", "allocated", "weight"]].iterrows()],
            "segments": [{"segment_id": r.segment_id, "stratum": r.stratum, "weight": float(r.weight),
                          INCLUSION_COLUMN: 1.0 / float(r.weight),
                          "answer_captured": bool(r.answer_captured), "page": page_name(r.segment_id)}
                         for r in self.segments.itertuples()],
        }


def _results_of(run: Any) -> tuple[pd.DataFrame, str | None, str | None, str | None]:
    """(results, source run folder, judge id, rubric id) of a Run, a run folder or a results frame."""
    if isinstance(run, pd.DataFrame):
        return run, None, None, None
    if isinstance(run, str | Path):
        from ..runs import load_run

        run = load_run(run)
    m = run.manifest
    return run.results, str(run.run_dir), m.judge_id, m.rubric_id


def sample_for_labelling(run: Any, n: int = 60, stratify: Sequence[str] = DEFAULT_STRATA, seed: int = 0,
                         min_per_stratum: int = 1) -> LabellingSample:
    """A proportional stratified sample of ``n`` judged segments of ``run`` (a Run, a run folder or a
    results frame), with at least ``min_per_stratum`` from every stratum that has that many.

    Strata are the combinations of ``stratify`` columns of the results (``band`` is the scorer's band
    under the run's judge). Allocation ``n_h = min(N_h, max(min_per_stratum, round(n * N_h / N)))``;
    within each stratum a seeded ``DataFrameGroupBy.sample(frac=1)`` shuffle keeps the first ``n_h``.
    The same run, ``n``, strata and ``seed`` give the same sample.
    """
    results, source, judge_id, rubric_id = _results_of(run)
    stratify = tuple(stratify)
    if n < 1 or min_per_stratum < 0:
        raise ValueError(f"need n >= 1 and min_per_stratum >= 0 (got n={n}, min_per_stratum={min_per_stratum})")
    res = one_row_per_segment(results)
    missing = [s for s in stratify if s not in res.columns]
    if missing:
        raise ValueError(f"cannot stratify by {missing}: the results have no such column "
                         f"(e.g. band, surface, client, region)")
    if res.empty:
        raise ValueError("the run has no judged segment to sample")
    res = res.copy()
    res["answer_captured"] = (res["answer_captured"].astype(bool) if "answer_captured" in res.columns
                              else res["answer_faithfulness"].notna())
    res["stratum"] = res[list(stratify)].astype(str).agg("/".join, axis=1) if stratify else "all"
    population = res.groupby("stratum").size().rename("population")
    allocated = (population * n / len(res)).round().astype(int).clip(lower=min_per_stratum)
    allocated = np.minimum(allocated, population).rename("allocated")
    shuffled = res.sort_values("segment_id").groupby("stratum", group_keys=False).sample(frac=1.0, random_state=seed)
    keep = shuffled.groupby("stratum").cumcount() < shuffled["stratum"].map(allocated)
    picked = shuffled[keep].copy()
    strata = pd.concat([population, allocated], axis=1)
    strata = strata[strata["allocated"] > 0]
    strata["weight"] = strata["population"] / strata["allocated"]
    picked["weight"] = picked["stratum"].map(strata["weight"])
    cols = ["segment_id", *stratify, "stratum", "weight", "answer_captured"]
    picked = picked[cols].sort_values("segment_id").reset_index(drop=True)
    if judge_id is None and "judge_id" in res.columns and res["judge_id"].nunique() == 1:
        judge_id = str(res["judge_id"].iloc[0])
    return LabellingSample(segments=picked, strata=strata.rename_axis("stratum"), stratify=stratify, seed=int(seed),
                           n_requested=int(n), min_per_stratum=int(min_per_stratum), population=len(res),
                           source_run=source, judge_id=judge_id, rubric_id=rubric_id)


def design_frame(design: Mapping[str, Any] | str | Path) -> pd.DataFrame:
    """``segment_id``, ``stratum``, ``weight`` (``1/pi``), ``answer_captured``, ``page`` and
    ``inclusion_probability`` from a ``design.json`` (dict or path); a pack written before inclusion
    probabilities were recorded gets ``1 / weight``."""
    if not isinstance(design, Mapping):
        design = json.loads(Path(design).read_text(encoding="utf-8"))
    out = pd.DataFrame(design["segments"], columns=["segment_id", "stratum", "weight", "answer_captured", "page",
                                                    INCLUSION_COLUMN])
    missing = out[INCLUSION_COLUMN].isna()
    out.loc[missing, INCLUSION_COLUMN] = 1.0 / pd.to_numeric(out.loc[missing, "weight"])
    return out


# =============================================================================================
# Sampling designs (uniform, stratified, active) and batches
# =============================================================================================
#: The explicit labelling designs (:mod:`axon_eval.stats.label_budget`).
DESIGN_NAMES: tuple[str, ...] = ("uniform", "stratified", "active")
#: What a design's inclusion probabilities mean, in one sentence (written into design.json).
INCLUSION_NOTE = ("inclusion_probability: the chance this segment had of being drawn in its batch (randomised "
                  "systematic sampling, exactly n per batch); weight: the design weight the corrected figures use, "
                  "1 / inclusion_probability for one batch, sum over the batches that drew it of (n_b / n) / "
                  "pi_b over several (axon_eval.stats.label_budget)")


@dataclass(frozen=True)
class Signal:
    """An uncertainty signal per judged segment (``values``: a Series by ``segment_id``, ``NaN`` where
    unknown) and where it came from (``spec``, ``description``)."""

    values: pd.Series
    spec: str
    description: str


def judged_segments(run: Any) -> pd.DataFrame:
    """One row per judged segment of a run (a Run, a run folder or a results frame) with ``answer_captured``."""
    results, _source, _judge, _rubric = _results_of(run)
    res = one_row_per_segment(results).copy()
    res["answer_captured"] = (res["answer_captured"].astype(bool) if "answer_captured" in res.columns
                              else res["answer_faithfulness"].notna())
    return res.sort_values("segment_id").reset_index(drop=True)


def pilot_residuals(run: Any, labels: pd.DataFrame, design: pd.DataFrame | None = None) -> pd.DataFrame:
    """The labels so far against the run's judge: ``segment_id``, ``human`` (the raters' mean score by the
    run's rubric), ``judge`` (the run's score), ``residual`` (human - judge) and ``weight`` (the labels'
    design weight from ``design``, ``NaN`` when unknown)."""
    from ..rubric import Rubric
    from ..runs import Run, load_run
    from ..stats.estimates import human_values

    r = run if isinstance(run, Run) else load_run(run)
    rubric = Rubric.model_validate(r.manifest.rubric) if r.manifest.rubric else Rubric.default()
    human = human_values(labels, r.results, rubric)
    judged = judged_segments(r)[["segment_id", "score"]]
    out = human[["segment_id", "score"]].rename(columns={"score": "human"}).merge(
        judged.rename(columns={"score": "judge"}), on="segment_id")
    out["residual"] = out["human"] - out["judge"]
    out["weight"] = np.nan
    if design is not None and len(design):
        out["weight"] = out["segment_id"].map(design.set_index("segment_id")["weight"])
    return out.dropna(subset=["residual"]).reset_index(drop=True)


def load_signal(spec: str, run: Any, *, pilot: pd.DataFrame | None = None, root: str | Path | None = None) -> Signal:
    """The uncertainty signal named by ``spec`` for every judged segment of ``run``:

    * ``panel:RUN[,RUN...]`` -- the spread (SD) of the panel members' scores, one member per run folder
      (study 10's member runs; :func:`axon_eval.stats.label_budget.panel_spread`);
    * ``repeat:RUN`` -- the repeat-sample SD ``score_sd`` of a repeated run (study 03);
    * ``column:NAME`` -- a numeric column of the run's own results (e.g. ``disagreement``);
    * ``model`` -- a model of ``|label - judge|`` fitted on the labels so far (``pilot``:
      :func:`pilot_residuals`; cells: the judge's band; :func:`axon_eval.stats.label_budget.error_model`);
    * a CSV file with the columns ``segment_id`` and ``signal``.

    A segment the source does not cover gets ``NaN`` (the mean signal when sampling)."""
    from ..stats.label_budget import MIN_MODEL_LABELS, error_model, panel_spread

    seg = judged_segments(run)
    ids = seg["segment_id"]
    base = Path(root) if root is not None else Path.cwd()

    def folder(text: str) -> Path:
        path = Path(text)
        return path if path.is_absolute() else base / path

    if spec == "model":
        if pilot is None or pilot.empty:
            values = pd.Series(1.0, index=ids)
            return Signal(values, spec, "a model of |label - judge| needs labels: none yet, so the signal is flat "
                                        "(uniform); label this batch and draw the next")
        w = pilot["weight"].to_numpy(dtype=np.float64)
        w = None if not np.isfinite(w).all() else w
        band = seg.set_index("segment_id")["band"].astype(str)
        fitted = error_model(band.to_numpy(), band.reindex(pilot["segment_id"]).to_numpy(), pilot["residual"], w)
        note = (f"root mean square of (label - judge) per judge band over {len(pilot)} labels, shrunk toward the "
                f"overall one" if len(pilot) >= MIN_MODEL_LABELS else
                f"only {len(pilot)} labels (fewer than {MIN_MODEL_LABELS}): the model is flat (uniform)")
        return Signal(pd.Series(fitted, index=band.index).reindex(ids), spec, note)
    if spec.startswith("panel:"):
        from ..runs.members import members_from_runs
        from ..scoring import score_frame

        folders = [folder(x.strip()) for x in spec.removeprefix("panel:").split(",") if x.strip()]
        if len(folders) < 2:
            raise ValueError("a panel signal needs at least two member runs: panel:RUN_A,RUN_B[,...]")
        members = members_from_runs(folders, names=[f"m{i}" for i in range(len(folders))])
        scored = score_frame(members.reset_index(drop=True))
        spread = panel_spread(scored.assign(score=scored["score"].astype(float)))
        return Signal(spread.reindex(ids), spec, f"SD of {len(folders)} panel members' scores per segment")
    if spec.startswith("repeat:"):
        from ..runs import load_run
        from ..summaries import segment_table

        rep = load_run(folder(spec.removeprefix("repeat:")))
        table = segment_table(rep.results).set_index("segment_id")
        if table["score_sd"].notna().sum() == 0:
            raise ValueError(f"{spec}: the run has no repeat-sample SD (score_sd): evaluate with repeat(<judge>, n)")
        return Signal(table["score_sd"].reindex(ids), spec, "repeat-sample SD of the judge's score (score_sd)")
    if spec.startswith("column:"):
        name = spec.removeprefix("column:")
        if name not in seg.columns:
            raise ValueError(f"{spec}: the run's results have no column {name!r}")
        values = pd.to_numeric(seg[name], errors="coerce")
        return Signal(pd.Series(values.to_numpy(dtype=np.float64), index=ids), spec, f"the results column {name}")
    path = folder(spec)
    if path.suffix == ".csv" and path.is_file():
        frame = pd.read_csv(path)
        if not {"segment_id", "signal"} <= set(frame.columns):
            raise ValueError(f"{path}: a signal file needs the columns segment_id and signal")
        values = pd.to_numeric(frame.set_index("segment_id")["signal"], errors="coerce")
        return Signal(values.reindex(ids), spec, f"signal file {path.name}")
    raise ValueError(f"unknown signal {spec!r}: expected panel:RUN,RUN, repeat:RUN, column:NAME, model or a CSV file")


def _strata_of(seg: pd.DataFrame, stratify: Sequence[str]) -> pd.Series:
    missing = [c for c in stratify if c not in seg.columns]
    if missing:
        raise ValueError(f"cannot stratify by {missing}: the results have no such column (e.g. band, surface, client)")
    return seg[list(stratify)].astype(str).agg("/".join, axis=1) if stratify else pd.Series("all", index=seg.index)


def draw_design_sample(run: Any, design: str, budget: int, *, stratify: Sequence[str] = ("band",),
                       signal: Signal | None = None, seed: int = 0, pilot: pd.DataFrame | None = None,
                       previous: Mapping[str, Any] | None = None, mix: float | None = None,
                       floor: float | None = None) -> LabellingSample:
    """A sample of ``budget`` judged segments of ``run`` under ``design`` (``uniform``, ``stratified``,
    ``active``), drawn by randomised systematic sampling with seed ``seed``
    (:func:`axon_eval.stats.label_budget.systematic_sample`).

    * ``stratified``: strata are the ``stratify`` columns; the Neyman allocation uses the SD of
      ``label - judge`` per stratum from ``pilot`` (:func:`pilot_residuals`; a stratum with fewer than two
      labels takes the pooled SD), else the proportional allocation; at least two per stratum.
    * ``active``: inclusion probabilities from ``signal`` (:func:`load_signal`), floored and mixed with
      uniform (:func:`axon_eval.stats.label_budget.active_probabilities`).
    * ``previous``: the ``design.json`` of an earlier batch of this pack: the sample is its next batch,
      drawn over every judged segment; segments drawn again keep their labels, and every segment's weight
      counts every batch (:func:`axon_eval.stats.label_budget.batch_weights`).

    The sample's ``design()`` is the pack's whole ``design.json``; ``extra["probabilities"]`` holds this
    batch's probability for every judged segment."""
    from ..stats import label_budget as lb

    if design not in DESIGN_NAMES:
        raise ValueError(f"unknown design {design!r}; expected one of {list(DESIGN_NAMES)}")
    results, source, judge_id, rubric_id = _results_of(run)
    seg = judged_segments(results)
    if seg.empty:
        raise ValueError("the run has no judged segment to sample")
    big_n = len(seg)
    stratify = tuple(stratify)
    strata = _strata_of(seg, stratify) if design == "stratified" else pd.Series(design, index=seg.index)
    if not isinstance(budget, int | np.integer) or not 1 <= budget <= big_n:
        raise ValueError(f"the budget must be an integer from 1 to the run's {big_n} judged segments, got {budget!r}")
    mix = lb.MIX_UNIFORM if mix is None else float(mix)
    floor = lb.SIGNAL_FLOOR if floor is None else float(floor)
    rng = np.random.default_rng(seed)
    note = ""
    alloc_table = None
    if design == "uniform":
        pi = lb.uniform_probabilities(big_n, int(budget))
        mask = lb.systematic_sample(pi, rng)
        method = "uniform: a simple random sample of n segments, pi = n / N"
    elif design == "stratified":
        pop = strata.value_counts().sort_index()
        if pilot is not None and len(pilot):
            res = pilot.set_index("segment_id")["residual"]
            by = strata.set_axis(seg["segment_id"]).reindex(res.index)
            pooled = float(res.std(ddof=1)) if len(res) > 1 else 1.0
            sd = [float(res[by == h].std(ddof=1)) if (by == h).sum() >= 2 else pooled for h in pop.index]
            how = f"Neyman allocation with the SD of (label - judge) per stratum from {len(res)} labels so far"
        else:
            sd = [1.0] * len(pop)
            how = "proportional allocation (no labels yet to estimate the strata's SDs for a Neyman allocation)"
        alloc = lb.neyman_allocation(pop.to_numpy(), sd, int(budget))
        alloc_table = pd.DataFrame({"population": pop.to_numpy(), "allocated": alloc, "sd": sd}, index=pop.index)
        pi = lb.stratified_probabilities(strata.to_numpy(), dict(zip(pop.index, alloc.tolist(), strict=True)))
        mask = lb.systematic_sample(pi, rng, strata=strata.to_numpy())
        method = f"stratified by {', '.join(stratify) or '(none)'}: {how}; at least {lb.MIN_PER_STRATUM} per stratum"
    else:
        if signal is None:
            raise ValueError("the active design needs an uncertainty signal (--signal)")
        values = signal.values.reindex(seg["segment_id"]).to_numpy(dtype=np.float64)
        pi = lb.active_probabilities(values, int(budget), mix=mix, floor=floor)
        mask = lb.systematic_sample(pi, rng)
        method = (f"active: pi proportional to the signal ({signal.description}), floored at {floor:g} x its mean "
                  f"and mixed with uniform sampling ({mix:g} of the budget), capped at 1")
        note = (f"with a signal unrelated to the judge's error this design's variance is "
                f"{lb.useless_signal_inflation(pi):.2f} times uniform sampling's")
    drawn = seg.loc[mask, "segment_id"].tolist()
    prev_segments = {} if previous is None else {d["segment_id"]: dict(d) for d in previous["segments"]}
    for entry in prev_segments.values():
        if "probabilities" not in entry:  # a pack drawn before inclusion probabilities were recorded: batch 1
            entry["probabilities"] = {"1": float(entry.get(INCLUSION_COLUMN) or 1.0 / float(entry["weight"]))}
    batches = [] if previous is None else [dict(b) for b in previous.get("batches") or [
        {"batch": 1, "design": "stratified", "n": len(previous["segments"]), "seed": previous.get("seed"),
         "method": previous.get("method", ""), "sheet": SHEET_FILE}]]
    batch_no = len(batches) + 1
    probs = pd.DataFrame({"segment_id": seg["segment_id"], "batch": batch_no, "inclusion_probability": pi})
    sheet = SHEET_FILE if batch_no == 1 else f"sheet-{batch_no}.csv"
    batch = {"batch": batch_no, "design": design, "n": int(budget), "seed": int(seed), "method": method,
             "signal": None if signal is None else signal.spec, "signal_note": None if signal is None else signal.description,
             "mix_uniform": mix if design == "active" else None, "signal_floor": floor if design == "active" else None,
             "note": note, "sheet": sheet, "probabilities_file": PROBABILITIES_FILE}
    pi_of = dict(zip(seg["segment_id"], pi, strict=True))
    new = [sid for sid in drawn if sid not in prev_segments]
    batch["drawn"] = len(drawn)
    batch["new_segments"] = new
    batches.append(batch)
    captured = dict(zip(seg["segment_id"], seg["answer_captured"], strict=True))
    stratum_of = dict(zip(seg["segment_id"], strata, strict=True))
    for sid in drawn:
        entry = prev_segments.setdefault(sid, {"segment_id": sid, "stratum": stratum_of[sid],
                                               "answer_captured": bool(captured.get(sid, True)),
                                               "page": page_name(sid), "sheet": sheet, "probabilities": {}})
        entry["probabilities"] = {**entry.get("probabilities", {}), str(batch_no): float(pi_of[sid])}
    total = sum(b["n"] for b in batches)
    for entry in prev_segments.values():
        w = sum((b["n"] / total) / entry["probabilities"][str(b["batch"])] for b in batches
                if str(b["batch"]) in entry["probabilities"])
        entry["weight"] = float(w)
        entry[INCLUSION_COLUMN] = float(1.0 / w)
    segments = sorted(prev_segments.values(), key=lambda e: e["segment_id"])
    if len(batches) > 1:  # one group for the lam rule of study 09 (axon_eval.stats.ppi.ppi_rule)
        for e in segments:
            e["stratum"] = "batches"
    content = {
        "method": method if len(batches) == 1 else f"batch-sequential ({len(batches)} batches): " + "; ".join(
            f"batch {b['batch']}: {b['method']}" for b in batches),
        "design": design if len(batches) == 1 else "batch-sequential " + "+".join(b["design"] for b in batches),
        "inclusion": INCLUSION_NOTE, "source_run": source, "judge_id": judge_id, "rubric_id": rubric_id,
        "stratify": list(stratify) if design == "stratified" else [], "seed": int(seed) if previous is None else previous.get("seed"),
        "n_requested": total, "n": len(segments), "population": big_n, "min_per_stratum": 2 if design == "stratified" else 0,
        "strata": ([] if alloc_table is None else
                   [{"stratum": h, "population": int(r.population), "allocated": int(r.allocated), "sd": float(r.sd),
                     "weight": float(r.population / r.allocated)} for h, r in alloc_table.iterrows()]),
        "batches": batches, "segments": segments,
    }
    frame = pd.DataFrame({"segment_id": [e["segment_id"] for e in segments],
                          "stratum": [e["stratum"] for e in segments],
                          "weight": [e["weight"] for e in segments],
                          INCLUSION_COLUMN: [e["probabilities"].get(str(batch_no), e[INCLUSION_COLUMN]) for e in segments],
                          "answer_captured": [e["answer_captured"] for e in segments]})
    strata_frame = (alloc_table.assign(weight=alloc_table["population"] / alloc_table["allocated"])
                    [["population", "allocated", "weight"]].rename_axis("stratum") if alloc_table is not None else
                    pd.DataFrame({"population": [big_n], "allocated": [len(drawn)], "weight": [big_n / len(drawn)]},
                                 index=pd.Index([design], name="stratum")))
    return LabellingSample(segments=frame, strata=strata_frame, stratify=stratify if design == "stratified" else (),
                           seed=int(seed), n_requested=int(budget), min_per_stratum=2 if design == "stratified" else 0,
                           population=big_n, source_run=source, judge_id=judge_id, rubric_id=rubric_id,
                           extra={"design": content, "probabilities": probs, "drawn": drawn})


def with_inclusion(labels: pd.DataFrame, design: Mapping[str, Any] | str | Path | None) -> pd.DataFrame:
    """``labels`` with each row's ``inclusion_probability`` and design ``weight`` from a pack's
    ``design.json`` (``NaN`` for segments the design does not list, or when there is no design)."""
    out = labels.copy()
    if design is None:
        out[INCLUSION_COLUMN] = out.get(INCLUSION_COLUMN, np.nan)
        return out
    d = design_frame(design).set_index("segment_id")
    out["weight"] = out["segment_id"].map(d["weight"])
    out[INCLUSION_COLUMN] = out["segment_id"].map(d[INCLUSION_COLUMN])
    return out


# =============================================================================================
# The labelling pack
# =============================================================================================
def page_name(segment_id: str) -> str:
    """File name of a segment's page (``eu-0003#2`` -> ``eu-0003_2.html``)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", segment_id) + ".html"


_CSS = """body{font-family:system-ui,sans-serif;max-width:1100px;margin:1.5em auto;padding:0 1em;line-height:1.45}
pre{background:#f7f7f7;border:1px solid #ddd;padding:.5em;white-space:pre-wrap}
table{border-collapse:collapse;font-size:.92em;margin:.4em 0}th,td{border:1px solid #ccc;padding:.15em .45em;text-align:left}
th{background:#f3f3f3}.muted{color:#666;font-size:.9em}.note{background:#eef4ff;border:1px solid #9ab;padding:.5em}
nav{margin:.6em 0}"""

_GUIDE = """<h2>How to label</h2>
<p>Give each of the four dimensions an integer from 0 to 10 in <code>sheet.csv</code>, then a verdict
(<code>good</code>, <code>partial</code> or <code>poor</code>), your rater id and, if useful, a comment.</p>
<ul>
<li><b>intent_understood</b>: did the assistant work on the question that was asked (entity, period, measure)?</li>
<li><b>sql_quality</b>: is the SQL a sound way to get that answer from these tables?</li>
<li><b>result_relevance</b>: do the rows it got contain what the answer needs?</li>
<li><b>answer_faithfulness</b>: does the answer state only what those rows support? Leave it <b>blank</b>
when no answer was captured (the page says so); otherwise it is required.</li>
</ul>
<p class="muted">Judge from the evidence on the page alone. The rows are what the assistant saw; when fewer
rows are shown than the statement returned, the full count is given.</p>"""


def _page(title: str, body: str) -> str:
    from ..reporting.report import esc

    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{esc(title)}</title>"
            f"<style>{_CSS}</style></head><body>{body}</body></html>")


def render_segment_page(entry: Mapping[str, Any], *, prev_page: str | None = None,
                        next_page: str | None = None) -> str:
    """One segment's labelling page from its audit entry: question, context, steps (SQL, rows with the
    full count), answer. Nothing the judge produced is read: no verdict, score, band or explanation."""
    from ..reporting.report import esc, render_steps

    sid = str(entry["segment_id"])
    nav = ["<a href='../index.html'>index</a>"]
    if prev_page:
        nav.append(f"<a href='{esc(prev_page)}'>&larr; previous</a>")
    if next_page:
        nav.append(f"<a href='{esc(next_page)}'>next &rarr;</a>")
    answer = entry.get("answer")
    parts = [
        f"<nav>{' | '.join(nav)}</nav>",
        f"<h1>Segment {esc(sid)}</h1>",
        f"<p class='muted'>turn {esc(entry.get('turn_id'))}, part {esc(entry.get('segment_index'))} of "
        f"{esc(entry.get('n_segments'))}; {esc(entry.get('surface'))} / {esc(entry.get('client'))}, captured "
        f"{esc(entry.get('captured_at'))}</p>",
        f"<h2>Question</h2><pre>{esc(entry.get('question'))}</pre>",
        "<h2>What the assistant did</h2>", render_steps(entry.get("steps") or []),
        "<h2>Answer</h2>",
        (f"<pre>{esc(answer)}</pre>" if answer is not None else
         "<p class='note'>No answer was captured (the client's own AI composed it): leave "
         "<code>answer_faithfulness</code> blank for this segment.</p>"),
        f"<p class='muted'>Label this segment in the row <code>{esc(sid)}</code> of <code>sheet.csv</code>.</p>",
        f"<nav>{' | '.join(nav)}</nav>",
    ]
    return _page(f"segment {sid}", "\n".join(parts))


def _audit_entries(run: Any, wanted: set[str]) -> dict[str, dict[str, Any]]:
    """The evidence of the ``wanted`` segments from the run's audit, streamed (no judge output kept)."""
    entries: dict[str, dict[str, Any]] = {}
    for entry in run.iter_audit():
        sid = entry.get("segment_id")
        if sid in wanted and sid not in entries:
            entries[sid] = {k: entry.get(k) for k in ("segment_id", "turn_id", "segment_index", "n_segments",
                                                        "captured_at", "surface", "client", "question", "steps",
                                                        "answer")}
    missing = sorted(wanted - set(entries))
    if missing:
        raise ValueError(f"the run's audit has no evidence for sampled segment(s) {missing[:5]}")
    return entries


def _write_pages(out: Path, ids: Sequence[str], entries: Mapping[str, Mapping[str, Any]]) -> None:
    from ..runs import atomic_write_text

    (out / PAGES_DIR).mkdir(parents=True, exist_ok=True)
    for i, sid in enumerate(ids):
        page = render_segment_page(entries[sid], prev_page=page_name(ids[i - 1]) if i else None,
                                   next_page=page_name(ids[i + 1]) if i + 1 < len(ids) else None)
        atomic_write_text(out / PAGES_DIR / page_name(sid), page)


def _write_index(out: Path, sample: LabellingSample, ids: Sequence[str], questions: Mapping[str, Any],
                 answered: Mapping[str, bool], sheets: Mapping[str, str] | None = None) -> None:
    from ..reporting.report import esc
    from ..runs import atomic_write_text

    rows = "".join(
        f"<tr><td>{k}</td><td><a href='{PAGES_DIR}/{esc(page_name(sid))}'>{esc(sid)}</a></td>"
        f"<td>{esc(' '.join(str(questions.get(sid) or '').split())[:140])}</td>"
        f"<td>{'yes' if answered.get(sid) else 'no: leave faithfulness blank'}</td>"
        + (f"<td>{esc(sheets.get(sid, ''))}</td>" if sheets else "") + "</tr>"
        for k, sid in enumerate(ids, start=1))
    how = sample.extra.get("design", {}).get("design")
    kind = f"{how.capitalize()} sample" if how else "Stratified sample"
    index = (f"<h1>Labelling pack: {len(ids)} segments</h1>"
             f"<p class='muted'>{kind} (seed {sample.seed}) of run "
             f"<code>{esc(Path(sample.source_run).name if sample.source_run else '?')}</code>. Fill in "
             f"<code>{SHEET_FILE}</code>{' (and each later batch sheet)' if sheets else ''}, one row per segment; "
             "several raters each fill their own copy. Leave the <code>inclusion_probability</code> column, "
             "where there is one, as it is.</p>"
             + _GUIDE + "<h2>Segments</h2><table><thead><tr><th>#</th><th>segment</th><th>question</th>"
             "<th>answer captured</th>" + ("<th>sheet</th>" if sheets else "") + f"</tr></thead><tbody>{rows}</tbody></table>")
    atomic_write_text(out / INDEX_FILE, _page("labelling pack", index))


def _write_sheet(path: Path, ids: Sequence[str], inclusion: Mapping[str, float] | None) -> None:
    from ..runs import atomic_write_text

    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([*SHEET_COLUMNS, *([INCLUSION_COLUMN] if inclusion is not None else [])])
    for sid in ids:
        extra = [f"{inclusion[sid]:.10g}"] if inclusion is not None else []
        writer.writerow([sid, *([""] * (len(SHEET_COLUMNS) - 1)), *extra])
    atomic_write_text(path, buf.getvalue())


def _write_probabilities(out: Path, frame: pd.DataFrame | None, *, append: bool = False) -> None:
    """``probabilities.csv``: ``segment_id``, ``batch``, ``inclusion_probability`` of every judged segment."""
    from ..runs import atomic_write_text

    if frame is None:
        return
    path = out / PROBABILITIES_FILE
    if append and path.is_file():
        frame = pd.concat([pd.read_csv(path), frame], ignore_index=True)
    atomic_write_text(path, frame.to_csv(index=False))


def write_labelling_pack(sample: LabellingSample, run: Any, out_dir: str | Path) -> Path:
    """Write the labelling pack of ``sample`` into ``out_dir`` (created; refused when it already holds a
    sheet, so a pack being filled is never overwritten). ``run`` (a Run or run folder) supplies the
    evidence from its audit, streamed. A sample of an explicit design (:func:`draw_design_sample`) also
    gets the ``inclusion_probability`` column in its sheet and ``probabilities.csv``. Returns ``out_dir``."""
    from ..runs import Run, load_run, write_json

    out = Path(out_dir)
    if (out / SHEET_FILE).exists() or (out / DESIGN_FILE).exists():
        raise FileExistsError(f"{out} already holds a labelling pack; choose a new --out folder")
    run = run if isinstance(run, Run) else load_run(run)
    ids = list(sample.segments["segment_id"])
    entries = _audit_entries(run, set(ids))
    _write_pages(out, ids, entries)
    _write_index(out, sample, ids, {k: v.get("question") for k, v in entries.items()},
                 {k: v.get("answer") is not None for k, v in entries.items()})
    explicit = "design" in sample.extra
    inclusion = dict(zip(sample.segments["segment_id"], sample.segments[INCLUSION_COLUMN], strict=True)) \
        if explicit else None
    _write_sheet(out / SHEET_FILE, ids, inclusion)
    _write_probabilities(out, sample.extra.get("probabilities"))
    write_json(out / DESIGN_FILE, sample.design())
    return out


def append_batch(sample: LabellingSample, run: Any, pack_dir: str | Path) -> Path:
    """Add the next batch of a batch-sequential design (:func:`draw_design_sample` with ``previous``) to
    the pack in ``pack_dir``: pages for its new segments, ``sheet-<batch>.csv`` listing them (segments
    drawn again keep their earlier labels and are not listed), ``index.html`` over every batch,
    ``design.json`` rewritten (every segment's weight now counts every batch) and the batch's
    probabilities appended to ``probabilities.csv``. Returns the new sheet's path."""
    from ..runs import Run, load_run, write_json

    out = Path(pack_dir)
    design = sample.design()
    batch = design["batches"][-1]
    sheet = out / batch["sheet"]
    if sheet.exists():
        raise FileExistsError(f"{sheet} already exists: this batch was drawn already")
    if not (out / DESIGN_FILE).is_file():
        raise FileNotFoundError(f"{out} holds no {DESIGN_FILE}: draw the first batch with write_labelling_pack")
    run = run if isinstance(run, Run) else load_run(run)
    new_ids = list(batch["new_segments"])
    all_ids = [seg["segment_id"] for seg in design["segments"]]
    entries = _audit_entries(run, set(all_ids))
    _write_pages(out, all_ids, entries)
    sheets = {seg["segment_id"]: seg.get("sheet", SHEET_FILE) for seg in design["segments"]}
    _write_index(out, sample, all_ids, {k: v.get("question") for k, v in entries.items()},
                 {k: v.get("answer") is not None for k, v in entries.items()}, sheets)
    probs = sample.segments.set_index("segment_id")[INCLUSION_COLUMN]
    _write_sheet(sheet, new_ids, {sid: float(probs[sid]) for sid in new_ids})
    _write_probabilities(out, sample.extra.get("probabilities"), append=True)
    write_json(out / DESIGN_FILE, design)
    return sheet


# =============================================================================================
# Import
# =============================================================================================
@dataclass(frozen=True)
class LabelProblem:
    """One bad sheet row: file, line (1-based; the header is line 1), column, the value and what was expected."""

    file: str
    line: int
    column: str
    value: str
    expected: str
    segment_id: str = ""
    #: Where the row this one repeats is, as ``file:line``, when the problem is a duplicate segment and rater.
    duplicate_of: str = ""

    def __str__(self) -> str:
        sid = f" (segment {self.segment_id})" if self.segment_id else ""
        return f"{self.file}:{self.line}: {self.column}: expected {self.expected}, got {self.value!r}{sid}"


def _known(known_segment_ids: Mapping[str, bool] | Iterable[str] | None) -> tuple[set[str] | None, set[str] | None]:
    """(known ids, ids whose answer was captured) -- ``None`` where not known."""
    if known_segment_ids is None:
        return None, None
    if isinstance(known_segment_ids, Mapping):
        return set(known_segment_ids), {k for k, v in known_segment_ids.items() if v}
    return set(known_segment_ids), None


class LabelsFileError(LabelError):
    """A labels file that cannot be used at all: empty, not UTF-8 text, not a CSV with a labels sheet's
    columns, without a usable row, or with duplicate (segment, rater) rows. The message is one line naming
    the file and what was expected."""


def _sheet_expected() -> str:
    return f"a filled labelling sheet: a UTF-8 CSV file with the columns {list(SHEET_COLUMNS)}"


def sheet_text(path: str | Path) -> str:
    """The text of a filled sheet; :class:`LabelsFileError` naming the file when it is empty (or only blank
    lines) or not a text file (a NUL byte, or bytes that are not UTF-8: "not a UTF-8 CSV labels sheet"), so
    nothing is imported from it."""
    p = Path(path)
    data = p.read_bytes()
    if not data.strip():
        raise LabelsFileError(f"{p} is empty; expected {_sheet_expected()}")
    where = data.find(b"\x00")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        where = exc.start if where < 0 else min(where, exc.start)
    if where >= 0:
        raise LabelsFileError(f"{p}: not a UTF-8 CSV labels sheet (it is not a text file: byte 0x{data[where]:02x} "
                              f"at offset {where}); expected {_sheet_expected()}")
    return text


#: Separators a spreadsheet may save a "CSV" with instead of commas (a locale's list separator).
_OTHER_SEPARATORS: tuple[tuple[str, str], ...] = ((";", "semicolon"), ("\t", "tab"), ("|", "pipe"))


def labels_header(path: str | Path, *, constructed: bool = True) -> str:
    """What kind of labels file ``path`` is, from its header: ``"sheet"`` (a labelling sheet or imported
    labels: every column of :data:`SHEET_COLUMNS`) or, when ``constructed``, ``"constructed"`` (the
    ``<dimension>_min`` / ``_max`` ranges of ``axon_eval.labels.LABEL_COLUMNS``). Anything else is a
    :class:`LabelsFileError` naming the file, its header, the missing columns and the expected ones (a
    semicolon- or tab-separated save is said to be one); an empty or binary file is refused by
    :func:`sheet_text`."""
    p = Path(path)
    text = sheet_text(p)
    header = [h.strip() for h in next(csv.reader(io.StringIO(text)), [])]
    if all(c in header for c in SHEET_COLUMNS):
        return "sheet"
    if constructed and f"{DIMENSIONS[0]}_min" in header:
        return "constructed"
    first = text.lstrip().splitlines()[0] if text.strip() else ""
    hint = ""
    for sep, name in _OTHER_SEPARATORS:
        if "segment_id" in [c.strip().strip('"') for c in first.split(sep)]:
            hint = f" (the file is {name}-separated: save it as comma-separated CSV)"
            break
    shown = ",".join(header)
    shown = shown if len(shown) <= 80 else shown[:77] + "..."
    missing = [c for c in SHEET_COLUMNS if c not in header]
    expected = f"a labelling sheet or imported labels with the columns {list(SHEET_COLUMNS)}"
    if constructed:
        expected += f", or constructed labels with the columns {list(LABEL_COLUMNS)}"
    lacks = f"its header {shown!r} lacks {missing}" if len(missing) < len(SHEET_COLUMNS) else f"its header is {shown!r}"
    raise LabelsFileError(f"{p}: not a labels file{hint}: {lacks}; expected {expected}")


def refuse_unusable(path: str | Path, labels: pd.DataFrame, problems: Sequence[LabelProblem]) -> None:
    """Refuse, with :class:`LabelsFileError`, labels a reader must not decide on: duplicate (segment, rater)
    rows (which one is right is not known: the count and the first), or no usable row at all (the count of
    bad rows and the first reason; a file with only a header says so). Labels with some bad rows and some
    good ones pass: the bad rows are the reader's notes."""
    dups = [p for p in problems if p.duplicate_of]
    if dups:
        raise LabelsFileError(f"{path}: {len(dups)} duplicate (segment, rater) row(s), the first: {dups[0]}; a labels "
                              "file holds one row per segment and rater: import the sheets again with import-labels "
                              "(--replace lets the later file's row replace the earlier one)")
    if len(labels):
        return
    if problems:
        n = len({(p.file, p.line) for p in problems})
        raise LabelsFileError(f"{path}: no usable label row: {n} bad row(s), the first: {problems[0]}")
    raise LabelsFileError(f"{path}: no label rows (only a header); expected one row per segment and rater with the "
                          f"columns {list(SHEET_COLUMNS)}")


def import_labels(sheet: str | Path | Sequence[str | Path],
                  known_segment_ids: Mapping[str, bool] | Iterable[str] | None, *,
                  replace: bool = False) -> tuple[pd.DataFrame, list[LabelProblem]]:
    """Read and validate filled labelling sheet(s); returns ``(labels, problems)``.

    ``known_segment_ids``: a mapping ``segment_id -> answer captured`` (from ``design.json`` or a run's
    results: then a blank ``answer_faithfulness`` is accepted exactly where no answer was captured and
    required elsewhere), a plain collection of ids (faithfulness may then be blank anywhere), or
    ``None`` (ids not checked). Every row is checked: known non-empty ``segment_id``; the three required
    dimensions integers 0-10; ``answer_faithfulness`` an integer 0-10 or blank as above; ``verdict``
    good/partial/poor (case and spaces ignored); a non-empty ``rater``; one row per (segment, rater).
    A row left entirely blank is a problem too (fill it or delete it). Each problem names the file, the
    line and what was expected; rows with problems are left out of ``labels``, and nothing else is. An
    empty or binary file is refused before anything is read (:func:`sheet_text`: :class:`LabelsFileError`
    naming it).

    A (segment, rater) labelled twice is a problem of the later row naming the earlier one
    (``duplicate_of``); the earlier row is kept. With ``replace``, a row of a later sheet (later in
    ``sheet``) replaces the earlier sheet's row instead, and ``labels.attrs["replaced"]`` lists each
    replacement (``"earlier file:line -> later file:line"``); two rows of one sheet stay a problem.

    ``labels``: one row per segment and rater, columns :data:`HUMAN_LABEL_COLUMNS` (dimensions as pandas
    ``Int64``) plus ``source`` (``file:line``), and ``inclusion_probability`` when a sheet carries it.
    """
    sheets = [sheet] if isinstance(sheet, str | Path) else list(sheet)
    known, answered = _known(known_segment_ids)
    rows: list[dict[str, Any] | None] = []
    problems: list[LabelProblem] = []
    seen: dict[tuple[str, str], tuple[str, str, int]] = {}  # (segment, rater) -> (file, file:line, row index)
    replaced: list[str] = []
    for path in sheets:
        path = Path(path)
        name = str(path)
        text = sheet_text(path)
        reader = csv.reader(io.StringIO(text))
        try:
            header = [h.strip() for h in next(reader)]
        except StopIteration:
            problems.append(LabelProblem(name, 1, "header", "", f"the columns {list(SHEET_COLUMNS)}"))
            continue
        missing = [c for c in SHEET_COLUMNS if c not in header]
        if missing:
            problems.append(LabelProblem(name, 1, "header", ",".join(header),
                                         f"the columns {list(SHEET_COLUMNS)} (missing {missing})"))
            continue
        pos = {c: header.index(c) for c in SHEET_COLUMNS}
        for extra in ("source", INCLUSION_COLUMN):
            if extra in header:
                pos[extra] = header.index(extra)
        start = reader.line_num + 1
        for record in reader:
            line, start = start, reader.line_num + 1
            if not any(v.strip() for v in record):
                continue  # an empty line of the file (not a sheet row)
            cell = {c: (record[i].strip() if i < len(record) else "") for c, i in pos.items()}
            sid = cell["segment_id"]
            bad = []

            def problem(column: str, expected: str) -> None:
                bad.append(LabelProblem(name, line, column, cell.get(column, ""), expected, sid))  # noqa: B023

            if not any(cell[c] for c in (*DIMENSIONS, "verdict", "rater")):
                problem("*", "a labelled row (four subscores, verdict, rater) -- this row is blank; fill it or delete it")
                problems.extend(bad)
                continue
            if not sid:
                problem("segment_id", "a segment id of the sample")
            elif known is not None and sid not in known:
                problem("segment_id", "a segment id of the sample (this one is not in it)")
            values: dict[str, Any] = {}
            for d in DIMENSIONS:
                raw = cell[d]
                no_answer = answered is not None and sid in known and sid not in answered
                if d == "answer_faithfulness" and not raw and (answered is None or no_answer):
                    values[d] = pd.NA
                elif d == "answer_faithfulness" and no_answer:
                    problem(d, "blank: no answer was captured for this segment")
                elif not raw:
                    problem(d, "an integer 0-10 (required" + (": an answer was captured)" if d == "answer_faithfulness" else ")"))
                elif not _INTEGER.match(raw) or not 0 <= int(raw) <= 10:
                    problem(d, "an integer 0-10")
                else:
                    values[d] = int(raw)
            verdict = cell["verdict"].lower()
            if verdict not in BANDS:
                problem("verdict", f"one of {', '.join(BANDS)}")
            key = (sid, cell["rater"])
            earlier = seen.get(key) if sid else None
            if not cell["rater"]:
                problem("rater", "a non-empty rater id")
            elif earlier is not None and (not replace or earlier[0] == name):
                other = "" if earlier[0] == name else (
                    ", in another file; import-labels --replace lets the later file's row replace it")
                bad.append(LabelProblem(name, line, "rater", cell["rater"],
                                        f"one row per segment and rater (already labelled at {earlier[1]}{other})",
                                        sid, duplicate_of=earlier[1]))
            if bad:
                problems.extend(bad)
                continue
            if earlier is not None:  # replace: this later file's row replaces the earlier file's
                rows[earlier[2]] = None
                replaced.append(f"{earlier[1]} -> {name}:{line}")
            seen[key] = (name, f"{name}:{line}", len(rows))
            inclusion = pd.to_numeric(cell.get(INCLUSION_COLUMN) or np.nan, errors="coerce")
            rows.append({"segment_id": sid, "rater": cell["rater"], **values, "verdict": verdict,
                         "comment": cell["comment"], "source": cell.get("source") or f"{name}:{line}",
                         INCLUSION_COLUMN: float(inclusion) if 0 < inclusion <= 1 else np.nan})
    labels = pd.DataFrame([r for r in rows if r is not None], columns=[*HUMAN_LABEL_COLUMNS, "source", INCLUSION_COLUMN])
    if labels[INCLUSION_COLUMN].isna().all():
        labels = labels.drop(columns=[INCLUSION_COLUMN])
    for d in DIMENSIONS:
        labels[d] = pd.array(labels[d].tolist(), dtype="Int64")
    labels.attrs["replaced"] = replaced
    return labels, problems


def write_labels(labels: pd.DataFrame, path: str | Path) -> Path:
    """Write validated labels as CSV (same columns as a sheet plus ``source``, and the
    ``inclusion_probability`` and design ``weight`` when known), atomically."""
    from ..runs import atomic_write_text

    extra = [c for c in (INCLUSION_COLUMN, "weight") if c in labels.columns and labels[c].notna().any()]
    return atomic_write_text(path, labels[[*HUMAN_LABEL_COLUMNS, "source", *extra]].to_csv(index=False))


@dataclass(frozen=True)
class PackMerge:
    """A pack's labels after an import (:func:`merge_pack_labels`): ``labels``, the rows ``kept`` from the
    pack's other sheets, the ``problems`` (new rows repeating a kept row's (segment, rater)) and the kept
    rows ``replaced`` by new ones (with ``replace``)."""

    labels: pd.DataFrame
    kept: int
    problems: tuple[LabelProblem, ...] = ()
    replaced: int = 0


def _file_line(source: str) -> tuple[str, int]:
    name, _, line = str(source).rpartition(":")
    return (name, int(line)) if name and line.isdigit() else (str(source), 0)


def merge_pack_labels(new: pd.DataFrame, existing: str | Path, sheets: Sequence[str | Path], *,
                      replace: bool = False) -> PackMerge:
    """A pack's labels after importing ``sheets``: the rows of ``existing`` (the pack's imported labels)
    that came from other sheets, then ``new``. Importing a sheet again replaces its own earlier rows, so
    the pack keeps one labels file over all its batches and raters. A new row whose (segment, rater) a
    kept row of another sheet already labels (a corrected copy of a sheet) is a problem naming both files,
    and left out; with ``replace`` it replaces the kept row instead (the sheet imported now is the newer)."""
    path = Path(existing)
    if not path.is_file():
        return PackMerge(new, 0)
    old = pd.read_csv(path, dtype={"segment_id": str, "rater": str, "comment": str, "source": str})
    names = {Path(s).name for s in sheets}
    from_sheet = old["source"].astype(str).map(lambda v: Path(v.rsplit(":", 1)[0]).name).isin(names)
    kept = old[~from_sheet]
    if kept.empty:
        return PackMerge(new, 0)
    kept = kept.copy()
    for d in DIMENSIONS:
        kept[d] = pd.array(pd.to_numeric(kept[d], errors="coerce").round().astype("Int64"), dtype="Int64")
    key_kept = pd.MultiIndex.from_frame(kept[["segment_id", "rater"]].astype(str))
    key_new = pd.MultiIndex.from_frame(new[["segment_id", "rater"]].astype(str))
    clash_kept, clash_new = key_kept.isin(key_new), key_new.isin(key_kept)
    problems: list[LabelProblem] = []
    replaced = 0
    if replace:
        replaced = int(clash_kept.sum())
        kept = kept[~clash_kept]
    elif clash_new.any():
        earlier = dict(zip(key_kept, kept["source"].astype(str), strict=True))
        for row in new[clash_new].itertuples(index=False):
            file, line = _file_line(row.source)
            first = earlier[(str(row.segment_id), str(row.rater))]
            problems.append(LabelProblem(file, line, "rater", str(row.rater),
                                         f"one row per segment and rater (already labelled at {first}, imported "
                                         f"earlier into {path}; import-labels --replace lets this file's row "
                                         "replace it)", str(row.segment_id), duplicate_of=first))
        new = new[~clash_new]
    merged = pd.concat([kept, new], ignore_index=True) if len(kept) else new
    return PackMerge(merged, len(kept), tuple(problems), replaced)


# =============================================================================================
# The constructed stand-in
# =============================================================================================
def labels_from_constructed(constructed: pd.DataFrame | str | Path, *, raters: Sequence[str] = ("constructed-a", "constructed-b"),
                            seed: int = 0) -> pd.DataFrame:
    """Per-segment, per-rater labels shaped like :func:`import_labels` output, from the CONSTRUCTED labels.

    For each segment and each of ``raters``, every subscore is drawn uniformly (``numpy`` generator
    seeded by ``seed``) among the integers of the labelled ``[min, max]`` range, faithfulness blank where
    the range is null (no answer captured); the verdict is the labelled verdict. The raters therefore
    agree on verdicts by construction and differ on subscores within the ranges. These are NOT human
    judgements: the comment of every row and ``attrs["note"]`` say so.
    """
    lab = load_labels(constructed) if isinstance(constructed, str | Path) else constructed
    rng = np.random.default_rng(seed)
    rows = []
    for rater in raters:
        for r in lab.itertuples(index=False):
            row: dict[str, Any] = {"segment_id": r.segment_id, "rater": rater}
            for d in DIMENSIONS:
                lo, hi = getattr(r, f"{d}_min"), getattr(r, f"{d}_max")
                row[d] = pd.NA if pd.isna(lo) else int(rng.integers(int(lo), int(hi) + 1))
            row.update(verdict=r.verdict, comment=f"CONSTRUCTED (seeded defect {r.defect}), not human",
                       source="constructed")
            rows.append(row)
    out = pd.DataFrame(rows, columns=[*HUMAN_LABEL_COLUMNS, "source"])
    for d in DIMENSIONS:
        out[d] = pd.array(out[d].tolist(), dtype="Int64")
    out.attrs["note"] = f"{CONSTRUCTED_NOTE}; {LABELS_NOTE}"
    out.attrs["constructed"] = True
    return out


def read_human_labels(path: str | Path, known_segment_ids: Mapping[str, bool] | Iterable[str] | None = None, *,
                      seed: int = 0) -> tuple[pd.DataFrame, list[LabelProblem], bool]:
    """Labels for study 05 from ``path``: a constructed labels file (``*_min``/``*_max`` columns:
    converted by :func:`labels_from_constructed`) or a sheet / imported labels file (validated by
    :func:`import_labels`). Returns ``(labels, problems, constructed)``.

    A file that is not labels at all (empty, binary, other columns, a semicolon-separated save), one
    without a usable row, and one with duplicate (segment, rater) rows are refused with one
    :class:`LabelsFileError` naming the file and what was expected (:func:`labels_header`,
    :func:`refuse_unusable`); some bad rows among good ones are returned as ``problems``."""
    if labels_header(path) == "constructed":
        try:
            return labels_from_constructed(path, seed=seed), [], True
        except LabelError as exc:
            raise LabelsFileError(str(exc)) from exc
    labels, problems = import_labels(path, known_segment_ids)
    refuse_unusable(path, labels, problems)
    return labels, problems, False


def known_from_results(results: pd.DataFrame) -> dict[str, bool]:
    """``segment_id -> answer captured`` for the judged segments of a run's results."""
    res = one_row_per_segment(results, allow_mixed=True)
    captured = (res["answer_captured"].astype(bool) if "answer_captured" in res.columns
                else res["answer_faithfulness"].notna())
    return dict(zip(res["segment_id"], captured, strict=True))


def load_panel_labels(path: str | Path, known_segment_ids: Iterable[str] | None = None
                      ) -> tuple[pd.DataFrame, list[Any], bool]:
    """Labels for study 10 from ``path``: constructed labels (``<dimension>_min``/``_max`` columns, read by
    :func:`axon_eval.labels.load_labels`) or a labelling sheet / imported labels file (validated by
    :func:`import_labels`). Returns ``(labels, problems, constructed)``: either frame
    is what :func:`axon_eval.stats.panels.panel_labels` takes; ``problems`` are the sheet's rejected lines.
    A file that is not labels, has no usable row or holds duplicate (segment, rater) rows is refused as
    by :func:`read_human_labels`."""
    path = Path(path)
    if labels_header(path) == "constructed":
        try:
            return load_labels(path), [], True
        except LabelError as exc:
            raise LabelsFileError(str(exc)) from exc
    labels, problems = import_labels(path, known_segment_ids)
    refuse_unusable(path, labels, problems)
    return labels, list(problems), False


# =============================================================================================
# Planning labels for a run (the plan-labels verb)
# =============================================================================================
@dataclass(frozen=True)
class Pilot:
    """The labels so far for one run: the tidy ``labels``, the per-segment ``human`` values (scored by the
    run's rubric), their design ``weights`` (``1/pi`` by segment id, ``None`` when the inclusion
    probabilities are unknown), the pack's ``design`` (``design.json``, or ``None``) and ``notes``."""

    path: Path
    labels: pd.DataFrame
    human: pd.DataFrame
    weights: pd.Series | None
    design: dict[str, Any] | None
    notes: tuple[str, ...] = ()


def read_pilot(run: Any, labels: str | Path, *, seed: int = 0) -> Pilot:
    """The labels so far for ``run`` from ``labels``: a labelling pack folder (its ``design.json`` and
    imported labels), an imported labels CSV (its ``inclusion_probability`` column, else the
    ``design.json`` beside it) or a constructed labels file. Labels whose inclusion probabilities are
    unknown are read as a simple random sample, and ``notes`` says so."""
    from ..rubric import Rubric
    from ..runs import Run, load_run
    from ..stats.estimates import human_values

    r = run if isinstance(run, Run) else load_run(run)
    path = Path(labels)
    if not path.exists():
        raise FileNotFoundError(f"labels file {path} does not exist")
    folder = path if path.is_dir() else path.parent
    design = json.loads((folder / DESIGN_FILE).read_text(encoding="utf-8")) if (folder / DESIGN_FILE).is_file() else None
    if path.is_dir():
        imported = sorted(path.glob("*.imported.csv"))
        if not imported:
            raise FileNotFoundError(f"{path} holds no imported labels (*.imported.csv): run import-labels on its sheet first")
        path = path / IMPORTED_FILE if (path / IMPORTED_FILE).is_file() else imported[-1]
    tidy, problems, constructed = read_human_labels(path, known_from_results(r.results), seed=seed)
    rubric = Rubric.model_validate(r.manifest.rubric) if r.manifest.rubric else Rubric.default()
    human = human_values(tidy, r.results, rubric)
    notes = [f"{path.name}: {p}" for p in problems]
    if constructed:
        notes.append(f"{path.name}: CONSTRUCTED labels, not human")
    weights = None
    if design is not None:
        weights = design_frame(design).set_index("segment_id")["weight"].astype(float)
        missing = sorted(set(human["segment_id"]) - set(weights.index))
        if missing:
            notes.append(f"{len(missing)} labelled segment(s) are not in {DESIGN_FILE} (e.g. {missing[:3]}): "
                         "their inclusion probabilities are unknown, so the labels are read as a simple random sample")
            weights = None
    elif INCLUSION_COLUMN in tidy.columns and tidy[INCLUSION_COLUMN].notna().all():
        weights = 1.0 / tidy.groupby("segment_id")[INCLUSION_COLUMN].first().astype(float)
    if weights is None and not any("simple random sample" in n for n in notes):
        notes.append("the labels' inclusion probabilities are unknown (no design.json, no inclusion_probability "
                     "column): they are read as a simple random sample")
    return Pilot(Path(labels), tidy, human, weights, design, tuple(notes))


def figure_name(text: str) -> str:
    """A figure named on the command line (``mean_score``, ``share_poor``, ``mean sql_quality``) as the
    headline figure it is (``mean score``, ``share poor``)."""
    from ..stats.intervals import HEADLINE_FIGURES

    known = [f for f, _ in HEADLINE_FIGURES]
    t = " ".join(text.strip().split())
    for cand in (t, t.replace("_", " ", 1), t.replace("_", " ")):
        if cand in known:
            return cand
    raise ValueError(f"unknown figure {text!r}; expected one of {[k.replace(' ', '_', 1) for k in known]}")


def _figure_frame(run: Any, figure: str) -> pd.DataFrame:
    """The run's judged segments with ``value`` (the figure's per-segment value, rows without one dropped)."""
    from ..rubric import Rubric
    from ..runs import Run, load_run
    from ..stats.intervals import figure_values, headline_segments

    r = run if isinstance(run, Run) else load_run(run)
    rubric = Rubric.model_validate(r.manifest.rubric) if r.manifest.rubric else Rubric.default()
    seg = headline_segments(r.results, rubric).copy()
    seg["value"] = figure_values(seg, figure)
    return seg[np.isfinite(seg["value"])].sort_values("segment_id").reset_index(drop=True)


def check_plan_units(figure: str, kind: str, *, half_width: float | None = None, detect: float | None = None,
                     correlation: float | None = None, confidence: float | None = None) -> None:
    """Refuse a plan asked in the wrong units, before anything is read: a half-width (``--half-width``) and
    a difference to detect (``--detect-difference``) are positive; for a share (``kind`` ``"share"``) they
    are fractions in [0, 1] (0.03 means 3 percentage points, never 3); a stated correlation is strictly
    between -1 and 1 and a confidence level in (0, 1). ``ValueError`` naming the option and the value."""
    for option, value, what in (("--half-width", half_width, "the interval's half-width"),
                                ("--detect-difference", detect, "the size of the difference B - A to detect")):
        if value is None:
            continue
        unit = "a fraction in (0, 1] for a share" if kind == "share" else "points of the figure"
        if not math.isfinite(value) or value <= 0:
            raise ValueError(f"{option} {value:g}: {what} must be a positive number ({unit})")
        if kind == "share" and value > 1:
            raise ValueError(f"{option} {value:g} for {figure}: a share is a fraction in [0, 1] (0.03 means 3 "
                             f"percentage points); {value:g} would be {100 * value:g} percentage points")
    if correlation is not None and not -1 < correlation < 1:
        raise ValueError(f"--correlation {correlation:g}: a judge-human correlation is strictly between -1 and 1")
    if confidence is not None and not 0 < confidence < 1:
        raise ValueError(f"--confidence {confidence:g}: a confidence level is in (0, 1), e.g. 0.95")


def plan_for_runs(runs_: Sequence[Any], *, figure: str = "mean score", half_width: float | None = None,
                  detect: float | None = None, labels: str | Path | None = None, correlation: float | None = None,
                  signal: str | None = None, stratify: Sequence[str] | None = None, confidence: float | None = None,
                  root: str | Path | None = None, seed: int = 0) -> dict[str, Any]:
    """The labels a figure needs (:func:`axon_eval.stats.label_budget.plan_labels`), for one run and a target
    ``half_width``, or for two runs and a difference ``detect`` to find (paired on ``segment_id`` when the
    runs share segments, else independent: each run planned for a half-width ``sqrt(2)`` narrower).
    What is known of the human values: ``labels`` (the labels so far, :func:`read_pilot`) or a stated
    ``correlation``. ``signal``: the active design's signal (:func:`load_signal`); ``stratify``: the
    stratified design's strata (default: the pack's strata when ``labels`` is a stratified pack, else the
    judge's band). Returns ``{"plans": [(label, LabelPlan)], "mode", "target_half_width", "notes"}``.
    The units are checked before any run is read (:func:`check_plan_units`)."""
    from ..runs import Run, load_run
    from ..stats import label_budget as lb
    from ..stats.intervals import CONFIDENCE, HEADLINE_FIGURES

    conf = CONFIDENCE if confidence is None else float(confidence)
    fig = figure_name(figure)
    kind = dict(HEADLINE_FIGURES)[fig]
    if (half_width is None) == (detect is None):
        raise ValueError("give a target half-width (--half-width) or a difference to detect (--detect-difference)")
    if (labels is None) == (correlation is None):
        raise ValueError("give the labels so far (--labels) or a stated judge-human correlation (--correlation)")
    check_plan_units(fig, kind, half_width=half_width, detect=detect, correlation=correlation, confidence=conf)
    runs_l = [r if isinstance(r, Run) else load_run(r) for r in runs_]
    if not 1 <= len(runs_l) <= 2:
        raise ValueError("plan-labels takes one run (a half-width) or two runs (a difference)")
    if len(runs_l) == 2 and detect is None:
        raise ValueError("two runs: give the difference to detect (--detect-difference)")
    if len(runs_l) == 1 and detect is not None:
        raise ValueError("--detect-difference needs two runs (RUN_A RUN_B)")
    notes: list[str] = []
    pilots = [read_pilot(r, labels, seed=seed) if labels is not None else None for r in runs_l]
    for p in pilots:
        if p is not None:
            notes.extend(p.notes)
    strat = tuple(stratify) if stratify else None
    if strat is None and pilots[0] is not None and pilots[0].design and pilots[0].design.get("stratify"):
        strat = tuple(pilots[0].design["stratify"])
    strat = strat or ("band",)
    frames = [_figure_frame(r, fig) for r in runs_l]
    signals = [load_signal(signal, r, pilot=(pilot_residuals(r, p.labels, None if p.weights is None else
                                                             p.weights.rename("weight").reset_index())
                                              if p is not None else None), root=root)
               if signal else None for r, p in zip(runs_l, pilots, strict=True)]

    def one(frame: pd.DataFrame, pilot: Pilot | None, sig: Signal | None, target: float, human_col: str = "value",
            keys: pd.DataFrame | None = None) -> lb.LabelPlan:
        strata = _strata_of(frame, strat).to_numpy()
        values = None if sig is None else sig.values.reindex(frame["segment_id"]).to_numpy(dtype=np.float64)
        model = None
        if pilot is not None:
            hv = keys if keys is not None else _pilot_values(pilot, frame, fig)
            pos = hv["position"].to_numpy()
            w = hv["weight"].to_numpy(dtype=np.float64) if "weight" in hv and hv["weight"].notna().all() else None
            model = lb.pilot_model(hv[human_col].to_numpy(), frame["value"].to_numpy()[pos], pos, w,
                                   pilot_design=(pilot.design or {}).get("design"))
        return lb.plan_labels(frame["value"].to_numpy(), target_half_width=target, kind=kind, figure=fig,
                              strata_all=strata, signal=values, pilot=model, correlation=correlation, confidence=conf)

    if len(runs_l) == 1:
        plan = one(frames[0], pilots[0], signals[0], float(half_width))
        return {"plans": [(runs_l[0].run_dir.name, plan)], "mode": "single", "target_half_width": float(half_width),
                "notes": list(dict.fromkeys(notes + [s.description for s in signals if s is not None]))}
    target = lb.detect_half_width(float(detect), conf)
    a, b = frames
    common = sorted(set(a["segment_id"]) & set(b["segment_id"]))
    if len(common) >= 2:
        pa, pb = a.set_index("segment_id").loc[common], b.set_index("segment_id").loc[common]
        diff = pa.reset_index()[["segment_id", *(c for c in pa.columns if c in strat)]].copy()
        diff["value"] = pb["value"].to_numpy() - pa["value"].to_numpy()
        sig = None
        if signals[0] is not None:
            sa = signals[0].values.reindex(common).to_numpy(dtype=np.float64)
            sb = signals[1].values.reindex(common).to_numpy(dtype=np.float64)
            sig = Signal(pd.Series(np.sqrt(np.nan_to_num(sa) ** 2 + np.nan_to_num(sb) ** 2), index=common), signal or "",
                         "the two runs' signals combined, sqrt(s_A^2 + s_B^2)")
        keys = None
        if pilots[0] is not None:
            ha = _pilot_values(pilots[0], pa.reset_index(), fig).set_index("segment_id")
            hb = _pilot_values(pilots[1], pb.reset_index(), fig).set_index("segment_id")
            both = ha.index.intersection(hb.index)
            if len(both) < lb.MIN_LABELLED + 1:
                raise ValueError(f"only {len(both)} pair(s) are labelled in both runs; a paired plan needs at least "
                                 f"{lb.MIN_LABELLED + 1} (or state --correlation)")
            # one labels source for both runs is one pack drawn on the pairs: a pair's weight is the weight its
            # two sides share (two packs drawn independently would weight it 1 / (pi_A pi_B) instead)
            wa, wb = ha.loc[both, "weight"].to_numpy(dtype=np.float64), hb.loc[both, "weight"].to_numpy(dtype=np.float64)
            known = np.isfinite(wa) & np.isfinite(wb)
            if not np.allclose(wa[known], wb[known]):
                bad = both[np.flatnonzero(known & ~np.isclose(wa, wb))[0]]
                raise ValueError(f"the pilot {labels} gives pair {bad!r} the weight {ha.loc[bad, 'weight']:g} in run A and "
                                 f"{hb.loc[bad, 'weight']:g} in run B; a paired pilot is one pack drawn on the pairs")
            keys = pd.DataFrame({"segment_id": both, "value": hb.loc[both, "value"].to_numpy() - ha.loc[both, "value"].to_numpy(),
                                 "position": ha.loc[both, "position"].to_numpy(),
                                 "weight": np.where(np.isfinite(wa), wa, wb)})
        plan = one(diff, pilots[0], sig, target, keys=keys)
        notes.append(f"paired on segment_id ({len(common)} pairs): the figure planned is the per-pair difference B - A; "
                     + ("the stated correlation is that of the differences" if correlation is not None else
                        "the pilot is the pairs labelled in both runs"))
        return {"plans": [("B - A (paired)", plan)], "mode": "paired", "target_half_width": target,
                "detect": float(detect), "notes": list(dict.fromkeys(notes))}
    plans = [(r.run_dir.name, one(f, p, s, target / math.sqrt(2)))
             for r, f, p, s in zip(runs_l, frames, pilots, signals, strict=True)]
    notes.append("the runs share no segments: independent, each planned for a half-width sqrt(2) narrower "
                 "(half-widths add in quadrature)")
    return {"plans": plans, "mode": "independent", "target_half_width": target, "detect": float(detect),
            "notes": list(dict.fromkeys(notes))}


def _pilot_values(pilot: Pilot, frame: pd.DataFrame, figure: str) -> pd.DataFrame:
    """The pilot's labelled segments among ``frame``'s: ``segment_id``, ``value`` (the human value of the
    figure), ``position`` (row in ``frame``) and ``weight`` (``NaN`` when unknown)."""
    from ..stats.intervals import figure_values

    human = pilot.human.copy()
    human["value"] = figure_values(human, figure)
    pos = pd.Series(np.arange(len(frame)), index=frame["segment_id"])
    human = human[human["segment_id"].isin(pos.index) & np.isfinite(human["value"])]
    out = pd.DataFrame({"segment_id": human["segment_id"].to_numpy(), "value": human["value"].to_numpy(),
                        "position": pos.reindex(human["segment_id"]).to_numpy()})
    out["weight"] = np.nan if pilot.weights is None else out["segment_id"].map(pilot.weights).to_numpy()
    if out.empty:
        raise ValueError(f"none of the labels in {pilot.path} is on a judged segment of this run with a value for {figure}")
    return out
