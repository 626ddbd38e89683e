"""The HTML audit report of a run (``python -m axon_eval report RUN`` -> ``<run>/report.html``).

One self-contained page (figures are linked from the run's ``figures/`` folder) that lets a reader
retrace every score by hand:

* the run: judge, rubric (weights, caps, bands, row horizon), times, git commit, input file hashes,
  counts, cache and cost;
* the headline summary (band counts and shares, score range, lowest score and its reason);
* every **unjudged** segment and every **invalid** input line, with its reason (never hidden);
* per segment: each dimension's value, nominal and effective weight and contribution, the raw score,
  every cap (triggered / applied), the final score and band, the judge's verdict and explanation, the
  notes, and the SQL and rows the judge saw.

Every piece of evidence text (questions, SQL, rows, answers, explanations, errors) goes through
:func:`html.escape`; nothing from a capture is ever emitted as markup.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .rubric import BANDS, DIMENSIONS
from .runs import Run, atomic_write_text, load_run
from .summaries import MixedResultsError, summarise

#: Characters of a tool output shown in the report before it is cut.
TOOL_OUTPUT_CHARS = 2000

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em auto;max-width:1100px;
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
.muted{color:#666;font-size:.9em}
img{max-width:100%;border:1px solid #eee;margin:.3em 0}
"""


def esc(value: Any) -> str:
    """HTML-escaped text of any value (``None`` -> empty string)."""
    if value is None:
        return ""
    return html.escape(str(value), quote=True)


def _num(value: Any, digits: int = 4) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int | float):
        if value != value:  # NaN
            return "NaN"
        return f"{value:.{digits}f}".rstrip("0").rstrip(".") if isinstance(value, float) else str(value)
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


# -- sections -----------------------------------------------------------------------------------------
def _run_section(run: Run) -> str:
    m = run.manifest
    rubric = m.rubric or {}
    pairs = [
        ("run", esc(m.run_id)), ("status", esc(m.status)), ("kind", esc(m.kind)), ("name", esc(m.name)),
        ("judge", f"{esc(m.judge_id)} (model {esc(m.judge_model)}, prompt {esc(m.prompt_version)}"
                  + (f", spec {esc(m.judge_spec)}" if m.judge_spec else "") + ")"),
        ("rubric", f"{esc(m.rubric_name)}@{esc(m.rubric_id)}"),
        ("weights", esc(json.dumps(rubric.get("weights")))), ("caps", esc(json.dumps(rubric.get("caps")))),
        ("bands", esc(json.dumps(rubric.get("bands")))), ("row horizon", esc(rubric.get("row_horizon"))),
        ("started / ended (UTC)", f"{esc(m.started_at)} / {esc(m.ended_at)}"),
        ("git", f"{esc(m.git_commit)} (dirty: {esc(m.git_dirty)})"),
        ("input files", "<br>".join(f"{esc(p)}<br><span class='muted'>sha256 {esc(h)}</span>"
                                    for p, h in m.input_files.items()) or "none recorded"),
        ("counts", esc(json.dumps(m.counts.model_dump()))),
        ("cache hits / misses", f"{esc(m.cache_hits)} / {esc(m.cache_misses)}"),
        ("tokens in / out / cache read / cache write",
         " / ".join(esc(v) for v in (m.input_tokens, m.output_tokens, m.cache_read_tokens,
                                     m.cache_creation_tokens))),
        ("cost (USD)", esc(m.cost_usd) if m.cost_usd is not None else "unknown"),
    ]
    if m.source_run:
        pairs.append(("source run", esc(m.source_run)))
    out = ["<h2>Run</h2>", _kv(pairs)]
    if m.status == "failed":
        out.append(f'<p class="fail">This run FAILED: {esc(m.error)}</p>')
    for w in m.warnings:
        out.append(f'<p class="warn">{esc(w)}</p>')
    return "\n".join(out)


def _summary_section(run: Run) -> str:
    try:
        s = summarise(run.results, invalid=run.invalid)
    except MixedResultsError as exc:
        s = summarise(run.results, invalid=run.invalid, allow_mixed=True)
        s["mixed"] = s["mixed"] or str(exc)
    out = ["<h2>Summary</h2>"]
    if s["mixed"]:
        out.append(f'<p class="warn">{esc(s["mixed"])}</p>')
    out.append(f"<p>{s['segments']} segment(s), {s['rows']} result row(s): {s['judged']} judged, "
               f"{s['unjudged']} unjudged; "
               f"{s['invalid']} invalid input line record(s). Shares are of the judged.</p>")
    rows = [(_band(b), s["band_counts"][b],
             "" if s["band_shares"][b] is None else f"{s['band_shares'][b]:.1%}") for b in BANDS]
    out.append(_table(["band", "count", "share"], rows, numeric=(1, 2)))
    sc = s["score"]
    if sc["mean"] is not None:
        out.append(f"<p>Score: mean {sc['mean']:.1f}, median {sc['median']:.1f}, min {sc['min']:.1f}, "
                   f"max {sc['max']:.1f}. {s['n_top']} segment(s) scored 100.</p>")
    if s["lowest"]:
        lo = s["lowest"]
        out.append(f"<p>Lowest: <a href='#seg-{esc(lo['segment_id'])}-0'>{esc(lo['segment_id'])}</a> "
                   f"scored {lo['score']:.1f}: {esc(lo['reason'])}</p>")
    if s["verdict_agreement"] is not None:
        out.append(f"<p>The judge's own verdict equals the band on {s['verdict_agreement']:.0%} of judged "
                   "segments (a mismatch is a note, never a change of score).</p>")
    return "\n".join(out)


