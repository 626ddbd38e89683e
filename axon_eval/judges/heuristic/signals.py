"""Named signals of one segment: the inputs of the fitted offline judge (spec ``heuristic-fitted``).

:func:`extract_signals` turns one :class:`~axon_eval.view.EvidenceView` (the same input the
rule judge ``HeuristicJudge`` receives) into a flat mapping of named numbers.
Every signal is listed in :data:`SIGNALS` with its family, the dimensions it informs and what it
measures. Signals read only the view: never labels, turn ids or scenario names.

Families
--------
``execution``
    how the trajectory's SQL ran: the final statement's status (error, timeout, blocked, a probe
    such as a ``LIMIT 5`` sample or a schema lookup as the last statement), no SQL at all, every
    execution failed, a failure recovered from.
``result``
    the answering statement's rows: empty, one row of NULLs, the share of NULL cells, impossible
    values (a share or percentage above 100 or below 0, a negative count), duplicate rows.
``shape``
    the row count against the question's shape ("what is the", "how many" -> one row; "list",
    "each", "per" -> many rows).
``literals``
    the question's numbers, dates and names found in the answering statement's conditions
    (WHERE, HAVING, JOIN ON), its arithmetic or its LIMIT.
``cues``
    one count of derived-measure cues the SQL does not honour (ratio, rate, share, growth -> a
    division; average -> AVG or a division; total -> SUM or COUNT; how many -> COUNT or SUM;
    a superlative -> ORDER BY with LIMIT, or MAX/MIN; each/per -> GROUP BY or PARTITION BY).
``agreement``
    agreement across the trajectory's successful attempts (do retries return the same rows?).
``faithfulness``
    the answer's claims as the existing faithfulness check reads them: share supported, counts of
    unsupported and unverifiable claims, instruction-like text, no answer captured.
``complexity``
    joins, nesting and length of the answering statement. A separate family because it grades the
    question more than the answer; the validation reports the model with and without it.
``stacked``
    the existing rule judge's four subscores (scaled to 0-1) and its verdict: a stacked model.

Missing values never reach the model: each signal has a documented value when it does not apply
(for example ``literal_coverage`` is 1 when the question names no literal).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import sqlglot
from sqlglot import exp

from ...evidence import SqlStep
from ...view import extract_mentions


@dataclass(frozen=True)
class Signal:
    """One named signal: its family, the dimensions it informs and what it measures."""

    name: str
    family: str
    dimensions: tuple[str, ...]
    doc: str


_I, _S, _R, _F = "intent_understood", "sql_quality", "result_relevance", "answer_faithfulness"
#: The verdict model (P(not good)) reads every signal; this marks the dimensions each one informs.
SIGNALS: tuple[Signal, ...] = (
    Signal("final_failed", "execution", (_S, _R), "1 when the last executed statement ended in error or timeout"),
    Signal("final_blocked", "execution", (_S, _R), "1 when the last SQL statement was blocked by a guardrail"),
    Signal("final_probe", "execution", (_S, _R),
           "1 when the last successful statement is a probe (a small LIMIT sample without filters or "
           "aggregates, or a schema lookup)"),
    Signal("no_sql", "execution", (_I, _S, _R), "1 when the trajectory ran no SQL at all"),
    Signal("all_failed", "execution", (_S, _R), "1 when every executed statement failed"),
    Signal("recovered", "execution", (_S,), "1 when a failed statement was followed by a successful one"),
    Signal("empty_result", "result", (_R,), "1 when no successful statement returned a row"),
    Signal("single_null", "result", (_R,), "1 when the answering statement returned one row of NULLs only"),
    Signal("null_share", "result", (_R,), "share of NULL cells in the answering statement's shown rows"),
    Signal("impossible_value", "result", (_S, _R),
           "count of cells that cannot be right (a share or percentage column above 100 or below 0, a "
           "negative count)"),
    Signal("duplicate_share", "result", (_S, _R), "share of shown rows that repeat an earlier shown row"),
    Signal("one_expected_many_rows", "shape", (_I, _R),
           "1 when the question asks for one value (what is the, how many) and the answer has several rows"),
    Signal("many_expected_one_row", "shape", (_I, _R),
           "1 when the question asks for a list (list, each, per, every) and the answer has at most one row"),
    Signal("literal_coverage", "literals", (_I, _S),
           "share of the question's numbers, dates and names found in the answering statement's "
           "conditions, arithmetic or LIMIT (1 when the question names none)"),
    Signal("literals_missing", "literals", (_I,), "count of the question's literals not found there"),
    Signal("cue_mismatch", "cues", (_I, _S), "count of derived-measure cues the SQL does not honour"),
    Signal("ok_attempts", "agreement", (_S, _R), "log(1 + number of successful non-probe statements)"),
    Signal("retry_disagrees", "agreement", (_S, _R),
           "1 when an earlier successful attempt of the same width returned other rows than the answering one"),
    Signal("retry_agrees", "agreement", (_S, _R),
           "1 when an earlier successful attempt returned the same rows as the answering one"),
    Signal("answer_missing", "faithfulness", (_F,), "1 when no answer text was captured"),
    Signal("claims_supported_share", "faithfulness", (_F,),
           "share of the answer's checkable claims the evidence supports (1 when there are none)"),
    Signal("claims_unsupported", "faithfulness", (_F,), "count of claims the evidence contradicts or lacks"),
    Signal("claims_unverifiable", "faithfulness", (_F,), "count of claims that rest on rows the view does not show"),
    Signal("injection", "faithfulness", (_F,), "1 when the evidence or the answer holds instruction-like text"),
    Signal("n_joins", "complexity", (_S,), "number of JOINs in the answering statement"),
    Signal("nesting", "complexity", (_S,), "number of subqueries and CTEs in the answering statement"),
    Signal("sql_length", "complexity", (_S,), "log(1 + number of whitespace tokens of the answering statement)"),
    Signal("h_intent", "stacked", (_I,), "the rule judge's intent_understood subscore / 10"),
    Signal("h_sql", "stacked", (_S,), "the rule judge's sql_quality subscore / 10"),
    Signal("h_relevance", "stacked", (_R,), "the rule judge's result_relevance subscore / 10"),
    Signal("h_faithfulness", "stacked", (_F,), "the rule judge's answer_faithfulness subscore / 10 (1 when null)"),
    Signal("h_good", "stacked", (_I, _S, _R, _F), "1 when the rule judge's verdict is good"),
    Signal("h_poor", "stacked", (_I, _S, _R, _F), "1 when the rule judge's verdict is poor"),
)
#: The names of the signals, in catalogue order (the column order of a signal frame).
SIGNAL_NAMES: tuple[str, ...] = tuple(s.name for s in SIGNALS)
FAMILIES: tuple[str, ...] = tuple(dict.fromkeys(s.family for s in SIGNALS))
BY_NAME: dict[str, Signal] = {s.name: s for s in SIGNALS}


def family_of(name: str) -> str:
    """The family of the signal ``name``."""
    return BY_NAME[name].family


def signals_for(dimension: str) -> tuple[str, ...]:
    """The names of the signals that inform ``dimension`` (the inputs of its subscore model)."""
    return tuple(s.name for s in SIGNALS if dimension in s.dimensions)


# =============================================================================================
# SQL facts (sqlglot, memoised per statement text)
# =============================================================================================
@dataclass(frozen=True)
class StatementFacts:
    """What the signals need of one SQL statement."""

    parsed: bool
    has_where: bool = False
    has_agg: bool = False
    has_avg: bool = False
    has_sum: bool = False
    has_count: bool = False
    has_minmax: bool = False
    has_div: bool = False
    has_group: bool = False
    has_partition: bool = False
    has_order: bool = False
    limit: int | None = None
    schema_lookup: bool = False
    joins: int = 0
    nesting: int = 0
    tokens: int = 0
    condition_text: str = ""


_SCHEMA = re.compile(r"\b(sqlite_master|sqlite_schema|information_schema|pragma|describe|show\s+tables)\b", re.I)


@lru_cache(maxsize=4096)
def statement_facts(sql: str) -> StatementFacts:
    """The :class:`StatementFacts` of one statement (``parsed=False`` when sqlglot cannot read it)."""
    tokens = len(sql.split())
    schema = bool(_SCHEMA.search(sql))
    try:
        tree = sqlglot.parse_one(sql, read="sqlite")
    except Exception:  # noqa: BLE001 - any parse failure is a fact, not an error
        return StatementFacts(False, schema_lookup=schema, tokens=tokens)
    if tree is None:
        return StatementFacts(False, schema_lookup=schema, tokens=tokens)
    conditions: list[str] = []
    for node in tree.find_all(exp.Where, exp.Having, exp.Join, exp.Limit):
        target = node.args.get("on") if isinstance(node, exp.Join) else node
        if target is not None:
            conditions.append(target.sql(dialect="sqlite"))
    for node in tree.find_all(exp.Div, exp.Mul, exp.Sub, exp.Add):
        conditions.append(node.sql(dialect="sqlite"))
    limit = None
    lim = tree.args.get("limit")
    if lim is not None:
        try:
            limit = int(lim.expression.sql()) if lim.expression is not None else None
        except (ValueError, AttributeError):
            limit = None
    funcs = {type(f).__name__.lower() for f in tree.find_all(exp.AggFunc)}
    return StatementFacts(
        parsed=True,
        has_where=tree.find(exp.Where) is not None or tree.find(exp.Having) is not None,
        has_agg=bool(funcs),
        has_avg="avg" in funcs,
        has_sum="sum" in funcs,
        has_count="count" in funcs,
        has_minmax=bool(funcs & {"max", "min"}),
        has_div=tree.find(exp.Div) is not None or tree.find(exp.IntDiv) is not None,
        has_group=tree.find(exp.Group) is not None,
        has_partition=any(w.args.get("partition_by") for w in tree.find_all(exp.Window)),
        has_order=tree.find(exp.Order) is not None,
        limit=limit,
        schema_lookup=schema,
        joins=sum(1 for _ in tree.find_all(exp.Join)),
        nesting=sum(1 for _ in tree.find_all(exp.Subquery)) + sum(1 for _ in tree.find_all(exp.CTE)),
        tokens=tokens,
        condition_text=" ".join(conditions).lower(),
    )


def is_probe(step: SqlStep) -> bool:
    """A probe: a schema lookup, or a small sample (``LIMIT`` <= 5) with no filter and no aggregate."""
    f = statement_facts(step.sql)
    if f.schema_lookup:
        return True
    return f.parsed and f.limit is not None and f.limit <= 5 and not f.has_where and not f.has_agg


# =============================================================================================
# Question shape and cues
# =============================================================================================
_ONE = re.compile(r"^\s*(?:what|which|who)\s+(?:is|was|were|are)\s+the\b|\bhow\s+(?:many|much)\b", re.I)
_MANY = re.compile(r"\b(?:list|each|every|per(?!\s*cent)|breakdown|break\s+down|for\s+all|by\s+(?:month|year|week|"
                   r"day|quarter|region|category|country|city|team|hotel|route|branch|course|station))\b|"
                   r"\btop\s+(?:\d+|two|three|four|five|ten)\b", re.I)
_CUES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("ratio", re.compile(r"\b(?:ratio|rate|share|percent(?:age)?|proportion|growth|grew|per\s*cent)\b|%", re.I)),
    ("average", re.compile(r"\b(?:average|mean|avg)\b", re.I)),
    ("total", re.compile(r"\b(?:total|sum|combined|altogether)\b", re.I)),
    ("count", re.compile(r"\bhow\s+many\b", re.I)),
    ("superlative", re.compile(r"\b(?:most|highest|lowest|top|best|worst|largest|smallest|biggest|fewest|least|"
                               r"maximum|minimum|longest|shortest|busiest|earliest|latest)\b", re.I)),
    ("grouping", re.compile(r"\b(?:each|per(?!\s*cent)|every)\b", re.I)),
)


def question_shape(question: str) -> tuple[bool, bool]:
    """``(expects_one, expects_many)``: does the question ask for one value, or for a list?"""
    many = bool(_MANY.search(question))
    one = bool(_ONE.search(question)) and not many
    return one, many


def cue_mismatches(question: str, f: StatementFacts) -> list[str]:
    """The derived-measure cues of ``question`` the statement ``f`` does not honour (see the module docstring)."""
    if not f.parsed:
        return []
    honoured = {
        "ratio": f.has_div,
        "average": f.has_avg or f.has_div,
        "total": f.has_sum or f.has_count,
        "count": f.has_count or f.has_sum,
        "superlative": (f.has_order and f.limit is not None) or f.has_minmax,
        "grouping": f.has_group or f.has_partition,
    }
    return [name for name, pattern in _CUES if pattern.search(question) and not honoured[name]]


# =============================================================================================
# Literals and rows
# =============================================================================================
def _literal_forms(mention: Any) -> list[str]:
    text = mention.text.lower()
    forms = [text, text.replace(",", "")]
    if mention.kind == "number" and mention.value is not None:
        v = float(mention.value)
        if v.is_integer():
            forms.append(str(int(v)))
        if mention.percent:
            forms.append(f"{v / 100:g}")
    return list(dict.fromkeys(forms))


def literal_coverage(question: str, f: StatementFacts) -> tuple[float, int]:
    """``(share found, count missing)`` of the question's literals in the statement's conditions."""
    mentions = [m for m in extract_mentions(question, None) if m.source in ("question", "both")]
    if not mentions or not f.parsed:
        return 1.0, 0
    found = sum(1 for m in mentions if any(form in f.condition_text for form in _literal_forms(m)))
    return found / len(mentions), len(mentions) - found


_SHARE_COL = re.compile(r"(?:pct|percent|share)", re.I)
_COUNT_COL = re.compile(r"(?:^|_)(?:count|cnt|num|n|number|qty|quantity)(?:_|$)|_count$|^count_", re.I)


def _number(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    x = float(v)
    return x if math.isfinite(x) else None


def impossible_cells(step: SqlStep) -> int:
    """Cells that cannot be right: a share or percentage column outside [0, 100], a negative count."""
    bad = 0
    for j, col in enumerate(step.columns):
        share, count = bool(_SHARE_COL.search(col)), bool(_COUNT_COL.search(col))
        if not (share or count):
            continue
        for row in step.rows:
            x = _number(row[j]) if j < len(row) else None
            if x is None:
                continue
            if (share and (x > 100 or x < 0)) or (count and x < 0):
                bad += 1
    return bad


def _rows_key(step: SqlStep) -> tuple[tuple[str, ...], ...]:
    return tuple(sorted(tuple(repr(c) for c in row) for row in step.rows))


def _total(step: SqlStep) -> int:
    return step.row_count if step.row_count is not None else len(step.rows)


# =============================================================================================
# The signal vector
# =============================================================================================
def extract_signals(view: Any, judged: tuple[Any, dict[str, Any]] | None = None) -> dict[str, float]:
    """Every signal of :data:`SIGNALS` for one view, as a name -> float mapping (no missing values).

    Parameters
    ----------
    view : EvidenceView
        The segment as a judge sees it.
    judged : tuple, optional
        ``(verdict, details)`` of ``HeuristicJudge.assess`` on the same view; computed with the default rule judge when not given.

    Returns
    -------
    dict
        One float per signal, in ``SIGNAL_NAMES`` order.
    """
    if judged is None:
        from .judge import HeuristicJudge

        judged = _default_judge(HeuristicJudge).assess(view)
    verdict, details = judged
    sql_steps = [s for s in view.steps if isinstance(s, SqlStep)]
    executed = [s for s in sql_steps if s.status in ("ok", "error", "timeout")]
    ok = [s for s in sql_steps if s.status == "ok"]
    substantive = [s for s in ok if not is_probe(s)]
    answering = substantive[-1] if substantive else (ok[-1] if ok else None)
    facts = statement_facts(answering.sql) if answering is not None else StatementFacts(False)
    out: dict[str, float] = {}

    # execution
    out["final_failed"] = float(bool(executed) and executed[-1].status in ("error", "timeout"))
    out["final_blocked"] = float(bool(sql_steps) and sql_steps[-1].status == "blocked")
    out["final_probe"] = float(bool(ok) and is_probe(ok[-1]) and ok[-1] is sql_steps[-1])
    out["no_sql"] = float(not sql_steps)
    out["all_failed"] = float(bool(executed) and all(s.status != "ok" for s in executed))
    failed_at = [i for i, s in enumerate(executed) if s.status != "ok"]
    out["recovered"] = float(bool(failed_at) and any(s.status == "ok" for s in executed[failed_at[0] + 1:]))

    # result
    rows = answering.rows if answering is not None else []
    total = _total(answering) if answering is not None else 0
    out["empty_result"] = float(answering is None or total == 0)
    cells = [c for row in rows for c in row]
    out["single_null"] = float(len(rows) == 1 and bool(cells) and all(c is None for c in cells))
    out["null_share"] = (sum(c is None for c in cells) / len(cells)) if cells else 0.0
    out["impossible_value"] = float(impossible_cells(answering)) if answering is not None else 0.0
    keys = [tuple(repr(c) for c in row) for row in rows]
    out["duplicate_share"] = (1 - len(set(keys)) / len(keys)) if len(keys) >= 2 else 0.0

    # shape
    one, many = question_shape(view.question)
    out["one_expected_many_rows"] = float(answering is not None and one and total > 1)
    out["many_expected_one_row"] = float(answering is not None and many and total <= 1)

    # literals and cues
    coverage, missing = literal_coverage(view.question, facts)
    out["literal_coverage"] = coverage
    out["literals_missing"] = float(missing)
    out["cue_mismatch"] = float(len(cue_mismatches(view.question, facts)))

    # agreement across attempts
    out["ok_attempts"] = math.log1p(len(substantive))
    earlier = [s for s in substantive[:-1] if len(s.columns) == len(answering.columns)] if answering else []
    key = _rows_key(answering) if answering is not None else ()
    out["retry_disagrees"] = float(any(_rows_key(s) != key for s in earlier))
    out["retry_agrees"] = float(any(_rows_key(s) == key for s in earlier))

    # faithfulness (the existing check's reading of the claims)
    claims = details.get("claims", [])
    supported = sum(1 for c in claims if c.get("status") == "supported")
    unsupported = len(details.get("unsupported_claims", []))
    out["answer_missing"] = float(view.answer is None)
    out["claims_supported_share"] = supported / (supported + unsupported) if supported + unsupported else 1.0
    out["claims_unsupported"] = float(unsupported)
    out["claims_unverifiable"] = float(len(details.get("unverifiable_claims", [])))
    out["injection"] = float(bool(details.get("injections")))

    # complexity
    out["n_joins"] = float(facts.joins)
    out["nesting"] = float(facts.nesting)
    out["sql_length"] = math.log1p(facts.tokens)

    # stacked: the rule judge's own outputs
    out["h_intent"] = _scaled(verdict.intent_understood)
    out["h_sql"] = _scaled(verdict.sql_quality)
    out["h_relevance"] = _scaled(verdict.result_relevance)
    out["h_faithfulness"] = _scaled(verdict.answer_faithfulness)
    out["h_good"] = float(verdict.verdict == "good")
    out["h_poor"] = float(verdict.verdict == "poor")
    return {name: out[name] for name in SIGNAL_NAMES}


def _scaled(score: int | None) -> float:
    return 1.0 if score is None else score / 10.0


_JUDGES: dict[type, Any] = {}


def _default_judge(cls: type) -> Any:
    if cls not in _JUDGES:
        _JUDGES[cls] = cls()
    return _JUDGES[cls]
