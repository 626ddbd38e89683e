"""Study run folders: what a study notebook writes besides its tables and figures.

A study is a pure module in :mod:`axon_eval.stats` plus a thin notebook. Executed by the runner, the
notebook gets ``run_dir`` (a fresh dated folder with a ``running`` manifest); opened by hand in
JupyterLab it gets ``None`` and :func:`study_folder` makes a fresh folder. Either way the study ends with
:func:`write_study`, which writes ``study.json`` -- the headline figures under the stable keys its issue
names, plus ``study``, ``simulated`` and ``source_run`` -- and records in the manifest that this run is
a study of that source (kind ``study``, ``source_run``, the SHA-256 of each part of the source's results
and ``manifest.json`` among the inputs, judge and rubric ids).

A study that read no earlier run (it judged its own evidence) passes ``source_run=None`` and its evidence
files as ``inputs``.

A study that needs a source run and was given none calls :func:`study_source`: it reuses the newest
complete evaluation of the same evidence, judge and rubric under the runs root
(:func:`axon_eval.runs.catalog.find_source_run`) and evaluates only when there is none, so the studies of
``make studies`` share one source run instead of making one each.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .io import default_runs_dir, file_sha256, iso, new_run_dir, results_files, to_jsonable, utc_now, write_json
from .manifest import RunManifest
from .provenance import package_versions, redact_secrets, relative_to_root, repository_root

STUDY_FILE = "study.json"


def study_folder(run_dir: str | Path | None, name: str, *, out_dir: str | Path | None = None) -> Path:
    """``run_dir`` when the runner gave one, else a fresh dated folder ``<runs>/<date>_<name>`` holding a
    ``running`` manifest of kind ``study`` (for a study notebook opened by hand)."""
    if run_dir is not None:
        folder = Path(run_dir)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "figures").mkdir(exist_ok=True)
        return folder
    started = utc_now()
    folder = new_run_dir(Path(out_dir) if out_dir is not None else default_runs_dir(repository_root()), name,
                         now=started)
    (folder / "figures").mkdir(exist_ok=True)
    RunManifest(run_id=folder.name, status="running", kind="study", name=name, packages=package_versions(),
                started_at=iso(started)).write(folder)
    return folder


@dataclass(frozen=True)
class StudySource:
    """The source run of a study: its folder, whether it was ``reused`` (an existing complete evaluation)
    or evaluated here (``evaluation`` is then the :func:`~axon_eval.runs.evaluate` result, whose figures
    the notebook draws), and :attr:`sentence` to show."""

    run_dir: Path
    reused: bool
    evaluation: Any = None

    @property
    def how(self) -> str:
        """``"reused: ..."`` or ``"evaluated here"``."""
        return ("reused: an existing complete evaluation of the same evidence, judge and rubric"
                if self.reused else "evaluated here: no complete evaluation of the same evidence, judge and rubric "
                "was found under the runs root")

    @property
    def sentence(self) -> str:
        return f"source run: {self.run_dir} ({self.how})"


def study_source(evidence: str | Path, judge: Any, rubric: Any, *, root: str | Path, name: str,
                 params: Mapping[str, Any] | None = None, seed: int | None = 0) -> StudySource:
    """The source run a study reads: the newest complete evaluation of ``evidence`` by ``judge`` (a spec or
    a judge) under ``rubric`` (a name, file or :class:`~axon_eval.rubric.Rubric`) directly under ``root``
    (:func:`~axon_eval.runs.catalog.find_source_run`: manifests only), else a new one evaluated into
    ``root`` named ``name`` with ``params`` and ``seed``. The judge id is the one the evaluation would
    record (the rubric pins a language-model judge's prompt)."""
    from ..rubric import Rubric
    from .catalog import find_source_run
    from .evaluate import evaluate
    from .judging import resolve_judge

    rubric_obj = Rubric.resolve(rubric)
    judge_obj = resolve_judge(judge, rubric_obj)
    found = find_source_run(evidence, judge_obj.judge_id, rubric_obj.id, root)
    if found is not None:
        return StudySource(found, True)
    made = evaluate(Path(evidence), judge_obj, rubric_obj, out_dir=root, name=name, params=dict(params or {}),
                    progress=False, seed=seed)
    return StudySource(made.run_dir, False, made)


def rubric_name_for(rubric_id: str | None, source_run: str | Path | None = None) -> str | None:
    """The name of the rubric with id ``rubric_id``: the source run's when it used that rubric, else the
    packaged rubric with that id (``axon_eval/rubrics/*.yaml``), else ``None``."""
    if rubric_id is None:
        return None
    if source_run is not None and (Path(source_run) / "manifest.json").is_file():
        with contextlib.suppress(Exception):  # unreadable: fall back to the packaged rubrics below
            source = RunManifest.read(source_run)
            if source.rubric_id == rubric_id and source.rubric_name:
                return source.rubric_name
    from importlib import resources

    from ..rubric import Rubric

    for ref in sorted((resources.files("axon_eval") / "rubrics").iterdir(), key=lambda r: r.name):
        if ref.name.endswith(".yaml"):
            rubric = Rubric.packaged(ref.name.removesuffix(".yaml"))
            if rubric.id == rubric_id:
                return rubric.name
    return None


def write_study(run_dir: str | Path, payload: Mapping[str, Any], *, study: str, simulated: bool,
                source_run: str | Path | None = None, inputs: Iterable[str | Path] = (),
                judge_id: str | None = None, rubric_id: str | None = None, rubric_name: str | None = None) -> Path:
    """Write ``study.json`` into ``run_dir`` and record the study's provenance in its manifest.

    ``payload`` holds the study's headline keys; ``study``, ``simulated`` and ``source_run`` are set here
    (a payload disagreeing with them is an error, so a label cannot contradict the record). The manifest
    records the rubric's id and name (``rubric_name``, else :func:`rubric_name_for` the id). Returns the
    path of ``study.json``.
    """
    folder = Path(run_dir)
    root = repository_root()
    source = relative_to_root(source_run, root) if source_run is not None else None
    record = dict(to_jsonable(dict(payload)))
    for key, value in (("study", study), ("simulated", bool(simulated)), ("source_run", source)):
        if key in record and record[key] != value:
            raise ValueError(f"study payload says {key}={record[key]!r} but the study is {key}={value!r}")
        record[key] = value
    ordered = {"study": record.pop("study"), "simulated": record.pop("simulated"),
               "source_run": record.pop("source_run"), **record}
    path = write_json(folder / STUDY_FILE, redact_secrets(ordered))

    manifest_path = folder / "manifest.json"
    if manifest_path.exists():
        m = RunManifest.read(folder)
    else:  # a folder made outside the runner and study_folder: give it a manifest
        m = RunManifest(run_id=folder.name, status="running", kind="study", name=study,
                        packages=package_versions(), started_at=iso(utc_now()))
    m.kind = "study"
    m.source_run = source
    files = [Path(p) for p in inputs]
    if source_run is not None:
        files += [*results_files(source_run), Path(source_run) / "manifest.json"]
    m.input_files = {**m.input_files, **{relative_to_root(f, root): file_sha256(f) for f in files if f.is_file()}}
    m.judge_id = judge_id or m.judge_id
    m.rubric_id = rubric_id or m.rubric_id
    m.rubric_name = rubric_name or (m.rubric_name if m.rubric_id == rubric_id or rubric_id is None else None) \
        or rubric_name_for(m.rubric_id, source_run)
    if simulated and not any("SIMULATED" in w for w in m.warnings):
        m.warnings.append("SIMULATED: this study's judge noise is simulated, not measured on a real judge")
    if m.status == "running" and manifest_path.exists() and m.kind == "study" and m.notebook is None:
        m.status, m.ended_at = "complete", iso(utc_now())  # a hand-run study has no runner to finish it
    m.write(folder)
    return path
