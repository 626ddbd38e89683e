"""Runs made from earlier runs: ``rejudge`` (same evidence, another judge), ``rescore`` (same verdicts,
another rubric, no judge calls) and ``rerun`` (the same run again from its own folder, then compared).
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..evidence import invalid_lines
from ..rubric import Rubric
from .evaluate import RunWriter, evaluate, fail_run, record_git
from .io import file_sha256, iso, new_run_dir, to_jsonable, utc_now, write_json, write_jsonl
from .load import Run, audit_path, iter_verdicts, load_run
from .manifest import RunCounts, RunManifest, status_for
from .provenance import repository_root, package_versions, redact_secrets, resolve_recorded
from .rows import SegmentItem

if TYPE_CHECKING:  # pragma: no cover
    from ..judges.base import Judge
    from ..judges.cache import VerdictCache


class InputChangedError(RuntimeError):
    """The input file a run recorded no longer has the recorded SHA-256 (or is gone)."""


def recorded_evidence(run_folder: str | Path, manifest: RunManifest | None = None) -> Path:
    """The evidence file a run recorded, checked against its SHA-256 (``InputChangedError`` otherwise)."""
    source = manifest or RunManifest.read(run_folder)
    turns_file = source.turns_file
    if not turns_file or turns_file not in source.input_files:
        raise InputChangedError(f"run {run_folder} recorded no evidence file with a hash "
                                f"(turns_file={turns_file!r}, input_files={list(source.input_files)}); "
                                "cannot re-judge its evidence")
    path = resolve_recorded(turns_file, root=repository_root(), workdir=source.workdir)
    if not path.exists():
        raise InputChangedError(f"evidence file {turns_file!r} of run {run_folder} is gone (looked at {path})")
    actual, expected = file_sha256(path), source.input_files[turns_file]
    if actual != expected:
        raise InputChangedError(f"evidence file {path} changed since run {run_folder}: SHA-256 {actual} "
                                f"!= recorded {expected}")
    return path


def rejudge(
    run_folder: str | Path,
    judge: Judge | str,
    *,
    rubric: Rubric | str | Path | None = None,
    out_dir: str | Path | None = None,
    name: str | None = None,
    cache: VerdictCache | str | Path | bool | None = None,
    concurrency: int = 8,
    progress: bool = True,
    figures: bool = True,
    batch: bool = False,
    max_cost_usd: float | None = None,
) -> Run:
    """Judge the same captured evidence as ``run_folder`` again with another ``judge``: a new run.

    The evidence file recorded in the source run is re-read and must still have the recorded SHA-256
    (``InputChangedError`` otherwise). The source's rubric (row horizon included) and ``limit`` are
    reused unless ``rubric`` is given. The new run's manifest names the source in ``source_run``.
    """
    source = RunManifest.read(run_folder)
    path = recorded_evidence(run_folder, source)
    if rubric is None:
        if source.rubric is None:
            raise ValueError(f"run {run_folder} recorded no rubric; pass one")
        rubric_obj = Rubric.model_validate(source.rubric)
    else:
        rubric_obj = Rubric.resolve(rubric)
    folder = Path(run_folder)
    params = {k: v for k, v in source.params.items() if k not in {"run_dir"}}
    params.update({"source_run": str(folder)})
    return evaluate(
        path, judge, rubric_obj,
        out_dir=out_dir if out_dir is not None else folder.parent,
        name=name or f"rejudge-{source.name}", params=params,
        cache=cache, concurrency=concurrency, limit=source.params.get("limit"), seed=source.seed or 0,
        progress=progress, figures=figures, kind="rejudge", source_run=str(folder), batch=batch,
        max_cost_usd=max_cost_usd,
    )


def rescore(
    run_folder: str | Path,
    rubric: Rubric | str | Path,
    *,
    out_dir: str | Path | None = None,
    name: str | None = None,
    figures: bool = True,
    chunk_size: int = 2048,
) -> Run:
    """Score the stored verdicts of ``run_folder`` under ``rubric``: a new run, no judge calls at all.

    Segments, trajectory facts and evidence come from the source's audit, verdicts from its
    ``verdicts.jsonl``; both are streamed side by side (they hold one line per results row, in the same
    order). Rescoring with the same rubric reproduces the source's scores exactly. A rubric with another
    row horizon or prompt version is allowed but noted in ``manifest.warnings``: the verdicts were given
    on the source's views.
    """
    started = utc_now()
    rubric = Rubric.resolve(rubric)
    source = load_run(run_folder)
    sm = source.manifest
    if sm.status not in ("complete", "partial"):
        raise ValueError(f"run {run_folder} has status {sm.status!r}; only a complete or partial run can be rescored")
    warnings: list[str] = []
    if sm.rubric is not None:
        src_rubric = Rubric.model_validate(sm.rubric)
        if src_rubric.row_horizon != rubric.row_horizon:
            warnings.append(f"rubric row_horizon {rubric.row_horizon} differs from the {src_rubric.row_horizon} "
                            "rows the judge saw; verdicts were not re-judged")
        if src_rubric.prompt_version != rubric.prompt_version:
            warnings.append(f"rubric prompt_version {rubric.prompt_version!r} differs from the judge's "
                            f"{src_rubric.prompt_version!r}; verdicts were not re-judged")
    name = name or f"rescore-{sm.name}"
    out = Path(out_dir) if out_dir is not None else source.run_dir.parent
    folder = new_run_dir(out, name, sm.judge_spec or sm.judge_id, now=started)
    params = {**{k: v for k, v in source.params.items() if k != "run_dir"},
              "rubric": rubric.label, "row_horizon": rubric.row_horizon, "name": name,
              "source_run": str(source.run_dir)}
    manifest = RunManifest(
        run_id=folder.name, status="running", kind="rescore", name=name, judge_id=sm.judge_id,
        judge_spec=sm.judge_spec, judge_model=sm.judge_model, judge_endpoint=sm.judge_endpoint,
        judge_local=sm.judge_local, judge_provenance=sm.judge_provenance, prompt_version=sm.prompt_version,
        rubric_id=rubric.id, rubric_name=rubric.name, rubric=rubric.model_dump(mode="json"),
        packages=package_versions(), input_files=dict(sm.input_files), turns_file=sm.turns_file,
        params=redact_secrets(to_jsonable(params)), seed=sm.seed, started_at=iso(started),
        counts=RunCounts(invalid=len(invalid_lines(source.invalid))), source_run=str(source.run_dir), warnings=warnings,
        cache_hits=0, cache_misses=0, cost_usd=0.0,
    )
    writer: RunWriter | None = None
    try:
        record_git(folder, manifest, repository_root())
        write_json(folder / "params.json", manifest.params)
        manifest.write(folder)
        writer = RunWriter(folder, compress_audit=audit_path(source.run_dir).suffix == ".gz")
        pairs = zip(iter_verdicts(source.run_dir), source.iter_audit(), strict=False)
        seen_turns: set[str] = set()
        n = 0
        while True:
            chunk = list(itertools.islice(pairs, chunk_size))
            if not chunk:
                break
            items, records = [], []
            for record, entry in chunk:
                n += 1
                if (record.segment_id, record.sample_index) != (entry["segment_id"], entry["sample_index"]):
                    raise ValueError(f"run {run_folder}: verdict {n} is for {record.segment_id!r}/"
                                     f"{record.sample_index} but audit entry {n} is for {entry['segment_id']!r}/"
                                     f"{entry['sample_index']}")
                items.append(SegmentItem.from_audit(entry))
                records.append(record)
            new_turns = {i.turn_id for i in items} - seen_turns
            seen_turns |= new_turns
            writer.add_scored(items, records, rubric, len(new_turns))
        if n != len(source.results):
            raise ValueError(f"run {run_folder}: {n} verdict/audit pairs for {len(source.results)} results rows")
        writer.commit()
        write_jsonl(folder / "invalid.jsonl", source.invalid)
        results = writer.results_frame()
        if figures:
            from .. import plots

            plots.save_standard_figures(results, rubric, folder / "figures")
        (folder / "figures").mkdir(exist_ok=True)
        counts = writer.counts
        counts.turns = sm.counts.turns
        counts.invalid = len(invalid_lines(source.invalid))
        manifest.counts = counts
        manifest.status, manifest.failure = status_for(counts)
        manifest.ended_at = iso(utc_now())
        manifest.write(folder)
    except BaseException as exc:
        if writer is not None:
            writer.abort()
        fail_run(folder, manifest, exc)
        raise
    return Run(run_dir=folder, manifest=manifest, params=manifest.params, results=results,
               invalid=list(source.invalid))


def rerun(run_folder: str | Path, *, out_dir: str | Path | None = None, progress: bool = False) -> tuple[Any, Any]:
    """Execute a run again from its own folder and compare the new results with the old ones.

    A notebook run is re-executed with its ``params.json`` (the notebook's own parameters); an
    ``evaluate``/``rejudge`` run re-evaluates its recorded evidence file (hash-checked) with its judge,
    rubric and limit. Returns ``(new_run_dir, RunComparison)``; ``comparison.identical`` says whether every
    segment got the same subscores, score and band.
    """
    from .compare import compare_runs

    folder = Path(run_folder)
    manifest = RunManifest.read(folder)
    out = Path(out_dir) if out_dir is not None else folder.parent
    if manifest.kind == "notebook":
        from ..runner import run_notebook

        source = (manifest.notebook or {}).get("source")
        if not source:
            raise ValueError(f"run {folder} recorded no source notebook")
        nb = resolve_recorded(source, root=repository_root(), workdir=manifest.workdir)
        result = run_notebook(nb, params_files=[folder / "params.json"], out_dir=out, name=manifest.name,
                              progress=progress)
        new_dir = result.run_dir
    elif manifest.kind in ("evaluate", "rejudge"):
        if manifest.rubric is None or manifest.judge_spec is None:
            raise ValueError(f"run {folder} recorded no rubric or judge spec to re-run with")
        path = recorded_evidence(folder, manifest)
        run = evaluate(path, manifest.judge_spec, Rubric.model_validate(manifest.rubric), out_dir=out,
                       name=f"rerun-{manifest.name}", limit=manifest.params.get("limit"),
                       seed=manifest.seed or 0, progress=progress, source_run=str(folder))
        new_dir = run.run_dir
    else:
        hint = ("run `python -m axon_eval grade-reference` again with its params.json: graded responses come "
                "from the cache" if manifest.kind == "reference" else "rescore its source instead")
        raise ValueError(f"run {folder} is a {manifest.kind!r} run; rerun handles notebook, evaluate and "
                         f"rejudge runs ({hint})")
    return new_dir, compare_runs(folder, new_dir, allow_different_evidence=False)
