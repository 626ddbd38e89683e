"""Benchmark of study 10's statistics (:func:`axon_eval.stats.panels.panel_study`), part of the ``studies``
bench section.

Target: 8 members x 10,000 segments, every panel of up to 4 members x the 5 reducers (each
where it applies; 666 panels) with its escalation grid, the frontier and the recommendation, in at most
10 s. The inputs are :func:`~axon_eval.stats.panels.panels_benchmark_inputs` (synthetic, seeded: a shared
error common to all members and an own error per member, priced tokens, lognormal latency); building
them is not timed. The study runs in a fresh process (:func:`axon_eval.bench.memory.run_fresh`), so its
peak memory (``VmHWM``: interpreter, imports, inputs and the study) is its own. One small warm-up call
(200 segments) is not timed. Two rows are timed: without the cluster-bootstrap confirmation
(``confirm_n_boot=None``, the issue's call) and with the default confirmation (2,000 replicates of the
recommended panel and the runner-up), which the notebook runs.

``quick=True`` shrinks the sizes (for tests); the targets are then not judged.
"""

from __future__ import annotations

import json
import time
from typing import Any

from .memory import MEANING, run_fresh

TARGET_SECONDS = 10.0
#: Peak memory is reported, not judged (the issue sets no target); an earlier measurement found ~0.6 GB.
N_MEMBERS, N_SEGMENTS, MAX_SIZE = 8, 10_000, 4


def _row(name: str, value: float, unit: str, target: str = "", ok: bool | None = None, **extra: Any) -> dict[str, Any]:
    return {"section": "studies", "name": name, "value": value, "unit": unit, "target": target, "ok": ok, **extra}


def _study_worker(n_members: int, n_segments: int, max_size: int, confirm: bool, seed: int = 0) -> dict[str, Any]:
    """Run in the fresh process: build the inputs, warm up, time one :func:`panel_study`."""
    from ..stats.panels import PANEL_REDUCERS, panel_study, panels_benchmark_inputs

    members, labels = panels_benchmark_inputs(n_members, n_segments, seed)
    small = members["segment_id"] < "b-000200"
    panel_study(members[small], labels, max_size=2, confirm_n_boot=None)  # warm-up: imports, caches
    t0 = time.perf_counter()
    study = panel_study(members, labels, max_size=max_size, reducers=PANEL_REDUCERS,
                        confirm_n_boot=200 if confirm and n_segments < N_SEGMENTS else (2000 if confirm else None),
                        seed=seed)
    seconds = time.perf_counter() - t0
    rec = study.recommendation
    return {"seconds": seconds, "n_panels": int(len(study.panels)), "n_escalation_rows": int(len(study.escalation)),
            "n_frontier": int(study.panels["pareto"].sum()),
            "recommended": None if rec.chosen is None else rec.chosen.panel_id}


def bench_panels(quick: bool = False) -> list[dict[str, Any]]:
    """The study-10 rows of the ``studies`` bench section (see the module docstring)."""
    n_members, n_segments, max_size = (5, 500, 3) if quick else (N_MEMBERS, N_SEGMENTS, MAX_SIZE)
    label = f"{n_members} members x {n_segments:,} segments, panels of up to {max_size}"
    rows = []
    for confirm in (False, True):
        worker = run_fresh(["-c", "import json; from axon_eval.bench.panels import _study_worker; "
                                  f"print(json.dumps(_study_worker({n_members}, {n_segments}, {max_size}, {confirm})))"])
        if worker.returncode != 0:
            raise RuntimeError(f"panel study process exited {worker.returncode}: {worker.stderr[-2000:]}")
        out = json.loads(worker.stdout.strip().splitlines()[-1])
        what = "with the cluster-bootstrap confirmation" if confirm else "no confirmation (confirm_n_boot=None)"
        judged = not quick and not confirm
        rows += [
            _row(f"panel_study, {label}, {what}", round(out["seconds"], 2), "s",
                 f"<= {TARGET_SECONDS:g}" if judged else "", (out["seconds"] <= TARGET_SECONDS) if judged else None,
                 n_panels=out["n_panels"], n_escalation_rows=out["n_escalation_rows"], n_frontier=out["n_frontier"],
                 recommended=out["recommended"]),
            _row(f"panel_study ({'confirmed' if confirm else 'unconfirmed'}): {worker.label}", round(worker.peak_mb),
                 "MB", "", None, baseline_mb=round(worker.baseline_mb, 1), measured=MEANING),
        ]
    return rows


if __name__ == "__main__":  # python -m axon_eval.bench.panels [--quick]
    import sys

    from .table import format_table

    print(format_table(bench_panels(quick="--quick" in sys.argv[1:])))
