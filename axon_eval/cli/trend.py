"""``python -m axon_eval trend RUN [RUN ...] [--by surface|region|client] [--allow-mixed] [--json]``:
every headline figure per run date with its interval, read through DuckDB (:mod:`axon_eval.runs.trend`).

Exit codes: 0 the trend was printed; 2 a usage error (a folder that is not a run, runs mixing judge or
rubric ids without ``--allow-mixed``), reported in one line.
"""

from __future__ import annotations

import argparse
import json
import sys

from ..stats.intervals import N_BOOT, SEED


def _cmd_trend(args: argparse.Namespace) -> int:
    from ..runs.manifest import EXIT_USAGE
    from ..runs.trend import format_trend, trend

    try:
        table = trend(args.runs, by=args.by, allow_mixed=args.allow_mixed, n_boot=args.n_boot, seed=args.seed)
    except (ValueError, FileNotFoundError) as exc:  # MixedResultsError is a ValueError
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.json:
        print(json.dumps({"rows": json.loads(table.to_json(orient="records")),
                          **{k: v for k, v in table.attrs.items()}}, indent=1, default=str))
    else:
        print(format_trend(table))
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``trend`` verb to the ``python -m axon_eval`` sub-command parser."""
    p = sub.add_parser("trend", help="headline figures per run date with intervals, across run folders (DuckDB)",
                       description="Read RUN folders through one DuckDB view over their results datasets and "
                       "manifests and print each headline figure per run date with its interval; refuses runs "
                       "whose judge or rubric ids differ unless --allow-mixed.")
    p.add_argument("runs", nargs="+", help="run folders")
    p.add_argument("--by", choices=("surface", "region", "client"), default=None, help="break each run down by")
    p.add_argument("--allow-mixed", action="store_true", help="join runs whose judge or rubric ids differ")
    p.add_argument("--n-boot", type=int, default=N_BOOT, help=f"bootstrap resamples (default {N_BOOT})")
    p.add_argument("--seed", type=int, default=SEED, help=f"bootstrap seed, recorded (default {SEED})")
    p.add_argument("--json", action="store_true", help="machine-readable rows")
    p.set_defaults(handler=_cmd_trend)
