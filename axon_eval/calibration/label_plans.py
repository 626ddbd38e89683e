"""Planning labels for a run: the labels so far read as a pilot, and how many more a figure needs.

The edge of the planner :func:`axon_eval.stats.label_budget.plan_labels` (the ``plan-labels`` verb):

* :func:`read_pilot` -- the labels so far for a run (a pack folder, an imported labels file or a
  constructed labels file) with their design weights ``w_i = 1 / pi_i`` from the pack's ``design.json``
  (else an ``inclusion_probability`` column); labels whose inclusion probabilities are unknown are read
  as a simple random sample, and the notes say so.
* :func:`plan_for_runs` -- the labels each design (labels only, uniform, stratified, active) needs for
  one run's interval to reach a half-width ``h`` with 90% assurance, or for a difference ``delta``
  between two runs to be detected with 80% power (Kupper & Hafner 1989, Am. Stat. 43:101)::

      half-width needed to detect delta     h = z_{1-a/2} delta / (z_{1-a/2} + z_{power})
      two runs without shared segments      each planned for h / sqrt(2)   (half-widths add in quadrature)
      two runs sharing segments             the per-pair difference B - A planned as one figure

  What is known of the human values comes from the pilot or a stated judge-human correlation ``rho``
  (Broska, Howes & van Loon 2024, the effective n of PPI); the active design's signal is named as for a
  draw (:func:`~axon_eval.calibration.label_signals.load_signal`).
* :func:`check_plan_units` -- a target in the wrong units (a share's half-width above 1, a half-width of
  0 or less) is refused before anything is read.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .label_samples import DESIGN_FILE, IMPORTED_FILE, INCLUSION_COLUMN, Signal, _strata_of, design_frame
from .label_sheets import known_from_results, read_human_labels
from .label_signals import load_signal, pilot_residuals


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
    ``correlation``. ``signal``: the active design's signal
    (:func:`~axon_eval.calibration.label_signals.load_signal`); ``stratify``: the
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
