"""The HTML audit report of a run (``python -m axon_eval report RUN`` -> ``<run>/report.html``).

One self-contained file (figures embedded as base64 PNG, styles and a few lines of sorting script
inline; no external file, no network) that can be mailed on its own and stays small for large runs:

* first page: banners for anything that changes what the numbers mean (a judge run against a **local
  server**, a **simulated** judge, mixed judges or rubrics, a failed run, a dirty working tree), then
  whether **comparative claims** are allowed (:func:`calibration_claim`: the calibration record of study
  05 for this judge and rubric, its gate read on the band kappa's *lower bound*, or "calibration stale:
  <what differs>", or "no calibration record"), then the **cross-check**: every judged segment whose judge
  verdict is worse than its band, counted by kind and listed with its band under each packaged candidate
  rubric (:func:`axon_eval.summaries.cross_check`), then the run's provenance (judge id, model, prompt version, rubric id and its weights, caps and bands, git
  commit and dirty flag, endpoint, input file hashes, times, counts, cache, tokens, cost);
* a note when the run's rubric record does not read (band edges then come from the default rubric);
* the summary, counting segments (a repeated run's segments by their mean score, with the spread); every
  headline figure (mean score, share in each band, share capped, each dimension's mean) with its 95%
  interval ``lo–hi`` and its n (:func:`axon_eval.stats.intervals.headline_table`), the one sentence of
  what the intervals cover (:data:`~axon_eval.stats.intervals.INTERVAL_COVERS`) and the bootstrap's seed;
* the comparison with labels, when labels are given or the run recorded an unchanged labels file: the
  score band's Cohen's kappa first (the rubric's figure, the one published), the judge verdict's beside
  it, each named and with its interval and n (:func:`compare_with_labels`);
* for an ensemble judge, how many segments its members disagree on and which, with each member's
  subscores (from ``verdicts.jsonl``);
* the figures;
* every unjudged segment and every invalid input line with its reason (never hidden, never a 0; beyond
  :data:`MAX_LISTED` the rest are counted by reason, and every unjudged segment is also a row of the
  table of all segments with its status and reason);
* the ``n_worst`` lowest-scoring segments **in full**: question, trajectory, SQL, the rows the judge saw,
  the answer, the judge's explanation and the whole scoring arithmetic of every sample;
* every segment as one row of a sortable table (segment id, score, band, the four subscores, caps,
  judge verdict, status, short error).

Numbers read as people read them (:mod:`axon_eval.display`): shares as percentages, three significant
digits, ``not reported`` / ``offline (no endpoint)`` instead of ``None``.

:func:`write_report` streams ``audit.jsonl`` (or ``audit.jsonl.gz``) line by line and keeps only the
entries of the ``n_worst`` segments, so memory grows with ``n_worst`` and the results table, not with the
audit file.

Every piece of evidence text (questions, SQL, rows, answers, explanations, errors, ids) goes through
:func:`html.escape`; nothing from a capture is ever emitted as markup.
"""

from __future__ import annotations

import gzip
import html
import json
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..display import fmt_interval, fmt_number, fmt_share, is_missing, people_table
from ..rubric import BANDS, CAP_FACTS, DIMENSIONS, Rubric
from ..runs import Run, atomic_write_text
from ..runs.calibration import CALIBRATION_STUDY, latest_calibration, read_calibration
from ..stats.agreement import GATE_THRESHOLD
from ..stats.calibration_record import CalibrationRecord, claims_verdict, staleness
from ..stats.intervals import format_headline_table, headline_table
from ..runs.io import read_results, results_files
from ..runs.load import audit_path
from ..urls import InvalidEndpoint, is_loopback_url, mask_url, sanitize_url
from ..summaries import (
    JUDGED,
    MixedResultsError,
    is_simulated_judge,
    judged,
    segment_table,
    summarise,
)

#: Segments shown in full (trajectory, rows, answer, arithmetic) by default.
DEFAULT_N_WORST = 25
#: Characters of a tool output shown in the report before it is cut.
TOOL_OUTPUT_CHARS = 2000
#: Characters of an error shown in the table of all segments before it is cut.
SHORT_ERROR_CHARS = 120
#: Unjudged segments, failed samples and invalid lines listed one by one; the rest are counted by reason.
MAX_LISTED = 1000
#: Results columns the report reads (the long ``explanation`` text is read from the audit instead).
REPORT_COLUMNS: tuple[str, ...] = (
    "segment_id", "turn_id", "segment_index", "n_segments", "sample_index", "region", "surface", "client",
    "question", *DIMENSIONS, "raw_score", "score", "band", "judge_verdict", "verdict_matches_band",
    "caps_applied", "notes", *CAP_FACTS, "recovered_errors", "n_steps", "n_sql_executed", "judge_id",
    "model", "prompt_version", "rubric_id", "status", "error", "disagreement", *(f"range_{d}" for d in DIMENSIONS),
)
#: Short headers of the four dimensions in the table of all segments.
DIMENSION_HEADERS = {"intent_understood": "intent", "sql_quality": "SQL", "result_relevance": "rows",
                     "answer_faithfulness": "faithful"}

