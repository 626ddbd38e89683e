"""Runs made from earlier runs: ``rejudge`` (same evidence, another judge), ``rescore`` (same verdicts,
another rubric, no judge calls) and ``rerun`` (the same run again from its own folder, then compared).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..evidence import invalid_lines
from ..rubric import Rubric
from .evaluate import evaluate
from .io import CACHE_ENV, file_sha256, has_results, iso, new_run_dir, to_jsonable, utc_now, write_json, write_jsonl
from .load import Run, audit_path, iter_verdicts, load_run
from .manifest import RunCounts, RunManifest, fail_run, status_for
from .options import DEFAULTS
from .provenance import package_versions, record_git, redact_secrets, relative_to_root, repository_root, resolve_recorded
from .rows import SegmentItem
from .writer import RunWriter

if TYPE_CHECKING:  # pragma: no cover
    from ..judges.base import Judge
    from ..judges.cache import VerdictCache
    from .notebook import JudgeCheck


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
    concurrency: int = DEFAULTS.concurrency,
    progress: bool = DEFAULTS.progress,
    batch: bool = DEFAULTS.batch,
    max_cost_usd: float | None = DEFAULTS.max_cost_usd,
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
    params.update({"source_run": relative_to_root(folder, repository_root())})
    return evaluate(
        path, judge, rubric_obj,
        out_dir=out_dir if out_dir is not None else folder.parent,
        name=name or f"rejudge-{source.name}", params=params,
        cache=cache, concurrency=concurrency, limit=source.params.get("limit"), seed=source.seed or 0,
        progress=progress, kind="rejudge", source_run=str(folder), batch=batch,
        max_cost_usd=max_cost_usd,
    )


def rescore(
    run_folder: str | Path,
    rubric: Rubric | str | Path,
    *,
    out_dir: str | Path | None = None,
    name: str | None = None,
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
              "source_run": relative_to_root(source.run_dir, repository_root())}
    manifest = RunManifest(
        run_id=folder.name, status="running", kind="rescore", name=name, judge_id=sm.judge_id,
        judge_spec=sm.judge_spec, judge_model=sm.judge_model, judge_endpoint=sm.judge_endpoint,
        judge_local=sm.judge_local, judge_provenance=sm.judge_provenance, prompt_version=sm.prompt_version,
        rubric_id=rubric.id, rubric_name=rubric.name, rubric=rubric.model_dump(mode="json"),
        packages=package_versions(), input_files=dict(sm.input_files), turns_file=sm.turns_file,
        params=redact_secrets(to_jsonable(params)), seed=sm.seed, started_at=iso(started),
        counts=RunCounts(invalid=len(invalid_lines(source.invalid))), source_run=params["source_run"], warnings=warnings,
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


#: A run folder's name (:func:`~axon_eval.runs.io.new_run_dir`): ``<date>T<time>Z_<name>[_<judge>][-<n>]``.
RUN_FOLDER_NAME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{6}Z_[^/\\\s\"']*")
#: ``study.json`` keys that say how a run was made rather than what it found (which source folder a
#: study evaluated for itself, how many views its cache served): a re-run may differ in them.
STUDY_PROVENANCE_KEYS = ("source_run", "cache_hits", "judged_now")


def _normalised(value: Any) -> Any:
    """``study.json`` content with every run folder name replaced by ``<run>`` (a re-run makes new ones)."""
    if isinstance(value, dict):
        return {k: _normalised(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_normalised(v) for v in value]
    if isinstance(value, str):
        return RUN_FOLDER_NAME.sub("<run>", value)
    return value


def study_differences(a: Any, b: Any, path: str = "") -> list[str]:
    """Where two ``study.json`` contents differ, as ``"key.sub: A -> B"`` lines (run folder names and
    :data:`STUDY_PROVENANCE_KEYS` at the top level ignored); empty when they agree exactly."""
    if not path:
        a = {k: v for k, v in _normalised(a).items() if k not in STUDY_PROVENANCE_KEYS}
        b = {k: v for k, v in _normalised(b).items() if k not in STUDY_PROVENANCE_KEYS}
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for key in sorted(set(a) | set(b), key=str):
            where = f"{path}.{key}" if path else str(key)
            if key not in a or key not in b:
                out.append(f"{where}: only in {'B' if key not in a else 'A'}")
            else:
                out.extend(study_differences(a[key], b[key], where))
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True)) for d in study_differences(x, y, f"{path}[{i}]")]
    return [] if a == b else [f"{path}: {_short(a)} -> {_short(b)}"]


def _short(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


@dataclass
class RerunComparison:
    """What :func:`rerun` found: the results compared segment by segment (``results``, a
    :class:`~axon_eval.runs.compare.RunComparison`, when both runs wrote results) and the
    ``study.json`` differences (``None`` when neither run wrote one)."""

    run_a: str
    run_b: str
    results: Any | None
    study: list[str] | None
    cache_hits: int | None = None
    cache_misses: int | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def identical(self) -> bool:
        """Every compared result is the same and nothing is missing on one side."""
        return ((self.results is None or self.results.identical) and not self.study
                and not any(n.startswith("only ") for n in self.notes))

    def format(self, top: int = 10) -> str:
        """A plain-text summary for the terminal."""
        lines = [f"A: {self.run_a}", f"B: {self.run_b} (re-run)"]
        if self.results is not None:
            lines.append("results:")
            lines.extend("  " + line for line in self.results.format(top=top).splitlines()[2:-1])
        if self.study is not None:
            if self.study:
                lines.append(f"study.json differs in {len(self.study)} figure(s):")
                lines.extend(f"  {d}" for d in self.study[:max(top, 1)])
                if len(self.study) > max(top, 1):
                    lines.append(f"  ... and {len(self.study) - max(top, 1)} more")
            else:
                lines.append("study.json: the same figures (run folder names and "
                             f"{', '.join(STUDY_PROVENANCE_KEYS)} are not compared)")
        if self.results is None and self.study is None:
            lines.append("nothing to compare: neither run wrote results or study.json")
        if self.cache_hits is not None:
            lines.append(f"verdict cache: {self.cache_hits} hit(s), {self.cache_misses or 0} judged again")
        lines.extend(f"note: {n}" for n in self.notes)
        lines.append("IDENTICAL" if self.identical else "NOT identical")
        return "\n".join(lines)


def compare_rerun(a: str | Path, b: str | Path, notes: list[str] | None = None) -> RerunComparison:
    """Compare run ``b`` (a re-run) with run ``a``: their results datasets (:func:`compare_runs`, same
    evidence required) and their ``study.json`` (:func:`study_differences`)."""
    from .compare import compare_runs

    a, b = Path(a), Path(b)
    notes = list(notes or [])
    results = None
    has = {"results": (has_results(a), has_results(b)),
           "study.json": ((a / "study.json").exists(), (b / "study.json").exists())}
    for name, (in_a, in_b) in has.items():
        if in_a != in_b:
            notes.append(f"only {'A' if in_a else 'B'} wrote {name}")
    if all(has["results"]):
        results = compare_runs(a, b, allow_different_evidence=False)
    study = None
    if all(has["study.json"]):
        study = study_differences(json.loads((a / "study.json").read_text(encoding="utf-8")),
                                  json.loads((b / "study.json").read_text(encoding="utf-8")))
    new = RunManifest.read(b)
    return RerunComparison(run_a=str(a), run_b=str(b), results=results, study=study, cache_hits=new.cache_hits,
                           cache_misses=new.cache_misses, notes=notes)


def check_recorded_inputs(run_folder: str | Path, manifest: RunManifest, *, skip: tuple[str, ...] = ()) -> None:
    """Every input file a run recorded (but ``skip`` and files inside run folders, which a study re-makes)
    must still exist with its SHA-256 (``InputChangedError`` naming the first that does not)."""
    root = repository_root()
    for recorded, expected in manifest.input_files.items():
        if recorded in skip or RUN_FOLDER_NAME.search(recorded):
            continue
        path = resolve_recorded(recorded, root=root, workdir=manifest.workdir)
        if not path.exists():
            raise InputChangedError(f"input {recorded!r} of run {run_folder} is gone (looked at {path})")
        if file_sha256(path) != expected:
            raise InputChangedError(f"input {path} changed since run {run_folder}: SHA-256 {file_sha256(path)} != "
                                    f"recorded {expected}")


@contextlib.contextmanager
def _verdict_cache(fresh: bool) -> Iterator[Path | None]:
    """With ``fresh``, an empty verdict cache in a temporary folder, named by ``$AXON_EVAL_CACHE`` for the
    duration (a notebook's kernel inherits it), so every verdict is made again and the shared cache is
    neither read nor written; else nothing changes (``None``)."""
    if not fresh:
        yield None
        return
    with tempfile.TemporaryDirectory(prefix="axon-rerun-cache-") as tmp:
        path = Path(tmp) / "verdicts.sqlite"
        before = os.environ.get(CACHE_ENV)
        os.environ[CACHE_ENV] = str(path)
        try:
            yield path
        finally:
            if before is None:
                os.environ.pop(CACHE_ENV, None)
            else:
                os.environ[CACHE_ENV] = before


def rerun(run_folder: str | Path, *, out_dir: str | Path | None = None, progress: bool = False,
          cache: bool = True, check_judge: JudgeCheck | None = None) -> tuple[Path, RerunComparison]:
    """Execute a run again from its own folder into a new one, and compare the two.

    A run made by the notebook runner (its manifest records the source notebook: the evaluation notebook,
    a study, reference grading) is re-executed with its ``params.json``, after checking that every input
    it recorded is unchanged (:func:`check_recorded_inputs`; a changed notebook is only noted). An
    ``evaluate``/``rejudge`` run re-evaluates its recorded evidence (hash-checked) with its judge, rubric
    and limit. ``cache=False`` judges every verdict again through an empty cache (:func:`_verdict_cache`).
    ``check_judge`` checks a notebook run's judge specs before it starts (:func:`.notebook.run_notebook`).
    Returns ``(new_run_dir, RerunComparison)`` (:func:`compare_rerun`).
    """
    folder = Path(run_folder)
    manifest = RunManifest.read(folder)
    out = Path(out_dir) if out_dir is not None else folder.parent
    notes: list[str] = []
    source = (manifest.notebook or {}).get("source")
    if source:
        from .notebook import run_notebook

        nb = resolve_recorded(source, root=repository_root(), workdir=manifest.workdir)
        if not nb.is_file():
            raise InputChangedError(f"notebook {source!r} of run {folder} is gone (looked at {nb})")
        if not (folder / "params.json").is_file():
            raise FileNotFoundError(f"run {folder} has no params.json to re-run with")
        check_recorded_inputs(folder, manifest, skip=(source,))
        if file_sha256(nb) != (manifest.notebook or {}).get("source_sha256"):
            notes.append(f"the notebook {source} changed since the original run")
        with _verdict_cache(fresh=not cache):
            result = run_notebook(nb, params_files=[folder / "params.json"], out_dir=out, name=manifest.name,
                                  progress=progress, check_judge=check_judge)
        new_dir = result.run_dir
    elif manifest.kind in ("evaluate", "rejudge"):
        if manifest.rubric is None or manifest.judge_spec is None:
            raise ValueError(f"run {folder} recorded no rubric or judge spec to re-run with")
        path = recorded_evidence(folder, manifest)
        with _verdict_cache(fresh=not cache) as fresh:
            run = evaluate(path, manifest.judge_spec, Rubric.model_validate(manifest.rubric), out_dir=out,
                           name=f"rerun-{manifest.name}", limit=manifest.params.get("limit"),
                           seed=manifest.seed or 0, progress=progress, source_run=str(folder),
                           cache=fresh if fresh is not None else None)
        new_dir = run.run_dir
    else:
        hint = ("run `python -m axon_eval grade-reference` again with its params.json: graded responses come "
                "from the cache" if manifest.kind == "reference" else "rescore its source instead")
        raise ValueError(f"run {folder} is a {manifest.kind!r} run made without the notebook runner; rerun "
                         f"handles notebook runs and evaluate and rejudge runs ({hint})")
    if not cache:
        notes.append("--no-cache: every verdict was judged again through an empty cache; the shared verdict "
                     "cache was neither read nor written")
    return new_dir, compare_rerun(folder, new_dir, notes)
