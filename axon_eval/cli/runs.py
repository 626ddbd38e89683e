"""Run verbs of ``python -m axon_eval``: ``run``, ``evaluate``, ``rejudge``, ``rescore``, ``report``,
``rerun``, ``index`` and ``fake-judge-server`` (``compare`` and ``gate``: :mod:`.compare`).

``run NOTEBOOK [-p NAME VALUE ...] [-f params.yaml ...]``
    execute a notebook with papermill into a new dated run folder and export it to HTML; print the folder
    and its headline (a study's headline figures, an evaluation's mean score and band shares, each with
    its interval and n)
``evaluate --turns FILE --judge SPEC [--rubric FILE|NAME] [--out DIR] [--limit N] [--name NAME]``
    headless evaluation (no notebook): writes a run folder and prints it with a summary
``rejudge RUN --judge SPEC``    the same captured evidence judged again, as a new run
``rescore RUN --rubric FILE|NAME``    the stored verdicts scored under another rubric, as a new run
``report RUN``    write ``report.html`` (the audit report) into the run folder
``rerun RUN``     execute a run again from its own folder and say whether the results are identical
``index [ROOT]``  every run folder's manifest as one table
``fake-judge-server``    the local fake Anthropic/OpenAI server the tests use, to rehearse a paid run

Exit status (:mod:`axon_eval.runs.manifest`): 0 every segment judged; 1 the run or notebook raised
(the folder is kept and marked failed; a full disk is one line naming the folder and the free space it
needs, and ``evaluate --resume`` finishes the run once space is freed); 2 usage error (bad spec, unknown parameter, missing file, ...;
nothing written); 3 some segments unjudged (``partial``); 4 none judged; 5 the input holds no valid
turn; 6 ``--strict`` and some input line is invalid. ``rerun`` returns 7 when the results differ; a
failed gate (``gate``, ``compare --fail-on-regression``) returns 8.
Heavy modules are imported inside the handlers so ``schema``/``validate`` stay fast.
"""

from __future__ import annotations

import argparse
import gc
import sys
from pathlib import Path
from typing import Any

#: Exceptions that mean "the user asked for something invalid" (exit 2, one-line message).
_USAGE_ERRORS = (ValueError, FileNotFoundError, FileExistsError, TypeError, KeyError)
#: ``rerun``: the new results differ from the old ones.
EXIT_RERUN_DIFFERS = 7


def _judge_errors() -> tuple[type[BaseException], ...]:
    """A missing API key is a usage error too (exit 2 before any work)."""
    from ..judges.base import MissingApiKey

    return (MissingApiKey,)


def one_line(exc: BaseException) -> str:
    """The message of a usage error as one line: a judge spec error names the valid forms on the same
    line; any other message's lines (a rubric's or a parameter's error, the invalid lines of an input
    without a valid turn) are joined with ``"; "``."""
    from ..judges.registry import VALID_FORMS, SpecError

    if isinstance(exc, SpecError):
        return f"invalid judge spec {exc.spec!r}: {exc.problem}; valid forms: {' | '.join(VALID_FORMS)}"
    text = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
    parts = [line.strip() for line in text.splitlines() if line.strip()]
    return "; ".join(parts) or type(exc).__name__


def _usage_error(exc: BaseException) -> int:
    """One line on stderr; exit 5 for an input without valid turns, else 2 (a bad spec, parameter, rubric
    -- :mod:`axon_eval.rubric` raises ``ValueError`` subclasses --, path or key)."""
    from ..runs import EXIT_NO_VALID_TURNS, EXIT_USAGE, NoValidTurnsError

    print(f"error: {one_line(exc)}", file=sys.stderr)
    return EXIT_NO_VALID_TURNS if isinstance(exc, NoValidTurnsError) else EXIT_USAGE


#: Warnings a run prints itself when it starts (:func:`axon_eval.runs.provenance.record_git`): not repeated.
ANNOUNCED_WARNINGS = ("the working tree is dirty",)
#: The budget's manifest warning: the summary's budget line says it with the count.
BUDGET_WARNING = "the max_cost_usd budget"
#: Per-segment lines (unjudged segments, failed samples, invalid input lines) shown before "... and N more".
ITEMS_SHOWN = 5
#: Segments named on the ensemble disagreement line.
DISAGREEMENT_SHOWN = 10


