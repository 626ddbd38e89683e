"""Labelling samples: which of a run's judged segments people label, and with what probability.

Two ways to draw, both seeded and pure (a run or its results in, a :class:`LabellingSample` out):

* :func:`sample_for_labelling` -- the **proportional stratified sample** the technical reference asks
  for (strata: the combinations of ``band``, ``surface`` and ``client`` by default), with a minimum per
  stratum (Cochran 1977, *Sampling Techniques*, section 5.5)::

      n_h = min(N_h, max(min_per_stratum, round(n * N_h / N)))      allocated to stratum h
      w_h = N_h / n_h                                               design weight of its segments

  ``N_h`` segments of stratum ``h`` in the run, ``N`` in all; within a stratum a seeded shuffle
  (``DataFrameGroupBy.sample``) keeps the first ``n_h``.
* :func:`draw_design_sample` -- a sample under one of the designs of :mod:`axon_eval.stats.label_budget`
  (``uniform``, ``stratified`` with the Neyman allocation, ``active`` with probabilities proportional to
  an uncertainty signal, :mod:`axon_eval.calibration.label_signals`), drawn by randomised systematic
  sampling (Goodman & Kish 1950); and, given an earlier pack's design, the next batch of a
  batch-sequential design. Every segment carries its inclusion probability ``pi`` and its
  Horvitz-Thompson design weight (Horvitz & Thompson 1952, JASA 47:663)::

      w_i = 1 / pi_i                                                one batch
      w_i = sum_{b drew i} (n_b / n) / pi_i^(b)                    several batches, n = sum_b n_b

  (:func:`axon_eval.stats.label_budget.batch_weights`).

The probabilities and weights are written into the pack's ``design.json`` and ``probabilities.csv``,
never into a rater's sheet or pages (:mod:`axon_eval.calibration.label_pack`). :func:`design_frame`
reads them back and :func:`with_inclusion` puts them beside imported labels, so every study reads how
each labelled segment was drawn from ``design.json``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..rubric import DIMENSIONS
from ..stats.agreement import DEFAULT_STRATA, one_row_per_segment

#: Columns of the labelling sheet, in order (the rater's columns, nothing of the judge or of the design).
SHEET_COLUMNS: tuple[str, ...] = ("segment_id", *DIMENSIONS, "verdict", "rater", "comment")
#: File name of a pack's first sheet (a later batch's sheet is ``sheet-<batch>.csv``).
SHEET_FILE = "sheet.csv"
#: File name of a pack's design (strata, weights, inclusion probabilities, batches, seed, source run).
DESIGN_FILE = "design.json"
#: Every segment's inclusion probability in every batch of a pack drawn under an explicit design.
PROBABILITIES_FILE = "probabilities.csv"
#: File name of the pack's imported labels over all batches, which ``import-labels`` writes by default.
IMPORTED_FILE = "sheet.imported.csv"
#: Name of each segment's inclusion probability in ``design.json`` and in imported labels; never a
#: column of a new sheet (a sheet written before the probabilities moved to ``design.json`` may have it).
INCLUSION_COLUMN = "inclusion_probability"
#: File name of a pack's index page.
INDEX_FILE = "index.html"
#: Folder of a pack's segment pages.
PAGES_DIR = "segments"
#: The explicit labelling designs (:mod:`axon_eval.stats.label_budget`).
DESIGN_NAMES: tuple[str, ...] = ("uniform", "stratified", "active")
#: What a design's inclusion probabilities mean, in one sentence (written into design.json).
INCLUSION_NOTE = ("inclusion_probability: the chance this segment had of being drawn in its batch (randomised "
                  "systematic sampling, exactly n per batch); weight: the design weight the corrected figures use, "
                  "1 / inclusion_probability for one batch, sum over the batches that drew it of (n_b / n) / "
                  "pi_b over several (axon_eval.stats.label_budget)")


def page_name(segment_id: str) -> str:
    """File name of a segment's page (``eu-0003#2`` -> ``eu-0003_2.html``)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", segment_id) + ".html"


# =============================================================================================
# The proportional stratified sample
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


def with_inclusion(labels: pd.DataFrame, design: Mapping[str, Any] | str | Path | None) -> pd.DataFrame:
    """``labels`` with each row's ``inclusion_probability`` and design ``weight`` from a pack's
    ``design.json`` (a dict or its path).

    The probabilities always come from the design: a column a sheet written before they moved to
    ``design.json`` still carries is replaced. Segments the design does not list get ``NaN``. With no
    design (``None``) the labels keep the column they have (``NaN`` when they have none)."""
    out = labels.copy()
    if design is None:
        out[INCLUSION_COLUMN] = out.get(INCLUSION_COLUMN, np.nan)
        return out
    d = design_frame(design).set_index("segment_id")
    out["weight"] = out["segment_id"].map(d["weight"])
    out[INCLUSION_COLUMN] = out["segment_id"].map(d[INCLUSION_COLUMN])
    return out


# =============================================================================================
# Sampling designs (uniform, stratified, active) and batches
# =============================================================================================
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
      ``label - judge`` per stratum from ``pilot``
      (:func:`~axon_eval.calibration.label_signals.pilot_residuals`; a stratum with fewer than two labels
      takes the pooled SD), else the proportional allocation; at least two per stratum.
    * ``active``: inclusion probabilities from ``signal``
      (:func:`~axon_eval.calibration.label_signals.load_signal`), floored and mixed with uniform
      (:func:`axon_eval.stats.label_budget.active_probabilities`).
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
