"""Uncertainty signals for an active labelling design: where the judge is likely to be wrong.

An ``active`` design (:func:`~axon_eval.calibration.label_samples.draw_design_sample`) draws segment
``i`` with a probability proportional to a signal ``s_i`` known before labelling, floored and mixed with
uniform sampling (:func:`axon_eval.stats.label_budget.active_probabilities`). The estimate stays unbiased
whatever the signal (it is weighted by ``1 / pi_i``); a signal that tracks ``|label - judge|`` narrows
the interval (Zrnic & Candes 2024, *Active statistical inference*, ICML). :func:`load_signal` reads one
by name:

* ``panel:RUN,RUN[,...]`` -- the SD of the panel members' scores (study 10);
* ``repeat:RUN`` -- the repeat-sample SD ``score_sd`` of a repeated run (study 03);
* ``column:NAME`` -- a numeric column of the run's results;
* ``model`` -- the root mean square of ``label - judge`` per judge band fitted on the labels so far
  (:func:`pilot_residuals`, :func:`axon_eval.stats.label_budget.error_model`);
* ``p_not_good[:RUN]`` -- the fitted offline judge's probability that the segment is not good
  (``heuristic``, :mod:`axon_eval.judges.heuristic.fitted`), from the run's own verdicts or from
  ``RUN``, a run of that judge over the same evidence (:func:`fitted_not_good`);
* ``p_not_good_entropy[:RUN]`` -- its binary entropy in bits, largest where the model is least sure::

      H(p) = -p log2 p - (1 - p) log2 (1 - p),     H(0) = H(1) = 0,  H(1/2) = 1

* a CSV file with the columns ``segment_id`` and ``signal``.

A signal is a design input: it goes into ``design.json`` with the probabilities it gave, never to a
rater's sheet or pages.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .label_samples import Signal, judged_segments

#: The extension key of a judge record (``JudgeRecord.extra``) under which the fitted offline judge keeps
#: its details, ``p_not_good`` among them.
FITTED_DETAILS_KEY = "heuristic_fitted"
#: The names of the signals read from the fitted offline judge's probability (optionally ``NAME:RUN``).
FITTED_SIGNALS: tuple[str, ...] = ("p_not_good", "p_not_good_entropy")
#: What :func:`load_signal` accepts, as said in its errors.
SIGNAL_SPECS = ("panel:RUN,RUN, repeat:RUN, column:NAME, model, p_not_good[:RUN], p_not_good_entropy[:RUN] "
                "or a CSV file (segment_id, signal)")


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


def binary_entropy(p: Any) -> np.ndarray:
    """The binary entropy ``H(p) = -p log2 p - (1 - p) log2 (1 - p)`` in bits (``0 log 0 = 0``; ``NaN``
    stays ``NaN``); ``p`` a probability or an array of them."""
    p = np.asarray(p, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        h = -(p * np.log2(p) + (1.0 - p) * np.log2(1.0 - p))
    return np.where((p == 0.0) | (p == 1.0), 0.0, h)


def fitted_not_good(run: Any) -> tuple[pd.Series, str]:
    """The fitted offline judge's ``P(not good)`` per segment of ``run`` (a Run or a run folder), and the
    judge id it came from.

    Read from the run's verdicts (``verdicts.jsonl``): ``extra["heuristic_fitted"]["p_not_good"]`` of each
    judged record, averaged over a segment's samples when the run repeated them. A ``ValueError`` when the
    run holds no such record (it was judged by another judge): evaluate or rejudge its evidence with
    ``heuristic`` (the fitted judge) and name that run (``p_not_good:RUN``)."""
    from ..runs import Run, load_run
    from ..runs.load import iter_verdicts

    r = run if isinstance(run, Run) else load_run(run)
    path = Path(r.run_dir) / "verdicts.jsonl"
    records = iter_verdicts(r.run_dir) if path.is_file() else iter(r.verdicts)
    total: dict[str, float] = {}
    count: dict[str, int] = {}
    judges: set[str] = set()
    for rec in records:
        p = ((rec.extra or {}).get(FITTED_DETAILS_KEY) or {}).get("p_not_good")
        if rec.verdict is None or p is None:
            continue
        total[rec.segment_id] = total.get(rec.segment_id, 0.0) + float(p)
        count[rec.segment_id] = count.get(rec.segment_id, 0) + 1
        judges.add(rec.judge_id)
    if not total:
        raise ValueError(f"run {Path(r.run_dir).name} (judge {r.manifest.judge_id}) has no verdict with the fitted "
                         "offline judge's P(not good): evaluate or rejudge its evidence with the offline judge "
                         "(heuristic, judge id heuristic-fitted[...]) and name that run, p_not_good:RUN")
    values = pd.Series({sid: total[sid] / count[sid] for sid in total}, dtype=np.float64)
    return values, ", ".join(sorted(judges))


def load_signal(spec: str, run: Any, *, pilot: pd.DataFrame | None = None, root: str | Path | None = None) -> Signal:
    """The uncertainty signal named by ``spec`` for every judged segment of ``run``:

    * ``panel:RUN[,RUN...]`` -- the spread (SD) of the panel members' scores, one member per run folder
      (study 10's member runs; :func:`axon_eval.stats.label_budget.panel_spread`);
    * ``repeat:RUN`` -- the repeat-sample SD ``score_sd`` of a repeated run (study 03);
    * ``column:NAME`` -- a numeric column of the run's own results (e.g. ``disagreement``);
    * ``model`` -- a model of ``|label - judge|`` fitted on the labels so far (``pilot``:
      :func:`pilot_residuals`; cells: the judge's band; :func:`axon_eval.stats.label_budget.error_model`);
    * ``p_not_good`` -- the fitted offline judge's ``P(not good)`` from ``run``'s own verdicts (a run judged
      by the fitted offline judge ``heuristic``), or ``p_not_good:RUN`` from ``RUN``'s (any judge's run of the
      same evidence can take a companion run of it; :func:`fitted_not_good`);
    * ``p_not_good_entropy`` / ``p_not_good_entropy:RUN`` -- the binary entropy of that probability in
      bits (:func:`binary_entropy`): highest where the fitted model is least sure;
    * a CSV file with the columns ``segment_id`` and ``signal``.

    A segment the source does not cover gets ``NaN`` (the mean signal when sampling). An unknown spec is a
    ``ValueError`` naming it and the specs accepted (:data:`SIGNAL_SPECS`)."""
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
    name, _, source_run = spec.partition(":")
    if name in FITTED_SIGNALS:
        where = folder(source_run) if source_run else run
        if not source_run and isinstance(run, pd.DataFrame):
            raise ValueError(f"{spec}: a results frame holds no verdicts; pass the run, or name a run: {name}:RUN")
        p, judge = fitted_not_good(where)
        covered = int(p.index.isin(ids).sum())
        if covered == 0:
            raise ValueError(f"{spec}: the run's verdicts cover none of this run's {len(ids)} judged segments; name "
                             "a run of the offline judge (heuristic, judge id heuristic-fitted[...]) over the same evidence")
        origin = f"run {Path(source_run).name}" if source_run else "this run"
        p = p.reindex(ids)
        if name == "p_not_good":
            values, what = p, "P(not good)"
        else:
            values, what = pd.Series(binary_entropy(p.to_numpy()), index=ids), "the binary entropy of P(not good)"
        return Signal(values, spec, f"{what} of the fitted offline judge {judge} ({origin}; {covered} of "
                                    f"{len(ids)} judged segments)")
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
    raise ValueError(f"unknown signal {spec!r}: expected {SIGNAL_SPECS}")
