"""``make bench``: benchmarks measured side by side in one run.

Absolute times on a shared 2-core machine are noisy, so each section reports a rate *and*, where it
can, a ratio against a baseline measured in the same process moments apart. The table is printed and
the figures are written to ``runs/<UTC date>T<time>Z_bench/bench.json``.

Sections: ``scoring`` (:mod:`axon_eval.bench.scoring`), ``heuristic`` (:mod:`axon_eval.bench.heuristic`), ``judges``
(:mod:`axon_eval.bench.llm`), ``runs`` (:mod:`axon_eval.bench.runs`), ``faults`` (:mod:`axon_eval.bench.faults`:
runs killed at five moments and resumed; views re-paid, segments lost, spend recorded against paid), ``studies`` (every entry of
:data:`STUDY_BENCHES`, e.g. :mod:`axon_eval.bench.noise`, :mod:`axon_eval.bench.sensitivity`), ``gate_error``
(:mod:`axon_eval.bench.gate_error`: the SIMULATED error of every gate rule at n = 5 to 300).
``--only NAME`` runs one.

Every memory figure is the peak RSS of a fresh process, interpreter and imports included, measured
inside that process by :func:`axon_eval.bench.memory.run_fresh` (``ru_maxrss`` would carry this
process's own high-water mark into the child); its row names the bare interpreter's baseline.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import sys
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

from .scoring import bench_scoring
from .table import BenchRow, format_table, row


#: The ``studies`` section: (module, function) pairs, each returning bench rows; add a line per study.
STUDY_BENCHES: list[tuple[str, str]] = [
    ("axon_eval.bench.noise", "bench_noise"),
    ("axon_eval.bench.sensitivity", "bench_sensitivity"),
    ("axon_eval.bench.panels", "bench_panels"),
]


def bench_studies() -> list[BenchRow]:
    """Every study benchmark of :data:`STUDY_BENCHES` in order; a failing one is reported, the rest still run."""
    rows: list[BenchRow] = []
    for module, func in STUDY_BENCHES:
        try:
            rows.extend(getattr(importlib.import_module(module), func)())
        except Exception as exc:  # reported as a failed row, like a failed section
            rows.append(row("studies", f"{module}.{func} failed: {type(exc).__name__}: {exc}", float("nan"), "", "", False))
    return rows


SECTIONS: dict[str, Callable[[], list[BenchRow]]] = {"scoring": bench_scoring, "studies": bench_studies}
EXTERNAL_SECTIONS = {
    "heuristic": ("axon_eval.bench.heuristic", "bench_heuristic"),
    "judges": ("axon_eval.bench.llm", "bench_claude_fake_server"),
    "runs": ("axon_eval.bench.runs", "bench_runs"),
    "estimates": ("axon_eval.bench.estimates", "bench_estimates"),  # SIMULATED PPI coverage, trend over 200 runs
    "partitioned": ("axon_eval.bench.partitioned", "bench_partitioned"),  # Dask workers: speed-up, memory
    "label_budget": ("axon_eval.bench.label_budget", "bench_label_budget"),  # study 11: planner at 1M segments, SIMULATED study
    "gate_error": ("axon_eval.bench.gate_error", "bench_gate_error"),  # SIMULATED one-sided error of every gate rule
    "fitted_judge": ("axon_eval.bench.fitted_judge", "bench_fitted_judge"),  # opt-in fitted judge: LODO table, speed
    "faults": ("axon_eval.bench.faults", "bench_faults"),  # runs SIGKILLed at five moments: re-paid, lost, spend
    "studio": ("axon_eval.bench.studio", "bench_studio"),  # labelling studio: ready, page and save p99, status
}


def _section(name: str) -> Callable[[], list[BenchRow]]:
    if name in SECTIONS:
        return SECTIONS[name]
    module, func = EXTERNAL_SECTIONS[name]
    return getattr(importlib.import_module(module), func)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m axon_eval.bench", description="axon_eval benchmarks")
    names = list(SECTIONS) + list(EXTERNAL_SECTIONS)
    parser.add_argument("--only", choices=names, action="append", help="run only these sections")
    parser.add_argument("--out", default=os.environ.get("AXON_EVAL_RUNS_DIR", "runs"), help="runs directory")
    args = parser.parse_args(argv)
    started = datetime.now(timezone.utc)
    rows: list[BenchRow] = []
    for name in args.only or names:
        t0 = time.perf_counter()
        try:
            rows.extend(_section(name)())
        except Exception as exc:  # a broken section is reported, the others still run
            rows.append(row(name, f"section failed: {type(exc).__name__}: {exc}", float("nan"), "", "", False))
        print(f"[bench] {name} done in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
    print(format_table(rows))
    folder = Path(args.out) / f"{started.strftime('%Y-%m-%dT%H%M%SZ')}_bench"
    suffix = 2
    while folder.exists():
        folder = folder.with_name(f"{started.strftime('%Y-%m-%dT%H%M%SZ')}_bench-{suffix}")
        suffix += 1
    folder.mkdir(parents=True)
    payload = {"started": started.isoformat(), "python": sys.version.split()[0], "machine": platform.machine(),
               "cpus": os.cpu_count(), "rows": rows}
    (folder / "bench.json").write_text(json.dumps(payload, indent=2, default=str) + "\n")
    print(f"\nwrote {folder / 'bench.json'}")
    return 0 if all(r["ok"] is not False for r in rows) else 1

