"""The audit report's HTML building blocks: styles, the sorting script, escaping and small tables.

Every piece of evidence text goes through :func:`esc` (:func:`html.escape` with quotes); tables are
built from cells that are already markup (:func:`_table`, :func:`_kv`). Numbers in the scoring
arithmetic read as the scorer stored them (:func:`_num`: up to four decimals, trailing zeros dropped, so
``0.3125`` stays ``0.3125``); every other figure of the page reads through :mod:`axon_eval.display`.
Used by the other ``report_*`` modules and by ``axon_eval.reference.report`` (the reference run's page).
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..rubric import BANDS


#: Characters of a tool output shown in the report before it is cut.
TOOL_OUTPUT_CHARS = 2000
#: Characters of an error shown in the table of all segments before it is cut.
SHORT_ERROR_CHARS = 120
#: Unjudged segments, failed samples and invalid lines listed one by one; the rest are counted by reason.
MAX_LISTED = 1000
#: Short headers of the four dimensions in the table of all segments.
DIMENSION_HEADERS = {"intent_understood": "intent", "sql_quality": "SQL", "result_relevance": "rows",
                     "answer_faithfulness": "faithful"}


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
.headline{font-size:1.2em;margin:.3em 0}
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




def _cell(value: Any) -> str:
    return esc(json.dumps(value, ensure_ascii=False) if isinstance(value, dict | list) else value)


def _fmt(value: Any, digits: int) -> str:
    if _missing(value):
        return ""
    return f"{float(value):.{digits}f}"


def _short(value: Any, limit: int = SHORT_ERROR_CHARS) -> str:
    if _missing(value) or value == "":
        return ""
    text = " ".join(str(value).split())
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


