"""Labelling verbs of ``python -m axon_eval``: ``sample-for-labelling``, ``import-labels`` and ``plan-labels``.

``sample-for-labelling RUN --n 60 --stratify band,surface,client --seed 1 --out DIR [--min-per-stratum 1]``
    a proportional stratified sample of the run's judged segments written as a labelling pack into DIR:
    ``sheet.csv`` to fill, ``index.html`` and one page per segment (no judge output shown), ``design.json``
``sample-for-labelling RUN --design uniform|stratified|active --budget N [--signal SPEC] [--labels FILE] --out DIR``
    a sample under an explicit design (:mod:`axon_eval.stats.label_budget`): ``uniform``; ``stratified``
    (``--stratify``, default ``band``; Neyman allocation from ``--labels``, else proportional); ``active``
    (inclusion probabilities proportional to the ``--signal``: ``panel:RUN,RUN``, ``repeat:RUN``,
    ``column:NAME``, ``model``, ``p_not_good[:RUN]`` or ``p_not_good_entropy[:RUN]`` (the fitted offline
    judge's P(not good) and its entropy, from a run judged by ``heuristic-fitted``) or a CSV file). Each
    segment's inclusion probability is in ``design.json`` and ``probabilities.csv``, never in the rater's
    sheet or pages. ``--next-batch PACK`` (instead of ``--out``) draws the next batch of
    a batch-sequential design into PACK: its labels so far refit a ``model`` signal, the new segments go
    to ``sheet-<batch>.csv``, and every segment's weight counts every batch.
``import-labels SHEET [SHEET ...] [--run RUN] [--design DESIGN] [--out FILE] [--replace]``
    validate filled sheet(s); segment ids are checked against ``--run``'s judged segments, else against
    the pack's ``design.json`` (``--design``, default the one beside the (first) sheet). Valid rows are
    written to FILE (default ``sheet.imported.csv`` beside the first sheet: in a pack with several
    batches, the pack's one labels file, to which a later batch's rows are added); each row gets its
    segment's inclusion probability and design weight from ``design.json`` (a sheet written before the
    probabilities moved there may still carry an ``inclusion_probability`` column: it is read, and the
    design's value replaces it). Every bad row is printed with its line. A (segment, rater) labelled twice
    is a bad row naming both places; with ``--replace`` a later file's row (later on the command line, or
    a sheet imported now over the pack's rows from another sheet) replaces the earlier one and the count
    is said (two rows of one sheet stay bad rows). A file that is not a sheet (empty, binary, other
    columns, a semicolon-separated save) is refused before anything is written.
``plan-labels RUN --figure mean_score --half-width 2 (--labels FILE | --correlation 0.6) [--signal SPEC]``
    (``--signal`` as for ``sample-for-labelling``, ``p_not_good`` among them)
``plan-labels RUN_A RUN_B --detect-difference 3 ...``
    the labels the figure needs under each design (labels only, uniform, stratified, active) for the
    interval's half-width to reach the target with 90% assurance (shares as fractions: ``--figure
    share_poor --half-width 0.05``), or for a difference between two runs to be detected with 80% power.
    The units are checked before any run is read: a share's ``--half-width`` or ``--detect-difference``
    above 1 (``5`` for 5 percentage points) or a half-width of 0 or less is refused.

Exit status: 0 ok; 2 usage error (missing run or file, a file that is not a labels sheet, unknown
stratifier, design or signal, pack folder already used, nothing to check ids against, a target in the
wrong units); 6 ``import-labels`` found bad rows (the valid rows are still
written; the same code as ``--strict`` elsewhere).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

EXIT_OK = 0
EXIT_USAGE = 2
EXIT_BAD_ROWS = 6


def _cmd_sample(args: argparse.Namespace) -> int:
    from ..calibration import labelling as lab
    from ..runs import load_run

    try:
        if args.design is None:
            if args.next_batch or args.signal or args.labels:
                raise ValueError("--next-batch, --signal and --labels go with an explicit --design")
            if not args.out:
                raise ValueError("give --out DIR, a new folder for the pack")
            run = load_run(args.run)
            stratify = tuple(s.strip() for s in (args.stratify or "band,surface,client").split(",") if s.strip())
            sample = lab.sample_for_labelling(run, args.n if args.n is not None else 60, stratify, seed=args.seed,
                                              min_per_stratum=args.min_per_stratum)
            out = lab.write_labelling_pack(sample, run, args.out)
            print(f"sampled {sample.n} of {sample.population} judged segments (asked for {sample.n_requested}) "
                  f"in {len(sample.strata)} strata by {', '.join(stratify) or '(none)'}, seed {sample.seed}")
            print(f"sheet:  {out / lab.SHEET_FILE}")
            print(f"pages:  {out / lab.INDEX_FILE}")
            print(f"design: {out / lab.DESIGN_FILE}")
            return EXIT_OK
        if bool(args.out) == bool(args.next_batch):
            raise ValueError("give --out DIR (a new pack) or --next-batch PACK (the next batch of a pack), one of them")
        if args.n is None:
            raise ValueError("give the number of labels with --budget N")
        run = load_run(args.run)
        stratify = tuple(s.strip() for s in (args.stratify or "band").split(",") if s.strip())
        previous = None
        labels_path = args.labels
        if args.next_batch:
            pack = Path(args.next_batch)
            if not (pack / lab.DESIGN_FILE).is_file():
                raise FileNotFoundError(f"{pack} holds no {lab.DESIGN_FILE}: --next-batch takes a labelling pack folder")
            previous = json.loads((pack / lab.DESIGN_FILE).read_text(encoding="utf-8"))
            if previous.get("source_run") and Path(previous["source_run"]).resolve() != Path(run.run_dir).resolve():
                raise ValueError(f"{pack} was drawn from run {previous['source_run']}, not {run.run_dir}")
            if labels_path is None and list(pack.glob("*.imported.csv")):
                labels_path = str(pack)
        pilot_res = None
        notes = []
        if labels_path is not None:
            pilot = lab.read_pilot(run, labels_path, seed=args.seed)
            notes.extend(pilot.notes)
            weights = None if pilot.weights is None else pilot.weights.rename("weight").reset_index()
            pilot_res = lab.pilot_residuals(run, pilot.labels, weights)
        signal = None
        if args.design == "active":
            if not args.signal:
                raise ValueError(f"--design active needs --signal ({lab.SIGNAL_SPECS})")
            signal = lab.load_signal(args.signal, run, pilot=pilot_res)
        elif args.signal:
            raise ValueError("--signal goes with --design active")
        sample = lab.draw_design_sample(run, args.design, args.n, stratify=stratify, signal=signal, seed=args.seed,
                                        pilot=pilot_res, previous=previous)
        design = sample.design()
        batch = design["batches"][-1]
        if previous is None:
            out = lab.write_labelling_pack(sample, run, args.out)
            sheet = out / lab.SHEET_FILE
        else:
            out = Path(args.next_batch)
            sheet = lab.append_batch(sample, run, out)
    except (ValueError, FileNotFoundError, FileExistsError, KeyError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    print(f"{batch['design']} sample, batch {batch['batch']}: {batch['drawn']} of {sample.population} judged segments "
          f"drawn (seed {sample.seed}), {len(batch['new_segments'])} new to label")
    print(f"how:    {batch['method']}")
    if batch.get("note"):
        print(f"note:   {batch['note']}")
    for n in notes:
        print(f"note:   {n}")
    print(f"sheet:  {sheet}")
    print(f"pages:  {out / lab.INDEX_FILE}")
    print(f"design: {out / lab.DESIGN_FILE} (inclusion probabilities of every batch: {out / lab.PROBABILITIES_FILE})")
    return EXIT_OK


def _cmd_import(args: argparse.Namespace) -> int:
    from ..calibration.labelling import (
        DESIGN_FILE,
        IMPORTED_FILE,
        design_frame,
        import_labels,
        known_from_results,
        labels_header,
        merge_pack_labels,
        write_labels,
    )
    from ..runs import load_run
    from ..runs.io import require_file

    sheets = [Path(s) for s in args.sheet]
    design_path = Path(args.design) if args.design else sheets[0].parent / DESIGN_FILE
    try:
        if args.design:
            require_file(design_path, "design", f"the pack's {DESIGN_FILE}")
        for s in sheets:
            require_file(s, "sheet", "a filled labelling sheet (CSV file)")
            labels_header(s, constructed=False)  # empty, binary or other columns: refused, nothing written
        if args.run:
            known = known_from_results(load_run(args.run).results)
            basis = f"run {args.run}"
        elif design_path.is_file():
            d = design_frame(design_path)
            known = dict(zip(d["segment_id"], d["answer_captured"].astype(bool), strict=True))
            basis = str(design_path)
        else:
            raise FileNotFoundError(f"no {DESIGN_FILE} beside {sheets[0]}: pass --run RUN to check the segment ids "
                                    f"(and --design PACK/{DESIGN_FILE} for the inclusion probabilities)")
        labels, problems = import_labels(sheets, known, replace=args.replace,
                                         design=design_path if design_path.is_file() else None)
        if labels.empty and not problems:
            raise ValueError(f"no label rows in {', '.join(map(str, sheets))}: only a header; nothing was written")
    except (ValueError, FileNotFoundError, KeyError, UnicodeDecodeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    kept = 0
    replaced = len(labels.attrs.get("replaced", []))
    if args.out:
        out = Path(args.out)
    elif design_path.is_file() and design_path.parent == sheets[0].parent:
        out = sheets[0].parent / IMPORTED_FILE
        merge = merge_pack_labels(labels, out, sheets, replace=args.replace)
        labels, kept = merge.labels, merge.kept
        problems = [*problems, *merge.problems]
        replaced += merge.replaced
    else:
        out = sheets[0].with_name(sheets[0].stem + ".imported.csv")
    write_labels(labels, out)
    for p in problems:
        print(f"BAD ROW {p}", file=sys.stderr)
    summary = {"labels": len(labels), "segments": int(labels["segment_id"].nunique()),
               "raters": sorted(labels["rater"].unique().tolist()), "bad_rows": len({(p.file, p.line) for p in problems}),
               "duplicates": sum(1 for p in problems if p.duplicate_of), "replaced": replaced,
               "checked_against": basis, "written": str(out), "kept_from_other_batches": kept,
               "inclusion_probabilities": bool("inclusion_probability" in labels.columns
                                               and labels["inclusion_probability"].notna().all()),
               "inclusion_from": (str(design_path) if design_path.is_file() else
                                  "the sheet's inclusion_probability column" if "inclusion_probability" in labels.columns
                                  else None)}
    dups = f" ({summary['duplicates']} a duplicate (segment, rater))" if summary["duplicates"] else ""
    print(json.dumps(summary) if args.json else
          f"{summary['labels']} label row(s) for {summary['segments']} segment(s) by {len(summary['raters'])} "
          f"rater(s); {summary['bad_rows']} bad row(s){dups}; ids checked against {basis}; written to {out}"
          + (f" (with {kept} row(s) of the pack's other batches)" if kept else "")
          + (f"; inclusion probabilities from {summary['inclusion_from']}" if summary["inclusion_from"] else
             "; inclusion probabilities unknown (no design.json): the labels read as a simple random sample")
          + (f"; --replace: {replaced} row(s) replaced by a later file's" if args.replace else ""))
    return EXIT_BAD_ROWS if problems else EXIT_OK


def _fmt(x: float | None, share: bool) -> str:
    if x is None or not math.isfinite(x):
        return "-"
    return f"{100 * x:.1f} pp" if share else f"{x:.2f}"


def format_plan(result: dict) -> list[str]:
    """The plan-labels output for people: per plan, one line per design (labels only first), then notes."""
    from ..stats.label_budget import ASSURANCE, DETECT_POWER

    lines = []
    for label, plan in result["plans"]:
        share = plan.kind == "share"
        target = _fmt(plan.target_half_width, share)
        goal = (f"to detect a difference of {_fmt(result['detect'], share)} with {DETECT_POWER:.0%} power"
                if result["mode"] != "single" else f"for a {plan.confidence:.0%} interval of +/- {target}")
        lines.append(f"{label}: {plan.figure}, {goal} (half-width +/- {target}, reached with {ASSURANCE:.0%} "
                     f"assurance; {plan.n_population:,} judged segments)")
        lines.append(f"  known of the human values: {plan.source}")
        for d in plan.designs:
            if d.n is None:
                lines.append(f"  {d.design:<12} not reachable: {d.note}")
                continue
            more = ""
            if plan.pilot_labels and d.design != "labels only":
                more = f" ({max(d.n - plan.pilot_labels, 0)} more than the {plan.pilot_labels} so far, if drawn the same way)"
            alloc = f"; per stratum {d.allocation}" if d.allocation else ""
            lam = "" if d.design == "labels only" else f", lam {d.lam:.2f}"
            lines.append(f"  {d.design:<12} {d.n:>7,} labels{more}: +/- {_fmt(d.half_width, share)} "
                         f"(+/- {_fmt(d.expected_half_width, share)} on average{lam}){alloc}")
        if plan.useless_signal_inflation is not None and plan.useless_signal_inflation > 1.0001:
            lines.append(f"  active, if its signal were unrelated to the judge's error: variance x "
                         f"{plan.useless_signal_inflation:.2f} of uniform's")
        lines.extend(f"  note: {n}" for n in plan.notes)
    lines.extend(f"note: {n}" for n in result["notes"])
    return lines


def _cmd_plan(args: argparse.Namespace) -> int:
    from ..calibration.labelling import plan_for_runs

    try:
        stratify = tuple(s.strip() for s in args.stratify.split(",") if s.strip()) if args.stratify else None
        result = plan_for_runs(args.run, figure=args.figure, half_width=args.half_width, detect=args.detect_difference,
                               labels=args.labels, correlation=args.correlation, signal=args.signal,
                               stratify=stratify, confidence=args.confidence, seed=args.seed)
    except (ValueError, FileNotFoundError, KeyError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.json:
        print(json.dumps({"mode": result["mode"], "target_half_width": result["target_half_width"],
                          "plans": {label: plan.to_json() for label, plan in result["plans"]}, "notes": result["notes"]},
                         default=str, indent=1))
    else:
        print("\n".join(format_plan(result)))
    return EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``sample-for-labelling``, ``import-labels`` and ``plan-labels`` to the CLI's subparsers."""
    p = sub.add_parser("sample-for-labelling",
                       help="sample a run's segments as a labelling pack (sheet + pages, no scores): stratified, "
                            "or --design uniform|stratified|active")
    p.add_argument("run", help="run folder whose judged segments are sampled")
    p.add_argument("--n", "--budget", dest="n", type=int, default=None,
                   help="sample size: labels to draw (default 60 without --design)")
    p.add_argument("--design", choices=["uniform", "stratified", "active"], default=None,
                   help="an explicit design with recorded inclusion probabilities (default: the proportional "
                        "stratified sample by band, surface and client)")
    p.add_argument("--stratify", default=None,
                   help="comma-separated stratifier columns (default band,surface,client; band with --design)")
    p.add_argument("--signal", default=None,
                   help="--design active: panel:RUN,RUN | repeat:RUN | column:NAME | model | p_not_good[:RUN] | "
                        "p_not_good_entropy[:RUN] | FILE.csv (segment_id,signal)")
    p.add_argument("--labels", default=None,
                   help="the labels so far (pack folder or labels file): Neyman allocation, a model signal")
    p.add_argument("--seed", type=int, default=0, help="seed of the draw (recorded)")
    p.add_argument("--min-per-stratum", type=int, default=1, help="minimum draws per stratum (default 1, without --design)")
    p.add_argument("--out", default=None, help="new folder for the pack (refused when it holds a pack)")
    p.add_argument("--next-batch", default=None, metavar="PACK",
                   help="draw the next batch of a batch-sequential design into this pack")
    p.set_defaults(handler=_cmd_sample)

    p = sub.add_parser("import-labels", help="validate filled labelling sheet(s); exit 6 when rows are bad")
    p.add_argument("sheet", nargs="+", help="filled sheet.csv file(s), one per rater or shared")
    p.add_argument("--run", help="run folder whose segment ids are known (default: design.json beside the sheet)")
    p.add_argument("--design", help="the pack's design.json: the segment ids and each one's inclusion probability "
                                    "(default: the design.json beside the first sheet)")
    p.add_argument("--out", help="validated labels CSV (default sheet.imported.csv beside the first sheet)")
    p.add_argument("--replace", action="store_true",
                   help="a (segment, rater) labelled in two files: the later file's row (later on the command line; "
                        "a sheet imported now over the pack's earlier imports) replaces the earlier one, and the "
                        "count is said (without it each such row is a bad row naming both files)")
    p.add_argument("--json", action="store_true", help="machine-readable summary")
    p.set_defaults(handler=_cmd_import)

    p = sub.add_parser("plan-labels",
                       help="labels a figure needs under each labelling design, for a half-width or a difference")
    p.add_argument("run", nargs="+", help="run folder (two for --detect-difference)")
    p.add_argument("--figure", default="mean_score",
                   help="headline figure: mean_score, share_poor, share_good, mean_sql_quality, ... (default mean_score)")
    p.add_argument("--half-width", type=float, default=None,
                   help="target half-width of the interval (points for a mean, a fraction for a share)")
    p.add_argument("--detect-difference", type=float, default=None,
                   help="two runs: the difference B - A to detect (points, or a fraction for a share)")
    p.add_argument("--labels", default=None, help="the labels so far (a pack folder or a labels file)")
    p.add_argument("--correlation", type=float, default=None, help="a stated judge-human correlation instead of labels")
    p.add_argument("--signal", default=None,
                   help="the active design's signal: panel:RUN,RUN | repeat:RUN | column:NAME | model | "
                        "p_not_good[:RUN] | p_not_good_entropy[:RUN] | FILE.csv")
    p.add_argument("--stratify", default=None, help="the stratified design's strata (default: the pack's, else band)")
    p.add_argument("--confidence", type=float, default=None, help="two-sided level (default 0.95)")
    p.add_argument("--seed", type=int, default=0, help="seed of constructed labels' raters, when labels are constructed")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(handler=_cmd_plan)
