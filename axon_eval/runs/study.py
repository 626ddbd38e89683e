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


# -- each study's headline: the one or two study.json figures a person reads first -----------------------
@dataclass(frozen=True)
class Headline:
    """One headline figure of a ``study.json``: a ``label`` and the key path of its ``value`` (a tuple of
    keys; ``LAST`` takes the last key of a mapping, e.g. the largest perturbation size), with the key
    paths of its ``interval`` (``[lo, hi]``, or two paths) and of its ``n`` (a number, or a list counted)
    and ``unit`` (what n counts), when the study records them. ``share``: a proportion (read as a
    percentage); ``count``: ``value`` is a count of the ``n`` (``"0 of 8 responses"``); ``spread``: the
    key path of a standard deviation shown beside a value without an interval; ``note``: what the figure
    is when it has no interval (``"exact"``)."""

    label: str
    value: tuple[Any, ...]
    interval: tuple[Any, ...] | tuple[tuple[Any, ...], tuple[Any, ...]] | None = None
    n: tuple[Any, ...] | None = None
    unit: str = "segments"
    share: bool = False
    count: bool = False
    spread: tuple[Any, ...] | None = None
    note: str = ""
    name: tuple[Any, ...] | None = None
    unnamed: str = ""


#: In a :class:`Headline` key path: the last key of a mapping (the largest d of study 02).
LAST = "<last>"

#: Each study's headline figures (the ``study`` value of its ``study.json`` -> its one or two headlines),
#: the one place that says which figures ``python -m axon_eval run`` prints after a study's run folder.
STUDY_HEADLINES: dict[str, tuple[Headline, ...]] = {
    "02_weight_sensitivity": (
        Headline("largest |score change| within d = {key} of the nominal weights, points", ("worst_case_abs_delta", LAST),
                 n=("n_segments",), note="exact, in-sample"),
        Headline("mean score change under {name}, points", ("candidate", "mean_delta"),
                 interval=("candidate", "mean_delta_ci95"), n=("candidate", "n_compared"),
                 name=("candidate", "rubric_name"), unnamed="the candidate rubric")),
    "03_judge_noise": (
        Headline("within-segment SD of the score, points", ("sd", "score"), n=("n_segments",), note="pooled"),
        Headline("ICC(1,1) of the score", ("icc1", "score", "value"),
                 interval=(("icc1", "score", "ci_low"), ("icc1", "score", "ci_high")), n=("n_segments",))),
    "04_row_horizon": (
        Headline("defects head misses at the row budget that evidence flags", ("goal", "catch_share"),
                 n=("goal", "baseline_missed"), unit="defects missed by head", share=True),
        Headline("goal met", ("goal_met",), n=("n_segments",))),
    "05_calibration": (
        Headline("Cohen's kappa, band vs labels", ("kappa",), interval=("kappa_ci",), n=("n",)),
        Headline("gate passed (kappa's lower bound >= 0.7)", ("gate_passed",), n=("n",))),
    "06_judge_drift": (
        Headline("mean score difference, candidate - anchor, points", ("mean_delta",), interval=("mean_delta_ci",),
                 n=("n",)),
        Headline("decision", ("decision",), n=("n",))),
    "07_weight_recalibration": (
        Headline("held-out kappa, nominal weights", ("cv_kappa", "nominal", "mean"), n=("n",),
                 spread=("cv_kappa", "nominal", "sd"), note="mean over the folds"),
        Headline("held-out kappa, least-squares refit", ("cv_kappa", "least_squares", "mean"), n=("n",),
                 spread=("cv_kappa", "least_squares", "sd"), note="mean over the folds")),
    "08_reference_grading": (
        Headline("false passes, held-out split", ("false_pass", "heldout"), n=("n_responses", "heldout"),
                 unit="responses", count=True),
        Headline("false passes, all responses", ("false_pass", "overall"), n=("n_responses", "overall"),
                 unit="responses", count=True)),
    "09_corrected_estimates": (
        Headline("mean score, judge (naive)", ("naive", "mean score", "estimate"),
                 interval=("naive", "mean score", "interval"), n=("naive", "mean score", "n")),
        Headline("mean score, PPI++ corrected", ("ppi", "mean score", "estimate"),
                 interval=("ppi", "mean score", "interval"), n=("n_labelled",), unit="labelled segments")),
    "10_panel_design": (
        Headline("recommended panel", ("recommended", "panel_id")),
        Headline("its band kappa", ("recommended", "band_kappa"), interval=("recommended", "band_kappa_ci"),
                 n=("recommended", "n"))),
    "11_label_budget": (
        Headline("labels the active design saves at the target half-width, signal correlation {key}",
                 ("labels_saved", LAST, "share_saved"), n=("n_replications",), unit="replications of each draw",
                 share=True),
        Headline("goal met: active saves the goal's share of labels", ("goals", "active_saves_labels", "met"))),
}


def _at(record: Any, path: tuple[Any, ...]) -> tuple[Any, str | None]:
    """The value at ``path`` in ``record`` and the key :data:`LAST` stood for (``None`` when missing)."""
    value, key = record, None
    for step in path:
        if not isinstance(value, Mapping) or not value:
            return None, key
        if step == LAST:
            key = list(value)[-1]
            step = key
        value = value.get(step)
    return value, key


