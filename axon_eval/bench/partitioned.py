"""Benchmarks of partitioned runs: ``bench_partitioned() -> list[dict]`` (rows for ``make bench``).

Synthetic distinct evidence is generated at bench time (the bundled sample replicated, every copy made
distinct: :func:`axon_eval.bench.runs.replicate_sample`; nothing is committed) and evaluated with the
offline heuristic judge and no verdict cache (a cold run), side by side in one sitting:

``single process``            :func:`axon_eval.runs.evaluate` in one process (``N_TURNS`` turns)
``--workers 1`` / ``--workers 2``   the same evidence on a local Dask cluster of 1 and 2 worker processes
``speed-up``                  the 2-worker run's rate over the 1-worker run's, measured in the same sitting
                              (target >= 1.7 on a 2-core machine)
``driver peak``               the driver process's peak resident memory (``VmHWM``, its own process, read by
                              :func:`axon_eval.bench.memory.run_fresh`) for ``SMALL_TURNS`` and ``N_TURNS``
                              turns with 2 workers: it must not grow with the turns (within 10%)
``worker peak``               the largest ``VmHWM`` any worker process reported (target < 500 MB)
``merged = in memory``        the run's headline figures from per-partition partial sums
                              (:mod:`axon_eval.stats.mergeable`) against the in-memory computation on the
                              single-process run's results (printed as a check, to 1e-9)

Every run is made by a fresh interpreter (``python -c``) so that each one's wall time and the driver's
memory are its own. ``python -m axon_eval.bench.partitioned [N_TURNS]`` prints the rows.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from .memory import run_fresh
from .runs import ROOT, replicate_sample

#: Turns of the large synthetic evidence, and of the smaller one the driver's memory is compared with.
N_TURNS = 200_000
SMALL_TURNS = 50_000
#: Targets: the 2-worker speed-up on a 2-core machine, the driver's memory growth, a worker's peak.
SPEEDUP_TARGET = 1.7
DRIVER_GROWTH_TARGET = 0.10
WORKER_PEAK_MB_TARGET = 500.0

_DRIVER = """
import json, sys, time
from axon_eval import runs
evidence, out, workers = sys.argv[1], sys.argv[2], sys.argv[3]
options = {} if workers == "single" else {"workers": int(workers)}  # the default partition size
start = time.perf_counter()
run = runs.evaluate(evidence, "heuristic", out_dir=out, name=f"bench-{workers}", cache=False, progress=False,
                    **options)
elapsed = time.perf_counter() - start
m = run.manifest
print(json.dumps({"seconds": elapsed, "segments": m.counts.segments, "judged": m.counts.judged,
                  "status": m.status, "run_dir": str(run.run_dir), "partitions": m.partitions}))
