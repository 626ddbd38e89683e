"""``make bench`` section ``gate_error``: the SIMULATED one-sided error of every gate rule at n = 5 to 300.

Every labelled set bundled under ``data/turns/`` is judged by each offline judge (:data:`JUDGES`: the
default and the rule judge, into a temporary runs folder), and its turns become the populations of :func:`axon_eval.stats.gate_error.gate_error_cells`:
a run whose true mean score, share poor or share good is exactly the threshold, and B exactly one
margin worse than A. :func:`axon_eval.stats.gate_error.gate_error_table` draws
:data:`~axon_eval.stats.gate_error.GATE_ERROR_REPLICATES` samples per cell (seed 0) and counts how often
the gate passes. One row per rule and n gives the worst population's error; the target is at most
:data:`~axon_eval.stats.gate_intervals.MAX_GATE_ERROR` at every n the gate accepts (below
:func:`~axon_eval.stats.gate_intervals.least_turns` of the rule's figure the gate refuses: those rows
are reported, not gated). Every figure is SIMULATED.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

import pandas as pd

from .table import row

ROOT = Path(__file__).resolve().parents[2]
#: The bundled evidence the populations come from (each judged by the offline judge).
SETS: tuple[str, ...] = ("sample", "hotel", "learning", "transit", "water", "library", "ood")
#: The offline judges whose scores make the populations: a gate must hold its rate under either.
JUDGES: tuple[str, ...] = ("heuristic", "heuristic-rules")


def bundled_results(sets: tuple[str, ...] = SETS, judges: tuple[str, ...] = JUDGES) -> dict[str, pd.DataFrame]:
    """Each bundled set judged by each offline judge under ``axon-v1`` (a temporary runs folder):
    ``"<set> (<judge spec>)"`` -> the run's results frame."""
    from ..runs import evaluate, load_run

    out = {}
    with tempfile.TemporaryDirectory(prefix="axon-bench-gate-") as tmp:
        for judge in judges:
            for name in sets:
                path = ROOT / "data/turns" / ("sample_turns.jsonl" if name == "sample" else f"{name}_turns.jsonl")
                run = evaluate(path, judge, "axon-v1", out_dir=tmp, name=name, progress=False, seed=0)
                out[f"{name} ({judge})"] = load_run(run.run_dir).results
    return out


def bench_gate_error(replicates: int | None = None) -> list[dict[str, Any]]:
    """The SIMULATED gate error table (module docstring): one row per rule and n (the worst population),
    with every population's error in ``populations``."""
    from ..stats.gate_error import GATE_ERROR_REPLICATES, gate_error_cells, gate_error_table, worst_by_n
    from ..stats.gate_intervals import MAX_GATE_ERROR

    reps = replicates or GATE_ERROR_REPLICATES
    t0 = time.perf_counter()
    table = gate_error_table(gate_error_cells(bundled_results()), replicates=reps)
    seconds = time.perf_counter() - t0
    worst = worst_by_n(table)
    pivot = worst.pivot(index="rule", columns="n", values="worst_error")
    print("SIMULATED one-sided error of the gate (worst population, fraction of samples at the threshold that pass; "
          f"{reps:,} replicates per cell, seed 0):")
    print((100 * pivot).round(1).astype(str).add("%").to_string())
    rows = []
    for r in worst.itertuples(index=False):
        cell = table[(table["rule"] == r.rule) & (table["n"] == r.n)]
        rows.append(row("gate_error", f"SIMULATED gate error, {r.rule}, n {r.n}" + ("" if r.accepted else " (refused)"),
                        round(float(r.worst_error), 4), "error",
                        f"<= {MAX_GATE_ERROR:g}" if r.accepted else "(refused by the gate: reported)",
                        bool(r.worst_error <= MAX_GATE_ERROR) if r.accepted else None,
                        worst_population=r.population, replicates=reps, simulated=True,
                        populations={p: round(float(e), 4) for p, e in zip(cell["population"], cell["error"])}))
    rows.append(row("gate_error", "SIMULATED gate error simulation time", round(seconds, 1), "s", "", None,
                    simulated=True))
    return rows
