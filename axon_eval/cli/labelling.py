"""Labelling verbs of ``python -m axon_eval``: ``sample-for-labelling`` and ``import-labels``.

``sample-for-labelling RUN --n 60 --stratify band,surface,client --seed 1 --out DIR [--min-per-stratum 1]``
    a proportional stratified sample of the run's judged segments written as a labelling pack into DIR:
    ``sheet.csv`` to fill, ``index.html`` and one page per segment (no judge output shown), ``design.json``
``import-labels SHEET [SHEET ...] [--run RUN] [--out FILE]``
    validate filled sheet(s); segment ids are checked against ``--run``'s judged segments, else against
    the ``design.json`` beside the (first) sheet. Valid rows are written to FILE (default
    ``<sheet>.imported.csv`` beside the first sheet); every bad row is printed with its line.

Exit status: 0 ok; 2 usage error (missing run or file, unknown stratifier, pack folder already used,
nothing to check ids against); 6 ``import-labels`` found bad rows (the valid rows are still written; the
same code as ``--strict`` elsewhere).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

EXIT_OK = 0
EXIT_USAGE = 2
EXIT_BAD_ROWS = 6


def _cmd_sample(args: argparse.Namespace) -> int:
    from ..calibration.labelling import DESIGN_FILE, INDEX_FILE, SHEET_FILE, sample_for_labelling, write_labelling_pack
    from ..runs import load_run

    try:
        run = load_run(args.run)
        stratify = tuple(s.strip() for s in args.stratify.split(",") if s.strip())
        sample = sample_for_labelling(run, args.n, stratify, seed=args.seed, min_per_stratum=args.min_per_stratum)
        out = write_labelling_pack(sample, run, args.out)
    except (ValueError, FileNotFoundError, FileExistsError, KeyError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    print(f"sampled {sample.n} of {sample.population} judged segments (asked for {sample.n_requested}) "
          f"in {len(sample.strata)} strata by {', '.join(stratify) or '(none)'}, seed {sample.seed}")
    print(f"sheet:  {out / SHEET_FILE}")
    print(f"pages:  {out / INDEX_FILE}")
    print(f"design: {out / DESIGN_FILE}")
    return EXIT_OK


def _cmd_import(args: argparse.Namespace) -> int:
    from ..calibration.labelling import DESIGN_FILE, design_frame, import_labels, known_from_results, write_labels
    from ..runs import load_run
    from ..runs.io import require_file

    sheets = [Path(s) for s in args.sheet]
    try:
        for s in sheets:
            require_file(s, "sheet", "a filled labelling sheet (CSV file)")
        if args.run:
            known = known_from_results(load_run(args.run).results)
            basis = f"run {args.run}"
        elif (sheets[0].parent / DESIGN_FILE).is_file():
            d = design_frame(sheets[0].parent / DESIGN_FILE)
            known = dict(zip(d["segment_id"], d["answer_captured"].astype(bool), strict=True))
            basis = str(sheets[0].parent / DESIGN_FILE)
        else:
            raise FileNotFoundError(f"no {DESIGN_FILE} beside {sheets[0]}: pass --run RUN to check the segment ids")
        labels, problems = import_labels(sheets, known)
        if labels.empty and not problems:
            raise ValueError(f"no label rows in {', '.join(map(str, sheets))}: only a header; nothing was written")
    except (ValueError, FileNotFoundError, KeyError, UnicodeDecodeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    out = Path(args.out) if args.out else sheets[0].with_name(sheets[0].stem + ".imported.csv")
    write_labels(labels, out)
    for p in problems:
        print(f"BAD ROW {p}", file=sys.stderr)
    summary = {"labels": len(labels), "segments": int(labels["segment_id"].nunique()),
               "raters": sorted(labels["rater"].unique().tolist()), "bad_rows": len({(p.file, p.line) for p in problems}),
               "checked_against": basis, "written": str(out)}
    print(json.dumps(summary) if args.json else
          f"{summary['labels']} label row(s) for {summary['segments']} segment(s) by {len(summary['raters'])} "
          f"rater(s); {summary['bad_rows']} bad row(s); ids checked against {basis}; written to {out}")
    return EXIT_BAD_ROWS if problems else EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``sample-for-labelling`` and ``import-labels`` to the CLI's subparsers."""
    p = sub.add_parser("sample-for-labelling",
                       help="stratified sample of a run's segments as a labelling pack (sheet + pages, no scores)")
    p.add_argument("run", help="run folder whose judged segments are sampled")
    p.add_argument("--n", type=int, default=60, help="sample size (default 60)")
    p.add_argument("--stratify", default="band,surface,client",
                   help="comma-separated stratifier columns (default band,surface,client)")
    p.add_argument("--seed", type=int, default=0, help="seed of the within-stratum draw (recorded)")
    p.add_argument("--min-per-stratum", type=int, default=1, help="minimum draws per stratum (default 1)")
    p.add_argument("--out", required=True, help="new folder for the pack (refused when it holds a pack)")
    p.set_defaults(handler=_cmd_sample)

    p = sub.add_parser("import-labels", help="validate filled labelling sheet(s); exit 6 when rows are bad")
    p.add_argument("sheet", nargs="+", help="filled sheet.csv file(s), one per rater or shared")
    p.add_argument("--run", help="run folder whose segment ids are known (default: design.json beside the sheet)")
    p.add_argument("--out", help="validated labels CSV (default <sheet>.imported.csv beside the first sheet)")
    p.add_argument("--json", action="store_true", help="machine-readable summary")
    p.set_defaults(handler=_cmd_import)
