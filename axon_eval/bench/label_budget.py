"""Benchmarks of study 11 (label budgets), the ``label_budget`` section of ``make bench``.

* **planner**: :func:`axon_eval.stats.label_budget.plan_labels` on a synthetic run of
  :data:`N_SEGMENTS` segments generated here (seeded; SIMULATED: judge scores ``N(70, 18^2)``, the judge's
  band as strata, an uncertainty signal per segment), every design (labels only, uniform, stratified,
  active), once from a pilot of :data:`PILOT` labels and once from a stated correlation. Building the
  frame is not timed. Target: each plan in at most :data:`TARGET_PLANNER_SECONDS` seconds.
* **study**: :func:`axon_eval.stats.label_budget_sim.label_budget_study` at study 11's defaults (budgets
  10-60, signal correlations 0/0.3/0.6/0.9, 1,000 replications, the plan check), on the SIMULATED
  population and a SIMULATED stand-in for the bundled sample (97 segments of the same model, so no run is
  needed). The study's whole simulation is timed; target: at most :data:`TARGET_STUDY_SECONDS` (the
  notebook must run in about three minutes). Every number is SIMULATED and says so.

``quick=True`` shrinks the sizes (for tests); the targets are then not judged.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from .table import row

SECTION = "label_budget"
#: Segments of the synthetic run the planner is timed on.
N_SEGMENTS = 1_000_000
#: Pilot labels the timed plan is made from.
PILOT = 200
TARGET_PLANNER_SECONDS = 10.0
TARGET_STUDY_SECONDS = 150.0
#: Study 11's defaults (notebooks/11_label_budget.ipynb).
BUDGETS = (10, 20, 30, 40, 50, 60)
CORRELATIONS = (0.0, 0.3, 0.6, 0.9)
REPLICATIONS = 1000


def synthetic_run(n_segments: int, seed: int = 0) -> dict[str, np.ndarray]:
    """A SIMULATED run for the planner: judge scores, bands, human scores (judge error concentrated as in
    study 11's simulated population) and a signal of correlation about 0.6 with the judge's error."""
    from ..stats import label_budget_sim as sim

    pop = sim.simulated_population(1, seed, correlations=(0.6,), n_segments=n_segments)
    names = np.asarray(pop.strata_names, dtype=object)
    return {"yhat": pop.yhat[0], "y": pop.y[0], "band": names[pop.strata[0]], "signal": pop.signals["rho=0.6"][0]}


def bench_planner(n_segments: int = N_SEGMENTS, seed: int = 0, *, judged: bool = True) -> list[dict[str, Any]]:
    """The planner rows (module docstring)."""
    from ..stats import label_budget as lb

    run = synthetic_run(n_segments, seed)
    rng = np.random.default_rng(seed)
    pos = np.flatnonzero(lb.systematic_sample(np.full(n_segments, PILOT / n_segments), rng))
    pilot = lb.pilot_model(run["y"][pos], run["yhat"][pos], pos, np.full(len(pos), n_segments / PILOT),
                           pilot_design="uniform")
    rows = []
    for how, kwargs in (("a pilot of 200 labels", {"pilot": pilot}), ("a stated correlation 0.6", {"correlation": 0.6})):
        t0 = time.perf_counter()
        plan = lb.plan_labels(run["yhat"], target_half_width=1.0, strata_all=run["band"], signal=run["signal"], **kwargs)
        seconds = time.perf_counter() - t0
        ok = seconds <= TARGET_PLANNER_SECONDS if judged else None
        rows.append(row(SECTION, f"plan-labels, {n_segments:,} SIMULATED segments, 4 designs, from {how}", round(seconds, 2),
                        "s", f"<= {TARGET_PLANNER_SECONDS:g}" if judged else "", ok, simulated=True,
                        planned={d.design: d.n for d in plan.designs}))
    return rows


def bench_study(n_replications: int = REPLICATIONS, seed: int = 0, *, judged: bool = True) -> list[dict[str, Any]]:
    """The study row (module docstring)."""
    from ..stats import label_budget_sim as sim

    stand_in = synthetic_run(97, seed + 1)
    t0 = time.perf_counter()
    simulated = sim.simulated_population(n_replications, seed, correlations=CORRELATIONS)
    bundled = sim.bundled_population(stand_in["yhat"], stand_in["y"], stand_in["band"], n_replications, seed,
                                     signals={"perfect": np.abs(stand_in["y"] - stand_in["yhat"])})
    study = sim.label_budget_study(bundled, simulated, budgets=BUDGETS, bundled_signals=["model", "perfect"],
                                   target_half_width=2.0, seed=seed)
    seconds = time.perf_counter() - t0
    ok = seconds <= TARGET_STUDY_SECONDS if judged else None
    saved = {k: v.get("share_saved") for k, v in study.labels_saved_json().items()}
    return [row(SECTION, f"study 11 SIMULATED simulation, {n_replications:,} replications x {len(BUDGETS)} budgets x "
                         f"{len(CORRELATIONS)} signals + the plan check", round(seconds, 1), "s",
                f"<= {TARGET_STUDY_SECONDS:g}" if judged else "", ok, simulated=True, share_saved=saved)]


def bench_label_budget(quick: bool = False) -> list[dict[str, Any]]:
    """The ``label_budget`` section: the planner on a 1,000,000-segment SIMULATED run, and study 11's simulation."""
    if quick:
        return bench_planner(20_000, judged=False) + bench_study(20, judged=False)
    return bench_planner() + bench_study()


if __name__ == "__main__":  # python -m axon_eval.bench.label_budget [--quick]
    import sys

    from .table import format_table

    print(format_table(bench_label_budget(quick="--quick" in sys.argv)))
