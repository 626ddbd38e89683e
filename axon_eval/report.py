"""The HTML audit report of a run (``python -m axon_eval report RUN`` -> ``<run>/report.html``).

One self-contained file (figures embedded as base64 PNG, styles and a few lines of sorting script
inline; no external file, no network) that can be mailed on its own and stays small for large runs:

* first page: banners for anything that changes what the numbers mean (a judge run against a **local
  server**, a **simulated** judge, mixed judges or rubrics, a failed run, a dirty working tree), then the
  run's provenance (judge id, model, prompt version, rubric id and its weights, caps and bands, git
  commit and dirty flag, endpoint, input file hashes, times, counts, cache, tokens, cost);
* the summary, counting segments (a repeated run's segments by their mean score, with the spread);
* the figures;
* every unjudged segment and every invalid input line with its reason (never hidden, never a 0; beyond
  :data:`MAX_LISTED` the rest are counted by reason, and every unjudged segment is also a row of the
  table of all segments with its status and reason);
* the ``n_worst`` lowest-scoring segments **in full**: question, trajectory, SQL, the rows the judge saw,
  the answer, the judge's explanation and the whole scoring arithmetic of every sample;
* every segment as one row of a sortable table (segment id, score, band, the four subscores, caps,
  judge verdict, status, short error).

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
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .rubric import BANDS, CAP_FACTS, DIMENSIONS, Rubric
from .runs import Run, atomic_write_text
from .runs.io import read_parquet
from .runs.load import audit_path
from .urls import InvalidEndpoint, is_loopback_url, mask_url, sanitize_url
from .summaries import (
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
    "model", "prompt_version", "rubric_id", "status", "error",
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
    elif m.get("status") == "running":
        banners.append("This run never finished (status running): its results may be incomplete")
    if m.get("git_dirty") is True:
        banners.append(f"Run from a DIRTY working tree at commit {m.get('git_commit')}: the code that produced "
                       "these numbers is not exactly that commit")
    return banners


def _provenance_section(m: Mapping[str, Any], banners: Sequence[str] = ()) -> str:
    rubric = m.get("rubric") or {}
    counts = m.get("counts") or {}
    files = m.get("input_files") or {}
    endpoint = m.get("judge_endpoint")
    pairs = [
        ("run", esc(m.get("run_id"))), ("status", esc(m.get("status"))), ("kind", esc(m.get("kind"))),
        ("name", esc(m.get("name"))),
        ("judge id", f"<code>{esc(m.get('judge_id'))}</code>"),
        ("judge", f"model {esc(m.get('judge_model'))}, prompt {esc(m.get('prompt_version'))}"
                  + (f", spec <code>{esc(m.get('judge_spec'))}</code>" if m.get("judge_spec") else "")),
        ("judge endpoint", esc(strip_credentials(str(endpoint))) if endpoint else "not recorded"
                           + (" (provider default)" if "judge_endpoint" in m else "")),
        ("rubric id", f"{esc(m.get('rubric_name'))}@<code>{esc(m.get('rubric_id'))}</code>"),
        ("weights", esc(json.dumps(rubric.get("weights")))), ("caps", esc(json.dumps(rubric.get("caps")))),
        ("bands", esc(json.dumps(rubric.get("bands")))), ("row horizon", esc(rubric.get("row_horizon"))),
        ("git commit", f"<code>{esc(m.get('git_commit'))}</code> (dirty: {esc(m.get('git_dirty'))})"),
        ("started / ended (UTC)", f"{esc(m.get('started_at'))} / {esc(m.get('ended_at'))}"),
        ("input files", "<br>".join(f"{esc(p)}<br><span class='muted'>sha256 {esc(h)}</span>"
                                    for p, h in files.items()) or "none recorded"),
        ("counts", esc(json.dumps(counts))),
        ("cache hits / misses", f"{esc(m.get('cache_hits'))} / {esc(m.get('cache_misses'))}"),
        ("tokens in / out / cache read / cache write",
         " / ".join(esc(m.get(k)) for k in ("input_tokens", "output_tokens", "cache_read_tokens",
                                             "cache_creation_tokens"))),
        ("cost (USD)", esc(m.get("cost_usd")) if m.get("cost_usd") is not None else "unknown"),
    ]
    if m.get("source_run"):
        pairs.append(("source run", esc(m.get("source_run"))))
    out = ["<h2>Provenance</h2>", _kv(pairs)]
    for w in m.get("warnings") or ():
        if not any(str(w)[:30] == b[:30] for b in banners):  # already said in a banner above
            out.append(f'<p class="warn">{esc(w)}</p>')
    return "\n".join(out)


# -- summary --------------------------------------------------------------------------------------
def _summary_section(s: Mapping[str, Any]) -> str:
    out = ["<h2>Summary</h2>"]
    if s["mixed"]:
        out.append(f'<p class="warn">{esc(s["mixed"])}</p>')
    per = s.get("samples_per_segment") or {}
    samples = ""
    if s.get("repeated"):
        each = per.get("min") if per.get("min") == per.get("max") else f"{per.get('min')}-{per.get('max')}"
        samples = (f" x {esc(each)} judge samples ({s['rows']} results rows); each segment is counted once, by "
                   "the mean over its judged samples")
    failed = f", {s['failed_samples']} failed sample(s) of judged segments" if s.get("failed_samples") else ""
    out.append(f"<p>{s['segments']} segment(s){samples}: {s['judged']} judged, {s['unjudged']} unjudged{failed}; "
               f"{s['invalid']} invalid input line record(s). Shares are of the judged segments.</p>")
    rows = [(_band(b), s["band_counts"][b],
             "" if s["band_shares"][b] is None else f"{s['band_shares'][b]:.1%}") for b in BANDS]
    out.append(_table(["band" + (" (of the mean score)" if s.get("repeated") else ""), "segments", "share"],
                      rows, numeric=(1, 2)))
    sc = s["score"]
    if sc["mean"] is not None:
        what = "Per-segment mean score" if s.get("repeated") else "Score"
        out.append(f"<p>{what}: mean {sc['mean']:.1f}, median {sc['median']:.1f}, min {sc['min']:.1f}, "
                   f"max {sc['max']:.1f}. {s['n_top']} segment(s) scored 100.</p>")
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


# -- assembling the page --------------------------------------------------------------------------
def _rubric_of(m: Mapping[str, Any]) -> Rubric | None:
    try:
        return Rubric.model_validate(m["rubric"]) if m.get("rubric") else None
    except Exception:  # an unreadable rubric record: band edges fall back to the default (noted)
        return None


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
                        n_worst: int = DEFAULT_N_WORST, audit_problems: Sequence[str] = ()) -> str:
    """The report page from its parts (pure).

    ``manifest``: the run manifest (model or dict); ``results``: the results frame; ``invalid``: invalid
    line records; ``audit``: audit entries, consumed once as a stream (only the worst segments' entries
    are kept); ``figures``: ``(name, data URI)`` pairs; ``audit_problems``: sentences about audit lines
    that could not be read.
    """
    m = manifest_fields(manifest)
    rubric = _rubric_of(m)
    summary = _summarise(results, invalid, rubric)
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
        "<p class='muted'>Scores measure whether each captured turn is internally consistent (question, SQL, "
        "rows, answer), as graded by the judge named below and turned into points by plain code. They are "
        "not fact-checked against the world.</p>",
        _provenance_section(m, banners), _summary_section(summary), _figures_section(figures),
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
    from .plots import embed_png

    if not folder.is_dir():
        return []
    return [(p.name, embed_png(p)) for p in sorted(folder.glob("*.png"))]


def _figure_uris_from_results(results: pd.DataFrame, rubric: Rubric | None) -> list[tuple[str, str]]:
    from .plots import embed_png, standard_figures

    if results.empty or not (results["status"] == JUDGED).any():
        return []
    return [(f"{stem}.png", embed_png(fig)) for stem, fig in standard_figures(results, rubric).items()]


def render_report(run: Run, *, n_worst: int = DEFAULT_N_WORST) -> str:
    """The report of a run already in memory (what :func:`axon_eval.runs.evaluate` returns): figures
    from its ``figures/`` folder, else drawn from its results."""
    m = manifest_fields(run.manifest)
    figures = _figure_uris_from_folder(Path(run.run_dir) / "figures") or \
        _figure_uris_from_results(run.results, _rubric_of(m))
    iter_audit = getattr(run, "iter_audit", None)
    audit = iter_audit() if callable(iter_audit) else run.audit
    return render_report_parts(m, run.results, list(run.invalid), audit, figures, n_worst=n_worst)


# -- reading a run folder, streaming ----------------------------------------------------------------
def read_report_results(path: Path) -> pd.DataFrame:
    """The columns of ``results.parquet`` the report uses (:data:`REPORT_COLUMNS` present in the file);
    an empty frame with those columns when the file is absent (e.g. a failed run)."""
    if not path.exists():
        return pd.DataFrame({c: pd.Series(dtype="float64" if c in (*DIMENSIONS, "raw_score", "score") else object)
                             for c in REPORT_COLUMNS})
    import pyarrow.parquet as pq

    present = set(pq.read_schema(path).names)
    return read_parquet(path, columns=[c for c in REPORT_COLUMNS if c in present])  # the runs' bounded reader


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
                 n_worst: int = DEFAULT_N_WORST) -> Path:
    """Render the report of ``run_folder`` and write it atomically (default ``<run>/report.html``).

    Reads ``manifest.json``, the report's columns of ``results.parquet`` and ``invalid.jsonl``, embeds
    the PNGs of ``figures/`` (or draws the standard figures when there are none), and streams
    ``audit.jsonl`` keeping only the ``n_worst`` lowest-scoring segments' entries. Raises
    ``FileNotFoundError`` naming a folder without ``manifest.json``. A gzip ``audit.jsonl.gz`` is read the
    same way.
    """
    folder = Path(run_folder)
    manifest_path = folder / "manifest.json"
    if not manifest_path.exists():
        raise FileNotFoundError(f"{folder} is not a run folder: no manifest.json")
    m = json.loads(manifest_path.read_text(encoding="utf-8"))
    results = read_report_results(folder / "results.parquet")
    problems: list[str] = []
    invalid = read_jsonl_records(folder / "invalid.jsonl", problems)
    rubric = _rubric_of(m)
    wanted = set(worst_segment_ids(segment_table(results, rubric), n_worst))
    figures = _figure_uris_from_folder(folder / "figures") or _figure_uris_from_results(results, rubric)
    page = render_report_parts(m, results, invalid, stream_audit(audit_path(folder), wanted, problems),
                               figures, n_worst=n_worst, audit_problems=problems)
    path = Path(output) if output is not None else folder / "report.html"
    atomic_write_text(path, page)
    return path