def _finish(manifest: Any, strict: bool, *, said: tuple[str, ...] = ()) -> int:
    """Print the status line of a finished run and its warnings (but :data:`ANNOUNCED_WARNINGS` and those
    starting with one of ``said``, printed already) and return its exit code."""
    from ..display import fmt_share
    from ..runs import exit_code

    code = exit_code(manifest, strict=strict)
    c = manifest.counts
    if manifest.kind in ("study", "compare", "drift") or (manifest.kind == "notebook" and c.segments == 0 and not c.turns):
        # a study or comparison judges nothing itself: its counts are not the point
        line = f"status: {manifest.status} (exit {code})" + (f": {manifest.error}" if manifest.error else "")
    else:
        share = f" ({fmt_share(c.judged / c.segments)})" if c.segments and c.unjudged else ""
        line = (f"status: {manifest.status} (exit {code}): {c.judged} of {c.segments} segments judged{share}, "
                f"{c.unjudged} unjudged, {c.invalid} invalid input line(s)")
    print(line, file=sys.stderr if code else sys.stdout)
    for warning in manifest.warnings:
        if not warning.startswith((*ANNOUNCED_WARNINGS, *said)):
            print(f"WARNING: {warning}", file=sys.stderr)
    return code


def _budget_stopped(item: Any) -> bool:
    from ..runs.writer import BUDGET_ERROR

    return str(item.get("error") or "").startswith(BUDGET_ERROR.split("$", 1)[0])


def disagreement_lines(results: Any) -> list[str]:
    """The ensemble disagreement of a results table: how many judged segments an ensemble judge flagged
    (``disagreement``, any of a segment's samples) and which, each with its widest member range
    (``range_<dimension>``); nothing for a judge that is not an ensemble."""
    from ..display import fmt_number, fmt_share
    from ..rubric import DIMENSIONS

    if "disagreement" not in results or "status" not in results:
        return []
    rows = results[(results["status"] == "judged") & results["disagreement"].notna()]
    if rows.empty:
        return []
    flagged = rows["disagreement"].astype(bool).groupby(rows["segment_id"], sort=False).any()
    k, n = int(flagged.sum()), len(flagged)
    line = f"ensemble disagreement: {k} of {n} judged segments flagged ({fmt_share(k / n)})"
    if not k:
        return [line]
    ranges = [f"range_{d}" for d in DIMENSIONS if f"range_{d}" in rows]
    named = []
    for segment in list(flagged[flagged].index)[:DISAGREEMENT_SHOWN]:
        widest = rows.loc[rows["segment_id"] == segment, ranges].max() if ranges else None
        if widest is not None and widest.notna().any():
            dim = str(widest.idxmax()).removeprefix("range_")
            named.append(f"{segment} ({dim} range {fmt_number(float(widest.max()))})")
        else:
            named.append(str(segment))
    more = f", and {k - len(named)} more" if k > len(named) else ""
    return [f"{line}: {', '.join(named)}{more}",
            "  members' ranges per dimension: results/ (disagreement, range_*); each member: members.parquet"]


