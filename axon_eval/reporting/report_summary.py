"""The audit report's summary sections: the headline, the summary with every figure's interval, the cross-check.

* :func:`headline_figures`: every headline figure with its 95% interval and n
  (:func:`axon_eval.stats.intervals.headline_table`: a cluster bootstrap over turns, Wilson's interval
  for a share whose turns have one segment each);
* :func:`headline_section`: the page's opening lines, the mean score and the band shares each as
  ``estimate (lo to hi)`` with its n (``axon_eval.reporting.summary_intervals.headline_table_lines``,
  the same lines ``python -m axon_eval run`` prints);
* the summary (counts, band shares, the score's spread, the lowest segment, the judge's verdict against
  the band), the cross-check of the judge's verdict against the band
  (:func:`axon_eval.summaries.cross_check`), the figures, the unjudged segments and the invalid lines.

Shares read as percentages and every estimate as ``estimate (lo to hi)`` through :mod:`axon_eval.display`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

from ..display import fmt_number, fmt_share
from ..rubric import BANDS, Rubric
from ..stats.intervals import format_headline_table, headline_table
from ..summaries import JUDGED, MixedResultsError, summarise
from .report_html import MAX_LISTED, _band, _table, esc


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


def headline_section(table: pd.DataFrame | None, problem: str | None, *, simulated: bool = False) -> str:
    """The page's opening lines (markup): the mean score and the share in each band, each as ``estimate
    (lo to hi)`` with its 95% interval and n, ``SIMULATED`` before each for a simulated judge
    (``axon_eval.reporting.summary_intervals.headline_table_lines``); the sentence why there is no
    headline when the results mix judges or rubrics, or that no segment was judged."""
    from .summary_intervals import headline_table_lines

    if table is None:
        why = problem or "No headline: no segment was judged."
        return f'<div id="headline"><p class="warn"><b>{esc(why)}</b></p></div>'
    lines = headline_table_lines(table, simulated=simulated)
    return ('<div id="headline">' + "".join(f'<p class="headline"><b>{esc(line)}</b></p>' for line in lines)
            + "<p class='muted'>Every figure with its interval and n is in the summary below.</p></div>")


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
                   f"({fmt_share(varies['share'])}).</p>")
    if s["lowest"]:
        lo = s["lowest"]
        out.append(f"<p>Lowest: {esc(lo['segment_id'])} scored {lo['score']:.1f}: {esc(lo['reason'])}</p>")
    if s["verdict_agreement"] is not None:
        out.append(f"<p>The judge's own verdict equals the band on {fmt_share(s['verdict_agreement'])} of judged "
                   "segments (a mismatch is a note, never a change of score).</p>")
    for note in s.get("notes") or ():
        out.append(f'<p class="warn">{esc(note)}</p>')
    return "\n".join(out)


def _cross_check_section(check: Mapping[str, Any] | None) -> str:
    """The first page's cross-check (:func:`axon_eval.summaries.cross_check`): how many judged segments the
    judge's own verdict rates worse than their band, by kind, and every one of them (up to
    :data:`MAX_LISTED`) with its score, band and verdict and its band under each packaged candidate rubric,
    naming the candidates that move it down (in a ``<details>`` element, closed, so the headline above stays
    on the first screen); then what each candidate changes and how many it moves."""
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
           f"<details id='cross-check-list'><summary>the {fmt_number(min(len(items), MAX_LISTED))} segment(s), "
           "each with its band under every candidate rubric</summary>",
           _table(["segment", "score", "band", "judge verdict", *(f"under {n}" for n in names), "moved down by"],
                  rows, numeric=(1,)), "</details>"]
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


def _summarise(results: pd.DataFrame, invalid: Sequence[Mapping[str, Any]], rubric: Rubric | None) -> dict[str, Any]:
    try:
        return summarise(results, invalid=invalid, rubric=rubric)
    except MixedResultsError as exc:
        s = summarise(results, invalid=invalid, rubric=rubric, allow_mixed=True)
        s["mixed"] = s["mixed"] or str(exc)
        return s


