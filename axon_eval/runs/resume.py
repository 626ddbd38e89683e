"""``evaluate --resume RUN``: finish an interrupted, failed or killed evaluation in place.

A run folder records everything needed to finish it: the evidence file and its SHA-256 (checked), the
judge spec, the rubric, the options and, for a partitioned run, the partition size. :func:`resume` cuts the
evidence into the same partitions (:mod:`.partitioned`), keeps every partition already finished, and
judges the others; a partition cut short serves the verdicts already in its journal, and every other
verdict goes through the verdict cache, so no verdict is paid twice. A single-process run resumes as one
partition whose journal is its ``verdicts.jsonl``.

A run that is still recorded as ``running`` but whose process is gone is ``interrupted``
(:func:`~.manifest.effective_status`, what ``index`` shows) and can be resumed.
"""

from __future__ import annotations

import contextlib
import shutil
from pathlib import Path
from typing import Any

from ..rubric import Rubric
from .io import default_cache_path, iso, utc_now, write_jsonl
from .load import Run, load_run
from .manifest import RunManifest, effective_status, mark_alive, status_for
from .partitioned import PARTS_DIR, connect

#: The kinds of run :func:`resume` can finish (an evaluation and a re-judged run).
RESUMABLE_KINDS = ("evaluate", "rejudge")


def _single_process_journal(folder: Path) -> None:
    """A single-process run resumes as partition 0: its ``verdicts.jsonl`` becomes that partition's journal."""
    parts = folder / PARTS_DIR
    parts.mkdir(exist_ok=True)
    journal = parts / "verdicts-00000.jsonl"
    if (folder / "verdicts.jsonl").exists() and not journal.exists():
        shutil.copyfile(folder / "verdicts.jsonl", journal)


def resume(run_dir: str | Path, *, workers: int | None = None, scheduler: str | None = None, client: Any = None,
           progress: bool = True, cache: Any = None) -> Run:
    """Finish run ``run_dir`` in place (module docstring); returns the finished :class:`Run`.

    Refused (``ValueError``) for a complete run, a run still running, a run that is not an evaluation, a
    Message Batches run (run the same command again: its batch id is recorded and polled), and a run
    whose evidence file changed (``InputChangedError``). ``workers``/``scheduler``/``client`` choose the
    engine as for :func:`~.evaluate.evaluate` (none: the partitions one after another here)."""
    from .derive import recorded_evidence
    from .evaluate import _judge_partitioned, fail_run, resolve_judge
    from .options import EvaluationOptions

    folder = Path(run_dir)
    manifest = RunManifest.read(folder)
    status = effective_status(manifest)
    if status == "complete":
        raise ValueError(f"run {folder} is complete: nothing to resume")
    if status == "running":
        raise ValueError(f"run {folder} is still running (process {manifest.pid} on {manifest.host}); resume it "
                         "once that process is gone")
    if manifest.kind not in RESUMABLE_KINDS:
        raise ValueError(f"run {folder} is a {manifest.kind!r} run; only {', '.join(RESUMABLE_KINDS)} runs resume")
    if manifest.batch:
        raise ValueError(f"run {folder} sent a Message Batch; run the same command again to resume polling it")
    evidence = recorded_evidence(folder, manifest)
    rubric = Rubric.model_validate(manifest.rubric) if manifest.rubric else Rubric.default()
    params = manifest.params or {}
    spec = manifest.judge_spec or params.get("judge")
    if not spec:
        raise ValueError(f"run {folder} recorded no judge spec; it cannot be judged again")
    judge = resolve_judge(spec, rubric)
    partition_bytes = (manifest.partitions or {}).get("bytes")
    if partition_bytes is None:  # a single-process run: one partition, its verdicts.jsonl the journal
        partition_bytes = evidence.stat().st_size + 1
        _single_process_journal(folder)
    out = folder.parent
    opts = EvaluationOptions.build(judge=spec, limit=params.get("limit"), concurrency=params.get("concurrency") or 8,
                                   max_cost_usd=manifest.max_cost_usd, partition_bytes=partition_bytes,
                                   progress=progress, cache=cache if cache is not None else (
                                       False if manifest.cache_path is None else default_cache_path(out)),
                                   workers=workers, scheduler=scheduler, client=client)
    previous = manifest.status
    manifest.status, manifest.failure, manifest.error, manifest.ended_at = "running", None, None, None
    mark_alive(manifest)
    manifest.warnings.append(f"resumed at {iso(utc_now())} (was {previous}): finished partitions kept, the rest "
                             "judged again through the journal and the verdict cache")
    manifest.write(folder)
    engine = None
    invalid_list: list[dict[str, Any]] = []
    try:
        engine = connect(workers, scheduler, client)
        budget_stopped = _judge_partitioned(engine, folder, evidence, judge, rubric, manifest, opts, out, invalid_list)
        manifest.status, manifest.failure = status_for(manifest.counts)
        if budget_stopped:
            manifest.warnings.append("the max_cost_usd budget stopped judging; the rest are unjudged rows")
        manifest.pid, manifest.ended_at = None, iso(utc_now())
        manifest.write(folder)
    except KeyboardInterrupt:
        manifest.status, manifest.ended_at = "interrupted", iso(utc_now())
        manifest.error = "interrupted (Ctrl-C) while resuming; resume again to finish"
        with contextlib.suppress(Exception):
            manifest.write(folder)
        raise
    except BaseException as exc:
        with contextlib.suppress(Exception):
            write_jsonl(folder / "invalid.jsonl", invalid_list)
        fail_run(folder, manifest, exc)
        raise
    finally:
        if engine is not None:
            engine.close()
    return load_run(folder)