def summary_lines(summary: dict[str, Any], results: Any, run_dir: Any, *, quiet: bool = False,
                  max_cost_usd: float | None = None) -> list[str]:
    """The CLI summary of a run: :func:`~axon_eval.summaries.format_summary` with at most
    :data:`ITEMS_SHOWN` lines per kind of item (none with ``quiet``: a line with the count and the file
    instead; invalid input is counted in lines, with its problems beside them when there are more), the
    cross-check (``CROSS-CHECK``: the segments whose judge verdict is worse than their band, counted, the
    first :data:`ITEMS_SHOWN` listed with the candidate rubric that moves each down, the rest on
    ``report.html``'s first page), the segments a cost budget stopped as one line, and the ensemble
    disagreement."""
    from ..summaries import format_summary

    unjudged = list(summary.get("unjudged_items") or [])
    budget = [i for i in unjudged if _budget_stopped(i)]
    unjudged = [i for i in unjudged if not _budget_stopped(i)]
    results_file = f"{Path(run_dir) / 'results'} (status, error)"
    kinds = {"unjudged_items": (unjudged, "unjudged segment(s)", results_file),
             "failed_sample_items": (list(summary.get("failed_sample_items") or []), "failed judge sample(s)",
                                     results_file)}
    shown = dict(summary)
    tails = []
    for key, (items, what, where) in kinds.items():
        shown[key] = [] if quiet else items[:ITEMS_SHOWN]
        rest = len(items) - len(shown[key])
        if rest:
            tails.append(f"  {f'and {rest} more' if shown[key] else rest} {what}: listed in {where}")
    # invalid input: counted in lines (one line may have several problems), the problems beside them
    invalid = list(summary.get("invalid_items") or [])
    lines_in_order = list(dict.fromkeys((i.get("source"), i.get("line")) for i in invalid))
    kept = set([] if quiet else lines_in_order[:ITEMS_SHOWN])
    shown["invalid_items"] = [i for i in invalid if (i.get("source"), i.get("line")) in kept]
    rest_lines = len(lines_in_order) - len(kept)
    if rest_lines:
        rest_problems = len(invalid) - len(shown["invalid_items"])
        problems = f" ({rest_problems} problems)" if rest_problems != rest_lines else ""
        tails.append(f"  {f'and {rest_lines} more' if kept else rest_lines} invalid input line(s){problems}: "
                     f"listed in {Path(run_dir) / 'invalid.jsonl'}")
    check = summary.get("cross_check")
    if check and check.get("count"):  # the count and the candidates always; the first segments unless quiet
        shown["cross_check"] = {**check, "items": [] if quiet else list(check.get("items") or [])[:ITEMS_SHOWN],
                                "listed_in": f"{Path(run_dir) / 'report.html'} (first page)"}
    lines = format_summary(shown).splitlines() + tails
    if budget:
        from ..runs.budget import format_usd

        amount = f" of {format_usd(max_cost_usd)}" if max_cost_usd is not None else ""
        lines.append(f"budget: the max_cost_usd budget{amount} stopped judging: {len(budget)} segment(s) unjudged, "
                     f"listed in {results_file}")
    lines.extend(disagreement_lines(results))
    from ..reporting.summary_intervals import interval_lines

    lines.extend(interval_lines(results))
    return lines


def _print_summary(result: Any, *, quiet: bool = False) -> tuple[str, ...]:
    """Print :func:`summary_lines`; returns the warning prefixes it has said (for :func:`_finish`)."""
    lines = summary_lines(result.summary(allow_mixed=True), result.results, result.run_dir, quiet=quiet,
                          max_cost_usd=result.manifest.max_cost_usd)
    print("\n".join(lines))
    return (BUDGET_WARNING,) if any(line.startswith("budget: ") for line in lines) else ()


def _write_report(run_dir: Any) -> None:
    """``report.html`` beside a headless run's results (the notebook runs write their own); a report that
    cannot be drawn is a warning, never a changed exit code: the run stands."""
    from ..reporting.report import write_report

    try:
        print(f"report:     {write_report(run_dir)}")
    except Exception as exc:  # the run's results stand; the missing report is said, with the command to retry
        print(f"WARNING: report.html was not written ({type(exc).__name__}: {exc}); "
              f"retry with: python -m axon_eval report {run_dir}", file=sys.stderr)


def _save_figures(run: Any) -> None:
    """Ask reporting to draw a finished run's standard figures into its ``figures/`` (runs draw nothing)."""
    from ..reporting import save_run_figures

    save_run_figures(run)


