"""Benchmark section ``heuristic``: throughput of the offline judge and its agreement with labels.

``bench_heuristic()`` returns rows ``{"section": "heuristic", "name", "value", "unit", "target", "ok"}``:

* turns/s of :class:`~axon_eval.judges.heuristic.HeuristicJudge` over the bundled sample's views
  replicated to ``n_turns`` (default 10,000) segments (target >= 500/s). The sqlglot parse cache
  (``analyse_sql``) is shared, as in a real run; verdicts are not cached.
* on a held-out sample regenerated from the same scenario templates with other seeds
  (:data:`HELD_OUT_SEEDS`): the same agreement figures. Same templates, new teams, seasons, values and
  phrasings: it shows the checks are not fitted to the committed values, not that they generalise
  to other warehouses or other kinds of defect.
* on the bundled sample: Cohen's kappa of the verdict vs the labelled verdict (target >= 0.6),
  share of fabricated-figure claims named in the explanation (target >= 90%), share of subscores
  inside the labelled ranges, and the scorer band's kappa vs the labels (information).

The labels are CONSTRUCTED from seeded defects, not human judgements (see :mod:`axon_eval.labels`).
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from .evidence import load_turns
from .fixtures.build import FixtureSeeds, build_all
from .judges.heuristic import HeuristicJudge
from .rubric import Rubric
from .stats.agreement import measure_heuristic
from .view import build_views

SAMPLE_TURNS = Path("data/turns/sample_turns.jsonl")
SAMPLE_LABELS = Path("data/turns/labels.csv")
#: Seeds of the held-out sample (any seeds other than the committed ones; recorded in the bench rows).
HELD_OUT_SEEDS = FixtureSeeds(warehouse=777, scenario=11, timing=12, assignment=13, events=14)


def _row(name: str, value: float, unit: str, target: str = "", ok: bool | None = None, **extra: Any) -> dict[str, Any]:
    return {"section": "heuristic", "name": name, "value": value, "unit": unit, "target": target, "ok": ok, **extra}


def heuristic_throughput(turns_path: str | Path = SAMPLE_TURNS, n_turns: int = 10_000) -> tuple[float, float, int]:
    """Judge the sample's views cycled to ``n_turns`` judgements; returns (turns/s, seconds, n)."""
    turns, _ = load_turns(turns_path)
    views = build_views(turns, Rubric.default())
    if not views:
        raise ValueError(f"{turns_path} has no usable turns")
    judge = HeuristicJudge()
    batch = [views[i % len(views)] for i in range(n_turns)]
    t0 = time.perf_counter()
    records = [judge.judge(v) for v in batch]
    seconds = time.perf_counter() - t0
    errors = [r for r in records if r.verdict is None]
    if errors:
        raise RuntimeError(f"{len(errors)} heuristic judgements failed, e.g. {errors[0].error}")
    return n_turns / seconds, seconds, n_turns


def bench_heuristic(turns_path: str | Path = SAMPLE_TURNS, labels_path: str | Path = SAMPLE_LABELS,
                    n_turns: int = 10_000) -> list[dict[str, Any]]:
    """The ``heuristic`` section of ``make bench`` (see the module docstring)."""
    rate, seconds, n = heuristic_throughput(turns_path, n_turns)
    agreement = measure_heuristic(turns_path, labels_path)
    claims = agreement.claims
    fabricated = claims[claims["defect"] == "fabricated_figure"]
    fab_rate = float(fabricated["caught"].mean()) if len(fabricated) else float("nan")
    bands = agreement.band_agreement or {}
    return [
        _row(f"heuristic judge, {n:,} segments", round(rate), "turns/s", ">= 500", rate >= 500,
             seconds=round(seconds, 3)),
        _row("kappa verdict vs labels (constructed)", round(agreement.kappa, 3), "kappa", ">= 0.6",
             agreement.kappa >= 0.6, n=agreement.n),
        _row("fabricated-figure claims caught", round(100 * fab_rate, 1), "%", ">= 90", fab_rate >= 0.9,
             n=len(fabricated)),
        _row("all labelled claims caught", round(100 * agreement.claim_catch_rate, 1), "%", "", None,
             n=agreement.n_claims),
        _row("subscores inside labelled ranges", round(100 * agreement.in_range, 1), "%", "", None),
        _row("verdict accuracy vs labels", round(100 * agreement.accuracy, 1), "%", "", None),
        _row("scorer band kappa vs labels", round(bands.get("kappa", float("nan")), 3), "kappa", "", None),
        *bench_heuristic_held_out(),
    ]


def bench_heuristic_held_out(seeds: FixtureSeeds = HELD_OUT_SEEDS) -> list[dict[str, Any]]:
    """Agreement on a sample rebuilt into a temporary folder from ``seeds`` (see the module docstring)."""
    with tempfile.TemporaryDirectory(prefix="axon-heldout-") as tmp:
        build_all(tmp, seeds)
        agreement = measure_heuristic(Path(tmp) / "turns" / "sample_turns.jsonl",
                                      Path(tmp) / "turns" / "labels.csv")
    claims = agreement.claims
    fabricated = claims[claims["defect"] == "fabricated_figure"]
    fab_rate = float(fabricated["caught"].mean()) if len(fabricated) else float("nan")
    label = f"held-out sample (seeds {seeds.warehouse}/{seeds.scenario})"
    return [
        _row(f"{label}: kappa verdict vs labels", round(agreement.kappa, 3), "kappa", ">= 0.6",
             agreement.kappa >= 0.6, n=agreement.n, seeds=seeds.__dict__),
        _row(f"{label}: fabricated-figure claims caught", round(100 * fab_rate, 1), "%", ">= 90",
             fab_rate >= 0.9, n=len(fabricated)),
        _row(f"{label}: subscores inside labelled ranges", round(100 * agreement.in_range, 1), "%", "", None),
    ]
