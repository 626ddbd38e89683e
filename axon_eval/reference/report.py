"""``report.html`` of a reference run: one self-contained page built with the audit report's helpers
(:mod:`axon_eval.reporting.report`: styles, escaping, tables, provenance banners).

Sections: banners (local server, failed run, dirty tree); provenance (judge, endpoint, inputs and their
hashes, git, counts, cache, tokens, cost, estimated cost, budget); with labels, the agreement counts
(false passes, false fails, review-required, overall and held-out); every ungraded response with its
reason (never hidden, never a fail); every numeric check outside tolerance; every response as a row.
Every value from the inputs goes through :func:`html.escape`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ..reporting.report import (
    _CSS,
    _kv,
    _table,
    esc,
    manifest_fields,
    provenance_banners,
    strip_credentials,
)
from ..runs.io import atomic_write_text
from .records import GradeRecord

REPORT_FILE = "report.html"
_AGREEMENT_KEYS = ("n_questions", "n_responses", "agree", "false_pass", "false_fail", "review_required", "error",
                   "other_disagreement")


def _cost(value: Any) -> str:
    return "unknown" if value is None else f"${float(value):.6f}"


def render_reference_report(manifest: Any, table: pd.DataFrame, records: Sequence[GradeRecord],
                            agreement: Mapping[str, Mapping[str, int]] | None) -> str:
    """The page (pure)."""
    m = manifest_fields(manifest)
    title = f"axon_eval reference grading: {m.get('run_id')}"
    banners = provenance_banners(m, [m.get("judge_id") or ""])
    endpoint = m.get("judge_endpoint")
    counts = m.get("counts") or {}
    pairs = [
        ("run", esc(m.get("run_id"))), ("status", esc(m.get("status"))),
        ("judge id", f"<code>{esc(m.get('judge_id'))}</code>"),
        ("judge", f"model {esc(m.get('judge_model'))}, prompt {esc(m.get('prompt_version'))}, spec "
                  f"<code>{esc(m.get('judge_spec'))}</code>"),
        ("judge endpoint", esc(strip_credentials(str(endpoint))) if endpoint else "none (code judge)"),
        ("git commit", f"<code>{esc(m.get('git_commit'))}</code> (dirty: {esc(m.get('git_dirty'))})"),
        ("started / ended (UTC)", f"{esc(m.get('started_at'))} / {esc(m.get('ended_at'))}"),
        ("input files", "<br>".join(f"{esc(p)}<br><span class='muted'>sha256 {esc(h)}</span>"
                                    for p, h in (m.get("input_files") or {}).items())),
        ("responses", esc(f"{counts.get('turns')} selected, {counts.get('judged')} graded, {counts.get('unjudged')} "
                          f"ungraded by the judge, {counts.get('invalid')} stopped by their evidence")),
        ("cache hits / misses", f"{esc(m.get('cache_hits'))} / {esc(m.get('cache_misses'))}"),
        ("tokens in / out / cache read / cache write",
         " / ".join(esc(m.get(k)) for k in ("input_tokens", "output_tokens", "cache_read_tokens",
                                             "cache_creation_tokens"))),
        ("cost (USD)", esc(_cost(m.get("cost_usd")))),
        ("estimated cost / budget (USD)", esc(f"{_cost(m.get('estimated_cost_usd'))} / "
                                              f"{'none' if m.get('max_cost_usd') is None else _cost(m['max_cost_usd'])}")),
    ]
    parts = ["<!DOCTYPE html>", "<html lang='en'><head><meta charset='utf-8'>",
             f"<title>{esc(title)}</title><style>{_CSS}</style></head><body>", f"<h1>{esc(title)}</h1>",
             *(f'<p class="banner">{esc(b)}</p>' for b in banners),
             "<p class='muted'>Each response is graded against reference values computed read-only from the "
             "simulated business: a judge assesses each rubric criterion with a quote; code verifies the quotes, "
             "re-checks every numeric claim against its tolerance and derives the grade.</p>",
             "<h2>Provenance</h2>", _kv(pairs)]
    parts += [f'<p class="warn">{esc(w)}</p>' for w in m.get("warnings") or ()]
    grades = table["grade"].value_counts().to_dict() if len(table) else {}
    parts += ["<h2>Grades</h2>", _table(["grade", "responses"], [(esc(g), esc(n)) for g, n in sorted(grades.items())],
                                       numeric=[1])]
    if agreement is not None:
        parts += ["<h2>Agreement with the constructed labels</h2>",
                  "<p class='muted'>The labels are constructed (each response written with a known defect), not "
                  "human judgements. False passes, false fails and review-required are counted separately.</p>",
                  _table(["split", *_AGREEMENT_KEYS],
                         [(esc(split), *(esc(c.get(k)) for k in _AGREEMENT_KEYS)) for split, c in agreement.items()],
                         numeric=list(range(1, len(_AGREEMENT_KEYS) + 1)))]
    ungraded = [r for r in records if not r.graded]
    parts += [f"<h2>Ungraded responses ({len(ungraded)})</h2>",
              _table(["response", "kind", "reason"],
                     [(esc(r.response_id), esc(r.error_kind), esc(r.error)) for r in ungraded])]
    failures = [(r.response_id, c) for r in records for c in r.numeric_failures]
    parts += [f"<h2>Numeric checks outside tolerance ({len(failures)})</h2>",
              _table(["response", "reference id", "token", "unit", "reference", "converted", "rule", "tolerance",
                      "difference", "error"],
                     [(esc(rid), esc(c.get("reference_id")), esc(c.get("token")), esc(c.get("declared_unit")),
                       esc(c.get("reference")), esc(c.get("converted")), esc(c.get("rule")), esc(c.get("tolerance")),
                       esc(c.get("difference")), esc(c.get("error"))) for rid, c in failures])]
    cols = [c for c in ("response_id", "split", "expected_grade", "grade", "outcome", "cached", "cost_usd", "reasons")
            if c in table.columns]
    parts += [f"<h2>All responses ({len(table)})</h2>",
              _table(cols, [tuple(esc("" if pd.isna(v) else v) if not isinstance(v, bool) else esc(v)
                                  for v in row) for row in table[cols].itertuples(index=False)]),
              "<h2>Details</h2><p class='muted'>Every criterion's status, quote and reason and every numeric check "
              "are in <code>grades.jsonl</code>; the reference rows the judge saw in <code>evidence.jsonl</code>.</p>",
              "</body></html>"]
    return "\n".join(parts)


def write_reference_report(folder: str | Path, manifest: Any, table: pd.DataFrame, records: Sequence[GradeRecord],
                           agreement: Mapping[str, Mapping[str, int]] | None) -> Path:
    """Write ``report.html`` into ``folder``; returns its path."""
    return atomic_write_text(Path(folder) / REPORT_FILE, render_reference_report(manifest, table, records, agreement))


__all__ = ["REPORT_FILE", "render_reference_report", "write_reference_report"]