def check_judge(spec: str, reference: bool) -> None:
    """The judge check of ``run`` and ``rerun`` (:data:`axon_eval.runs.notebook.JudgeCheck`): a reference
    notebook's spec must build a reference judge (``axon_eval.reference.make_judge``), any other an
    evaluation judge (:func:`axon_eval.runs.notebook.check_evaluation_judge`). Building opens no connection."""
    if reference:
        from ..reference import make_judge

        make_judge(spec)
        return
    from ..runs.notebook import check_evaluation_judge

    check_evaluation_judge(spec, reference)


# -- handlers ---------------------------------------------------------------------------------------
def _cmd_run(args: argparse.Namespace) -> int:
    from ..runs.notebook import notebook_parameters, parse_cli_parameters, run_notebook

    try:
        if not Path(args.notebook).is_file():
            raise FileNotFoundError(f"notebook {args.notebook} not found")
        overrides = parse_cli_parameters(args.param or [], notebook_parameters(args.notebook))
        result = run_notebook(args.notebook, parameters=overrides, params_files=args.file or [],
                              out_dir=args.out, kernel_name=args.kernel, export_html=not args.no_html,
                              progress=not args.quiet, check_judge=check_judge)
    except (*_judge_errors(), *_USAGE_ERRORS) as exc:
        return _usage_error(exc)
    print(f"run folder: {result.run_dir}")
    if result.status != "failed":
        for k, line in enumerate(run_headline_lines(result.run_dir)):
            print(f"{'headline:' if k == 0 else '':<12}{line}")
    print(f"notebook:   {result.notebook_path}")
    if result.html_path is not None:
        print(f"html:       {result.html_path}")
    audit_report = Path(result.run_dir) / "report.html"
    if audit_report.exists():
        print(f"report:     {audit_report}")
    if result.status == "failed" and result.error:
        print(f"FAILED: {result.error}", file=sys.stderr)
    return _finish(result.manifest, args.strict)


def run_headline_lines(run_dir: Any) -> list[str]:
    """What ``run`` prints after a notebook's run folder: a study's headline figures (its ``study.json``
    read through :func:`axon_eval.runs.study.study_headlines`, which says which figures each study
    headlines), else an evaluation's mean score and band shares with their intervals and n
    (:func:`axon_eval.reporting.summary_intervals.headline_lines`), else nothing. A headline that cannot be
    read is one line saying why, never a failed command."""
    import json

    from ..runs.io import results_files
    from ..runs.study import STUDY_FILE, study_headlines

    folder = Path(run_dir)
    try:
        if (folder / STUDY_FILE).is_file():
            return study_headlines(json.loads((folder / STUDY_FILE).read_text(encoding="utf-8")))
        if results_files(folder):
            from ..reporting.summary_intervals import headline_lines
            from ..runs.io import read_results

            return headline_lines(read_results(folder))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return [f"not shown: {type(exc).__name__}: {exc}"]
    return []


def disk_full_line(exc: BaseException, where: Any = None) -> str | None:
    """The one line for a run that filled its disk (:class:`axon_eval.runs.faults.DiskFullError`, or any
    ``ENOSPC`` error raised before a run folder existed), ``None`` for any other error."""
    from ..runs.faults import DiskFullError, free_bytes, is_disk_full

    if isinstance(exc, DiskFullError):
        return exc.line
    if is_disk_full(exc):
        place = where or "."
        return DiskFullError(None, free=free_bytes(place), needed=None, where=place).line
    return None


def _one_line_on_full_disk(handler: Any, args: argparse.Namespace, where: Any) -> int:
    """``handler(args)``; a full disk is one line on stderr (the folder kept and marked failed) and exit 1."""
    try:
        return int(handler(args))
    except OSError as exc:
        line = disk_full_line(exc, where)
        if line is None:
            raise
        from ..runs import EXIT_ERROR

        print(f"error: {line}", file=sys.stderr)
        return EXIT_ERROR


def _cmd_evaluate(args: argparse.Namespace) -> int:
    return _one_line_on_full_disk(_evaluate, args, args.resume or args.out)


