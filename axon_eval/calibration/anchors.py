"""Anchor runs and judge change control: freeze a run as an anchor, re-judge it with a candidate judge,
and write the drift report as a dated run folder.

An *anchor* is a complete evaluation run whose evidence and verdicts are frozen: :func:`mark_anchor`
writes ``anchor.json`` into the run folder (once; it is never rewritten) holding the SHA-256 of the
evidence file, of ``verdicts.jsonl`` and of the results dataset, the judge and rubric ids, the UTC date
and a note saying why this run is the reference. Before a candidate judge is measured against it,
:func:`verify_anchor` checks every hash again (``AnchorChangedError`` when anything moved), and
:func:`rejudge_anchor` re-judges the anchor's evidence with the candidate through
:func:`~axon_eval.runs.derive.rejudge` (which checks the evidence hash once more), as a new ``rejudge`` run.

:func:`measure_drift` does the whole change-control step: verify, re-judge, :func:`compare_runs`
(matching, mean difference with bootstrap CI, Wilcoxon, band transitions), then
:func:`axon_eval.calibration.drift.judge_drift` (Bland-Altman, per-dimension drift, the adopt / hold decision
against a thresholds file). :func:`write_drift` writes a drift record into a folder (``drift.json``,
tables, figures, ``drift.html``); :func:`write_drift_run` makes that folder a fresh dated run folder of
its own (``<date>_drift_<candidate judge>``, manifest kind ``compare``, name ``drift``, ``source_run`` the
anchor).
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..runs.io import file_sha256, has_results, iso, new_run_dir, results_files, results_sha256, to_jsonable, utc_now, write_json
from ..runs.manifest import RunCounts, RunManifest

if TYPE_CHECKING:  # pragma: no cover
    from ..judges.base import Judge
    from ..runs.load import Run
    from ..stats.drift import DriftThresholds, JudgeDrift

ANCHOR_FILE = "anchor.json"
#: Run kinds whose folder holds judged evidence that can be re-judged.
ANCHOR_KINDS = ("evaluate", "rejudge", "notebook")


class AnchorError(ValueError):
    """The folder cannot be (or is not) an anchor: not complete, no hashed evidence, no verdicts, ..."""


class AnchorChangedError(RuntimeError):
    """A file an anchor froze no longer has its recorded SHA-256 (or is gone)."""


@dataclass(frozen=True)
class Anchor:
    """The content of ``anchor.json`` (plus the folder it was read from)."""

    run_dir: Path
    run_id: str
    note: str
    marked_at: str
    judge_id: str | None
    judge_spec: str | None
    rubric_id: str | None
    evidence_file: str
    evidence_sha256: str
    verdicts_sha256: str
    results_sha256: str
    n_segments: int

    def to_json(self) -> dict[str, Any]:
        return {"anchor_version": 1, "run_id": self.run_id, "note": self.note, "marked_at": self.marked_at,
                "judge_id": self.judge_id, "judge_spec": self.judge_spec, "rubric_id": self.rubric_id,
                "evidence_file": self.evidence_file, "evidence_sha256": self.evidence_sha256,
                "verdicts_sha256": self.verdicts_sha256, "results_sha256": self.results_sha256,
                "n_segments": self.n_segments}


def is_anchor(run_folder: str | Path) -> bool:
    """True when ``run_folder`` holds an ``anchor.json``."""
    return (Path(run_folder) / ANCHOR_FILE).is_file()


def read_anchor(run_folder: str | Path) -> Anchor:
    """Read ``anchor.json`` of ``run_folder`` (``AnchorError`` when the folder is not an anchor)."""
    folder = Path(run_folder)
    path = folder / ANCHOR_FILE
    if not path.is_file():
        raise AnchorError(f"{folder} is not an anchor (no {ANCHOR_FILE}); mark it with "
                          f"`python -m axon_eval anchor {folder} --note TEXT`")
    data = json.loads(path.read_text(encoding="utf-8"))
    data.pop("anchor_version", None)
    return Anchor(run_dir=folder, **data)


def mark_anchor(run_folder: str | Path, note: str) -> Anchor:
    """Freeze ``run_folder`` as an anchor: write ``anchor.json`` (module docstring) and return it.

    Refused (``AnchorError``) unless the run is ``complete`` (every segment judged), is an evaluation
    (``evaluate``, ``rejudge`` or a notebook run with results), recorded its evidence file with a hash that
    the file still has, and holds ``verdicts.jsonl`` and a results dataset; refused too when the folder
    is already an anchor (an anchor is never re-marked) or the note is empty.
    """
    from ..runs.derive import InputChangedError, recorded_evidence

    folder = Path(run_folder)
    if not note or not str(note).strip():
        raise AnchorError("an anchor needs a note saying why this run is the reference (--note TEXT)")
    if is_anchor(folder):
        a = read_anchor(folder)
        raise AnchorError(f"{folder} is already an anchor (marked {a.marked_at}: {a.note!r}); anchors are frozen")
    m = RunManifest.read(folder)
    if m.status != "complete":
        raise AnchorError(f"run {folder} has status {m.status!r}; only a complete run (every segment judged) "
                          "can be an anchor")
    if m.kind not in ANCHOR_KINDS:
        raise AnchorError(f"run {folder} is a {m.kind!r} run; an anchor is an evaluation "
                          f"({', '.join(ANCHOR_KINDS)}) with its own verdicts")
    if not (folder / "verdicts.jsonl").is_file():
        raise AnchorError(f"run {folder} has no verdicts.jsonl; it cannot be an anchor")
    if not has_results(folder):
        raise AnchorError(f"run {folder} has no results dataset; it cannot be an anchor")
    try:
        evidence = recorded_evidence(folder, m)
    except InputChangedError as exc:
        raise AnchorError(f"run {folder} cannot be an anchor: {exc}") from None
    anchor = Anchor(run_dir=folder, run_id=folder.name, note=str(note).strip(), marked_at=iso(utc_now()),
                    judge_id=m.judge_id, judge_spec=m.judge_spec, rubric_id=m.rubric_id,
                    evidence_file=str(m.turns_file), evidence_sha256=file_sha256(evidence),
                    verdicts_sha256=file_sha256(folder / "verdicts.jsonl"),
                    results_sha256=results_sha256(folder), n_segments=m.counts.segments)
    text = json.dumps(anchor.to_json(), indent=2, ensure_ascii=False) + "\n"
    try:
        with (folder / ANCHOR_FILE).open("x", encoding="utf-8") as fh:  # exclusive: never overwrite
            fh.write(text)
    except FileExistsError:
        raise AnchorError(f"{folder} became an anchor meanwhile; anchors are frozen") from None
    return anchor


def verify_anchor(run_folder: str | Path) -> Anchor:
    """Read the anchor and check that its evidence file, ``verdicts.jsonl`` and its results dataset still
    have the SHA-256 it froze (``AnchorChangedError`` naming the file otherwise)."""
    from ..runs.derive import InputChangedError, recorded_evidence

    anchor = read_anchor(run_folder)
    folder = Path(run_folder)
    try:
        evidence = recorded_evidence(folder)
    except InputChangedError as exc:
        raise AnchorChangedError(f"anchor {folder}: {exc}") from None
    checks = [(evidence, anchor.evidence_sha256), (folder / "verdicts.jsonl", anchor.verdicts_sha256),
              (folder / "results", anchor.results_sha256)]
    for path, expected in checks:
        is_results = path.name == "results"
        if not (has_results(folder) if is_results else path.is_file()):
            raise AnchorChangedError(f"anchor {folder}: {path} is gone")
        actual = results_sha256(folder) if is_results else file_sha256(path)
        if actual != expected:
            raise AnchorChangedError(f"anchor {folder}: {path} changed since the anchor was marked "
                                     f"(SHA-256 {actual[:12]} != frozen {expected[:12]})")
    return anchor


def rejudge_anchor(anchor_run: str | Path, judge: Judge | str, *, out_dir: str | Path | None = None,
                   name: str | None = None, progress: bool = False, figures: bool = True, **options: Any) -> Run:
    """Verify the anchor, then re-judge its evidence with ``judge`` as a new ``rejudge`` run (under the
    anchor's rubric; ``options`` go to :func:`~axon_eval.runs.derive.rejudge`); ``figures`` draws the new run's
    standard figures (``axon_eval.reporting.save_run_figures``)."""
    from ..reporting import save_run_figures
    from ..runs import rejudge

    anchor = verify_anchor(anchor_run)
    run = rejudge(anchor_run, judge, out_dir=out_dir, name=name or f"drift-candidate-{anchor.run_id[:32]}",
                  progress=progress, **options)
    if figures:
        save_run_figures(run)
    return run


def measure_drift(anchor_run: str | Path, judge: Judge | str, thresholds: str | Path | DriftThresholds, *,
                  out_dir: str | Path | None = None, seed: int = 0, n_boot: int = 2000, progress: bool = False,
                  **options: Any) -> JudgeDrift:
    """Verify the anchor, re-judge it with ``judge``, compare and decide (module docstring). The
    candidate run lands in ``out_dir`` (default: the anchor's parent). ``thresholds`` is required: a
    file path or a loaded :class:`~axon_eval.stats.drift.DriftThresholds`."""
    from ..stats.drift import DriftThresholds, load_thresholds

    limits = thresholds if isinstance(thresholds, DriftThresholds) else load_thresholds(thresholds)
    candidate = rejudge_anchor(anchor_run, judge, out_dir=out_dir, progress=progress, **options)
    return drift_between(anchor_run, candidate, limits, seed=seed, n_boot=n_boot)


def drift_between(anchor_run: str | Path, candidate: str | Path | Run, thresholds: str | Path | DriftThresholds,
                  *, seed: int = 0, n_boot: int = 2000) -> JudgeDrift:
    """The drift record of an existing candidate run against an anchor (no judging): ``compare_runs`` at
    the thresholds' confidence level, then :func:`~.drift.judge_drift`. The candidate
    must have judged the anchor's evidence (same SHA-256)."""
    from ..runs import load_run
    from ..runs.compare import compare_runs
    from ..stats.drift import DriftThresholds, load_thresholds
    from .drift import judge_drift
    from ..summaries import is_simulated_judge

    limits = thresholds if isinstance(thresholds, DriftThresholds) else load_thresholds(thresholds)
    verify_anchor(anchor_run)
    cand = candidate if not isinstance(candidate, str | Path) else load_run(candidate)
    comparison = compare_runs(anchor_run, cand, n_boot=n_boot, seed=seed, confidence=limits.confidence)
    ids = [cand.manifest.judge_id or "", *cand.results.get("judge_id", []).dropna().astype(str).unique()]
    return judge_drift(comparison, limits, simulated=is_simulated_judge(ids), n_boot=n_boot, seed=seed)


# -- writing the report ----------------------------------------------------------------------------------
DRIFT_FILE = "drift.json"
DRIFT_FIGURES = ("bland_altman.png", "delta_histogram.png", "dimension_drift.png", "band_transitions.png")


def drift_figures(drift: JudgeDrift, folder: str | Path) -> list[Path]:
    """Save the four drift figures (:data:`DRIFT_FIGURES`) into ``folder``; returns their paths."""
    from .. import reporting

    folder = Path(folder)
    subtitle = drift_subtitle(drift)
    figures = (
        reporting.drift_bland_altman(drift.bland_altman, subtitle=subtitle, simulated=drift.simulated),
        reporting.drift_delta_histogram(drift.deltas, subtitle=subtitle, simulated=drift.simulated),
        reporting.drift_dimensions(drift.dimensions, confidence=drift.confidence,
                                   limit=drift.decision.thresholds.limits["max_abs_dimension_delta"],
                                   subtitle=subtitle, simulated=drift.simulated),
        reporting.band_transition_heatmap(drift.transitions, label_a="anchor judge", label_b="candidate judge",
                                          subtitle=subtitle, simulated=drift.simulated),
    )
    return [reporting.save_titled_figure(fig, folder / name) for fig, name in zip(figures, DRIFT_FIGURES, strict=True)]


def drift_subtitle(drift: JudgeDrift) -> str:
    """Second title line of every drift figure: the candidate, the anchor and n."""
    return (f"candidate {drift.candidate_judge_id} vs anchor {Path(drift.anchor_run).name} "
            f"[{drift.anchor_judge_id}], {drift.n_compared} segments")


def write_drift(drift: JudgeDrift, folder: str | Path, *, figures: bool = True) -> Path:
    """Write a drift record into ``folder``: ``drift.json`` (everything but per-segment rows),
    ``deltas.parquet``, ``transitions.csv``, ``dimensions.csv``, ``decision.csv``, ``figures/`` and
    ``drift.html``. Returns the path of ``drift.json``."""
    from ..runs.io import atomic_write_text, write_parquet
    from ..runs.provenance import relative_to_root, repository_root
    from .drift import drift_json

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    record = drift_json(drift)
    root = repository_root()
    for key in ("anchor_run", "candidate_run"):
        record[key] = relative_to_root(record[key], root)
    record["decision_detail"]["thresholds"]["path"] = relative_to_root(drift.decision.thresholds.path, root)
    path = write_json(folder / DRIFT_FILE, record)
    write_parquet(folder / "deltas.parquet", drift.deltas)
    atomic_write_text(folder / "transitions.csv", drift.transitions.to_csv())
    atomic_write_text(folder / "dimensions.csv", drift.dimensions.to_csv(index=False))
    atomic_write_text(folder / "decision.csv", drift.decision.checks.to_csv(index=False))
    saved = drift_figures(drift, folder / "figures") if figures else []
    atomic_write_text(folder / "drift.html", drift_html(drift, saved))
    return path


def drift_html(drift: JudgeDrift, figures: list[Path]) -> str:
    """A small self-contained HTML page: the decision table first, then the summary and the figures."""
    from ..reporting.style import embed_png

    esc = html.escape
    sim = ("<p class='sim'><b>SIMULATED candidate judge.</b> The candidate's verdicts are generated noise "
           "around another judge's, not a model's grading: this page rehearses the procedure, it measures no "
           "real judge.</p>") if drift.simulated else ""
    rows = "".join(
        f"<tr class='{'off' if r.passed is None else ('ok' if r.passed else 'fail')}'><td>{esc(r.threshold)}</td>"
        f"<td>{esc(r.rule)}</td><td>{'-' if r.limit is None else f'{r.limit:g}'}</td>"
        f"<td>{'n/a' if r.measured is None else f'{r.measured:.4g}'}</td>"
        f"<td>{'off' if r.passed is None else ('holds' if r.passed else 'FAILS')}</td><td>{esc(r.note)}</td></tr>"
        for r in drift.decision.checks.itertuples())
    imgs = "".join(f'<img alt="{esc(p.stem)}" src="{embed_png(p)}">' for p in figures)
    t = drift.decision.thresholds
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>judge drift</title><style>"
        "body{font-family:sans-serif;max-width:1100px;margin:2em auto}td,th{border:1px solid #ccc;padding:2px 6px;"
        "font-size:13px}table{border-collapse:collapse}img{max-width:49%}.fail{background:#ffebee}"
        ".ok{background:#e8f5e9}.off{color:#777}.sim{background:#fff3e0;padding:.5em}</style></head><body>"
        f"<h1>{'SIMULATED ' if drift.simulated else ''}Judge drift: {esc(drift.decision.decision.upper())}</h1>{sim}"
        f"<p>Candidate <code>{esc(str(drift.candidate_judge_id))}</code> against the anchor "
        f"<code>{esc(Path(drift.anchor_run).name)}</code> (judge <code>{esc(str(drift.anchor_judge_id))}</code>, "
        f"rubric {esc(str(drift.rubric_id))}). Thresholds <code>{esc(t.name)}</code> from <code>{esc(t.path)}</code> "
        f"(SHA-256 {esc(t.sha256[:12])}).</p><table><tr><th>threshold</th><th>rule</th><th>limit</th>"
        f"<th>measured</th><th>result</th><th>note</th></tr>{rows}</table>"
        f"<pre>{esc(drift.format())}</pre>{imgs}<p><small>Bland-Altman: {esc(drift.bland_altman.reference)}"
        "</small></p></body></html>")


def write_drift_run(drift: JudgeDrift, out_dir: str | Path, *, name: str = "drift",
                    params: dict[str, Any] | None = None) -> Path:
    """Write ``drift`` into a fresh dated run folder ``<out_dir>/<date>_<name>_<candidate judge>`` with a
    manifest (kind ``compare``, ``source_run`` the anchor, the candidate's judge id, the thresholds file
    among the inputs); returns the folder."""
    from ..runs.provenance import package_versions, relative_to_root, repository_root

    started = utc_now()
    folder = new_run_dir(Path(out_dir), name, drift.candidate_judge_id, now=started)
    write_drift(drift, folder)
    root = repository_root()
    t = drift.decision.thresholds
    inputs = {relative_to_root(t.path, root): t.sha256}
    for run in (drift.anchor_run, drift.candidate_run):
        if (Path(run) / "anchor.json").is_file():
            inputs[relative_to_root(Path(run) / "anchor.json", root)] = file_sha256(Path(run) / "anchor.json")
        for p in results_files(run):
            inputs[relative_to_root(p, root)] = file_sha256(p)
    warnings = (["SIMULATED: the candidate judge is simulated; this drift report rehearses the procedure"]
                if drift.simulated else [])
    manifest = RunManifest(
        run_id=folder.name, status="complete", kind="drift", name=name, judge_id=drift.candidate_judge_id,
        rubric_id=drift.rubric_id, packages=package_versions(), input_files=inputs,
        params=to_jsonable({"anchor_run": relative_to_root(drift.anchor_run, root),
                            "candidate_run": relative_to_root(drift.candidate_run, root),
                            "thresholds": relative_to_root(t.path, root), "seed": drift.seed,
                            "n_boot": drift.n_boot, **(params or {})}),
        seed=drift.seed, started_at=iso(started), ended_at=iso(utc_now()),
        source_run=relative_to_root(drift.anchor_run, root), warnings=warnings,
        counts=RunCounts(segments=drift.n_anchor, judged=drift.n_compared,
                         unjudged=drift.n_anchor - drift.n_compared, samples=drift.n_anchor))
    manifest.write(folder)
    return folder
