"""The audit report's segments: the worst ones in full and every one as a row of a sortable table.

* :func:`render_steps`: the trajectory as the judge saw it (SQL, status, error, the shown rows; a tool
  output cut at :data:`~axon_eval.reporting.report_html.TOOL_OUTPUT_CHARS` characters);
* :func:`render_arithmetic`: the whole scoring arithmetic of one score, so a reader retraces it:
  ``raw_score = 10 * sum(w_d * s_d) / sum(w_d)`` over the observed dimensions, each cap as
  ``min(score, cap)``, the score rounded to 0.1 and banded;
* :func:`worst_segment_ids`: the ``n_worst`` lowest-scoring judged segments, shown in full;
* :func:`segments_table_html`: every segment as one row (an unjudged segment has no score, never a 0).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..rubric import BANDS, DIMENSIONS
from ..summaries import JUDGED, judged
from .report_html import DIMENSION_HEADERS, TOOL_OUTPUT_CHARS, _band, _cell, _fmt, _missing, _num, _short, _table, esc


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


def worst_segment_ids(segments: pd.DataFrame, n_worst: int) -> list[str]:
    """Ids of the ``n_worst`` lowest-scoring judged segments, lowest first (ties: input order)."""
    if n_worst < 0:
        raise ValueError(f"n_worst must be >= 0, got {n_worst!r}")
    worst = judged(segments).sort_values("score", kind="stable").head(n_worst)
    return worst["segment_id"].astype(str).tolist()


