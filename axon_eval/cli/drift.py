"""Judge change-control verbs of ``python -m axon_eval``: ``anchor`` and ``drift``.

``anchor RUN --note TEXT``
    freeze a complete evaluation run as an anchor: writes ``RUN/anchor.json`` (SHA-256 of the evidence
    file, ``verdicts.jsonl`` and results, judge id, rubric id, UTC date, the note). Refused
    (exit 2) for a run that is not complete, holds no hashed evidence or verdicts, or is an anchor already.
``drift ANCHOR_RUN --judge SPEC [--thresholds FILE] [--out DIR]``
    verify the anchor's hashes, re-judge its evidence with the candidate judge (a new ``rejudge`` run),
    compare, and write a dated drift run folder (``drift.json``, ``decision.csv``, ``dimensions.csv``,
    ``transitions.csv``, ``deltas.parquet``, ``figures/``, ``drift.html``). Prints the report and the
    adopt / hold decision; the decision is recorded in ``drift.json`` (``decision``), not in the exit status.

Exit status: 0 the command completed (for ``drift``: whatever the decision); 1 re-judging raised; 2 usage
error (not an anchor, anchor files changed, bad judge spec or thresholds file, missing API key, ...).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def _cmd_anchor(args: argparse.Namespace) -> int:
    from ..calibration.anchors import ANCHOR_FILE, AnchorError, mark_anchor

    try:
        anchor = mark_anchor(args.run, args.note)
    except (AnchorError, FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"anchor: {Path(args.run) / ANCHOR_FILE}")
    print(f"  judge {anchor.judge_id} | rubric {anchor.rubric_id} | {anchor.n_segments} segments | "
          f"evidence {anchor.evidence_file} (sha256 {anchor.evidence_sha256[:12]})")
    print(f"  marked {anchor.marked_at}: {anchor.note}")
    return 0


def _cmd_drift(args: argparse.Namespace) -> int:
    from ..calibration.anchors import (
        AnchorChangedError,
        AnchorError,
        drift_between,
        rejudge_anchor,
        verify_anchor,
        write_drift_run,
    )
    from ..judges.base import MissingApiKey
    from ..runs import InputChangedError
    from ..stats.drift import load_thresholds, packaged_thresholds_path

    usage = (AnchorError, AnchorChangedError, InputChangedError, MissingApiKey, ValueError, FileNotFoundError,
             TypeError, KeyError)
    try:
        thresholds = load_thresholds(args.thresholds or packaged_thresholds_path())
        verify_anchor(args.anchor_run)
        from ..judges.registry import build_judge

        judge = build_judge(args.judge)
    except usage as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    out = Path(args.out) if args.out is not None else Path(args.anchor_run).parent
    try:
        candidate = rejudge_anchor(args.anchor_run, judge, out_dir=out, progress=not args.quiet,
                                   concurrency=args.concurrency, cache=False if args.no_cache else None,
                                   batch=args.batch, max_cost_usd=args.max_cost_usd)
    except usage as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # noqa: BLE001 -- the candidate run is kept, marked failed
        print(f"error: re-judging the anchor failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    print(f"candidate run: {candidate.run_dir} (status {candidate.manifest.status})")
    drift = drift_between(args.anchor_run, candidate, thresholds, seed=args.seed, n_boot=args.n_boot)
    folder = write_drift_run(drift, out, params={"judge": judge.spec})
    print(drift.format())
    print(f"drift folder: {folder} (drift.json, drift.html)")
    if drift.simulated:
        print("WARNING: SIMULATED candidate judge: this report rehearses the procedure; it measures no real judge",
              file=sys.stderr)
    print(f"DECISION: {drift.decision.decision}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``anchor`` and ``drift`` to the ``python -m axon_eval`` sub-command parser."""
    from .runs import _non_negative_float, _positive_int

    p = sub.add_parser("anchor", help="freeze a complete run as a judge-drift anchor (writes anchor.json)",
                       description="Mark RUN as an anchor: anchor.json records the SHA-256 of its evidence file, "
                       "verdicts.jsonl and results, the judge and rubric ids, the date and NOTE. Only a "
                       "complete run can be an anchor, and an anchor is never re-marked.")
    p.add_argument("run", help="run folder (status complete)")
    p.add_argument("--note", required=True, help="why this run is the reference (recorded in anchor.json)")
    p.set_defaults(handler=_cmd_anchor)

    p = sub.add_parser("drift", help="re-judge an anchor with a candidate judge and report drift (adopt / hold)",
                       description="Verify ANCHOR_RUN's frozen hashes, re-judge its evidence with the candidate "
                       "judge, and write a dated drift run folder: paired score differences with a bootstrap CI, "
                       "Wilcoxon signed-rank test, Bland-Altman limits of agreement, band transitions, "
                       "per-dimension drift and an adopt / hold decision against a thresholds YAML file. "
                       "The decision is printed and recorded in drift.json ('decision'); the exit status is 0 "
                       "whenever the report was written, whatever the decision.")
    p.add_argument("anchor_run", help="anchor run folder (marked with `anchor`)")
    p.add_argument("--judge", required=True, help="candidate judge spec, e.g. anthropic:<model> or "
                   "'simulate(heuristic, sd=1, seed=1)' (a SIMULATED candidate)")
    p.add_argument("--thresholds", default=None, metavar="FILE",
                   help="thresholds YAML (default: the packaged axon_eval/drift/thresholds.yaml)")
    p.add_argument("--out", default=None, help="parent folder of the candidate and drift runs "
                   "(default: the anchor's parent)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    p.add_argument("--n-boot", type=_positive_int, default=2000, help="bootstrap resamples (default 2000)")
    p.add_argument("--concurrency", type=_positive_int, default=8, help="judgements in flight (default 8)")
    p.add_argument("--no-cache", action="store_true", help="do not read or write the verdict cache")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--batch", action="store_true", help="send uncached views as one Anthropic Message Batch")
    p.add_argument("--max-cost-usd", type=_non_negative_float, default=None,
                   help="stop sending views before the reported cost would exceed this (the rest stay unjudged)")
    p.set_defaults(handler=_cmd_drift)