def _evaluate(args: argparse.Namespace) -> int:
    from ..judges import with_prompt_file
    from ..runs import evaluate

    try:
        if args.resume is not None:
            if args.turns is not None or args.judge is not None:
                raise ValueError("--resume RUN finishes RUN with its own evidence and judge: give neither --turns "
                                 "nor --judge")
            from ..runs.resume import resume

            result = resume(args.resume, workers=args.workers, scheduler=args.scheduler, progress=not args.quiet,
                            cache=False if args.no_cache else None)
        else:
            if args.turns is None or args.judge is None:
                raise ValueError("evaluate needs --turns FILE and --judge SPEC (or --resume RUN)")
            judge = with_prompt_file(args.judge, args.prompt_file)
            result = evaluate(Path(args.turns), judge, args.rubric, out_dir=args.out, name=args.name,
                              limit=args.limit, row_horizon=args.row_horizon, concurrency=args.concurrency,
                              seed=args.seed, cache=False if args.no_cache else None, progress=not args.quiet,
                              input_files=args.input_file or (), batch=args.batch, max_cost_usd=args.max_cost_usd,
                              compress_audit=args.compress_audit, chunk_size=args.chunk_size,
                              workers=args.workers, scheduler=args.scheduler, partition_bytes=args.partition_bytes)
    except (*_judge_errors(), *_USAGE_ERRORS) as exc:
        return _usage_error(exc)
    print(f"run folder: {result.run_dir}")
    print(f"runs root:  {runs_root_line(args.out)}")
    if _merged_only(result.manifest):
        return _finish_large_partitioned(result, args.strict)
    # summary first, then figures, then the report (which reads the folder): each step's temporaries are
    # freed before the next allocates, so a large run's peak memory is the largest step, not their sum
    said = _print_summary(result, quiet=args.quiet)
    gc.collect()
    _save_figures(result)
    manifest, run_dir = result.manifest, result.run_dir
    del result
    gc.collect()
    _write_report(run_dir)
    return _finish(manifest, args.strict, said=said)


#: A partitioned run with more segments than this is summarised from its partitions' merged sums
#: (``headline.json``): the command never loads its results whole; figures and the report are drawn on
#: request (``report RUN``), since they read every row.
MERGED_SUMMARY_ABOVE = 100_000


def _merged_only(manifest: Any) -> bool:
    return bool(manifest.partitions) and manifest.counts.segments > MERGED_SUMMARY_ABOVE


def _finish_large_partitioned(result: Any, strict: bool) -> int:
    """The summary of a large partitioned run: its headline figures merged from the partitions' sums."""
    import json

    import pandas as pd

    from ..runs.evaluate import HEADLINE_FILE
    from ..stats.intervals import format_headlines

    path = Path(result.run_dir) / HEADLINE_FILE
    if path.exists():
        table = pd.DataFrame(json.loads(path.read_text(encoding="utf-8"))["rows"])
        print(f"headline figures (merged from {result.manifest.partitions.get('count')} partitions' sums, "
              "turns resampled by a Poisson bootstrap):")
        print("\n".join(f"  {line}" for line in format_headlines(table)))
    print(f"figures and report.html are not drawn for a run of {result.manifest.counts.segments} segments (they read "
          f"every row): python -m axon_eval report {result.run_dir}")
    return _finish(result.manifest, strict)


def runs_root_line(out: str | None) -> str:
    """Where ``evaluate`` put its folder and why there: ``--out``, ``$AXON_EVAL_RUNS_DIR``, the repository's
    ``runs/`` or ``./runs`` (:func:`axon_eval.runs.io.runs_dir_origin`), with the ``index`` command that
    lists it."""
    from ..runs.io import runs_dir_origin

    root, why = (Path(out), "--out") if out is not None else runs_dir_origin()
    return f"{root.resolve()} ({why}); list its runs with: python -m axon_eval index {root.resolve()}"


def _cmd_rejudge(args: argparse.Namespace) -> int:
    return _one_line_on_full_disk(_rejudge, args, args.out or Path(args.run).parent)


