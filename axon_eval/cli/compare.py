"""Decision verbs of ``python -m axon_eval``: ``compare`` and ``gate``.

``compare RUN_A RUN_B [--pair-by KEY] [--labels FILE | --labels-a FILE --labels-b FILE] [--fail-on-regression --margin P]``
    the paired comparison of two runs (:mod:`axon_eval.stats.paired`), the human-corrected difference
    when labels are given (:mod:`axon_eval.stats.difference`), and with ``--fail-on-regression`` a
    non-inferiority gate on the difference B - A; writes a compare folder unless ``--no-write``
``gate RUN --min-mean-score 75 --max-share-poor 0.10 [--corrected --labels FILE]``
    gate one run's headline figures on their interval bounds (:mod:`axon_eval.stats.gate`)

Exit status: 0 passed (or nothing gated by ``compare``); :data:`EXIT_GATE_FAILED` (8) a gate failed;
2 "broken": a usage or input error, or a decision the gate cannot make (a missing run, a run that is not
complete, fewer turns than the gate accepts, a bad threshold or margin, an unreadable labels file, a
stale or failed calibration with ``--corrected``, a simulated or local-server judge without
``--allow-simulated``); nothing is written before the refusal. A CI job tells "worse" (8) from
"broken" (anything else). ``--format markdown`` prints a job summary; ``--junit-xml PATH`` writes one
test case per gated figure.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from .runs import _USAGE_ERRORS, _non_negative_int, _positive_int, _usage_error

#: Exit status of a gate that failed (distinct from every error code).
EXIT_GATE_FAILED = 8
#: ``gate``'s named thresholds: option -> (rule, figure).
NAMED_THRESHOLDS: dict[str, tuple[str, str]] = {
    "min_mean_score": ("min", "mean score"),
    "min_share_good": ("min", "share good"),
    "max_share_partial": ("max", "share partial"),
    "max_share_poor": ("max", "share poor"),
    "max_share_capped": ("max", "share capped"),
}
#: ``compare --fail-on-regression``'s margins: option -> figure.
NAMED_MARGINS: dict[str, str] = {"margin": "mean score", "margin_share_good": "share good",
                                 "margin_share_poor": "share poor"}


class GateRefused(ValueError):
    """A gate asked of runs it must not decide on (simulated or local-server judge, stale calibration)."""


def _figure_value(text: str) -> tuple[str, float]:
    figure, eq, value = text.rpartition("=")
    if not eq or not figure.strip():
        raise argparse.ArgumentTypeError(f"expected FIGURE=VALUE (e.g. 'mean intent_understood=7'), got {text!r}")
    try:
        return figure.strip(), float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: {value!r} is not a number") from None


def _confidence(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"confidence must be a number in (0, 1), got {text!r}") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"confidence must be in (0, 1), got {text!r}")
    return value


def _check_share_fraction(what: str, value: float) -> None:
    """A share-valued option is a fraction in [0, 1]: refuse anything else before any work."""
    import math

    if not math.isfinite(value) or not 0 <= value <= 1:
        raise ValueError(f"{what} {value:g} is not a fraction in [0, 1]: shares are fractions "
                         "(0.03 means 3 percentage points, 0.10 means 10%)")


def _check_margins(margins: dict[str, float]) -> None:
    import math

    for figure, value in margins.items():
        if not math.isfinite(value) or value < 0:
            unit = "a fraction in [0, 1]" if figure.startswith("share ") else "points >= 0"
            raise ValueError(f"the margin for {figure} must be {unit}, got {value:g}")
        if figure.startswith("share "):
            _check_share_fraction(f"the margin for {figure}", value)


def _finished_run(run: Any, what: str) -> list[str]:
    """Refuse (:class:`GateRefused`) a run that is not finished: only ``complete`` and ``partial`` runs are
    gated, and a partial one is said loudly (judged of total) in the lines returned."""
    from ..runs.manifest import effective_status

    status = effective_status(run.manifest)
    c = run.manifest.counts
    judged = f"{c.judged} of {c.planned_segments or c.segments} segments judged" if c is not None else "counts unknown"
    if status == "complete":
        return []
    if status == "partial":
        return [f"PARTIAL RUN -- {what} {Path(run.run_dir).name}: {judged}; the figures cover the judged segments "
                "only (the unjudged ones are not in them)"]
    raise GateRefused(f"{what} {Path(run.run_dir).name} is {status} ({judged}): a gate decides only on a complete "
                      f"run; finish it with `python -m axon_eval evaluate --resume {run.run_dir}`")


def _enough_turns(table: Any, what: str, figures: Any) -> None:
    """Refuse when the gated ``figures`` need more turns than ``table`` holds: each figure's minimum is
    ``table.attrs["min_turns"][figure]`` (:func:`axon_eval.stats.gate_intervals.least_turns`)."""
    turns = int(table["n_clusters"].max()) if len(table) else 0
    least = table.attrs["min_turns"]
    # an unknown figure is left to the gate, whose error names the figures there are
    short = sorted((f for f in figures if turns < least.get(f, 0)), key=lambda f: -least[f])
    if short:
        need = ", ".join(f"{f} {least[f]}" for f in short)
        raise GateRefused(f"{what} holds {turns} turn(s); a gate decides on at least (by figure) {need} (below "
                          "that its SIMULATED one-sided error exceeds 3% on some population: `make bench`, section "
                          "gate_error; a mean needs more turns than a share because a skewed population's few low "
                          "turns are missing from most small samples); judge more turns, or compare without a gate")


def _refuse_simulated(disclosures: list[str], allow: bool) -> None:
    if disclosures and not allow:
        raise GateRefused("a gate decides on real judges only: " + "; ".join(disclosures)
                          + "; pass --allow-simulated to gate anyway (the output still says so)")


def _emit(decision: Any, subject: str, args: argparse.Namespace, *, disclosures: list[str], difference: bool,
          notes: list[str]) -> int:
    from ..runs.gate_report import markdown_report, text_report, write_junit

    if args.format == "markdown":
        print(markdown_report(decision, subject, disclosures=disclosures, difference=difference, notes=notes))
    else:
        print(text_report(decision, subject, disclosures=disclosures, difference=difference, notes=notes))
    if args.junit_xml:
        path = write_junit(decision, args.junit_xml, disclosures=disclosures, difference=difference)
        print(f"junit xml: {path}", file=sys.stderr)
    return 0 if decision.passed else EXIT_GATE_FAILED


# -- compare ---------------------------------------------------------------------------------------------
def _cmd_compare(args: argparse.Namespace) -> int:
    from ..calibration.corrected import corrected_comparison, run_labels
    from ..reporting.comparison import write_comparison
    from ..runs import compare_runs
    from ..stats.difference import format_differences
    from ..runs import load_run
    from ..stats.gate import non_inferiority_gate, uninformative_figures
    from ..stats.gate_intervals import paired_gate_table

    margins = {figure: getattr(args, opt) for opt, figure in NAMED_MARGINS.items() if getattr(args, opt) is not None}
    try:
        _check_margins(margins)
        if args.fail_on_regression and not margins:
            raise ValueError("--fail-on-regression needs a margin: --margin POINTS (mean score) and/or "
                             "--margin-share-poor / --margin-share-good FRACTION")
        if margins and not args.fail_on_regression:
            raise ValueError("a margin only means something with --fail-on-regression")
        labels_a = args.labels_a or args.labels
        labels_b = args.labels_b or args.labels
        if bool(labels_a) != bool(labels_b):
            raise ValueError("give labels for both runs (--labels FILE for both, or --labels-a and --labels-b)")
        if args.corrected and not labels_a:
            raise ValueError("--corrected needs labels (--labels FILE, or --labels-a and --labels-b)")
        comparison = compare_runs(args.run_a, args.run_b, allow_different_evidence=args.allow_different_evidence,
                                  n_boot=args.n_boot, seed=args.seed, confidence=args.confidence,
                                  pair_by=args.pair_by)
        disclosures = comparison.disclosure_lines()
        table = statistic = None
        if args.fail_on_regression:
            _refuse_simulated(disclosures, args.allow_simulated)
            for what, folder in (("run A", comparison.run_a), ("run B", comparison.run_b)):
                disclosures.extend(_finished_run(load_run(folder), what))
            if not args.corrected:
                if comparison.paired is None:
                    raise ValueError(f"the runs share {comparison.n_compared} judged segment(s); a gate on B - A "
                                     "needs paired segments")
                table = paired_gate_table(comparison.paired.pairs, comparison.confidence)
                _enough_turns(table, "the comparison", margins)
                statistic = ("the difference B - A over paired units, clustered by turn: Student-t and Hall's "
                             "skew-corrected bound (the farther) for the mean score, the MOVER of Clopper-Pearson "
                             "bounds for shares")
        if labels_a:
            la = run_labels(comparison.run_a, labels_a, seed=args.seed)
            lb = run_labels(comparison.run_b, labels_b, seed=args.seed)
            comparison.corrected = corrected_comparison(comparison, la, lb,
                                                        design="independent" if args.independent else "paired")
            if args.fail_on_regression and args.corrected:
                refused = uninformative_figures(comparison.corrected.rename(columns={"n_labelled": "n"}), list(margins))
                if refused:
                    raise GateRefused("the labels cannot support this gate: " + "; ".join(refused))
    except (GateRefused, *_USAGE_ERRORS) as exc:
        return _usage_error(exc)
    if args.format == "text":
        print(comparison.format(top=args.top))
        if comparison.paired is not None:
            print(f"paired tests (units judged in both runs; seed {comparison.seed}, {comparison.n_boot} resamples of "
                  "turns):")
            print("\n".join(comparison.paired.lines()))
        if comparison.corrected is not None:
            print("human-corrected differences (PPI++):")
            print("\n".join("  " + line for line in format_differences(comparison.corrected)))
            print("\n".join(f"  note: {n}" for n in comparison.corrected.attrs.get("notes", [])))
    if not args.no_write:
        folder = write_comparison(comparison, args.out)
        print(f"comparison folder: {folder} (compare.html)", file=sys.stderr if args.format == "markdown" else sys.stdout)
    if not args.fail_on_regression:
        if args.format == "markdown":
            print("\n".join(f"> **{d}**" for d in disclosures))
            print(f"**{comparison.paired.verdict if comparison.paired else 'no paired units'}** "
                  f"(B: `{Path(comparison.run_b).name}` vs A: `{Path(comparison.run_a).name}`)")
        return 0
    if args.corrected:
        corrected = comparison.corrected
        table = corrected[["figure", "estimate", "lo", "hi", "n_labelled", "note"]].rename(
            columns={"n_labelled": "n"}).assign(method=corrected.get("method", "PPI++") if "method" in corrected
                                                else "PPI++, " + corrected.attrs["design"])
        statistic = f"the human-corrected (PPI++, {corrected.attrs['design']}) difference B - A"
    try:
        decision = non_inferiority_gate(table, margins, statistic=statistic, confidence=comparison.confidence,
                                        corrected=bool(args.corrected))
    except ValueError as exc:
        return _usage_error(exc)
    subject = f"B {Path(comparison.run_b).name} is not worse than A {Path(comparison.run_a).name}"
    return _emit(decision, subject, args, disclosures=disclosures, difference=True, notes=comparison.notes)


# -- gate ------------------------------------------------------------------------------------------------
def _cmd_gate(args: argparse.Namespace) -> int:
    from ..calibration.corrected import corrected_headlines, run_labels
    from ..runs import load_run
    from ..runs.calibration import read_calibration
    from ..runs.disclosure import judge_disclosure
    from ..stats.gate import threshold_gate, uninformative_figures
    from ..stats.gate_intervals import gate_table

    minimums = {f: getattr(args, opt) for opt, (rule, f) in NAMED_THRESHOLDS.items()
                if rule == "min" and getattr(args, opt) is not None}
    maximums = {f: getattr(args, opt) for opt, (rule, f) in NAMED_THRESHOLDS.items()
                if rule == "max" and getattr(args, opt) is not None}
    minimums.update(dict(args.min or []))
    maximums.update(dict(args.max or []))
    try:
        if not minimums and not maximums:
            raise ValueError("nothing to gate: give at least one threshold (e.g. --min-mean-score 75, "
                             "--max-share-poor 0.10, --min 'mean sql_quality=7')")
        for figure, value in {**minimums, **maximums}.items():
            if figure.startswith("share "):
                _check_share_fraction(f"the {figure} threshold", value)
        if args.allow_uncalibrated and not args.corrected:
            raise ValueError("--allow-uncalibrated is read by --corrected only")
        if args.calibration and not args.corrected:
            raise ValueError("--calibration is read by --corrected only")
        if args.corrected and not args.labels:
            raise ValueError("--corrected needs --labels FILE (the labelled subset the PPI++ intervals use)")
        run = load_run(args.run)
        disclosure = judge_disclosure(run.manifest)
        disclosures = [f"{disclosure.label.upper() if disclosure.simulated else disclosure.label} -- judge "
                       f"{run.manifest.judge_id}"] if disclosure else []
        _refuse_simulated(disclosures, args.allow_simulated)
        disclosures.extend(_finished_run(run, "run"))
        notes = []
        rubric = None
        if run.manifest.rubric:
            from ..rubric import Rubric

            rubric = Rubric.model_validate(run.manifest.rubric)
        if args.corrected:
            record = read_calibration(args.calibration) if args.calibration else None
            if record is not None and not record.gate_passed:
                failed = (f"the calibration {args.calibration} did not pass ({record.gate_message}): it does not "
                          "allow comparative claims on this judge")
                if not args.allow_uncalibrated:
                    raise GateRefused(failed + "; recalibrate (study 05), or pass --allow-uncalibrated to gate anyway "
                                      "(the output says so)")
                disclosures.append(f"UNCALIBRATED -- {failed}; gated anyway (--allow-uncalibrated)")
            labels = run_labels(run, args.labels, seed=args.seed)
            table = corrected_headlines(run, labels, calibration=record, confidence=args.confidence,
                                        n_boot=args.n_boot, seed=args.seed)
            refused = uninformative_figures(table, [*minimums, *maximums])
            if refused:
                raise GateRefused("the labels cannot support this gate: " + "; ".join(refused))
            notes.extend(table.attrs.get("notes", []))
            statistic = ("each human-corrected (PPI++) figure's interval (Student-t below 50 effective labels, "
                         "normal from 50; the method is named on each figure)")
        else:
            table = gate_table(run.results, rubric, confidence=args.confidence)
            _enough_turns(table, f"run {Path(run.run_dir).name}", [*minimums, *maximums])
            statistic = ("each headline figure's interval over turns (means: Student-t and Hall's skew-corrected "
                         "bound, the farther; shares: Clopper-Pearson at the effective n)")
        decision = threshold_gate(table, minimums=minimums, maximums=maximums, statistic=statistic,
                                  confidence=args.confidence, corrected=bool(args.corrected))
    except (GateRefused, *_USAGE_ERRORS) as exc:
        return _usage_error(exc)
    return _emit(decision, f"run {Path(run.run_dir).name}", args, disclosures=disclosures, difference=False,
                 notes=notes)


def _add_output_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--format", choices=("text", "markdown"), default="text",
                   help="text for a terminal or log (default); markdown for a CI job summary or PR comment")
    p.add_argument("--junit-xml", metavar="PATH", default=None,
                   help="also write the gate as JUnit XML (one test case per gated figure)")
    p.add_argument("--allow-simulated", action="store_true",
                   help="gate even when a judge is simulated or ran against a local server (said in the output)")
    p.add_argument("--confidence", type=_confidence, default=0.95,
                   help="two-sided level of the intervals (default 0.95: each bound is a one-sided 97.5%% test)")
    p.add_argument("--n-boot", type=_positive_int, default=2000, help="bootstrap resamples (default 2000)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap and constructed-rater seed (default 0)")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("compare", help="compare two runs: paired tests, differences with intervals, corrected "
                                       "differences with labels, and a non-inferiority gate",
                       description="Compare run B against baseline run A on their paired units. With "
                                   "--fail-on-regression, exit 8 when the one-sided bound of B - A says B may be "
                                   "worse than A by more than the margin.")
    p.add_argument("run_a", help="baseline run folder (A)")
    p.add_argument("run_b", help="run folder compared against A (B)")
    p.add_argument("--pair-by", default="segment_id", metavar="COLUMN",
                   help="results column that pairs the runs (default segment_id; 'question' pairs two agent "
                        "versions answering the same questions)")
    p.add_argument("--allow-different-evidence", action="store_true",
                   help="compare runs over different evidence files by segment id")
    p.add_argument("--labels", default=None, metavar="FILE",
                   help="labels covering both runs' segments: adds the human-corrected differences (PPI++)")
    p.add_argument("--labels-a", default=None, metavar="FILE", help="labels of run A's segments")
    p.add_argument("--labels-b", default=None, metavar="FILE", help="labels of run B's segments")
    p.add_argument("--independent", action="store_true",
                   help="the runs are different traffic: correct each run separately (default: paired)")
    p.add_argument("--fail-on-regression", action="store_true",
                   help="non-inferiority gate: exit 8 when B may be worse than A by more than a margin")
    p.add_argument("--margin", type=float, default=None, metavar="POINTS",
                   help="largest tolerated drop of the mean score (points)")
    p.add_argument("--margin-share-poor", type=float, default=None, metavar="FRACTION",
                   help="largest tolerated rise of the share poor (0.03 = 3 percentage points)")
    p.add_argument("--margin-share-good", type=float, default=None, metavar="FRACTION",
                   help="largest tolerated drop of the share good")
    p.add_argument("--corrected", action="store_true", help="gate on the human-corrected difference (needs labels)")
    p.add_argument("--out", default=None, help="parent of the comparison folder (default: B's parent)")
    p.add_argument("--no-write", action="store_true", help="print only; write no comparison folder")
    p.add_argument("--top", type=_non_negative_int, default=10, help="largest changes to print")
    _add_output_options(p)
    p.set_defaults(handler=_cmd_compare)

    p = sub.add_parser("gate", help="pass or fail one run on thresholds, decided on interval bounds",
                       description="Gate a run's headline figures: a minimum passes when the interval's lower "
                                   "bound clears it, a maximum when the upper bound does. Exit 0 pass, 8 fail, 2 "
                                   "usage or input error. Shares are fractions (0.10 = 10%%).")
    p.add_argument("run", help="run folder to gate")
    p.add_argument("--min-mean-score", type=float, default=None, metavar="POINTS")
    p.add_argument("--min-share-good", type=float, default=None, metavar="FRACTION")
    p.add_argument("--max-share-partial", type=float, default=None, metavar="FRACTION")
    p.add_argument("--max-share-poor", type=float, default=None, metavar="FRACTION")
    p.add_argument("--max-share-capped", type=float, default=None, metavar="FRACTION")
    p.add_argument("--min", type=_figure_value, action="append", metavar="FIGURE=VALUE",
                   help="any headline figure's minimum, e.g. 'mean sql_quality=7' (repeatable)")
    p.add_argument("--max", type=_figure_value, action="append", metavar="FIGURE=VALUE",
                   help="any headline figure's maximum (repeatable)")
    p.add_argument("--corrected", action="store_true",
                   help="gate on the human-corrected (PPI++) intervals of --labels")
    p.add_argument("--labels", default=None, metavar="FILE",
                   help="labels file or labelling pack folder for --corrected")
    p.add_argument("--calibration", default=None, metavar="PATH",
                   help="calibration.json (or its study-05 folder) that must be current for this run's judge, "
                        "prompt and rubric and must have passed; a stale or failed one is refused")
    p.add_argument("--allow-uncalibrated", action="store_true",
                   help="with --corrected, gate even when the --calibration did not pass (the output says so)")
    _add_output_options(p)
    p.set_defaults(handler=_cmd_gate)
