"""``make bench``: benchmarks measured side by side in one run.

Absolute times on a shared 2-core machine are noisy, so each section reports a rate *and*, where it
can, a ratio against a baseline measured in the same process moments apart. The table is printed and
the figures are written to ``runs/<UTC date>T<time>Z_bench/bench.json``.

Sections: ``scoring`` (here), ``heuristic`` (:mod:`axon_eval.bench_heuristic`), ``judges``
(:mod:`axon_eval.bench_llm`), ``runs`` (:mod:`axon_eval.bench_runs`), ``studies`` (every entry of
:data:`STUDY_BENCHES`, e.g. :mod:`axon_eval.bench_noise`, :mod:`axon_eval.bench_sensitivity`).
``--only NAME`` runs one.

Every memory figure is the peak RSS of a fresh process, interpreter and imports included, measured
inside that process by :func:`axon_eval.bench_memory.run_fresh` (``ru_maxrss`` would carry this
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
from typing import Any

import numpy as np
import pandas as pd

from .rubric import CAP_FACTS, DIMENSIONS, Rubric
from .scoring import score_frame, score_turn

BenchRow = dict[str, Any]


def row(section: str, name: str, value: float, unit: str, target: str = "", ok: bool | None = None, **extra: Any) -> BenchRow:
    return {"section": section, "name": name, "value": value, "unit": unit, "target": target, "ok": ok, **extra}


def synthetic_frame(n: int, seed: int = 0) -> pd.DataFrame:
    """``n`` random segments: integer subscores 0-10, ~15% null faithfulness, ~10% of each cap fact."""
    rng = np.random.default_rng(seed)
    data: dict[str, Any] = {d: rng.integers(0, 11, n).astype(np.float64) for d in DIMENSIONS}
    data["answer_faithfulness"][rng.random(n) < 0.15] = np.nan
    for f in CAP_FACTS:
        data[f] = rng.random(n) < 0.10
    return pd.DataFrame(data)


def bench_scoring(n_rows: int = 1_000_000, loop_rows: int | None = None, seed: int = 0) -> list[BenchRow]:
    """``score_frame`` on ``n_rows`` synthetic rows vs a plain per-row Python loop (``score_turn``).

    The loop calls :func:`score_turn` row by row over the same rows (``loop_rows`` limits it, for quick
    checks); ratio = vectorised rows/s / loop rows/s. The loop's scores are checked equal to the
    vectorised ones, so the ratio compares two ways of computing the same numbers.
    """
    loop_rows = n_rows if loop_rows is None else loop_rows
    rubric = Rubric.default()
    df = synthetic_frame(n_rows, seed)
    score_frame(df.head(1000), rubric)  # warm-up
    t0 = time.perf_counter()
    scored = score_frame(df, rubric)
    vec_s = time.perf_counter() - t0
    vec_rate = n_rows / vec_s

    head = df.head(loop_rows)
    records = head.to_dict("records")
    t0 = time.perf_counter()
    loop_scores = []
    for r in records:
        subs = {d: (None if np.isnan(r[d]) else r[d]) for d in DIMENSIONS}
        loop_scores.append(score_turn(subs, {f: bool(r[f]) for f in CAP_FACTS}, rubric).score)
    loop_s = time.perf_counter() - t0
    loop_rate = loop_rows / loop_s
    identical = bool(np.array_equal(np.asarray(loop_scores), scored["score"].to_numpy()[:loop_rows]))
    ratio = vec_rate / loop_rate
    return [
        row("scoring", f"score_frame, {n_rows:,} rows", round(vec_rate), "rows/s", ">= 1,000,000", vec_rate >= 1e6,
            seconds=round(vec_s, 3)),
        row("scoring", f"score_turn loop, {loop_rows:,} rows", round(loop_rate), "rows/s", "", None, seconds=round(loop_s, 3)),
        row("scoring", "vectorised / loop", round(ratio, 1), "x", ">= 50", ratio >= 50),
        row("scoring", "loop scores == vectorised scores", int(identical), "bool", "1", identical),
    ]


#: The ``studies`` section: (module, function) pairs, each returning bench rows; add a line per study.
STUDY_BENCHES: list[tuple[str, str]] = [
    ("axon_eval.bench_noise", "bench_noise"),
    ("axon_eval.bench_sensitivity", "bench_sensitivity"),
    ("axon_eval.bench_panels", "bench_panels"),
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
    "heuristic": ("axon_eval.bench_heuristic", "bench_heuristic"),
    "judges": ("axon_eval.bench_llm", "bench_claude_fake_server"),
    "runs": ("axon_eval.bench_runs", "bench_runs"),
}


def _section(name: str) -> Callable[[], list[BenchRow]]:
    if name in SECTIONS:
        return SECTIONS[name]
    module, func = EXTERNAL_SECTIONS[name]
    return getattr(importlib.import_module(module), func)


def format_table(rows: list[BenchRow]) -> str:
    """Fixed-width text table of benchmark rows (column widths fit the longest entry)."""
    cells = []
    for r in rows:
        value = f"{r['value']:,}" if isinstance(r["value"], int | float) else str(r["value"])
        cells.append((r["section"], r["name"], value, r["unit"], r["target"], {True: "yes", False: "NO", None: ""}[r["ok"]]))
    head = ("section", "benchmark", "value", "unit", "target", "ok")
    widths = [max(len(str(c[i])) for c in [head, *cells]) for i in range(len(head))]
    def fmt(c: tuple[str, ...]) -> str:
        return "  ".join(str(v).rjust(w) if i == 2 else str(v).ljust(w) for i, (v, w) in enumerate(zip(c, widths))).rstrip()
    lines = [fmt(head), "-" * (sum(widths) + 2 * (len(widths) - 1))]
    lines.extend(fmt(c) for c in cells)
    return "\n".join(lines)


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


if __name__ == "__main__":
    sys.exit(main())
