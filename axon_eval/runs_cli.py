"""Run verbs of ``python -m axon_eval``: ``run``, ``evaluate``, ``rejudge``, ``rescore``, ``report``.

``run NOTEBOOK [-p NAME VALUE ...] [-f params.yaml ...]``
    execute a notebook with papermill into a new dated run folder and export it to HTML
``evaluate --turns FILE --judge SPEC [--rubric FILE|NAME] [--out DIR] [--limit N] [--name NAME]``
    headless evaluation (no notebook): writes a run folder and prints it with a summary
``rejudge RUN --judge SPEC``    the same captured evidence judged again, as a new run
``rescore RUN --rubric FILE|NAME``    the stored verdicts scored under another rubric, as a new run
``report RUN``    write ``report.html`` (the audit report) into the run folder

Exit status: 0 on success, 1 when a run or notebook failed (the folder is kept and marked failed),
2 for a usage error (bad spec, unknown parameter, missing file, ...). Heavy modules are imported inside
the handlers so ``schema``/``validate`` stay fast.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

#: Exceptions that mean "the user asked for something invalid" (exit 2, one-line message).
_USAGE_ERRORS = (ValueError, FileNotFoundError, FileExistsError, TypeError, KeyError)


def _judge_errors() -> tuple[type[BaseException], ...]:
    """A missing API key is a usage error too (exit 2 before any work)."""
    from .judges.base import MissingApiKey

    return (MissingApiKey,)


def _usage_error(exc: BaseException) -> int:
    print(f"error: {exc}", file=sys.stderr)
    return 2


def _print_summary(result: Any) -> None:
    from .summaries import format_summary

    print(format_summary(result.summary(allow_mixed=True)))


# -- handlers ---------------------------------------------------------------------------------------
def _cmd_run(args: argparse.Namespace) -> int:
    from .runner import UnknownParameterError, parse_cli_parameters, run_notebook

    try:
        overrides = parse_cli_parameters(args.param or [])
        result = run_notebook(args.notebook, parameters=overrides, params_files=args.file or [],
                              out_dir=args.out, kernel_name=args.kernel, export_html=not args.no_html,
                              progress=not args.quiet)
    except (UnknownParameterError, *_USAGE_ERRORS) as exc:
        return _usage_error(exc)
    print(f"run folder: {result.run_dir}")
    print(f"notebook:   {result.notebook_path}")
    if result.html_path is not None:
        print(f"html:       {result.html_path}")
    audit_report = Path(result.run_dir) / "report.html"
    if audit_report.exists():
        print(f"report:     {audit_report}")
    if result.status == "failed":
        print(f"FAILED: {result.error}", file=sys.stderr)
        return 1
    return 0


def _cmd_evaluate(args: argparse.Namespace) -> int:
    from .runs import evaluate

    try:
        result = evaluate(Path(args.turns), args.judge, args.rubric, out_dir=args.out, name=args.name,
                          limit=args.limit, row_horizon=args.row_horizon, concurrency=args.concurrency,
                          seed=args.seed, cache=False if args.no_cache else None, progress=not args.quiet)
    except (*_judge_errors(), *_USAGE_ERRORS) as exc:
        return _usage_error(exc)
    print(f"run folder: {result.run_dir}")
    _print_summary(result)
    return 0


def _cmd_rejudge(args: argparse.Namespace) -> int:
    from .runs import InputChangedError, rejudge

    try:
        result = rejudge(args.run, args.judge, rubric=args.rubric, out_dir=args.out, name=args.name,
                         concurrency=args.concurrency, cache=False if args.no_cache else None,
                         progress=not args.quiet)
    except (InputChangedError, *_judge_errors(), *_USAGE_ERRORS) as exc:
        return _usage_error(exc)
    print(f"run folder: {result.run_dir} (re-judged from {args.run})")
    _print_summary(result)
    return 0


def _cmd_rescore(args: argparse.Namespace) -> int:
    from .runs import rescore

    try:
        result = rescore(args.run, args.rubric, out_dir=args.out, name=args.name)
    except _USAGE_ERRORS as exc:
        return _usage_error(exc)
    print(f"run folder: {result.run_dir} (re-scored from {args.run})")
    for warning in result.manifest.warnings:
        print(f"WARNING: {warning}")
    _print_summary(result)
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    from .report import write_report

    try:
        path = write_report(args.run, output=args.output)
    except _USAGE_ERRORS as exc:
        return _usage_error(exc)
    print(f"report: {path}")
    return 0


# -- registration -----------------------------------------------------------------------------------
def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return value


def _non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer, got {text!r}")
    return value


def _add_judging_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--concurrency", type=_positive_int, default=8, help="judgements in flight (default 8)")
    p.add_argument("--no-cache", action="store_true", help="do not read or write the verdict cache")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def register(sub: argparse._SubParsersAction) -> None:
    """Add the run verbs to the ``python -m axon_eval`` sub-command parser."""
    p = sub.add_parser("run", help="execute a notebook into a new dated run folder (+ HTML)",
                       description="Execute NOTEBOOK with papermill into runs/<date>T<time>Z_<name>_<judge>/, "
                       "export it to HTML (code hidden) and print the folder and the HTML path.")
    p.add_argument("notebook", help="the .ipynb to execute")
    p.add_argument("-p", "--param", nargs=2, action="append", metavar=("NAME", "VALUE"),
                   help="set a notebook parameter; VALUE is parsed as a YAML scalar (repeatable)")
    p.add_argument("-f", "--file", action="append", metavar="PARAMS.yaml",
                   help="YAML file of parameters (repeatable; later files and -p win)")
    p.add_argument("--out", default=None, help="parent folder of the run (default $AXON_EVAL_RUNS_DIR or runs/)")
    p.add_argument("--kernel", default=None, help="Jupyter kernel (default axon-eval if registered, else python3)")
    p.add_argument("--no-html", action="store_true", help="skip the HTML export")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(handler=_cmd_run)

    p = sub.add_parser("evaluate", help="headless evaluation of an evidence file into a run folder")
    p.add_argument("--turns", required=True, help="JSON Lines evidence file")
    p.add_argument("--judge", required=True, help="judge spec: heuristic, anthropic:<model>, openai:<model>[@url], ...")
    p.add_argument("--rubric", default=None, help="rubric YAML file or packaged name (default axon-v1)")
    p.add_argument("--out", default=None, help="parent folder of the run (default $AXON_EVAL_RUNS_DIR or runs/)")
    p.add_argument("--limit", type=_non_negative_int, default=None, help="judge only the first N valid turns")
    p.add_argument("--name", default="evaluate", help="run name (part of the folder name)")
    p.add_argument("--row-horizon", type=_positive_int, default=None, help="override the rubric's row horizon")
    p.add_argument("--seed", type=int, default=0, help="seed recorded in the manifest")
    _add_judging_options(p)
    p.set_defaults(handler=_cmd_evaluate)

    p = sub.add_parser("rejudge", help="judge a run's captured evidence again with another judge (new run)")
    p.add_argument("run", help="source run folder")
    p.add_argument("--judge", required=True, help="judge spec")
    p.add_argument("--rubric", default=None, help="rubric (default: the source run's)")
    p.add_argument("--out", default=None, help="parent folder of the new run (default: the source's parent)")
    p.add_argument("--name", default=None, help="run name (default rejudge-<source name>)")
    _add_judging_options(p)
    p.set_defaults(handler=_cmd_rejudge)

    p = sub.add_parser("rescore", help="score a run's stored verdicts under another rubric (new run, no judge calls)")
    p.add_argument("run", help="source run folder")
    p.add_argument("--rubric", required=True, help="rubric YAML file or packaged name")
    p.add_argument("--out", default=None, help="parent folder of the new run (default: the source's parent)")
    p.add_argument("--name", default=None, help="run name (default rescore-<source name>)")
    p.set_defaults(handler=_cmd_rescore)

    p = sub.add_parser("report", help="write report.html (the audit report) into a run folder")
    p.add_argument("run", help="run folder")
    p.add_argument("--output", default=None, help="write the report here instead of <run>/report.html")
    p.set_defaults(handler=_cmd_report)