"""


def _row(name: str, value: float | None, unit: str, target: str, ok: bool | None, **extra: Any) -> dict[str, Any]:
    return {"section": "partitioned", "name": name, "value": None if value is None else round(value, 3),
            "unit": unit, "target": target, "ok": ok, **extra}


def _evaluate_fresh(evidence: Path, out: Path, workers: str) -> dict[str, Any]:
    fresh = run_fresh(["-c", _DRIVER, str(evidence), str(out), workers], cwd=ROOT)
    if fresh.returncode != 0:
        raise RuntimeError(f"evaluate ({workers}) failed: {fresh.stderr[-2000:]}")
    result = json.loads(fresh.stdout.strip().splitlines()[-1])
    result["driver_peak_mb"] = fresh.peak_mb
    return result


def merged_matches(single_run: str | Path, parted_run: str | Path) -> tuple[float, int]:
    """The largest difference between a partitioned run's headline estimates merged from its parts and
    the same estimates computed in memory on the single-process run, and the number of figures."""
    import pyarrow.parquet as pq

    from ..runs import load_run
    from ..stats.intervals import headline_table
    from ..stats.mergeable import headline_from_summary, merge_summaries, partition_summary

    parts = sorted((Path(parted_run) / "results").glob("part-*.parquet"))
    merged = headline_from_summary(merge_summaries(partition_summary(pq.read_table(p).to_pandas(), n_boot=200)
                                                   for p in parts))
    memory = headline_table(load_run(single_run).results, n_boot=200)
    a, b = merged.set_index("figure")["estimate"], memory.set_index("figure")["estimate"]
    common = a.index.intersection(b.index)
    return float((a[common] - b[common]).abs().max()), len(common)


def bench_partitioned(n_turns: int = N_TURNS, small_turns: int = SMALL_TURNS) -> list[dict[str, Any]]:
    """The rows of the module docstring (in a temporary folder removed afterwards)."""
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="axon-bench-partitioned-") as tmp:
        work = Path(tmp)
        large = replicate_sample(n_turns, work / "turns_large.jsonl")
        small = replicate_sample(small_turns, work / "turns_small.jsonl")
        runs_out = work / "runs"
        single = _evaluate_fresh(large, runs_out, "single")
        one = _evaluate_fresh(large, runs_out, "1")
        two = _evaluate_fresh(large, runs_out, "2")
        two_small = _evaluate_fresh(small, runs_out, "2")
        for label, r in (("single process", single), ("--workers 1", one), ("--workers 2", two)):
            rate = r["segments"] / r["seconds"]
            rows.append(_row(f"{n_turns} distinct turns, heuristic, cold, {label}", rate, "seg/s", "", None,
                             seconds=round(r["seconds"], 1), segments=r["segments"], status=r["status"]))
        speedup = one["seconds"] / two["seconds"]
        rows.append(_row("speed-up of --workers 2 over --workers 1 (same evidence, same sitting)", speedup, "x",
                         f">= {SPEEDUP_TARGET:g}", speedup >= SPEEDUP_TARGET))
        growth = two["driver_peak_mb"] / two_small["driver_peak_mb"] - 1
        rows.append(_row(f"driver peak, {small_turns} turns, --workers 2", two_small["driver_peak_mb"], "MB", "",
                         None))
        rows.append(_row(f"driver peak, {n_turns} turns, --workers 2 (growth over {small_turns})",
                         two["driver_peak_mb"], "MB", f"growth <= {DRIVER_GROWTH_TARGET:.0%}",
                         abs(growth) <= DRIVER_GROWTH_TARGET, growth=round(growth, 4)))
        worker_peak = max(float((r["partitions"] or {}).get("worker_peak_mb") or 0.0) for r in (one, two))
        rows.append(_row("largest worker peak (VmHWM of a worker process)", worker_peak, "MB",
                         f"< {WORKER_PEAK_MB_TARGET:g}", worker_peak < WORKER_PEAK_MB_TARGET))
        same = all(r["status"] == "complete" and r["judged"] == single["judged"] for r in (one, two))
        rows.append(_row("every run complete, same segments judged", float(same), "bool", "1", same))
        try:
            diff, n = merged_matches(single["run_dir"], two["run_dir"])
            rows.append(_row(f"merged headline estimates vs in memory ({n} figures): largest difference", diff, "",
                             "<= 1e-9", diff <= 1e-9))
        except ImportError as exc:  # the mergeable statistics are not installed in this checkout
            rows.append(_row("merged headline estimates vs in memory", None, "", "<= 1e-9", False,
                             detail=f"not measured: {exc}"))
    return rows


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    n = int(args[0]) if args else N_TURNS
    small = int(args[1]) if len(args) > 1 else max(1, n // 4)
    rows = bench_partitioned(n, small)
    for r in rows:
        flag = "info" if r["ok"] is None else ("ok" if r["ok"] else "MISS")
        extra = {k: v for k, v in r.items() if k not in ("section", "name", "value", "unit", "target", "ok")}
        print(f"[{flag:4}] {r['name']}: {r['value']} {r['unit']} (target {r['target'] or '-'}) {extra or ''}")
    return 0 if all(r["ok"] is not False for r in rows) else 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