def headline_text(record: Mapping[str, Any], h: Headline) -> str:
    """One headline of ``record`` as people read it (:mod:`axon_eval.display`): ``"label: 0.616 (0.486 to
    0.739), n = 97 segments"``; ``"not recorded"`` for a missing value."""
    from ..display import fmt_estimate, fmt_number, fmt_share, is_missing

    value, key = _at(record, h.value)
    named = _at(record, h.name)[0] if h.name else None
    label = h.label.replace("{key}", str(key)).replace("{name}", h.unnamed if named is None else str(named))
    if value is None:
        return f"{label}: not recorded"
    n_value = _at(record, h.n)[0] if h.n else None
    n = len(n_value) if isinstance(n_value, list | tuple) else n_value
    if isinstance(value, str) or isinstance(value, bool):
        text = value if isinstance(value, str) else ("yes" if value else "no")
    elif h.count and n is not None:
        return f"{label}: {fmt_number(value)} of {fmt_number(n)} {h.unit}"
    else:
        lo = hi = None
        if h.interval is not None:
            if isinstance(h.interval[0], tuple):
                lo, hi = (_at(record, h.interval[0])[0], _at(record, h.interval[1])[0])
            else:
                bounds = _at(record, h.interval)[0]
                lo, hi = (bounds[0], bounds[1]) if isinstance(bounds, list | tuple) and len(bounds) == 2 else (None, None)
        text = (fmt_estimate(value, lo, hi, share=h.share) if not (is_missing(lo) or is_missing(hi))
                else fmt_share(value) if h.share else fmt_number(value))
        if h.interval is not None and (is_missing(lo) or is_missing(hi)):
            text += " (no interval)"
        spread = _at(record, h.spread)[0] if h.spread else None
        extra = [h.note] if h.note else []
        if spread is not None:
            extra.append(f"SD {fmt_number(spread)}")
        text += f" ({', '.join(extra)})" if extra else ""
    return f"{label}: {text}" + (f", n = {fmt_number(n)} {h.unit}" if n is not None else "")


def disclosure_markers(record: Mapping[str, Any]) -> list[str]:
    """What a study's headline says before its figures: ``SIMULATED`` when its judge was simulated
    (``"simulated": true``), ``CONSTRUCTED`` when its labels are constructed from seeded defects, not
    people's (``"constructed": true``, or the older ``"labels_constructed": true``)."""
    markers = ["SIMULATED"] if record.get("simulated") else []
    if record.get("constructed") or record.get("labels_constructed"):
        markers.append("CONSTRUCTED")
    return markers


def study_headlines(record: Mapping[str, Any]) -> list[str]:
    """The headline lines of a ``study.json`` (:data:`STUDY_HEADLINES` of its ``study``), prefixed
    ``SIMULATED`` when the study says its judge was simulated and ``CONSTRUCTED`` when it says its labels
    are constructed, not human (:func:`disclosure_markers`); for a study without an entry, its first two
    numbers."""
    heads = STUDY_HEADLINES.get(str(record.get("study")))
    prefix = "".join(f"{m} " for m in disclosure_markers(record))
    if heads is None:
        from ..display import fmt_number

        skip = {"study", "simulated", "constructed", "source_run"}
        return [f"{prefix}{k}: {fmt_number(v)}" for k, v in record.items()
                if k not in skip and isinstance(v, int | float | bool)][:2]
    return [prefix + headline_text(record, h) for h in heads]


def format_study(study: str | Path | Mapping[str, Any]) -> list[str]:
    """A short summary of a ``study.json`` (a path, or the record) for a notebook to print instead of the
    raw record: its headline lines (:func:`study_headlines`, formatted by :mod:`axon_eval.display`), the
    source run, and the keys the file holds (the full record stays in the file)."""
    import json

    record = study if isinstance(study, Mapping) else json.loads(Path(study).read_text(encoding="utf-8"))
    markers = disclosure_markers(record)
    lines = [f"study {record.get('study')}" + (f" ({', '.join(markers)})" if markers else ""),
             *(f"  {line}" for line in study_headlines(record))]
    if record.get("source_run"):
        lines.append(f"  source run: {record['source_run']}")
    lines.append("  keys: " + ", ".join(str(k) for k in record))
    return lines


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
                judge_id: str | None = None, rubric_id: str | None = None, rubric_name: str | None = None,
                constructed: bool | None = None) -> Path:
    """Write ``study.json`` into ``run_dir`` and record the study's provenance in its manifest.

    ``payload`` holds the study's headline keys; ``study``, ``simulated`` and ``source_run`` are set here
    (a payload disagreeing with them is an error, so a label cannot contradict the record), and so is
    ``constructed`` when given: the study's labels are constructed from seeded defects, not human, and
    its headline says CONSTRUCTED as a simulated study's says SIMULATED (:func:`study_headlines`; the
    manifest gets the warning too). The manifest records the rubric's id and name (``rubric_name``, else
    :func:`rubric_name_for` the id). Returns the path of ``study.json``.
    """
    folder = Path(run_dir)
    root = repository_root()
    source = relative_to_root(source_run, root) if source_run is not None else None
    record = dict(to_jsonable(dict(payload)))
    fixed = [("study", study), ("simulated", bool(simulated)), ("source_run", source)]
    if constructed is not None:
        fixed.append(("constructed", bool(constructed)))
    for key, value in fixed:
        if key in record and record[key] != value:
            raise ValueError(f"study payload says {key}={record[key]!r} but the study is {key}={value!r}")
        record[key] = value
    ordered = {"study": record.pop("study"), "simulated": record.pop("simulated"),
               **({"constructed": record.pop("constructed")} if "constructed" in record else {}),
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
    if constructed and not any(w.startswith("CONSTRUCTED") for w in m.warnings):
        m.warnings.append("CONSTRUCTED: this study's labels are constructed from seeded defects, not human "
                          "judgements; its figures test the machinery, not the judge against people")
    if m.status == "running" and manifest_path.exists() and m.kind == "study" and m.notebook is None:
        m.status, m.ended_at = "complete", iso(utc_now())  # a hand-run study has no runner to finish it
    m.write(folder)
    return path
