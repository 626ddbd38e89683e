"""``evaluate``: judge and score every segment of an evidence file, streaming, into a new run folder.

The input is read, judged, scored and written in chunks of about ``chunk_size`` segments, so peak memory
grows with the chunk, not the file: ``verdicts.jsonl`` and ``audit.jsonl`` are appended chunk by chunk
and the results part ``results/part-00000.parquet`` gets one row group per chunk (each written under a hidden ``.partial`` name and
moved into place at the end). Only the results table (one small row per segment) is kept for the
returned :class:`~axon_eval.runs.load.Run`; its verdicts and audit load lazily.

Order of events: the input is opened and checked for at least one valid turn (none: ``NoValidTurnsError``
and no folder); the folder and a ``running`` manifest are written; for a paid judge the estimated cost
is computed (a streaming pre-pass), recorded and printed; chunks are judged through the verdict cache;
the manifest is finished with ``complete``, ``partial`` or ``failed`` (see :mod:`.manifest`). Any
exception after the folder exists keeps what was written and marks the run ``failed``.

Ctrl-C (``KeyboardInterrupt``) stops the judging at once; the judgements of the chunk in flight that had
finished are written too (a segment with only some of its samples done gets unjudged rows for the rest,
with the reason), the manifest is marked ``interrupted`` with the tokens and cost of what was written and
``counts.planned_segments`` (the input's segments within the limit), and
:class:`~.manifest.RunInterrupted` is raised with the folder and ``judged of planned``.

Nothing paid is lost: every judgement paid for is appended to the run's paid journal (``paid.jsonl``,
:mod:`~axon_eval.runs.journal`) the moment it arrives, and what a resume needs (the verdict cache path
among it) is in the manifest before the first request, so a run killed at any moment (SIGKILL) is finished by
``evaluate --resume`` without paying again, and the manifest's tokens and cost are the journals' sums
over every attempt. The verdict cache is used through :class:`~.faults.GuardedCache`: a failed write
never turns a paid verdict into an unjudged row, it is counted (``cache_write_failures``) and said once.
A full disk marks the run ``failed`` and raises :class:`~.faults.DiskFullError` (no file under its final
name is torn). A partitioned run stops on Ctrl-C as :mod:`.partitioned` says, and its manifest is written
after its workers stopped.

Budget: with ``max_cost_usd``, before each view is sent the reported cost so far plus the view's
estimate (:mod:`.budget`) must stay within the budget; views beyond it are kept as unjudged rows with
the reason, and the run ends ``partial``.

:func:`evaluate` is the orchestrator of these stages, each with one job, in the order they run:

1. :func:`~.stage_open.plan_run`: the options resolved, the input checked, the folder and the manifest;
2. :func:`~.stage_open.open_run`: the engine or the verdict cache, the first manifest, the cost estimate;
3. ``run.judging.judge(run)``: :class:`~.stage_judge.LocalJudging`, :class:`~.stage_judge.BatchJudging`
   or :class:`~.stage_judge.PartitionedJudging`, the three implementations of
   :class:`~.stage_judge.Judging`, each writing through :func:`~.judging.score_and_write`;
4. :func:`~.stage_end.finish_run`; the stages run inside :func:`~.stage_end.run_ending`, which marks the
   run interrupted on Ctrl-C (:func:`~.stage_end.mark_interrupted`) or failed on any other error
   (:func:`~.stage_end.mark_failed`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..evidence import InvalidTurn, Turn
from ..rubric import Rubric
from .faults import note_cache_failures
from .io import utc_now
from .judging import resolve_judge
from .load import Run
from .manifest import fail_run, read_existing_manifest
from .options import EvaluationOptions
from .provenance import judge_label, judge_provenance, prompt_mismatches, record_git
from .stage_end import close_engine, disk_full, finish_run, run_ending
from .stage_judge import HEADLINE_FILE, HEARTBEAT_EVERY_S
from .stage_open import count_segments, open_cache, open_run, open_run_cache, plan_run

if TYPE_CHECKING:  # pragma: no cover
    from ..judges.base import Judge

#: The names other modules import from here (each defined where its stage is).
__all__ = [
    "HEADLINE_FILE",
    "HEARTBEAT_EVERY_S",
    "close_engine",
    "count_segments",
    "disk_full",
    "evaluate",
    "fail_run",
    "judge_label",
    "judge_provenance",
    "note_cache_failures",
    "open_cache",
    "open_run_cache",
    "prompt_mismatches",
    "read_existing_manifest",
    "record_git",
    "resolve_judge",
]


def evaluate(
    turns: Sequence[Turn] | str | Path,
    judge: Judge | str | EvaluationOptions | None = None,
    rubric: Rubric | str | Path | None = None,
    *,
    invalid: Iterable[InvalidTurn | Mapping[str, Any]] = (),
    options: EvaluationOptions | None = None,
    **values: Any,
) -> Run:
    """Judge and score every segment of ``turns`` and write a run folder.

    ``evaluate(turns, options)`` takes an :class:`~.options.EvaluationOptions`; ``judge``, ``rubric`` and
    keyword arguments (any option's name) build one, laid over ``options`` when both are given: one
    record, validated once, with one set of defaults. A segment whose judgement failed is kept as
    ``status == "unjudged"`` with its error and ``NaN`` scores.

    Parameters
    ----------
    turns : sequence of Turn, str or Path
        Valid turns (with their ``invalid`` records), or the path of an evidence file, which is
        streamed here (its invalid lines are kept and its SHA-256 recorded).
    judge : Judge, str or EvaluationOptions, optional
        A :class:`~axon_eval.judges.base.Judge` or a spec string (``heuristic``,
        ``anthropic:<model>``, ...), whose ``judge_many`` is called through the verdict cache; or the
        options record itself.
    rubric : Rubric, str or Path, optional
        A Rubric, a packaged rubric name or a YAML path (default ``axon-v1``); ``row_horizon``
        replaces its row horizon (which changes the rubric id).
    invalid : iterable of InvalidTurn or dict, optional
        Invalid input lines to carry into the run (``invalid.jsonl``, manifest counts, summaries).
    options : EvaluationOptions, optional
        The options record; ``values`` are laid over it.
    **values
        Any option of :class:`~.options.EvaluationOptions`, among them: ``out_dir``, the parent of
        the run folder (default ``$AXON_EVAL_RUNS_DIR`` or ``runs``); ``run_dir``, a folder to write
        into instead of a fresh one (it must not hold results; its ``params.json`` is kept);
        ``params``, parameters to record, merged over the call's own (turns_file, judge, rubric,
        row_horizon, limit, seed, name, concurrency); ``input_files``, further files whose SHA-256 is
        recorded; ``cache``, a ``VerdictCache``, a path, ``None`` (the default
        ``<out_dir>/.cache/verdicts.sqlite`` or ``$AXON_EVAL_CACHE``) or ``False`` (no cache);
        ``limit``, the first ``limit`` valid turns (invalid lines are always all reported); ``seed``,
        recorded in the manifest and params (stochastic judges carry their own seed in their spec);
        ``chunk_size``, segments read, judged and written per step; ``batch``, every uncached view as
        one Anthropic Message Batch, polled every ``batch_poll_s`` for at most ``batch_timeout_s``;
        ``max_cost_usd``, the budget (module docstring); ``compress_audit``, ``audit.jsonl.gz``
        instead of ``audit.jsonl``.

    Returns
    -------
    Run
        The finished run: its folder, manifest, parameters and results table.

    Raises
    ------
    TypeError
        An unknown option, or no judge.
    ValueError
        A bad option value, or a budget whose models have no price.
    NoValidTurnsError
        The input holds no valid turn (a ``ValueError``), raised before anything is created.
    RunInterrupted
        Ctrl-C: what was judged is kept and the manifest is marked ``interrupted``.
    DiskFullError
        The disk filled: the manifest is marked ``failed``.
    Exception
        Any other error after the folder exists marks the manifest ``failed`` and is re-raised.
    """
    started = utc_now()
    if isinstance(judge, EvaluationOptions):
        options, judge = judge, None
    given = {**({"judge": judge} if judge is not None else {}), **({"rubric": rubric} if rubric is not None else {}),
             **values}
    opts = EvaluationOptions.build(options, **given)
    if opts.judge is None:
        raise TypeError("evaluate needs a judge (a Judge or a spec string such as 'heuristic')")
    run = plan_run(turns, opts, invalid, started)
    with run_ending(run):
        open_run(run)
        judged = run.judging.judge(run)
        finish_run(run, judged)
    return Run(run_dir=run.folder, manifest=run.manifest, params=run.manifest.params, results=judged.results,
               invalid=run.invalid)
