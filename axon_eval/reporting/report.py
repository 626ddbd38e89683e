"""The HTML audit report of a run (``python -m axon_eval report RUN`` -> ``<run>/report.html``).

One self-contained file (figures embedded as base64 PNG, styles and a few lines of sorting script
inline; no external file, no network) that can be mailed on its own and stays small for large runs.
This module assembles the page and writes it; each section lives in its own module:

* first, banners for anything that changes what the numbers mean (a judge run against a **local
  server**, a **simulated** judge, mixed judges or rubrics, a failed run, a dirty working tree;
  :mod:`.report_provenance`), then the **headline**: the mean score and the share in each band, each
  as ``estimate (lo to hi)`` with its 95% interval and n, ``SIMULATED`` before it for a simulated judge
  (:func:`.report_summary.headline_section`);
* whether **comparative claims** are allowed (:func:`.report_provenance.calibration_claim`: the
  calibration record of study 05 for this judge and rubric, its gate read on the band kappa's *lower
  bound*, or "calibration stale: <what differs>", or "no calibration record");
* the **cross-check**: how many judged segments the judge's verdict rates worse than their band, by
  kind, with the list of them (each with its band under each packaged candidate rubric) one click away
  (:func:`axon_eval.summaries.cross_check`);
* the run's provenance (judge id, model, prompt version, rubric id and its weights, caps and bands, git
  commit and dirty flag, endpoint, input file hashes, times, counts, cache, tokens, cost), and a note
  when the run's rubric record does not read (band edges then come from the default rubric);
* the summary, counting segments (a repeated run's segments by their mean score, with the spread); every
  headline figure (mean score, share in each band, share capped, each dimension's mean) with its 95%
  interval and its n (:func:`axon_eval.stats.intervals.headline_table`), the one sentence of what the
  intervals cover (:data:`~axon_eval.stats.intervals.INTERVAL_COVERS`) and the bootstrap's seed
  (:mod:`.report_summary`);
* the comparison with labels, when labels are given or the run recorded an unchanged labels file: the
  score band's Cohen's kappa first (the rubric's figure, the one published), the judge verdict's beside
  it, each with its interval and n (:mod:`.report_labels`);
* for an ensemble judge, how many segments its members disagree on and which, with each member's
  subscores (:mod:`.report_ensemble`);
* the figures; every unjudged segment and every invalid input line with its reason (never hidden, never
  a 0; beyond :data:`~.report_html.MAX_LISTED` the rest are counted by reason);
* the ``n_worst`` lowest-scoring segments **in full**: question, trajectory, SQL, the rows the judge saw,
  the answer, the judge's explanation and the whole scoring arithmetic of every sample; then every
  segment as one row of a sortable table (:mod:`.report_segments`).

Numbers read as people read them (:mod:`axon_eval.display`): shares as percentages, three significant
digits, an estimate as ``estimate (lo to hi)``, ``not reported`` / ``offline (no endpoint)`` instead of
``None``.

:func:`write_report` streams ``audit.jsonl`` (or ``audit.jsonl.gz``) line by line and keeps only the
entries of the ``n_worst`` segments (:mod:`.report_io`), so memory grows with ``n_worst`` and the
results table, not with the audit file.

Every piece of evidence text (questions, SQL, rows, answers, explanations, errors, ids) goes through
:func:`html.escape`; nothing from a capture is ever emitted as markup. Every name this module offered
before its sections moved out is still importable from it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ..rubric import Rubric
from ..runs import Run, atomic_write_text
from ..runs.load import audit_path
from ..stats.calibration_record import CalibrationRecord
from ..summaries import JUDGED, segment_table
from .report_ensemble import _disagreement_section, _flagged_keys, disagreement_rows, stream_ensemble_members
from .report_html import (  # _band, _kv, _table and _CSS: re-exported for axon_eval.reference.report
    _CSS,
    _SORT_JS,
    DIMENSION_HEADERS,
    MAX_LISTED,
    SHORT_ERROR_CHARS,
    TOOL_OUTPUT_CHARS,
    _band,
    _kv,
    _table,
    esc,
)
from .report_io import REPORT_COLUMNS, read_jsonl_records, read_report_results, stream_audit
from .report_labels import (
    BAND_COLUMN,
    BAND_KAPPA_NAME,
    LABELS_N_BOOT,
    LABELS_SEED,
    VERDICT_COLUMN,
    VERDICT_KAPPA_NAME,
    LabelsComparison,
    _labels_of,
    _labels_section,
    compare_with_labels,
    recorded_labels_file,
)
from .report_provenance import (
    API_JUDGE_PREFIXES,
    NOT_REPORTED,
    _calibration_of,
    _claims_paragraph,
    _provenance_section,
    _rubric_of,
    calibration_claim,
    calls_a_provider,
    cost_text,
    counts_text,
    is_local_url,
    judge_endpoint_text,
    local_judge_endpoint,
    manifest_fields,
    provenance_banners,
    rubric_of_manifest,
    strip_credentials,
    tokens_text,
)
from .report_segments import (
    _segment_section,
    render_arithmetic,
    render_steps,
    segments_table_html,
    worst_segment_ids,
)
from .report_summary import (
    _cross_check_section,
    _figures_section,
    _invalid_section,
    _summarise,
    _summary_section,
    _unjudged_section,
    headline_figures,
    headline_section,
)

__all__ = [
    "API_JUDGE_PREFIXES", "BAND_COLUMN", "BAND_KAPPA_NAME", "DEFAULT_N_WORST", "DIMENSION_HEADERS", "LABELS_N_BOOT",
    "LABELS_SEED", "MAX_LISTED", "NOT_REPORTED", "REPORT_COLUMNS", "SHORT_ERROR_CHARS", "TOOL_OUTPUT_CHARS",
    "VERDICT_COLUMN", "VERDICT_KAPPA_NAME", "LabelsComparison", "calibration_claim", "calls_a_provider",
    "compare_with_labels", "cost_text", "counts_text", "disagreement_rows", "esc", "headline_figures",
    "headline_section", "is_local_url", "judge_endpoint_text", "local_judge_endpoint", "manifest_fields",
    "provenance_banners", "read_jsonl_records", "read_report_results", "recorded_labels_file", "render_arithmetic",
    "render_report", "render_report_parts", "render_steps", "rubric_of_manifest", "segments_table_html",
    "stream_audit", "stream_ensemble_members", "strip_credentials", "tokens_text", "worst_segment_ids",
    "write_report",
]

#: Segments shown in full (trajectory, rows, answer, arithmetic) by default.
DEFAULT_N_WORST = 25
def render_report_parts(manifest: Any, results: pd.DataFrame, invalid: Sequence[Mapping[str, Any]],
                        audit: Iterable[Mapping[str, Any]], figures: Sequence[tuple[str, str]], *,
                        n_worst: int = DEFAULT_N_WORST, audit_problems: Sequence[str] = (),
                        labels: pd.DataFrame | None = None, labels_source: str | None = None,
                        labels_problem: str | None = None,
                        ensemble_members: Mapping[tuple[str, int], Mapping[str, Any]] | None = None,
                        calibration: CalibrationRecord | None = None, calibration_source: str | None = None,
                        calibration_problem: str | None = None, calibration_searched: str | None = None) -> str:
    """The report page from its parts (pure).

    ``manifest``: the run manifest (model or dict); ``results``: the results frame; ``invalid``: invalid
    line records; ``audit``: audit entries, consumed once as a stream (only the worst segments' entries
    are kept); ``figures``: ``(name, data URI)`` pairs; ``audit_problems``: sentences about audit lines
    that could not be read; ``labels``: labels to compare with (:func:`axon_eval.labels.load_labels`;
    ``labels_source`` names them, ``labels_problem`` says why recorded labels could not be used);
    ``ensemble_members``: ``(segment_id, sample_index) -> extra`` of the ensemble records flagged for
    disagreement (each member's subscores); ``calibration``: the study-05 record the first page's claim
    sentence reads (:func:`calibration_claim`; ``calibration_source`` names its file,
    ``calibration_problem`` says why a record could not be read, ``calibration_searched`` where none was
    found).
    """
    m = manifest_fields(manifest)
    rubric, rubric_problem = rubric_of_manifest(m)
    summary = _summarise(results, invalid, rubric)
    headlines, headline_problem = headline_figures(results, rubric)
    segments = segment_table(results, rubric)
    worst_ids = worst_segment_ids(segments, n_worst)
    anchors = {sid: f"w{k}" for k, sid in enumerate(worst_ids)}
    kept: dict[str, list[Mapping[str, Any]]] = {sid: [] for sid in worst_ids}
    for entry in audit:
        sid = entry.get("segment_id")
        if sid in kept:
            kept[sid].append(entry)
    by_id = segments.set_index(segments["segment_id"].astype(str))
    title = f"axon_eval audit report: {m.get('run_id')}"
    banners = provenance_banners(m, summary["judge_ids"])
    parts = [
        "<!DOCTYPE html>", "<html lang='en'><head><meta charset='utf-8'>",
        f"<title>{esc(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{esc(title)}</h1>",
        *(f'<p class="banner">{esc(b)}</p>' for b in banners),
    ]
    if summary["mixed"]:
        parts.append(f'<p class="banner">{esc(summary["mixed"])}</p>')
    parts += [
        headline_section(headlines, headline_problem, simulated=bool(summary.get("simulated"))),
        _claims_paragraph(*calibration_claim(m, calibration, calibration_source, problem=calibration_problem,
                                             searched=calibration_searched)),
        _cross_check_section(summary.get("cross_check")),
        "<p class='muted'>Scores measure whether each captured turn is internally consistent (question, SQL, "
        "rows, answer), as graded by the judge named below and turned into points by plain code. They are "
        "not fact-checked against the world.</p>",
        _provenance_section(m, banners),
    ]
    if rubric_problem is not None:
        parts.append(f'<p class="warn">{esc(rubric_problem)}</p>')
    parts += [
        _summary_section(summary, headlines, headline_problem), _labels_section(segments, labels, labels_source, labels_problem),
        _disagreement_section(results, ensemble_members or {}), _figures_section(figures),
        _unjudged_section(summary), _invalid_section(invalid),
    ]
    for problem in audit_problems:
        parts.append(f'<p class="warn">{esc(problem)}</p>')
    parts += [
        f"<h2>The {len(worst_ids)} lowest-scoring segments in full</h2>",
        "<p class='muted'>Each: the question, the scoring arithmetic of every sample (values, nominal and "
        "effective weights, contributions, raw score, caps, final score, band, notes), the judge's explanation, "
        "then the SQL and the rows the judge saw, and the answer.</p>",
    ]
    parts.extend(_segment_section(anchors[sid], by_id.loc[sid].to_dict(),
                                  sorted(kept[sid], key=lambda e: int(e.get("sample_index") or 0)))
                 for sid in worst_ids)
    parts += [
        f"<h2>All segments ({len(segments)})</h2>",
        "<p class='muted'>One row per segment; click a column header to sort (again to reverse; blanks stay "
        "last). Unjudged segments have no score (never a 0) and say why.</p>",
        segments_table_html(segments, anchors),
        f"<script id=\"sort-tables\">{_SORT_JS}</script>",
        "</body></html>",
    ]
    return "\n".join(parts)


def _figure_uris_from_folder(folder: Path) -> list[tuple[str, str]]:
    from .style import embed_png

    if not folder.is_dir():
        return []
    return [(p.name, embed_png(p)) for p in sorted(folder.glob("*.png"))]


def _figure_uris_from_results(results: pd.DataFrame, rubric: Rubric | None) -> list[tuple[str, str]]:
    from .evaluation import standard_figures
    from .style import embed_png

    if results.empty or not (results["status"] == JUDGED).any():
        return []
    return [(f"{stem}.png", embed_png(fig)) for stem, fig in standard_figures(results, rubric).items()]


def render_report(run: Run, *, n_worst: int = DEFAULT_N_WORST, labels: str | Path | pd.DataFrame | None = None,
                  calibration: str | Path | CalibrationRecord | None = None) -> str:
    """The report of a run already in memory (what :func:`axon_eval.runs.evaluate` returns): figures
    from its ``figures/`` folder, else drawn from its results; ``labels`` and ``calibration`` as
    :func:`write_report`."""
    m = manifest_fields(run.manifest)
    figures = _figure_uris_from_folder(Path(run.run_dir) / "figures") or \
        _figure_uris_from_results(run.results, _rubric_of(m))
    iter_audit = getattr(run, "iter_audit", None)
    audit = iter_audit() if callable(iter_audit) else run.audit
    problems: list[str] = []
    labels, source, labels_problem = _labels_of(m, labels)
    wanted = _flagged_keys(run.results)
    members = stream_ensemble_members(Path(run.run_dir) / "verdicts.jsonl", wanted, problems)
    record, record_source, record_problem, searched = _calibration_of(calibration, Path(run.run_dir).parent)
    return render_report_parts(m, run.results, list(run.invalid), audit, figures, n_worst=n_worst,
                               audit_problems=problems, labels=labels, labels_source=source,
                               labels_problem=labels_problem, ensemble_members=members, calibration=record,
                               calibration_source=record_source, calibration_problem=record_problem,
                               calibration_searched=searched)


def write_report(run_folder: str | Path, *, output: str | Path | None = None,
                 n_worst: int = DEFAULT_N_WORST, labels: str | Path | pd.DataFrame | None = None,
                 calibration: str | Path | CalibrationRecord | None = None) -> Path:
    """Render the report of ``run_folder`` and write it atomically (default ``<run>/report.html``).

    Reads ``manifest.json``, the report's columns of the results dataset and ``invalid.jsonl``, embeds
    the PNGs of ``figures/`` (or draws the standard figures when there are none), and streams
    ``audit.jsonl`` keeping only the ``n_worst`` lowest-scoring segments' entries. Raises
    ``FileNotFoundError`` naming a folder without ``manifest.json``. A gzip ``audit.jsonl.gz`` is read the
    same way. ``labels`` (a labels CSV or frame) adds the comparison with labels; without it the labels
    file the run recorded among its input files is used when it is unchanged (:func:`recorded_labels_file`).
    An ensemble's flagged segments get each member's subscores from ``verdicts.jsonl``. ``calibration``
    (a ``calibration.json``, a run folder holding one, or a record) is the study-05 record the first page's
    claim sentence reads; without it the newest record in a ``05-calibration`` run folder beside this run
    (under the same runs folder) is used, and without any the page says there is none (:func:`calibration_claim`).
    """
    folder = Path(run_folder)
    manifest_path = folder / "manifest.json"
    if not manifest_path.exists():
        raise FileNotFoundError(f"{folder} is not a run folder: no manifest.json")
    m = json.loads(manifest_path.read_text(encoding="utf-8"))
    results = read_report_results(folder)
    problems: list[str] = []
    invalid = read_jsonl_records(folder / "invalid.jsonl", problems)
    rubric = _rubric_of(m)
    wanted = set(worst_segment_ids(segment_table(results, rubric), n_worst))
    figures = _figure_uris_from_folder(folder / "figures") or _figure_uris_from_results(results, rubric)
    labels_df, source, labels_problem = _labels_of(m, labels)
    members = stream_ensemble_members(folder / "verdicts.jsonl", _flagged_keys(results), problems)
    record, record_source, record_problem, searched = _calibration_of(calibration, folder.resolve().parent)
    page = render_report_parts(m, results, invalid, stream_audit(audit_path(folder), wanted, problems),
                               figures, n_worst=n_worst, audit_problems=problems, labels=labels_df,
                               labels_source=source, labels_problem=labels_problem, ensemble_members=members,
                               calibration=record, calibration_source=record_source,
                               calibration_problem=record_problem, calibration_searched=searched)
    path = Path(output) if output is not None else folder / "report.html"
    atomic_write_text(path, page)
    return path