def _figures_section(run: Run) -> str:
    figs = sorted(run.figures_dir.glob("*.png")) if run.figures_dir.exists() else []
    if not figs:
        return ""
    imgs = "".join(f"<figure><img src='figures/{esc(p.name)}' alt='{esc(p.stem)}'>"
                   f"<figcaption class='muted'>{esc(p.name)}</figcaption></figure>" for p in figs)
    return "<h2>Figures</h2>" + imgs


def _unjudged_section(run: Run) -> str:
    results = run.results
    u = results.loc[results["status"] != "judged"] if len(results) else results
    out = [f"<h2>Unjudged segments ({len(u)})</h2>",
           "<p class='muted'>A failed or unusable judgement leaves the segment unjudged: it has no score "
           "(never a 0) and is listed here with its reason.</p>"]
    if len(u):
        rows = [(f"<a href='#seg-{esc(r['segment_id'])}-{int(r['sample_index'])}'>{esc(r['segment_id'])}</a>",
                 esc(r["turn_id"]), esc(r["judge_id"]), esc(r["error"])) for r in u.to_dict("records")]
        out.append(_table(["segment", "turn", "judge", "reason"], rows))
    else:
        out.append("<p>None.</p>")
    return "\n".join(out)


def _invalid_section(run: Run) -> str:
    out = [f"<h2>Invalid input lines ({len(run.invalid)})</h2>",
           "<p class='muted'>Lines of the evidence file that could not be used; one record per problem.</p>"]
    if run.invalid:
        rows = [(esc(i.get("source")), esc(i.get("line")), esc(i.get("turn_id")), esc(i.get("field")),
                 esc(i.get("message"))) for i in run.invalid]
        out.append(_table(["file", "line", "turn", "field", "reason"], rows))
    else:
        out.append("<p>None.</p>")
    return "\n".join(out)


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


def _segment_section(entry: Mapping[str, Any]) -> str:
    score = entry.get("score")
    seg = esc(entry["segment_id"])
    sample = int(entry.get("sample_index", 0))
    if score is not None:
        caps = [c["name"] for c in score["caps"] if c["applied"]]
        line = f"{seg}: <b>{_num(score['score'], 1)}</b> {_band(score['band'])}" + \
            (f" <span class='muted'>capped: {esc(', '.join(caps))}</span>" if caps else "")
    else:
        line = f"{seg}: {_band(None)} <span class='muted'>{esc(entry.get('error'))}</span>"
    if sample:
        line += f" <span class='muted'>(sample {sample})</span>"
    body = [f"<p><b>question</b>: {esc(entry.get('question'))}</p>",
            f"<p class='muted'>turn {esc(entry.get('turn_id'))} (segment {esc(entry.get('segment_index'))} of "
            f"{esc(entry.get('n_segments'))}), {esc(entry.get('region'))} / {esc(entry.get('surface'))} / "
            f"{esc(entry.get('client'))}, captured {esc(entry.get('captured_at'))}; judge {esc(entry.get('judge_id'))}, "
            f"rubric {esc(entry.get('rubric_id'))}, row horizon {esc(entry.get('row_horizon'))}, view sha256 "
            f"<code>{esc(entry.get('view_sha256'))}</code></p>"]
    if score is not None:
        body.append(render_arithmetic(score))
    else:
        body.append(f"<p class='unjudged'>Unjudged: {esc(entry.get('error'))}. No score.</p>")
    verdict = entry.get("verdict")
    if verdict:
        body.append(f"<p><b>judge explanation</b>: {esc(verdict.get('explanation'))}</p>")
    facts = entry.get("facts") or {}
    body.append("<p class='muted'>trajectory facts: "
                + esc(", ".join(f"{k}={v}" for k, v in facts.items())) + "</p>")
    body.append("<h4>What the judge saw</h4>")
    body.append(render_steps(entry.get("steps") or []))
    answer = entry.get("answer")
    body.append("<p><b>answer</b>:</p>" + (f"<pre>{esc(answer)}</pre>" if answer is not None
                                          else "<p class='muted'>no answer captured (composed by the client's "
                                               "own AI): faithfulness is null</p>"))
    return (f"<details id='seg-{seg}-{sample}'><summary>{line}</summary>\n" + "\n".join(body) + "</details>")


def render_report(run: Run) -> str:
    """The full HTML report of a loaded run (pure: no file access beyond listing figures)."""
    m = run.manifest
    title = f"axon_eval audit report: {m.run_id}"
    parts = [
        "<!DOCTYPE html>", "<html lang='en'><head><meta charset='utf-8'>",
        f"<title>{esc(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{esc(title)}</h1>",
        "<p class='muted'>Scores measure whether each captured turn is internally consistent (question, SQL, "
        "rows, answer), as graded by the judge named below and turned into points by plain code. They are "
        "not fact-checked against the world.</p>",
        _run_section(run), _summary_section(run), _figures_section(run), _unjudged_section(run),
        _invalid_section(run),
        f"<h2>Segments ({len(run.audit)})</h2>",
        "<p class='muted'>Each entry: the arithmetic (values, nominal and effective weights, contributions, raw "
        "score, caps, final score, band, notes), then the SQL and the rows the judge saw.</p>",
    ]
    parts.extend(_segment_section(entry) for entry in run.audit)
    parts.append("</body></html>")
    return "\n".join(parts)


def write_report(run_folder: str | Path, *, output: str | Path | None = None) -> Path:
    """Render the report of ``run_folder`` and write it atomically (default ``<run>/report.html``)."""
    run = load_run(run_folder)
    path = Path(output) if output is not None else run.run_dir / "report.html"
    atomic_write_text(path, render_report(run))
    return path
