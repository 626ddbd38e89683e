"""Benchmarks of evaluation runs: ``bench_runs() -> list[dict]`` (rows for ``make bench``).

Rows (``section`` = ``"runs"``):

``make run wall time``          the exact command of ``make run`` (``python -m axon_eval run
                                notebooks/01_evaluate.ipynb -f notebooks/params/default.yaml``) on the
                                bundled sample with the heuristic judge, kernel start and HTML export
                                included, into a temporary runs folder with a fresh verdict cache.
                                Target < 90 s.
``evaluate 10k turns (cold)``   headless :func:`axon_eval.runs.evaluate` on the sample replicated to
                                10,000 turns (turn ids suffixed ``-r0001``... to stay unique), heuristic
                                judge, empty cache: loading, rendering, judging, scoring, writing the run.
``evaluate 10k turns (cached)`` the same again with every verdict in the cache (what a resumed run costs).
``evaluate 10k throughput``     segments per second of the cold run.

The 10k targets (< 120 s cold, < 60 s cached, >= 100 segments/s) are this project's own budgets for an
offline heuristic run on a laptop-class machine, not figures from any source document.

Run ``python -m axon_eval.bench_runs`` to print the rows.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .evidence import load_turns
from .runs import CACHE_ENV, RUNS_DIR_ENV, evaluate

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "data" / "turns" / "sample_turns.jsonl"
NOTEBOOK = ROOT / "notebooks" / "01_evaluate.ipynb"
DEFAULT_PARAMS = ROOT / "notebooks" / "params" / "default.yaml"
MAKE_RUN_TARGET_S = 90.0
TEN_K_COLD_TARGET_S = 120.0
TEN_K_CACHED_TARGET_S = 60.0
TEN_K_THROUGHPUT_TARGET = 100.0


def _row(name: str, value: float | None, unit: str, target: str, ok: bool, **extra: Any) -> dict[str, Any]:
    return {"section": "runs", "name": name, "value": None if value is None else round(value, 3), "unit": unit,
            "target": target, "ok": bool(ok), **extra}


def bench_make_run(workdir: Path) -> dict[str, Any]:
    """Wall time of ``make run``'s command, run as a subprocess into ``workdir``."""
    env = {**os.environ, RUNS_DIR_ENV: str(workdir / "runs"), CACHE_ENV: str(workdir / "cache.sqlite")}
    cmd = [sys.executable, "-m", "axon_eval", "run", str(NOTEBOOK.relative_to(ROOT)), "-f",
           str(DEFAULT_PARAMS.relative_to(ROOT)), "--quiet"]
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    ok = proc.returncode == 0 and elapsed < MAKE_RUN_TARGET_S
    detail = proc.stdout.strip().splitlines()[0] if proc.returncode == 0 and proc.stdout.strip() else \
        (proc.stderr.strip().splitlines() or ["no output"])[-1]
    return _row("make run wall time (01_evaluate, sample, heuristic)", elapsed, "s",
                f"< {MAKE_RUN_TARGET_S:g}", ok, returncode=proc.returncode, detail=detail)


def replicate_sample(n_turns: int, path: Path) -> Path:
    """Write the sample's turns repeated to ``n_turns`` lines (ids suffixed ``-rNNNN``) to ``path``."""
    turns, invalid = load_turns(SAMPLE)
    if invalid or not turns:
        raise ValueError(f"{SAMPLE} must hold valid turns to replicate (invalid: {len(invalid)})")
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n_turns):
            t = turns[i % len(turns)]
            copy = t.model_copy(update={"turn_id": f"{t.turn_id}-r{i // len(turns):04d}"})
            fh.write(copy.to_json_line() + "\n")
    return path


def bench_evaluate_10k(workdir: Path, n_turns: int = 10_000) -> list[dict[str, Any]]:
    """Headless evaluate on ``n_turns`` replicated turns: cold cache, then fully cached."""
    evidence = replicate_sample(n_turns, workdir / "turns_10k.jsonl")
    cache = workdir / "cache_10k.sqlite"
    start = time.perf_counter()
    cold = evaluate(evidence, "heuristic", out_dir=workdir / "runs", name="bench-10k", cache=cache,
                    progress=False)
    cold_s = time.perf_counter() - start
    start = time.perf_counter()
    warm = evaluate(evidence, "heuristic", out_dir=workdir / "runs", name="bench-10k-cached", cache=cache,
                    progress=False)
    warm_s = time.perf_counter() - start
    segments = cold.manifest.counts.segments
    rate = segments / cold_s if cold_s > 0 else float("inf")
    complete = cold.manifest.status == "complete" and warm.manifest.status == "complete"
    return [
        _row(f"evaluate {n_turns} turns, heuristic, cold cache", cold_s, "s", f"< {TEN_K_COLD_TARGET_S:g}",
             complete and cold_s < TEN_K_COLD_TARGET_S, segments=segments,
             judged=cold.manifest.counts.judged, unjudged=cold.manifest.counts.unjudged),
        _row(f"evaluate {n_turns} turns, heuristic, all verdicts cached", warm_s, "s",
             f"< {TEN_K_CACHED_TARGET_S:g}", complete and warm_s < TEN_K_CACHED_TARGET_S,
             cache_hits=warm.manifest.cache_hits),
        _row(f"evaluate {n_turns} turns throughput (cold)", rate, "seg/s", f">= {TEN_K_THROUGHPUT_TARGET:g}",
             complete and rate >= TEN_K_THROUGHPUT_TARGET),
    ]


def bench_runs(*, make_run: bool = True, ten_k: bool = True) -> list[dict[str, Any]]:
    """All run benchmarks (in a temporary folder that is removed afterwards)."""
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="axon-bench-runs-") as tmp:
        work = Path(tmp)
        if make_run:
            (work / "make").mkdir()
            rows.append(bench_make_run(work / "make"))
        if ten_k:
            (work / "10k").mkdir()
            rows.extend(bench_evaluate_10k(work / "10k"))
    return rows


def main() -> int:
    rows = bench_runs()
    for r in rows:
        flag = "ok" if r["ok"] else "MISS"
        print(f"[{flag:4}] {r['name']}: {r['value']} {r['unit']} (target {r['target']})")
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
