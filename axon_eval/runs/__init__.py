"""Evaluation runs: judge every segment, score it, and keep the whole run as dated evidence.

A *run* is one folder ``<out>/<UTC YYYY-MM-DD>T<HHMMSS>Z_<name>_<judge slug>/`` that is never
overwritten (a clash gets ``-2``, ``-3``, ... appended) and holds::

    params.json       the parameters the run was started with (secrets redacted; for a notebook run,
                      exactly the notebook's parameters, so run -f params.json repeats it)
    manifest.json     RunManifest: status, judge and its endpoint, rubric, git commit (and
                      git.diff when the tree was dirty), versions of every dependency, SHA-256 of every
                      input, times, counts in segments, cache hits, tokens, estimated and reported cost
    results/          the results dataset, part-<n>.parquet (one part per partition; a single-process
                      run writes one): one row per judged segment and judge sample, RESULT_COLUMNS
    parts/            a partitioned run's per-partition verdicts, audit and records (merged into the files
                      below at the end; kept so that --resume can finish an interrupted run)
    verdicts.jsonl    every JudgeRecord (what replay(<run>) reads)
    audit.jsonl       per results row: the full scoring arithmetic, the trajectory facts, the SQL and rows
                      the judge saw and the view's SHA-256 (audit.jsonl.gz when compressed)
    invalid.jsonl     every input line that could not be used, with its reason
    figures/          PNG figures, drawn by the caller (axon_eval.reporting.save_run_figures):
                      runs write data and draw nothing

Modules, one job each: :mod:`.io` (atomic files, streams), :mod:`.provenance` (redaction, versions, git),
:mod:`.manifest` (schema, statuses, exit codes), :mod:`.rows` (segments as scored rows), :mod:`.load`
(reading folders back), :mod:`.evaluate` (streaming evaluation), :mod:`.budget` (cost estimate and
budget), :mod:`.batch` (Message Batches with resume), :mod:`.derive` (rejudge, rescore, rerun),
:mod:`.compare` (two runs side by side), :mod:`.catalog` (every run folder as one table: ``index``),
:mod:`.writer` (what a run appends as it goes, shared by evaluate, batches and rescore), :mod:`.judging`
(judging a stream of turns in chunks: the one code path of every run), :mod:`.partitioned` (partitions
on a Dask cluster), :mod:`.resume` (finishing an interrupted run in place), :mod:`.gate_report` (a
gate's decision as text, Markdown and JUnit XML), :mod:`.disclosure` (SIMULATED or a local server) and
:mod:`.notebook` (the papermill runner: a notebook into a new run folder).

Resume: judged verdicts go to the SQLite verdict cache (``<out>/.cache/verdicts.sqlite``, or the file
named by ``AXON_EVAL_CACHE``) as they are made, so starting an interrupted run again with the same
inputs and judge pays for no verdict twice and produces the same results.

Unjudged segments (judge errors) are rows with ``status == "unjudged"``, ``NaN`` scores and the error
text: never a 0, never dropped. Evidence SQL is data here: nothing in this package executes it.
"""

from __future__ import annotations

from typing import Any

from ..summaries import MixedResultsError, format_summary, summarise
from .evaluate import evaluate, judge_label, open_cache, resolve_judge
from .io import (
    CACHE_ENV,
    RUNS_DIR_ENV,
    atomic_write_bytes,
    atomic_write_text,
    default_cache_path,
    default_runs_dir,
    file_sha256,
    iso,
    new_run_dir,
    read_jsonl,
    read_results,
    results_files,
    slugify,
    to_jsonable,
    utc_now,
    write_json,
    write_jsonl,
    write_parquet,
)
from .load import Run, load_run
from .manifest import (
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    EXIT_INVALID_LINES,
    EXIT_NO_VALID_TURNS,
    EXIT_NONE_JUDGED,
    EXIT_OK,
    EXIT_PARTIAL,
    EXIT_USAGE,
    NoValidTurnsError,
    RunCounts,
    RunInterrupted,
    RunManifest,
    exit_code,
)
from .provenance import REDACTED, git_info, package_versions, redact_secrets
from .rows import RESULT_COLUMNS, empty_results
from .derive import InputChangedError, rejudge, rerun, rescore
from .catalog import index
from .notebook import NotebookRun, run_notebook
from .options import EvaluationOptions

__all__ = [
    "CACHE_ENV",
    "EXIT_ERROR",
    "EXIT_INTERRUPTED",
    "EvaluationOptions",
    "EXIT_INVALID_LINES",
    "EXIT_NONE_JUDGED",
    "EXIT_NO_VALID_TURNS",
    "EXIT_OK",
    "EXIT_PARTIAL",
    "EXIT_USAGE",
    "REDACTED",
    "RESULT_COLUMNS",
    "RUNS_DIR_ENV",
    "InputChangedError",
    "MixedResultsError",
    "NoValidTurnsError",
    "NotebookRun",
    "Run",
    "RunComparison",
    "RunCounts",
    "RunInterrupted",
    "RunManifest",
    "atomic_write_bytes",
    "atomic_write_text",
    "compare_runs",
    "default_cache_path",
    "default_runs_dir",
    "empty_results",
    "evaluate",
    "exit_code",
    "file_sha256",
    "read_results",
    "results_files",
    "format_summary",
    "git_info",
    "index",
    "iso",
    "judge_label",
    "load_run",
    "new_run_dir",
    "open_cache",
    "package_versions",
    "read_jsonl",
    "redact_secrets",
    "rejudge",
    "rerun",
    "run_notebook",
    "rescore",
    "resolve_judge",
    "slugify",
    "summarise",
    "to_jsonable",
    "utc_now",
    "write_json",
    "write_jsonl",
    "write_parquet",
]


def __getattr__(name: str) -> Any:
    # compare pulls in scipy: imported on first use only (its folder is written by
    # axon_eval.reporting.comparison.write_comparison: runs draw nothing)
    if name in ("compare_runs", "RunComparison"):
        from . import compare

        return getattr(compare, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