def _rejudge(args: argparse.Namespace) -> int:
    from ..judges import with_prompt_file
    from ..runs import InputChangedError, rejudge

    try:
        judge = with_prompt_file(args.judge, args.prompt_file)
        result = rejudge(args.run, judge, rubric=args.rubric, out_dir=args.out, name=args.name,
                         concurrency=args.concurrency, cache=False if args.no_cache else None,
                         progress=not args.quiet, batch=args.batch, max_cost_usd=args.max_cost_usd)
    except (InputChangedError, *_judge_errors(), *_USAGE_ERRORS) as exc:
        return _usage_error(exc)
    _save_figures(result)
    print(f"run folder: {result.run_dir} (re-judged from {args.run})")
    said = _print_summary(result, quiet=args.quiet)
    _write_report(result.run_dir)
    return _finish(result.manifest, args.strict, said=said)


def _cmd_rescore(args: argparse.Namespace) -> int:
    from ..runs import rescore

    try:
        result = rescore(args.run, args.rubric, out_dir=args.out, name=args.name)
    except _USAGE_ERRORS as exc:
        return _usage_error(exc)
    _save_figures(result)
    print(f"run folder: {result.run_dir} (re-scored from {args.run})")
    _print_summary(result)
    _write_report(result.run_dir)
    return _finish(result.manifest, False)


def _cmd_report(args: argparse.Namespace) -> int:
    from ..reporting.report import write_report

    try:
        path = write_report(args.run, output=args.output, calibration=args.calibration)
    except _USAGE_ERRORS as exc:
        return _usage_error(exc)
    print(f"report: {path}")
    return 0


def _cmd_rerun(args: argparse.Namespace) -> int:
    from ..runs import InputChangedError, load_run, rerun

    try:
        new_dir, comparison = rerun(args.run, out_dir=args.out, progress=not args.quiet, cache=not args.no_cache,
                                    check_judge=check_judge)
    except (InputChangedError, *_judge_errors(), *_USAGE_ERRORS) as exc:
        return _usage_error(exc)
    new_run = load_run(new_dir)
    if not (new_run.manifest.notebook or {}).get("source"):  # a notebook draws its own figures
        _save_figures(new_run)
    print(f"run folder: {new_dir} (re-run of {args.run})")
    print(comparison.format(top=args.top))
    code = _finish(new_run.manifest, False)
    if code == 0 and not comparison.identical:
        print("the re-run's results differ from the original's", file=sys.stderr)
        return EXIT_RERUN_DIFFERS
    return code


#: ``index`` columns: (heading, width limit); ``--json`` prints every column of :func:`axon_eval.runs.index`.
INDEX_TABLE = (("run", 80), ("kind", 9), ("status", 11), ("judge", 28), ("rubric", 18), ("judged", 14),
               ("note", 80))


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def index_rows(frame: Any) -> list[dict[str, str]]:
    """The rows of the ``index`` table, as text: the run folder, kind, status, judge, rubric (its name,
    else its id), judged segments as ``k of n`` (``n`` the segments the run set out to judge:
    ``planned_segments``, larger than ``segments`` for an interrupted run), and a note: first what the judge was not
    (``SIMULATED``, ``local server, not the provider``: the ``judge_disclosure`` column, or
    :func:`axon_eval.runs.disclosure.judge_disclosure` of the row when the frame has no such column),
    then the study, a budget stop or the error, joined by ``"; "``. Missing values read ``-``."""
    from ..display import is_missing
    from ..runs.disclosure import judge_disclosure

    def text(value: Any) -> str:
        return "-" if is_missing(value) or value == "" else str(value)

    def present(record: dict[str, Any]) -> dict[str, Any]:
        return {key: value for key, value in record.items() if not is_missing(value)}

    rows = []
    for r in frame.to_dict(orient="records"):
        segments = r.get("segments")
        planned = r.get("planned_segments")
        total = segments if is_missing(planned) or not planned else planned
        judged = "-" if is_missing(total) or not total else f"{int(r['judged'])} of {int(total)}"
        study = r.get("study")
        error = r.get("error")
        disclosure = r.get("judge_disclosure") if "judge_disclosure" in r else judge_disclosure(present(r)).label
        about = (f"study {study}" if not is_missing(study) else
                 str(error).splitlines()[0] if not is_missing(error) and error else "")
        note = "; ".join(part for part in ("" if is_missing(disclosure) else str(disclosure), about) if part)
        rubric = r.get("rubric_name") if not is_missing(r.get("rubric_name")) else r.get("rubric_id")
        rows.append({"run": text(r.get("run_id")), "kind": text(r.get("kind")), "status": text(r.get("status")),
                     "judge": text(r.get("judge_id")), "rubric": text(rubric), "judged": judged, "note": note})
    return rows