#: A URL inside a judge id or spec: ends at a separator of the id (``,`` ``;`` ``]`` ``)``), an IPv6
#: host in brackets included.
_URL = re.compile(r"https?://(?:\[[0-9A-Fa-f:.]+\])?[^\s,;\[\]()\"'<>]*")
_AUDIT_SEGMENT_ID = re.compile(r'^\s*\{\s*"segment_id"\s*:\s*("(?:[^"\\]|\\.)*")')

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em auto;max-width:1200px;
color:#1b1b1b;line-height:1.4;padding:0 1em}
h1{font-size:1.6em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:1.6em}
table{border-collapse:collapse;margin:.5em 0;font-size:.92em}
th,td{border:1px solid #d0d0d0;padding:.2em .5em;text-align:left;vertical-align:top}
th{background:#f3f3f3}
td.num{text-align:right;font-variant-numeric:tabular-nums}
pre{background:#f7f7f7;border:1px solid #e0e0e0;padding:.5em;overflow-x:auto;white-space:pre-wrap}
details{border:1px solid #ddd;border-radius:4px;margin:.4em 0;padding:.3em .6em}
summary{cursor:pointer}
.good{color:#2e7d32;font-weight:600}.partial{color:#a67c00;font-weight:600}.poor{color:#c62828;font-weight:600}
.unjudged{color:#6a1b9a;font-weight:600}.warn{background:#fff3cd;border:1px solid #e0c36c;padding:.5em}
.fail{background:#fde2e2;border:1px solid #d88;padding:.5em}
.banner{background:#b71c1c;color:#fff;font-size:1.25em;font-weight:700;padding:.7em 1em;border-radius:4px;
margin:.6em 0}
.muted{color:#666;font-size:.9em}
.ok{background:#e6f4ea;border:1px solid #8c8;padding:.5em}
img{max-width:100%;border:1px solid #eee;margin:.3em 0}
table.all{font-size:.82em}table.all td{padding:.05em .4em}
table.all th{cursor:pointer;position:sticky;top:0;user-select:none}
table.all th[data-dir=asc]::after{content:" \\25B2"}table.all th[data-dir=desc]::after{content:" \\25BC"}
"""

# Click a header of a ``table.all`` to sort by that column (numbers numerically, blanks always last);
# click again to reverse.
_SORT_JS = """
document.querySelectorAll("table.all").forEach(function(t){
  var hs=t.tHead.rows[0].cells;
  Array.prototype.forEach.call(hs,function(h,i){h.addEventListener("click",function(){
    var num=h.dataset.type==="num",dir=h.dataset.dir==="asc"?-1:1,b=t.tBodies[0];
    Array.prototype.forEach.call(hs,function(x){delete x.dataset.dir});h.dataset.dir=dir>0?"asc":"desc";
    var rows=Array.prototype.map.call(b.rows,function(r){var s=r.cells[i].textContent.trim();
      return [num?(s===""||isNaN(+s)?null:+s):(s===""?null:s.toLowerCase()),r]});
    rows.sort(function(a,c){if(a[0]===null||c[0]===null)return(a[0]===null)-(c[0]===null);
      return a[0]<c[0]?-dir:a[0]>c[0]?dir:0});
    var f=document.createDocumentFragment();rows.forEach(function(r){f.appendChild(r[1])});b.appendChild(f);
  })});
});
"""


def esc(value: Any) -> str:
    """HTML-escaped text of any value (``None`` -> empty string)."""
    if value is None:
        return ""
    return html.escape(str(value), quote=True)


def _missing(value: Any) -> bool:
    if value is None or value is pd.NA:
        return True
    return isinstance(value, float | np.floating) and value != value  # NaN


def _num(value: Any, digits: int = 4) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool | np.bool_):
        return str(bool(value))
    if isinstance(value, int | float | np.integer | np.floating):
        if value != value:  # NaN
            return "NaN"
        if isinstance(value, float | np.floating):
            return f"{value:.{digits}f}".rstrip("0").rstrip(".")
        return str(value)
    return esc(value)


def _table(headers: Sequence[str], rows: Iterable[Sequence[Any]], numeric: Sequence[int] = ()) -> str:
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = []
    for row in rows:
        cells = []
        for i, cell in enumerate(row):
            cls = ' class="num"' if i in numeric else ""
            cells.append(f"<td{cls}>{cell}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _kv(pairs: Iterable[tuple[str, Any]]) -> str:
    return "<table>" + "".join(f"<tr><th>{esc(k)}</th><td>{v}</td></tr>" for k, v in pairs) + "</table>"


def _band(band: Any) -> str:
    if band in BANDS:
        return f'<span class="{band}">{esc(band)}</span>'
    return '<span class="unjudged">unjudged</span>'


# -- provenance -----------------------------------------------------------------------------------
def manifest_fields(manifest: Any) -> dict[str, Any]:
    """A run manifest (the pydantic ``RunManifest``, its JSON dict, or any object) as a plain dict.

    The report reads every field with a default, so a manifest written by an older or newer version of
    the run code (fields missing or added, e.g. ``judge_endpoint`` / ``judge_local``) still renders.
    """
    if isinstance(manifest, Mapping):
        return dict(manifest)
    if hasattr(manifest, "model_dump"):
        return manifest.model_dump(mode="json")
    return dict(vars(manifest))


def strip_credentials(url: str) -> str:
    """An endpoint as shown in a banner: its identity without credentials, query or fragment
    (:func:`axon_eval.urls.sanitize_url`), or, for a malformed URL, with its credentials masked."""
    try:
        return sanitize_url(url)
    except InvalidEndpoint:
        return mask_url(url)


def is_local_url(url: str | None) -> bool:
    """True when ``url`` (with or without a scheme) points at this machine (:func:`axon_eval.urls.is_loopback_url`)."""
    if not url:
        return False
    return is_loopback_url(url if "//" in url else f"//{url}")


def local_judge_endpoint(manifest: Any, judge_ids: Iterable[str] = ()) -> str | None:
    """The local-server URL a run was judged against, or ``None`` for a run against a real endpoint.

    Read from the manifest's ``judge_provenance`` entries (``endpoint``, ``local``), ``judge_endpoint``
    and ``judge_local`` fields when the manifest has them, else found as a loopback URL
    (``base=http://127.0.0.1:...``, ``@http://localhost...``) inside the manifest's ``judge_id`` /
    ``judge_spec`` or the results' judge ids. Credentials are stripped.
    """
    m = manifest_fields(manifest)
    for judge in m.get("judge_provenance") or ():
        if isinstance(judge, Mapping) and judge.get("endpoint") and \
                (judge.get("local") or is_local_url(str(judge["endpoint"]))):
            return strip_credentials(str(judge["endpoint"]))
    endpoint = m.get("judge_endpoint")
    endpoint = str(endpoint) if endpoint else None
    if endpoint and is_local_url(endpoint):
        return strip_credentials(endpoint)
    texts = [str(m.get("judge_id") or ""), str(m.get("judge_spec") or ""), *map(str, judge_ids)]
    local_urls = [u for text in texts for u in _URL.findall(text) if is_local_url(u)]
    if local_urls:
        return strip_credentials(local_urls[0])
    if m.get("judge_local"):
        return strip_credentials(endpoint) if endpoint else "an unrecorded local URL"
    return None


def provenance_banners(manifest: Any, judge_ids: Iterable[str] = ()) -> list[str]:
    """The banner sentences of the first page (plain text): local server, simulated judge, failed run,
    dirty working tree. Empty for a clean, complete run judged by a real model."""
    m = manifest_fields(manifest)
    ids = list(judge_ids)
    banners = []
    local = local_judge_endpoint(m, ids)
    if local is not None:
        banners.append(f"judged against a local server at {local}: not a real model's verdicts")
    if is_simulated_judge([str(m.get("judge_id") or ""), str(m.get("judge_spec") or ""), *ids]):
        banners.append("SIMULATED judge: these verdicts are generated noise around another judge's, not a real "
                       "model's grading")
    if m.get("status") == "failed":
        banners.append(f"This run FAILED: {m.get('error')}")
    elif m.get("status") == "interrupted":
        banners.append(f"This run was INTERRUPTED (Ctrl-C): {m.get('error')}; its results hold only what was judged "
                       "before the interrupt")
    elif m.get("status") == "running":
        banners.append("This run never finished (status running): its results may be incomplete")
    if m.get("git_dirty") is True:
        banners.append(f"Run from a DIRTY working tree at commit {m.get('git_commit')}: the code that produced "
                       "these numbers is not exactly that commit")
    return banners


#: Judge-spec prefixes of judges that call a provider's API (the others run offline, in this process).
API_JUDGE_PREFIXES: tuple[str, ...] = ("anthropic:", "openai:")
#: What a figure the run did not record reads as.
NOT_REPORTED = "not reported"


def calls_a_provider(manifest: Any) -> bool:
    """True when the run's judge (or a member of it) called a provider's API: a ``judge_provenance`` entry
    names a provider or an endpoint, or the judge id / spec holds an API judge (:data:`API_JUDGE_PREFIXES`)."""
    m = manifest_fields(manifest)
    if any(isinstance(j, Mapping) and (j.get("provider") or j.get("endpoint")) for j in m.get("judge_provenance") or ()):
        return True
    text = f"{m.get('judge_id') or ''} {m.get('judge_spec') or ''}"
    return any(prefix in text for prefix in API_JUDGE_PREFIXES)


def judge_endpoint_text(manifest: Any) -> str:
    """The endpoint line of the provenance table (plain text): the recorded endpoint without credentials;
    ``not recorded (provider default)`` for an API judge that recorded none; ``offline (no endpoint)`` for
    a judge that calls no API (the heuristic, a replay of stored verdicts)."""
    m = manifest_fields(manifest)
    endpoint = m.get("judge_endpoint")
    if endpoint:
        return strip_credentials(str(endpoint))
    return "not recorded (provider default)" if calls_a_provider(m) else "offline (no endpoint)"


def counts_text(counts: Mapping[str, Any]) -> str:
    """A manifest's ``counts`` as a sentence (``90 turns, 97 segments: 97 judged, 0 unjudged; ...``)."""
    if not counts:
        return "none recorded"
    def n(key: str) -> str:
        return fmt_number(counts.get(key), missing=NOT_REPORTED)
    text = f"{n('turns')} turns, {n('segments')} segments: {n('judged')} judged, {n('unjudged')} unjudged"
    if counts.get("samples") is not None and counts.get("samples") != counts.get("segments"):
        text += f"; {n('samples')} judge samples ({n('unjudged_samples')} unjudged)"
    return text + f"; {n('invalid')} invalid input line record(s)"


def tokens_text(m: Mapping[str, Any]) -> str:
    """Token counts of the run (``not reported`` when the judge reported none, e.g. an offline judge)."""
    parts = [("input", "input_tokens"), ("output", "output_tokens"), ("cache read", "cache_read_tokens"),
             ("cache write", "cache_creation_tokens")]
    if all(is_missing(m.get(key)) for _, key in parts):
        return NOT_REPORTED + (" (offline judge)" if not calls_a_provider(m) else "")
    return ", ".join(f"{name} {fmt_number(m.get(key), missing=NOT_REPORTED)}" for name, key in parts)


def cost_text(m: Mapping[str, Any]) -> str:
    """The run's cost in US dollars (and the estimate when that is all there is)."""
    cost, estimate = m.get("cost_usd"), m.get("estimated_cost_usd")
    if not is_missing(cost):
        text = f"{fmt_number(cost)} USD"
        return text + (" (offline judge)" if not calls_a_provider(m) and not cost else "")
    if not is_missing(estimate):
        return f"{NOT_REPORTED}; estimated {fmt_number(estimate)} USD"
    return NOT_REPORTED


def _cache_text(m: Mapping[str, Any]) -> str:
    hits, misses = m.get("cache_hits"), m.get("cache_misses")
    if is_missing(hits) and is_missing(misses):
        return "no verdict cache used" if not m.get("cache_path") else NOT_REPORTED
    return f"{fmt_number(hits, missing=NOT_REPORTED)} hits, {fmt_number(misses, missing=NOT_REPORTED)} misses"


def _provenance_section(m: Mapping[str, Any], banners: Sequence[str] = ()) -> str:
    rubric = m.get("rubric") or {}
    counts = m.get("counts") or {}
    files = m.get("input_files") or {}
    pairs = [
        ("run", esc(m.get("run_id"))), ("status", esc(m.get("status"))), ("kind", esc(m.get("kind"))),
        ("name", esc(m.get("name"))),
        ("judge id", f"<code>{esc(m.get('judge_id'))}</code>"),
        ("judge", f"model {esc(m.get('judge_model'))}, prompt {esc(m.get('prompt_version'))}"
                  + (f", spec <code>{esc(m.get('judge_spec'))}</code>" if m.get("judge_spec") else "")),
        ("judge endpoint", esc(judge_endpoint_text(m))),
        ("rubric id", f"{esc(m.get('rubric_name'))}@<code>{esc(m.get('rubric_id'))}</code>"),
        ("weights", esc(json.dumps(rubric.get("weights")))), ("caps", esc(json.dumps(rubric.get("caps")))),
        ("bands", esc(json.dumps(rubric.get("bands")))), ("row horizon", esc(rubric.get("row_horizon"))),
        ("git commit", f"<code>{esc(m.get('git_commit'))}</code> (dirty: {esc(m.get('git_dirty'))})"),
        ("started / ended (UTC)", f"{esc(m.get('started_at'))} / {esc(m.get('ended_at'))}"),
        ("input files", "<br>".join(f"{esc(p)}<br><span class='muted'>sha256 {esc(h)}</span>"
                                    for p, h in files.items()) or "none recorded"),
        ("counts", esc(counts_text(counts))),
        ("verdict cache", esc(_cache_text(m))),
        ("tokens", esc(tokens_text(m))),
        ("cost", esc(cost_text(m))),
    ]
    if m.get("source_run"):
        pairs.append(("source run", esc(m.get("source_run"))))
    out = ["<h2>Provenance</h2>", _kv(pairs)]
    for w in m.get("warnings") or ():
        if not any(str(w)[:30] == b[:30] for b in banners):  # already said in a banner above
            out.append(f'<p class="warn">{esc(w)}</p>')
    return "\n".join(out)


# -- comparative claims: the calibration record --------------------------------------------------------
def calibration_claim(manifest: Any, record: CalibrationRecord | None, source: str | None = None, *,
                      problem: str | None = None, searched: str | None = None) -> tuple[bool, str]:
    """Whether this run may make comparative claims, and the first page's sentence saying why (plain text).

    * ``problem`` (a record that could not be read): not allowed, the problem said;
    * no ``record``: ``"no calibration record: comparative claims are not allowed until study 05 passes"``
      (the seed's governance: kappa >= :data:`~axon_eval.stats.agreement.GATE_THRESHOLD` first);
    * a record whose judge (id, model, endpoint, prompt) or rubric differs from the run's manifest:
      ``"calibration stale: <what> differs (record X, run Y)"`` for each difference
      (:func:`~axon_eval.stats.calibration_record.staleness`), not allowed, and no corrected figures;
    * a matching record: ``"comparative claims allowed|not allowed: band kappa lower bound X vs 0.7
      (kappa K, 95% interval, n = N segments, record FILE)"``. The gate reads the **lower bound**, never
      the point value (:func:`~axon_eval.stats.calibration_record.claims_verdict`, which also refuses a
      gate passed on constructed labels).
    """
    m = manifest_fields(manifest)
    if problem is not None:
        return False, f"{problem}: comparative claims are not allowed"
    if record is None:
        where = f"; none found in a {CALIBRATION_STUDY} run folder under {searched}" if searched else ""
        return False, (f"no calibration record: comparative claims are not allowed until study 05 passes (the lower "
                       f"bound of the band kappa's 95% interval at least {GATE_THRESHOLD:g} for this judge and "
                       f"rubric{where})")
    stale = staleness(record, m)
    named = f"record {source}" if source else "the record given"
    if stale:
        return False, ("; ".join(stale) + f": comparative claims are not allowed and no corrected figures are given "
                       f"for this run ({named}, measured on judge {record.judge_id or 'none'}, rubric "
                       f"{record.rubric_id or 'none'})")
    allowed, _ = claims_verdict(record, stale)
    lo = "undefined" if record.kappa_lo is None else f"{record.kappa_lo:.2f}"
    kappa = "undefined" if record.kappa is None else f"{record.kappa:.2f}"
    text = (f"comparative claims {'allowed' if allowed else 'not allowed'}: band kappa lower bound {lo} vs "
            f"{record.threshold:g} (kappa {kappa}, {record.confidence:.0%} interval, n = {record.n} segments, {named})")
    if record.labels_constructed:
        text += "; the record's labels are constructed, not people's, so its gate allows no claim"
    return allowed, text


def _calibration_of(calibration: str | Path | CalibrationRecord | None, runs_root: Path
                    ) -> tuple[CalibrationRecord | None, str | None, str | None, str | None]:
    """``(record, source, problem, searched)``: the given record (or file / run folder holding one), else
    the newest study-05 record under ``runs_root`` (:func:`axon_eval.runs.calibration.latest_calibration`);
    a record that does not read is a problem sentence, not a crash."""
    if isinstance(calibration, CalibrationRecord):
        return calibration, "given", None, None
    path = Path(calibration) if calibration is not None else latest_calibration(runs_root)
    if path is None:
        return None, None, None, str(runs_root)
    try:
        return read_calibration(path), str(path), None, None
    except (OSError, ValueError) as exc:
        return None, str(path), f"the calibration record {path} could not be read ({exc})", None


def _claims_paragraph(allowed: bool, text: str) -> str:
    return f'<p class="{"ok" if allowed else "warn"}" id="claims"><b>{esc(text)}</b></p>'


# -- summary --------------------------------------------------------------------------------------
def headline_figures(results: pd.DataFrame, rubric: Rubric | None) -> tuple[pd.DataFrame | None, str | None]:
    """``(table, problem)``: every headline figure with its interval
    (:func:`axon_eval.stats.intervals.headline_table`), or ``None`` and the sentence why (no judged
    segment; results that mix judges or rubrics get no interval)."""
    if results.empty or "status" not in results.columns or not (results["status"] == JUDGED).any():
        return None, None
    try:
        return headline_table(results, rubric), None
    except MixedResultsError as exc:
        return None, f"No intervals: {exc}"


def _headline_section(table: pd.DataFrame | None, problem: str | None) -> str:
    if table is None:
        return f'<p class="warn">{esc(problem)}</p>' if problem else ""
    shown = format_headline_table(table)
    level = shown.columns[2]
    rows = [(esc(r["figure"]), esc(r["estimate"]), esc(r[level]), fmt_number(r["n"]), fmt_number(r["turns"]),
             esc(r["method"]), esc(r["note"])) for _, r in shown.iterrows()]
    boot = "" if table.attrs.get("n_boot") is None else (
        f" Bootstrap intervals resample whole turns, {fmt_number(table.attrs['n_boot'])} resamples, seed "
        f"{esc(table.attrs.get('seed'))}; a share whose turns have one segment each gets the Wilson interval.")
    return "\n".join([
        f"<h3>Headline figures with their {esc(level)}s</h3>",
        _table(["figure", "estimate", level, "n (segments)", "turns", "method", "note"], rows, numeric=(1, 2, 3, 4)),
        f"<p class='muted' id='interval-covers'>{esc(table.attrs.get('covers'))}{boot}</p>",
    ])


def _summary_section(s: Mapping[str, Any], headlines: pd.DataFrame | None = None,
                     headline_problem: str | None = None) -> str:
    out = ["<h2>Summary</h2>"]
    if s["mixed"]:
        out.append(f'<p class="warn">{esc(s["mixed"])}</p>')
    shown = format_headline_table(headlines).set_index("figure") if headlines is not None else None
    level = shown.columns[1] if shown is not None else "95% interval"

    def interval_of(figure: str) -> str:
        return esc(shown.loc[figure, level]) if shown is not None else "not computed"
    per = s.get("samples_per_segment") or {}
    samples = ""
    if s.get("repeated"):
        each = per.get("min") if per.get("min") == per.get("max") else f"{per.get('min')}-{per.get('max')}"
        samples = (f" x {esc(each)} judge samples ({s['rows']} results rows); each segment is counted once, by "
                   "the mean over its judged samples")
    failed = f", {s['failed_samples']} failed sample(s) of judged segments" if s.get("failed_samples") else ""
    out.append(f"<p>{s['segments']} segment(s){samples}: {s['judged']} judged, {s['unjudged']} unjudged{failed}; "
               f"{s['invalid']} invalid input line record(s). Shares are of the judged segments.</p>")
    rows = [(_band(b), s["band_counts"][b], fmt_share(s["band_shares"][b]), interval_of(f"share {b}")) for b in BANDS]
    out.append(_table(["band" + (" (of the mean score)" if s.get("repeated") else ""), "segments", "share", level],
                      rows, numeric=(1, 2, 3)))
    sc = s["score"]
    if sc["mean"] is not None:
        what = "Per-segment mean score" if s.get("repeated") else "Score"
        within = ""
        if shown is not None:
            within = (f" ({level} {interval_of('mean score')}, n = {fmt_number(shown.loc['mean score', 'n'])} "
                      f"segments in {fmt_number(shown.loc['mean score', 'turns'])} turns)")
        out.append(f"<p>{what}: mean {sc['mean']:.1f}{within}, median {sc['median']:.1f}, min {sc['min']:.1f}, "
                   f"max {sc['max']:.1f}. {s['n_top']} segment(s) scored 100.</p>")
    out.append(_headline_section(headlines, headline_problem))
    spread = s.get("spread")
    if spread:
        out.append(f"<p>Within-segment spread (segments with 2+ judged samples): score SD mean "
                   f"{spread['sd_mean']:.2f}, median {spread['sd_median']:.2f}, max {spread['sd_max']:.2f}; "
                   f"range mean {spread['range_mean']:.1f}, max {spread['range_max']:.1f} points.</p>")
    varies = s.get("band_varies") or {}
    if varies.get("of"):
        out.append(f"<p>The band varies across samples on {varies['count']} of {varies['of']} segments "
                   f"({varies['share']:.0%}).</p>")
    if s["lowest"]:
        lo = s["lowest"]
        out.append(f"<p>Lowest: {esc(lo['segment_id'])} scored {lo['score']:.1f}: {esc(lo['reason'])}</p>")
    if s["verdict_agreement"] is not None:
        out.append(f"<p>The judge's own verdict equals the band on {s['verdict_agreement']:.0%} of judged "
                   "segments (a mismatch is a note, never a change of score).</p>")
    for note in s.get("notes") or ():
        out.append(f'<p class="warn">{esc(note)}</p>')
    return "\n".join(out)


def _cross_check_section(check: Mapping[str, Any] | None) -> str:
    """The first page's cross-check (:func:`axon_eval.summaries.cross_check`): how many judged segments the
    judge's own verdict rates worse than their band, by kind, and every one of them (up to
    :data:`MAX_LISTED`) with its score, band and verdict and its band under each packaged candidate rubric,
    naming the candidates that move it down; then what each candidate changes and how many it moves."""
    if not check:
        return ""
    if not check["count"]:
        return (f"<p class='muted' id='cross-check'>Cross-check: the judge's verdict is nowhere worse than the "
                f"band ({fmt_number(check['of'])} judged segments with a verdict).</p>")
    kinds = ", ".join(f"{esc(k)}: {fmt_number(n)}" for k, n in check["by_kind"].items() if n)
    names = [c["name"] for c in check.get("candidates") or []]
    items = list(check.get("items") or [])
    rows = []
    for item in items[:MAX_LISTED]:
        under = item.get("under") or {}
        cells = [esc(item["segment_id"]), fmt_number(item["score"]), _band(item["band"]), _band(item["judge_verdict"])]
        for name in names:
            u = under.get(name) or {}
            cells.append(f"{_band(u.get('band'))} ({fmt_number(u.get('score'))})" if u.get("band") else "not scored")
        cells.append(esc(", ".join(item.get("moved_by") or []) or "none"))
        rows.append(cells)
    out = [f"<div class='fail' id='cross-check'><h2>Cross-check: the judge's verdict is worse than the band on "
           f"{fmt_number(check['count'])} of {fmt_number(check['of'])} judged segments</h2>",
           f"<p><b>{kinds}.</b> The band is the rubric's ({esc(check.get('rubric'))}, a compensatory weighted "
           "mean: a sound trajectory can carry a wrong answer to a better band); the judge's own verdict is the "
           "cross-check on it. Each segment below is rescored from its stored subscores under every packaged "
           "candidate rubric; <i>moved down by</i> names those that give it a worse band.</p>",
           _table(["segment", "score", "band", "judge verdict", *(f"under {n}" for n in names), "moved down by"],
                  rows, numeric=(1,))]
    if len(items) > MAX_LISTED:
        out.append(f"<p>{fmt_number(len(items) - MAX_LISTED)} more: each is a row of the table of all segments "
                   "below (its band and judge verdict).</p>")
    changes = [f"<li><b>{esc(c['name'])}</b> ({esc(c['change'])}) moves {fmt_number(c['moves'])} of the "
               f"{fmt_number(check['count'])} to a worse band.</li>" for c in check.get("candidates") or []]
    if check.get("not_moved"):
        changes.append(f"<li>{fmt_number(check['not_moved'])} of the {fmt_number(check['count'])} moved by no "
                       "packaged candidate rubric.</li>")
    out.append("<ul>" + "".join(changes) + "</ul></div>")
    return "\n".join(out)


def _figures_section(figures: Sequence[tuple[str, str]]) -> str:
    if not figures:
        return ""
    imgs = "".join(f"<figure><img src='{uri}' alt='{esc(name)}'>"
                   f"<figcaption class='muted'>{esc(name)}</figcaption></figure>" for name, uri in figures)
    return "<h2>Figures</h2>" + imgs


def _reason_counts(reasons: Iterable[Any], limit: int = 20) -> str:
    counted = Counter(str(r) for r in reasons).most_common(limit)
    return _table(["reason", "count"], ((esc(r), n) for r, n in counted), numeric=(1,))


def _unjudged_section(s: Mapping[str, Any]) -> str:
    items = s["unjudged_items"]
    out = [f"<h2>Unjudged segments ({len(items)})</h2>",
           "<p class='muted'>A failed or unusable judgement leaves the segment unjudged: it has no score "
           "(never a 0) and is listed here with its reason.</p>"]
    if items:
        shown = items[:MAX_LISTED]
        out.append(_table(["segment", "turn", "judge", "reason"],
                          ((esc(u.get("segment_id")), esc(u.get("turn_id")), esc(u.get("judge_id")),
                            esc(u.get("error"))) for u in shown)))
        if len(items) > MAX_LISTED:
            out.append(f"<p>{len(items) - MAX_LISTED} more unjudged segment(s): each is a row of the table of "
                       "all segments below (status unjudged, with its reason). Their most common reasons:</p>")
            out.append(_reason_counts(u.get("error") for u in items[MAX_LISTED:]))
    else:
        out.append("<p>None.</p>")
    failed = s.get("failed_sample_items") or []
    if failed:
        out.append(f"<h3>Failed samples of judged segments ({len(failed)})</h3>"
                   "<p class='muted'>Left out of their segment's mean (never a 0).</p>")
        out.append(_table(["segment", "sample", "reason"],
                          ((esc(f.get("segment_id")), esc(f.get("sample_index")), esc(f.get("error")))
                           for f in failed[:MAX_LISTED])))
        if len(failed) > MAX_LISTED:
            out.append(f"<p>{len(failed) - MAX_LISTED} more failed sample(s), by reason:</p>")
            out.append(_reason_counts(f.get("error") for f in failed[MAX_LISTED:]))
    return "\n".join(out)


def _invalid_section(invalid: Sequence[Mapping[str, Any]]) -> str:
    out = [f"<h2>Invalid input lines ({len(invalid)})</h2>",
           "<p class='muted'>Lines of the evidence file that could not be used; one record per problem.</p>"]
    if invalid:
        rows = [(esc(i.get("source")), esc(i.get("line")), esc(i.get("turn_id")), esc(i.get("field")),
                 esc(i.get("message"))) for i in invalid[:MAX_LISTED]]
        out.append(_table(["file", "line", "turn", "field", "reason"], rows))
        if len(invalid) > MAX_LISTED:
            out.append(f"<p>{len(invalid) - MAX_LISTED} more invalid line record(s) (all are in the run's "
                       "<code>invalid.jsonl</code>), by field and reason:</p>")
            out.append(_reason_counts(f"{i.get('field')}: {i.get('message')}" for i in invalid[MAX_LISTED:]))
    else:
        out.append("<p>None.</p>")
    return "\n".join(out)


# -- one segment in full --------------------------------------------------------------------------
def _cell(value: Any) -> str:
    return esc(json.dumps(value, ensure_ascii=False) if isinstance(value, dict | list) else value)


def render_steps(steps: Sequence[Mapping[str, Any]]) -> str:
    """The trajectory as the judge saw it: SQL text, status, error, columns and the shown rows."""
    if not steps:
        return "<p>No steps: no tools and no SQL were run.</p>"
    out = []
    for n, step in enumerate(steps, start=1):
        if step.get("kind") == "sql":
            shown = step.get("rows") or []
            total = step.get("row_count")
            head = f"<p><b>step {n}: SQL</b>, status <code>{esc(step.get('status'))}</code>"
            if step.get("status") == "ok":
                head += f", showing {len(shown)} of {esc(total if total is not None else len(shown))} rows"
            out.append(head + "</p>")
            out.append(f"<pre>{esc(step.get('sql'))}</pre>")
            if step.get("error"):
                out.append(f"<p>error: <code>{esc(step.get('error'))}</code></p>")
            if step.get("status") == "blocked":
                out.append("<p class='muted'>refused by the guardrail before execution: nothing ran</p>")
            columns = step.get("columns") or []
            if step.get("status") == "ok" and (columns or shown):
                out.append(_table(columns or [f"c{i}" for i in range(len(shown[0]))],
                                  ([_cell(v) for v in row] for row in shown)))
        else:
            output = json.dumps(step.get("output"), ensure_ascii=False)
            if len(output) > TOOL_OUTPUT_CHARS:
                output = output[:TOOL_OUTPUT_CHARS] + f" ... [{len(output) - TOOL_OUTPUT_CHARS} more characters]"
            out.append(f"<p><b>step {n}: tool <code>{esc(step.get('name'))}</code></b>, status "
                       f"<code>{esc(step.get('status'))}</code></p>")
            out.append(f"<pre>args: {esc(json.dumps(step.get('args'), ensure_ascii=False))}\n"
                       f"output: {esc(output)}</pre>")
            if step.get("error"):
                out.append(f"<p>error: <code>{esc(step.get('error'))}</code></p>")
    return "\n".join(out)


def render_arithmetic(score: Mapping[str, Any]) -> str:
    """The scoring arithmetic of one ``TurnScore.to_dict()``: a reader can retrace the score."""
    rows = []
    for d in DIMENSIONS:
        rows.append((esc(d), _num(score["subscores"].get(d)), _num(score["nominal_weights"].get(d)),
                     _num(score["effective_weights"].get(d)), _num(score["contributions"].get(d))))
    parts = [_table(["dimension", "value (0-10)", "nominal weight", "effective weight", "contribution (points)"],
                    rows, numeric=(1, 2, 3, 4))]
    parts.append(f"<p>raw score = sum of contributions = <b>{_num(score['raw_score'])}</b></p>")
    cap_rows = [(esc(c["name"]), _num(c["cap"]), esc(c["triggered"]), esc(c["applied"])) for c in score["caps"]]
    parts.append(_table(["cap", "cap (points)", "triggered", "applied"], cap_rows, numeric=(1,)))
    parts.append(f"<p>after caps {_num(score['capped_score'])}; final score (rounded to 0.1) "
                 f"<b>{_num(score['score'], 1)}</b>, band {_band(score['band'])}; judge verdict "
                 f"{esc(score.get('judge_verdict'))} (matches band: {esc(score.get('verdict_matches_band'))})</p>")
    if score.get("notes"):
        parts.append("<ul>" + "".join(f"<li>{esc(n)}</li>" for n in score["notes"]) + "</ul>")
    return "\n".join(parts)


def _sample_block(entry: Mapping[str, Any], repeated: bool) -> str:
    """One sample's verdict and arithmetic (its score, or its reason when unjudged)."""
    score = entry.get("score")
    out = []
    if repeated:
        label = (f"<b>{_num(score['score'], 1)}</b> {_band(score['band'])}" if score is not None
                 else f"{_band(None)} {esc(entry.get('error'))}")
        out.append(f"<h4>sample {esc(entry.get('sample_index'))}: {label}</h4>")
    if score is not None:
        out.append(render_arithmetic(score))
    else:
        out.append(f"<p class='unjudged'>Unjudged: {esc(entry.get('error'))}. No score.</p>")
    verdict = entry.get("verdict")
    if verdict:
        out.append(f"<p><b>judge explanation</b>: {esc(verdict.get('explanation'))}</p>")
    return "\n".join(out)


def _segment_section(anchor: str, segment: Mapping[str, Any], entries: Sequence[Mapping[str, Any]]) -> str:
    """A worst segment in full: headline, question, every sample's arithmetic, trajectory, answer."""
    seg = esc(segment["segment_id"])
    caps = [c for c in str(segment.get("caps_applied") or "").split(";") if c]
    line = f"{seg}: <b>{_num(segment.get('score'), 1)}</b> {_band(segment.get('band'))}"
    if caps:
        line += f" <span class='muted'>capped: {esc(', '.join(caps))}</span>"
    n_judged, n_samples = int(segment.get("n_judged", 1)), int(segment.get("n_samples", 1))
    repeated = n_samples > 1
    if repeated:
        sd = segment.get("score_sd")
        line += (f" <span class='muted'>(mean of {n_judged} judged of {n_samples} samples; SD "
                 f"{'n/a' if _missing(sd) else f'{sd:.2f}'}, range {_num(segment.get('score_min'), 1)}-"
                 f"{_num(segment.get('score_max'), 1)}"
                 + ("; band varies across samples" if segment.get("band_varies") else "") + ")</span>")
    body = [f"<p><b>question</b>: {esc(segment.get('question'))}</p>"]
    if not entries:
        body.append("<p class='warn'>No audit entry was found for this segment (audit.jsonl missing or "
                    "incomplete): its evidence and arithmetic cannot be shown.</p>")
        return f"<details open id='{anchor}'><summary>{line}</summary>\n" + "\n".join(body) + "</details>"
    first = entries[0]
    body.append(f"<p class='muted'>turn {esc(first.get('turn_id'))} (segment {esc(first.get('segment_index'))} of "
                f"{esc(first.get('n_segments'))}), {esc(first.get('region'))} / {esc(first.get('surface'))} / "
                f"{esc(first.get('client'))}, captured {esc(first.get('captured_at'))}; judge "
                f"{esc(first.get('judge_id'))}, rubric {esc(first.get('rubric_id'))}, row horizon "
                f"{esc(first.get('row_horizon'))}, view sha256 <code>{esc(first.get('view_sha256'))}</code></p>")
    facts = first.get("facts") or {}
    body.append("<p class='muted'>trajectory facts: " + esc(", ".join(f"{k}={v}" for k, v in facts.items())) + "</p>")
    body.append("<h4>Scoring</h4>" if not repeated else f"<h4>Scoring of each of the {len(entries)} samples</h4>")
    body.extend(_sample_block(e, repeated) for e in entries)
    body.append("<h4>What the judge saw</h4>")
    body.append(render_steps(first.get("steps") or []))
    answer = first.get("answer")
    body.append("<p><b>answer</b>:</p>" + (f"<pre>{esc(answer)}</pre>" if answer is not None
                                          else "<p class='muted'>no answer captured (composed by the client's "
                                               "own AI): faithfulness is null</p>"))
    return f"<details open id='{anchor}'><summary>{line}</summary>\n" + "\n".join(body) + "</details>"


# -- the table of all segments --------------------------------------------------------------------
def _fmt(value: Any, digits: int) -> str:
    if _missing(value):
        return ""
    return f"{float(value):.{digits}f}"


def _short(value: Any, limit: int = SHORT_ERROR_CHARS) -> str:
    if _missing(value) or value == "":
        return ""
    text = " ".join(str(value).split())
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def segments_table_html(segments: pd.DataFrame, anchors: Mapping[str, str]) -> str:
    """Every segment as one row of a sortable table (markup kept minimal: optional end tags omitted).

    ``segments`` is :func:`axon_eval.summaries.segment_table`; ``anchors`` maps the ids shown in full to
    their anchors. An unjudged segment has an empty score and the band ``unjudged`` (never a 0); a null
    faithfulness (no answer captured) of a judged segment reads ``null``.
    """
    repeated = bool(len(segments)) and int(segments["n_samples"].max()) > 1
    dim_digits = 1 if repeated else 0
    headers: list[tuple[str, str, str]] = [
        ("segment", "text", "segment id (linked when shown in full above)"),
        ("score", "num", "score out of 100" + (" (mean of samples)" if repeated else "")),
    ]
    if repeated:
        headers += [("SD", "num", "sample SD of the segment's scores"), ("n", "num", "judged samples")]
    headers += [("band", "text", "band of the score")]
    headers += [(DIMENSION_HEADERS[d], "num", d) for d in DIMENSIONS]
    headers += [("caps", "text", "caps that lowered the score"), ("verdict", "text", "the judge's own verdict"),
                ("status", "text", "judged or unjudged"), ("error", "text", "why unjudged (shortened)")]
    head = "".join(f'<th data-type="{kind}" title="{esc(tip)}">{esc(name)}</th>' for name, kind, tip in headers)
    ids = segments["segment_id"].astype(str).tolist()
    status = segments["status"].astype(str).tolist()
    scores = segments["score"].tolist()
    bands = segments["band"].tolist()
    dims = {d: (segments[d].tolist() if d in segments.columns else [np.nan] * len(segments)) for d in DIMENSIONS}
    caps = segments.get("caps_applied", pd.Series([""] * len(segments))).fillna("").astype(str).tolist()
    verdicts = segments.get("judge_verdict", pd.Series([None] * len(segments))).tolist()
    errors = segments.get("error", pd.Series([None] * len(segments))).tolist()
    sds = segments["score_sd"].tolist() if repeated else None
    n_judged = segments["n_judged"].tolist() if repeated else None
    rows = []
    for i, sid in enumerate(ids):
        is_judged = status[i] == JUDGED
        anchor = anchors.get(sid)
        cell = f'<a href="#{anchor}">{esc(sid)}</a>' if anchor else esc(sid)
        band = bands[i] if is_judged and bands[i] in BANDS else "unjudged"
        parts = [f"<tr><td>{cell}<td>{_fmt(scores[i], 1)}"]
        if repeated:
            parts.append(f"<td>{_fmt(sds[i], 2)}<td>{n_judged[i]}")
        parts.append(f'<td class="{band}">{band}')
        for d in DIMENSIONS:
            value = dims[d][i]
            parts.append("<td>" + ("null" if is_judged and _missing(value) else _fmt(value, dim_digits)))
        verdict = verdicts[i]
        parts.append(f"<td>{esc(caps[i].replace(';', ' '))}<td>{'' if _missing(verdict) else esc(verdict)}"
                     f"<td>{esc(status[i])}<td>{esc(_short(errors[i]))}\n")
        rows.append("".join(parts))
    return (f'<table class="all"><thead><tr>{head}</tr></thead><tbody>\n' + "".join(rows) + "</tbody></table>")


# -- comparison with labels -----------------------------------------------------------------------
#: Bootstrap resamples and seed of the kappa intervals of the comparison with labels (recorded in the table).
LABELS_N_BOOT = 1000
LABELS_SEED = 0
#: The two named figures of the comparison, in the order shown (DESIGN section 4, the rubric decision):
#: the band's agreement is the rubric's figure, the one published; the verdict's stands beside it.
BAND_KAPPA_NAME = "score band vs labels (Cohen's kappa)"
VERDICT_KAPPA_NAME = "judge verdict vs labels (Cohen's kappa)"
BAND_COLUMN = "score band vs labels (the rubric's figure)"
VERDICT_COLUMN = "judge verdict vs labels"


@dataclass
class LabelsComparison:
    """A run's segments against labels: the score band's agreement first, the judge verdict's beside it.

    ``band_kappa`` / ``verdict_kappa``: Cohen's kappa (unweighted) of the band / the judge's own verdict
    against the labelled verdict, each an :class:`axon_eval.stats.agreement.Estimate` with its seeded
    bootstrap interval and n; ``*_kappa_linear``: linearly weighted kappa; ``*_accuracy``: share of
    equal verdicts; ``band_confusion`` / ``verdict_confusion``: rows = band / judge verdict, columns =
    label; ``agreement``: every other figure (:class:`axon_eval.stats.agreement.LabelAgreement`).
    """

    n: int
    band_kappa: Any
    verdict_kappa: Any
    band_kappa_linear: float
    verdict_kappa_linear: float
    band_accuracy: float
    verdict_accuracy: float
    band_confusion: pd.DataFrame
    verdict_confusion: pd.DataFrame
    agreement: Any
    gate: float

    def headline(self) -> str:
        """One sentence, band first: ``score band vs labels (Cohen's kappa) 0.62 (95% CI ..., n 97) ...``."""
        def fig(name: str, e: Any) -> str:
            return (f"{name} {fmt_number(e.value, 2)} (95% CI {fmt_interval(*e.ci, digits=2)}, n {e.n})")
        if is_missing(self.band_kappa.value):
            gate = (f"it is undefined (the band or the labels use one category only), so the gate of kappa >= "
                    f"{fmt_number(self.gate)} cannot be checked")
        else:
            gate = (f"it {'meets' if self.band_kappa.value >= self.gate else 'does not meet'} the gate of "
                    f"kappa >= {fmt_number(self.gate)} before comparative claims")
        return (f"{fig(BAND_KAPPA_NAME, self.band_kappa)}: the rubric's figure, the one to publish; {gate}. Beside it, "
                f"{fig(VERDICT_KAPPA_NAME, self.verdict_kappa)}: what the judge itself concludes.")

    def table(self) -> pd.DataFrame:
        """The two figures side by side as text (band column first): kappa, its interval, the linearly
        weighted kappa, the share of equal verdicts and the segments compared."""
        rows = {
            "Cohen's kappa": (fmt_number(self.band_kappa.value, 2), fmt_number(self.verdict_kappa.value, 2)),
            f"95% CI (seeded bootstrap, {self.band_kappa.n_boot} resamples, seed {self.band_kappa.seed})":
                (fmt_interval(*self.band_kappa.ci, digits=2), fmt_interval(*self.verdict_kappa.ci, digits=2)),
            "Cohen's kappa, linearly weighted": (fmt_number(self.band_kappa_linear, 2),
                                                 fmt_number(self.verdict_kappa_linear, 2)),
            "share equal to the label": (fmt_share(self.band_accuracy), fmt_share(self.verdict_accuracy)),
            "segments compared": (fmt_number(self.n), fmt_number(self.n)),
        }
        return pd.DataFrame(list(rows.values()), index=list(rows), columns=[BAND_COLUMN, VERDICT_COLUMN])

    def judge_table(self, *, claims: bool = True) -> pd.DataFrame:
        """What the judge controls, as text: subscores inside the labelled ranges (overall and per
        dimension) and, with ``claims``, the labelled unsupported claims its explanation names (needs the
        explanations in the compared rows)."""
        a = self.agreement
        values = {"subscores inside the labelled ranges": fmt_share(a.in_range),
                  **{f"{d} inside its range": fmt_share(v) for d, v in a.in_range_by_dimension.items()}}
        if claims:
            values["labelled unsupported claims named in the explanation"] = (
                f"{fmt_share(a.claim_catch_rate)} of {a.n_claims}" if a.n_claims else "no labelled claims")
        return pd.DataFrame({"value": list(values.values())}, index=list(values))


def compare_with_labels(segments: pd.DataFrame, labels: pd.DataFrame, *, n_boot: int = LABELS_N_BOOT,
                        seed: int = LABELS_SEED, allow_mixed: bool = False) -> LabelsComparison:
    """:class:`LabelsComparison` of the judged segments of ``segments`` (one row per segment: a single-sample
    run's judged results, or :func:`axon_eval.summaries.segment_table`'s judged rows) with ``labels``
    (:func:`axon_eval.labels.load_labels`). Only segments in both are compared; raises ``ValueError`` when
    none is."""
    from ..stats.agreement import GATE_THRESHOLD, confusion_table, kappa_estimate, label_agreement

    rows = segments[(segments["status"] == JUDGED) & segments["band"].isin(BANDS)
                    & segments["judge_verdict"].isin(BANDS)]
    agreement = label_agreement(rows, labels, allow_mixed=allow_mixed)
    m = rows.merge(labels[["segment_id", "verdict"]], on="segment_id", how="inner")
    band, verdict, label = (m[c].astype(str).tolist() for c in ("band", "judge_verdict", "verdict"))
    bands = agreement.band_agreement or {}
    return LabelsComparison(
        n=len(m), band_kappa=kappa_estimate(band, label, n_boot=n_boot, seed=seed),
        verdict_kappa=kappa_estimate(verdict, label, n_boot=n_boot, seed=seed),
        band_kappa_linear=bands.get("kappa_linear", float("nan")), verdict_kappa_linear=agreement.kappa_linear,
        band_accuracy=bands.get("accuracy", float("nan")), verdict_accuracy=agreement.accuracy,
        band_confusion=confusion_table(band, label).rename_axis(index="score band", columns="label"),
        verdict_confusion=confusion_table(verdict, label).rename_axis(index="judge verdict", columns="label"),
        agreement=agreement, gate=GATE_THRESHOLD)


def _frame_html(frame: pd.DataFrame) -> str:
    """A small frame of text (index as the first column) as an HTML table, every cell escaped."""
    headers = [frame.index.name or "", *[str(c) for c in frame.columns]]
    return _table(headers, ([esc(i), *(esc(v) for v in row)] for i, row in zip(frame.index, frame.to_numpy())))


def recorded_labels_file(manifest: Any, root: str | Path | None = None) -> tuple[Path | None, str | None]:
    """The labels file a run recorded among its ``input_files`` (a ``.csv`` other than the evidence whose
    name holds ``labels``), if it is still the same file, and a sentence when it cannot be used.

    Relative paths are read from ``root`` (default: the repository root). ``(None, None)`` when the run
    recorded no labels file; ``(None, problem)`` when it is missing or its SHA-256 no longer matches.
    """
    from ..runs.io import file_sha256
    from ..runs.provenance import repository_root

    m = manifest_fields(manifest)
    files = {str(k): v for k, v in (m.get("input_files") or {}).items()}
    names = [p for p in files if p != m.get("turns_file") and p.endswith(".csv") and "labels" in Path(p).name]
    if not names:
        return None, None
    name = names[0]
    base = Path(root) if root is not None else Path(repository_root() or Path.cwd())
    path = Path(name) if Path(name).is_absolute() else base / name
    if not path.is_file():
        return None, f"The run recorded the labels file {name}, which is not at {path}: the comparison with labels is left out."
    if files[name] and file_sha256(path) != files[name]:
        return None, (f"The labels file {name} has changed since the run (its SHA-256 differs from the one "
                      "recorded): the comparison with labels is left out.")
    return path, None


def _labels_section(segments: pd.DataFrame, labels: pd.DataFrame | None, source: str | None,
                    problem: str | None) -> str:
    if labels is None and problem is None:
        return ""
    out = ["<h2>Comparison with labels</h2>"]
    if problem is not None:
        out.append(f'<p class="warn">{esc(problem)}</p>')
        return "\n".join(out)
    assert labels is not None
    try:
        comparison = compare_with_labels(segments, labels, allow_mixed=True)
    except ValueError as exc:
        out.append(f'<p class="warn">The comparison with labels could not be made: {esc(exc)}</p>')
        return "\n".join(out)
    note = labels.attrs.get("note") or comparison.agreement.note
    out.append(f"<p class='muted'>Labels: {esc(source or 'given')}. {esc(note)}. The judged segments of this run "
               f"that have a label are compared ({comparison.n}); unjudged segments have no band and are left "
               "out.</p>")
    out.append(f"<p><b>{esc(comparison.headline())}</b></p>")
    out.append(_frame_html(comparison.table()))
    out.append("<p>Score band (rows) against the label (columns), then the judge's verdict against the label:</p>")
    out.append(_frame_html(people_table(comparison.band_confusion)))
    out.append(_frame_html(people_table(comparison.verdict_confusion)))
    out.append("<p>What the judge controls:</p>" + _frame_html(comparison.judge_table(claims=False)))
    return "\n".join(out)


# -- ensemble disagreement ------------------------------------------------------------------------
def disagreement_rows(results: pd.DataFrame) -> pd.DataFrame:
    """The results rows an ensemble flagged (``disagreement`` true), with their ``range_*`` columns; an
    empty frame when the run is not an ensemble's (no such column, or all null)."""
    if "disagreement" not in results.columns:
        return results.iloc[0:0]
    flag = results["disagreement"].astype("boolean").fillna(False).to_numpy(dtype=bool)
    return results.loc[flag]


def stream_ensemble_members(path: Path, wanted: set[tuple[str, int]], problems: list[str]) -> dict[tuple[str, int], dict]:
    """``(segment_id, sample_index) -> extra`` of the ensemble records in ``verdicts.jsonl`` that are
    ``wanted``, read one line at a time by :func:`stream_audit` (unreadable lines are named in ``problems``)."""
    found: dict[tuple[str, int], dict] = {}
    if not wanted:
        return found
    if not path.exists():
        problems.append(f"{path.name} is missing: the ensemble members' subscores cannot be shown")
        return found
    for record in stream_audit(path, {sid for sid, _ in wanted}, problems):
        key = (record.get("segment_id"), int(record.get("sample_index") or 0))
        if key in wanted and isinstance(record.get("extra"), dict):
            found[key] = record["extra"]
    return found


def _disagreement_section(results: pd.DataFrame, members: Mapping[tuple[str, int], Mapping[str, Any]]) -> str:
    if "disagreement" not in results.columns or results["disagreement"].isna().all():
        return ""
    flagged = disagreement_rows(results)
    judged_rows = results[results["status"] == JUDGED]
    n_segments = flagged["segment_id"].nunique()
    out = [f"<h2>Ensemble disagreement ({n_segments} of {judged_rows['segment_id'].nunique()} judged segments "
           "flagged)</h2>",
           "<p class='muted'>The ensemble flags a segment when its members' scored bands differ or a dimension's "
           "range (max - min over the judged members) reaches its threshold. The combined subscores are in the "
           "table of all segments; here each member's own.</p>"]
    if flagged.empty:
        out.append("<p>None.</p>")
        return "\n".join(out)
    headers = ["segment", "sample", "member", "verdict", *(DIMENSION_HEADERS[d] for d in DIMENSIONS), "score",
               "band", "why flagged"]
    rows = []
    for rec in flagged.head(MAX_LISTED).to_dict("records"):
        key = (str(rec["segment_id"]), int(rec.get("sample_index") or 0))
        extra = members.get(key) or {}
        ranges = ", ".join(f"{DIMENSION_HEADERS[d]} {fmt_number(rec.get(f'range_{d}'))}" for d in DIMENSIONS
                           if not is_missing(rec.get(f"range_{d}")))
        why = "; ".join(extra.get("disagreement_reasons") or []) or "flagged"
        why += f" (ranges: {ranges})" if ranges else ""
        listed = extra.get("members") or []
        if not listed:
            rows.append([esc(key[0]), key[1], "<span class='muted'>members not found in verdicts.jsonl</span>",
                         "", "", "", "", "", "", "", esc(why)])
            continue
        for k, member in enumerate(listed):
            sub = member.get("subscores") or {}
            first = k == 0
            cells = [esc(key[0]) if first else "", key[1] if first else "", esc(member.get("judge_id")),
                     esc(member.get("verdict") or "") if not member.get("error") else
                     f"<span class='unjudged'>failed: {esc(_short(member.get('error')))}</span>",
                     *(esc(fmt_number(sub.get(d), missing="null" if not member.get("error") else ""))
                       for d in DIMENSIONS),
                     esc(fmt_number(member.get("score"), missing="")), _band(member.get("band"))
                     if member.get("band") else "", esc(why) if first else ""]
            rows.append(cells)
    out.append(_table(headers, rows, numeric=(1, 4, 5, 6, 7, 8)))
    if len(flagged) > MAX_LISTED:
        out.append(f"<p>{len(flagged) - MAX_LISTED} more flagged results rows: each has "
                   "<code>disagreement</code> true in the run's <code>results/</code>.</p>")
    return "\n".join(out)


# -- assembling the page --------------------------------------------------------------------------
def rubric_of_manifest(manifest: Any) -> tuple[Rubric | None, str | None]:
    """The run's rubric from its manifest's ``rubric`` record, and a sentence when it could not be used.

    ``(rubric, None)`` when the record reads; ``(None, None)`` when the manifest has none (the default
    rubric's band edges are used, as for any run without one); ``(None, problem)`` when the record does
    not validate: the problem names the rubric and the first error, and says the band edges of a
    repeated run's mean scores fall back to the default rubric's. The report shows that sentence.
    """
    m = manifest_fields(manifest)
    record = m.get("rubric")
    if not record:
        return None, None
    try:
        return Rubric.model_validate(record), None
    except Exception as exc:  # pydantic ValidationError, or a record that is not a mapping at all
        first = str(exc).strip().splitlines()
        detail = "; ".join(line.strip() for line in first[:3]) if first else type(exc).__name__
        name = record.get("name") if isinstance(record, Mapping) else None
        return None, (f"The run's rubric record ({name or 'unnamed'}, id {m.get('rubric_id')}) could not be read "
                      f"({detail}): band edges for segments' mean scores use the default rubric "
                      f"({Rubric.default().label}) instead.")


def _rubric_of(m: Mapping[str, Any]) -> Rubric | None:
    return rubric_of_manifest(m)[0]


def _summarise(results: pd.DataFrame, invalid: Sequence[Mapping[str, Any]], rubric: Rubric | None) -> dict[str, Any]:
    try:
        return summarise(results, invalid=invalid, rubric=rubric)
    except MixedResultsError as exc:
        s = summarise(results, invalid=invalid, rubric=rubric, allow_mixed=True)
        s["mixed"] = s["mixed"] or str(exc)
        return s


def worst_segment_ids(segments: pd.DataFrame, n_worst: int) -> list[str]:
    """Ids of the ``n_worst`` lowest-scoring judged segments, lowest first (ties: input order)."""
    if n_worst < 0:
        raise ValueError(f"n_worst must be >= 0, got {n_worst!r}")
    worst = judged(segments).sort_values("score", kind="stable").head(n_worst)
    return worst["segment_id"].astype(str).tolist()


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


def _flagged_keys(results: pd.DataFrame) -> set[tuple[str, int]]:
    flagged = disagreement_rows(results).head(MAX_LISTED)
    samples = flagged["sample_index"] if "sample_index" in flagged.columns else pd.Series(0, index=flagged.index)
    return {(str(s), int(i)) for s, i in zip(flagged["segment_id"], samples.fillna(0))}


def _labels_of(m: Mapping[str, Any], labels: str | Path | pd.DataFrame | None
               ) -> tuple[pd.DataFrame | None, str | None, str | None]:
    """``(labels, source, problem)``: the given labels (a frame or a file), else the labels file the run
    recorded (:func:`recorded_labels_file`); a file that does not read is a problem sentence, not a crash."""
    from ..labels import LabelError, load_labels

    if isinstance(labels, pd.DataFrame):
        return labels, "given", None
    path, problem = (Path(labels), None) if labels is not None else recorded_labels_file(m)
    if path is None:
        return None, None, problem
    try:
        return load_labels(path), str(labels) if labels is not None else _recorded_name(m, path), None
    except (LabelError, OSError, ValueError) as exc:
        return None, None, f"The labels file {path} could not be read ({exc}): the comparison with labels is left out."


def _recorded_name(m: Mapping[str, Any], path: Path) -> str:
    for name, digest in (m.get("input_files") or {}).items():
        if Path(name).name == path.name:
            return f"{name} (sha256 {str(digest)[:12]}, as recorded by the run)"
    return str(path)


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


# -- reading a run folder, streaming ----------------------------------------------------------------
def read_report_results(folder: Path) -> pd.DataFrame:
    """The columns of the run's results dataset the report uses (:data:`REPORT_COLUMNS` present in it),
    every part in order; an empty frame with those columns when the run wrote none (e.g. a failed run)."""
    files = results_files(folder)
    if not files:
        return pd.DataFrame({c: pd.Series(dtype="float64" if c in (*DIMENSIONS, "raw_score", "score") else object)
                             for c in REPORT_COLUMNS})
    import pyarrow.parquet as pq

    present = set(pq.read_schema(files[0]).names)
    return read_results(folder, columns=[c for c in REPORT_COLUMNS if c in present])  # the runs' bounded reader


def read_jsonl_records(path: Path, problems: list[str]) -> list[dict[str, Any]]:
    """Every JSON line of ``path`` (none when absent); unreadable lines are skipped and named in
    ``problems``."""
    if not path.exists():
        return []
    records = []
    with path.open(encoding="utf-8", errors="replace") as fh:
        for n, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as exc:
                problems.append(f"{path.name} line {n} could not be read ({exc.msg}); it is left out")
    return records


def stream_audit(path: Path, wanted: set[str], problems: list[str]) -> Iterator[dict[str, Any]]:
    """The entries of an audit file (``.jsonl``, or gzip ``.jsonl.gz``) whose ``segment_id`` is in
    ``wanted``, read one line at a time.

    A line's segment id is read from its first key without parsing the whole line when it can be, so
    the lines of other segments cost little. Unreadable lines are skipped and named in ``problems``.
    """
    if not path.exists():
        if wanted:
            problems.append(f"{path.name} is missing: the worst segments' evidence cannot be shown")
        return
    opened = (gzip.open(path, "rt", encoding="utf-8", errors="replace") if path.suffix == ".gz"
              else path.open(encoding="utf-8", errors="replace"))
    with opened as fh:
        for n, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            head = _AUDIT_SEGMENT_ID.match(line)
            if head is not None:
                try:
                    if json.loads(head.group(1)) not in wanted:
                        continue
                except json.JSONDecodeError:
                    pass
            try:
                entry = json.loads(line)
            except json.JSONDecodeError as exc:
                problems.append(f"{path.name} line {n} could not be read ({exc.msg}); it is left out")
                continue
            if isinstance(entry, dict) and entry.get("segment_id") in wanted:
                yield entry


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
