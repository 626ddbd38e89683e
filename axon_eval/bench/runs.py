"""Benchmarks of evaluation runs: ``bench_runs() -> list[dict]`` (rows for ``make bench``).

Rows (``section`` = ``"runs"``):

``make run wall time``          the exact command of ``make run`` (``python -m axon_eval run
                                notebooks/01_evaluate.ipynb -f notebooks/params/default.yaml``) on the
                                bundled sample with the heuristic judge, kernel start and HTML export
                                included, into a temporary runs folder with a fresh verdict cache.
                                Target < 90 s.
``evaluate 10k turns (cold)``   headless :func:`axon_eval.runs.evaluate` on the sample replicated to
                                10,000 turns, heuristic judge, empty cache: loading, rendering, judging,
                                scoring, writing the run. Every copy is made *distinct* (turn id suffixed
                                ``-r0001``..., and a ``-- copy N`` comment appended to each SQL statement),
                                so no two views are identical and the run really is cold: its row reports
                                the cache hits it had (0) instead of assuming them.
``evaluate 10k turns (cached)`` the same again with every verdict in the cache (what a resumed run costs).
``evaluate 10k throughput``     segments per second of the cold run.
``large file``                  the issue-8 case: the sample replicated (distinct copies) to 39,240 turns,
                                about 52 MB, evaluated by ``python -m axon_eval evaluate`` in a fresh
                                process whose own peak resident memory (``VmHWM``, interpreter and imports
                                included, read inside it by :func:`axon_eval.bench.memory.run_fresh`; not
                                ``ru_maxrss``, which carries the bench process's high-water mark over
                                exec) is reported (target < 500 MB), with the run folder's size and the
                                size of its ``report.html`` (target < 10 MB).

The 10k targets (< 120 s cold, < 60 s cached, >= 100 segments/s) are this project's own budgets for an
offline heuristic run on a laptop-class machine, not figures from any source document.

Run ``python -m axon_eval.bench.runs`` to print the rows.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .memory import MEANING, run_fresh
from ..evidence import load_turns
from ..runs import CACHE_ENV, RUNS_DIR_ENV, evaluate

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "data" / "turns" / "sample_turns.jsonl"
NOTEBOOK = ROOT / "notebooks" / "01_evaluate.ipynb"
DEFAULT_PARAMS = ROOT / "notebooks" / "params" / "default.yaml"
MAKE_RUN_TARGET_S = 90.0
TEN_K_COLD_TARGET_S = 120.0
TEN_K_CACHED_TARGET_S = 60.0
TEN_K_THROUGHPUT_TARGET = 100.0
#: The large-file case, 39,240 turns (the sample x 436, about 52 MB); its targets below.
LARGE_TURNS = 39_240
LARGE_PEAK_MB_TARGET = 500.0
LARGE_REPORT_MB_TARGET = 10.0


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
    """Write the sample's turns repeated to ``n_turns`` lines to ``path``; every copy is distinct (ids
    suffixed ``-rNNNN`` and a ``-- copy N`` SQL comment, or for a turn without SQL a ``(copy N)`` after
    its question, which changes the view but not its meaning)."""
    turns, invalid = load_turns(SAMPLE)
    if invalid or not turns:
        raise ValueError(f"{SAMPLE} must hold valid turns to replicate (invalid: {len(invalid)})")
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n_turns):
            t = turns[i % len(turns)]
            k = i // len(turns)
            steps = [s.model_copy(update={"sql": f"{s.sql}\n-- copy {k}"}) if s.kind == "sql" else s for s in t.steps]
            update: dict[str, Any] = {"turn_id": f"{t.turn_id}-r{k:04d}", "steps": steps}
            if not any(s.kind == "sql" for s in t.steps) and k:  # no SQL to mark: mark the question instead
                update["question"] = f"{t.question} (copy {k})"
            copy = t.model_copy(update=update)
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
        _row(f"evaluate {n_turns} distinct turns, heuristic, cold cache", cold_s, "s", f"< {TEN_K_COLD_TARGET_S:g}",
             complete and cold_s < TEN_K_COLD_TARGET_S and cold.manifest.cache_hits == 0, segments=segments,
             judged=cold.manifest.counts.judged, unjudged=cold.manifest.counts.unjudged,
             cache_hits=cold.manifest.cache_hits),
        _row(f"evaluate {n_turns} turns, heuristic, all verdicts cached", warm_s, "s",
             f"< {TEN_K_CACHED_TARGET_S:g}", complete and warm_s < TEN_K_CACHED_TARGET_S,
             cache_hits=warm.manifest.cache_hits),
        _row(f"evaluate {n_turns} turns throughput (cold)", rate, "seg/s", f">= {TEN_K_THROUGHPUT_TARGET:g}",
             complete and rate >= TEN_K_THROUGHPUT_TARGET),
    ]


def _folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def bench_large_file(workdir: Path, n_turns: int = LARGE_TURNS) -> list[dict[str, Any]]:
    """Peak memory, folder size and report size of evaluating a ~52 MB evidence file (module docstring)."""
    evidence = replicate_sample(n_turns, workdir / "turns_large.jsonl")
    size_mb = evidence.stat().st_size / 1e6
    out = workdir / "runs"
    env = {**os.environ, RUNS_DIR_ENV: str(out), CACHE_ENV: str(workdir / "cache_large.sqlite")}
    fresh = run_fresh(["-m", "axon_eval", "evaluate", "--turns", str(evidence), "--judge", "heuristic",
                       "--out", str(out), "--name", "bench-large", "--quiet"], cwd=ROOT, env=env)
    output = (fresh.stdout + fresh.stderr).strip()
    folders = [p for p in out.iterdir() if p.is_dir() and not p.name.startswith(".")] if out.exists() else []
    rows = [_row(f"evaluate {n_turns} distinct turns ({size_mb:.0f} MB file): {fresh.label}", fresh.peak_mb, "MB",
                 f"< {LARGE_PEAK_MB_TARGET:g}", fresh.returncode == 0 and fresh.peak_mb < LARGE_PEAK_MB_TARGET,
                 baseline_mb=round(fresh.baseline_mb, 1), measured=MEANING, wall_s=round(fresh.wall_s, 1),
                 returncode=fresh.returncode, detail=(output.splitlines() or [""])[-1][:200])]
    if folders:
        folder = folders[0]
        from ..reporting.report import write_report

        start = time.perf_counter()
        report = write_report(folder)
        report_s = time.perf_counter() - start
        rows.append(_row("  its run folder (results, verdicts, audit, figures)", _folder_bytes(folder) / 1e6, "MB",
                         "", True))
        rows.append(_row("  its report.html", report.stat().st_size / 1e6, "MB", f"< {LARGE_REPORT_MB_TARGET:g}",
                         report.stat().st_size / 1e6 < LARGE_REPORT_MB_TARGET, seconds=round(report_s, 1)))
    return rows


def bench_runs(*, make_run: bool = True, ten_k: bool = True, large: bool = True) -> list[dict[str, Any]]:
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
        if large:
            (work / "large").mkdir()
            rows.extend(bench_large_file(work / "large"))
    return rows


def main() -> int:
    rows = bench_runs()
    for r in rows:
        flag = "ok" if r["ok"] else "MISS"
        print(f"[{flag:4}] {r['name']}: {r['value']} {r['unit']} (target {r['target']})")
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