def index_disclosure_lines(frame: Any) -> list[str]:
    """One line each for the runs of the ``index`` frame whose judge was simulated and those judged against
    a server on this machine (the ``simulated`` / ``local_server`` columns): how many, of how many.
    Empty when there are none."""
    lines = []
    for column, sentence in (("simulated", "judged by a SIMULATED judge: generated noise around another "
                                           "judge's verdicts, not a model's grading"),
                             ("local_server", "judged against a local server, not the provider: not a real "
                                              "model's verdicts")):
        flagged = int(frame[column].eq(True).sum()) if column in frame.columns else 0
        if flagged:
            lines.append(f"{flagged} of {len(frame)} run(s) {sentence}")
    return lines


def format_table(rows: list[dict[str, str]], columns: tuple[tuple[str, int], ...]) -> str:
    """Plain-text columns, each as wide as its widest cell up to its limit (longer cells end in ``...``)."""
    widths = {name: min(limit, max([len(name), *(len(row[name]) for row in rows)])) for name, limit in columns}
    lines = ["  ".join(name.ljust(widths[name]) for name, _ in columns).rstrip()]
    lines += ["  ".join(_clip(row[name], widths[name]).ljust(widths[name]) for name, _ in columns).rstrip()
              for row in rows]
    return "\n".join(lines)


def _cmd_index(args: argparse.Namespace) -> int:
    from ..runs import index

    frame = index(args.root)
    if args.json:
        print(frame.to_json(orient="records", indent=2))
    elif frame.empty:
        from ..runs.io import default_runs_dir

        print(f"no run folders under {args.root or default_runs_dir()}")
    else:
        print(format_table(index_rows(frame), INDEX_TABLE))
        for line in index_disclosure_lines(frame):
            print(line)
        print(f"{len(frame)} run folder(s); --json prints every column (paths, times, hashes, counts, cost, git)")
    return 0


def _cmd_fake_server(args: argparse.Namespace) -> int:
    from ..judges import fake_server

    return int(fake_server.main(args.server_args) or 0)


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


def _non_negative_float(text: str) -> float:
    value = float(text)
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be a non-negative number, got {text!r}")
    return value


def _add_judging_options(p: argparse.ArgumentParser) -> None:
    from ..runs.options import DEFAULTS  # the one source of an evaluation's defaults

    p.add_argument("--concurrency", type=_positive_int, default=DEFAULTS.concurrency,
                   help=f"judgements in flight (default {DEFAULTS.concurrency})")
    p.add_argument("--no-cache", action="store_true", help="do not read or write the verdict cache")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--batch", action="store_true",
                   help="send uncached views as one Anthropic Message Batch (half price; resumable)")
    p.add_argument("--max-cost-usd", type=_non_negative_float, default=None,
                   help="stop sending views before the reported cost would exceed this (the rest stay unjudged)")
    p.add_argument("--strict", action="store_true", help="exit 6 when any input line is invalid")
    p.add_argument("--prompt-file", default=None, metavar="PATH",
                   help="the language-model judge(s) of --judge take their system prompt from PATH instead of the "
                        "rubric's packaged prompt; the prompt is identified by its SHA-256 (judge id, cache key), "
                        "as the spec prompt(<spec>, file=PATH)")


def register(sub: argparse._SubParsersAction) -> None:
    """Add the run verbs to the ``python -m axon_eval`` sub-command parser."""
    from ..runs.options import DEFAULTS  # the one source of an evaluation's defaults

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
    p.add_argument("--strict", action="store_true", help="exit 6 when any input line is invalid")
    p.set_defaults(handler=_cmd_run)

    p = sub.add_parser("evaluate", help="headless evaluation of an evidence file into a run folder")
    p.add_argument("--turns", default=None, help="JSON Lines evidence file (required unless --resume)")
    p.add_argument("--judge", default=None,
                   help="judge spec: heuristic, anthropic:<model>, openai:<model>[@url], ... (required unless --resume)")
    p.add_argument("--rubric", default=None, help="rubric YAML file or packaged name (default axon-v1)")
    p.add_argument("--out", default=None, help="parent folder of the run (default $AXON_EVAL_RUNS_DIR, else the "
                   "repository's runs/ when run inside the repository, else ./runs)")
    p.add_argument("--limit", type=_non_negative_int, default=None, help="judge only the first N valid turns")
    p.add_argument("--name", default=DEFAULTS.name, help="run name (part of the folder name)")
    p.add_argument("--row-horizon", type=_positive_int, default=None, help="override the rubric's row horizon")
    p.add_argument("--seed", type=int, default=DEFAULTS.seed, help="seed recorded in the manifest")
    p.add_argument("--input-file", action="append", metavar="FILE",
                   help="another input whose SHA-256 the manifest records (labels, ...; repeatable)")
    p.add_argument("--chunk-size", type=_positive_int, default=DEFAULTS.chunk_size,
                   help=f"segments read, judged and written per step (memory grows with it; default {DEFAULTS.chunk_size})")
    p.add_argument("--compress-audit", action="store_true", help="write audit.jsonl.gz instead of audit.jsonl")
    p.add_argument("--workers", type=_positive_int, default=None,
                   help="judge partitions on a new local Dask cluster of N worker processes (default: one process)")
    p.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="judge partitions on an existing Dask cluster (also $DASK_SCHEDULER_ADDRESS)")
    p.add_argument("--partition-bytes", type=_positive_int, default=None, metavar="BYTES",
                   help="size of a partition of the evidence file, cut on line boundaries (default: at least 4 "
                        "partitions per worker, at most 4 MiB each)")
    p.add_argument("--resume", default=None, metavar="RUN",
                   help="finish an interrupted, failed or killed run in place: finished partitions are kept and "
                        "no verdict is paid twice (with --workers/--scheduler to resume on a cluster)")
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
    p.add_argument("--calibration", default=None, metavar="PATH",
                   help="the study-05 calibration.json (or its run folder) the first page's claim gate reads "
                        "(default: the newest 05-calibration run folder beside the run)")
    p.set_defaults(handler=_cmd_report)

    p = sub.add_parser("rerun", help="execute a run again from its own folder and compare the results",
                       description="Re-execute a notebook run (evaluation, study, reference grading) with its "
                       "params.json, or an evaluate/rejudge run with its recorded evidence, judge and rubric, "
                       "into a new folder, after checking its inputs are unchanged; then compare the results "
                       "segment by segment and study.json figure by figure. Exit 7 when they differ.")
    p.add_argument("run", help="run folder")
    p.add_argument("--out", default=None, help="parent folder of the new run (default: the source's parent)")
    p.add_argument("--top", type=_non_negative_int, default=10, help="largest changes to print")
    p.add_argument("--no-cache", action="store_true",
                   help="judge every verdict again (an empty cache; the shared verdict cache is not touched)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(handler=_cmd_rerun)

    p = sub.add_parser("index", help="list every run folder (date, judge, rubric, counts, status)")
    p.add_argument("root", nargs="?", default=None, help="folder of runs (default $AXON_EVAL_RUNS_DIR, else the "
                   "repository's runs/ when run inside the repository, else ./runs)")
    p.add_argument("--json", action="store_true", help="machine-readable")
    p.set_defaults(handler=_cmd_index)

    p = sub.add_parser("fake-judge-server", add_help=False,
                       help="start the local fake Anthropic/OpenAI server (rehearse a paid run offline)")
    p.add_argument("server_args", nargs=argparse.REMAINDER, help="options of python -m axon_eval.judges.fake_server")
    p.set_defaults(handler=_cmd_fake_server)
