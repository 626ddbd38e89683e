"""SQL facts: sqlglot analysis of one statement (tables, identifiers, literals, filters, years,
aggregates, ORDER BY, LIMIT), cached per SQL string, and where a measure appears in it."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.dialects.dialect import Dialect

from .failure_classes import (fan_out_findings, integer_divisions, left_joins_made_inner, means_of_means,
                              not_null_columns, output_units, union_all_counts, zero_filled_means)
from .lexicon import DEFAULT, Lexicon
from .text import _ISO_DATE, _YEAR_MAX, _YEAR_MIN


# =============================================================================================
# SQL analysis (sqlglot, cached per SQL string)
# =============================================================================================
@dataclass(frozen=True)
class SqlFilter:
    """One ``column <op> literal`` condition found in a WHERE / HAVING / JOIN ON clause."""

    column: str
    op: str
    value: str
    is_string: bool

    @property
    def specific(self) -> bool:
        """A filter on one specific thing: a proper name, an ISO date, or an id number."""
        if self.is_string:
            return bool(_ISO_DATE.fullmatch(self.value)) or any(c.isupper() for c in self.value[:1])
        return self.column == "id" or self.column.endswith("_id")

    @property
    def is_date(self) -> bool:
        """A string literal that is an ISO date or a date prefix (``2024-03-01``, ``2024-03%``)."""
        return self.is_string and bool(_DATE_PREFIX.match(self.value))

    @property
    def is_code(self) -> bool:
        """A string literal written as a code rather than words: all capitals (``TX``, ``EMEA``),
        letters and digits mixed (``SKU-1042``, ``B2B``), or one short lower-case token (``tx``)."""
        v = self.value.strip()
        if not self.is_string or not v or self.is_date or " " in v:
            return False
        letters = [c for c in v if c.isalpha()]
        if not letters:
            return True
        return (v.isupper() and len(letters) <= 6) or any(c.isdigit() for c in v) or (v.islower() and len(v) <= 3)


_YEAR_PREFIX = re.compile(r"^((?:19|20)\d\d)-(?:0[1-9]|1[0-2]|%)")
_DATE_PREFIX = re.compile(r"^(?:19|20)\d\d-(?:(?:0[1-9]|1[0-2])(?:-\d\d)?(?:[ T][\d:.]*)?%?|%)$")


@dataclass(frozen=True)
class SqlAnalysis:
    """Facts about one SQL statement.

    ``identifiers``: lower-case parts of referenced columns, tables and function names (output
    aliases excluded); ``aliases``: output alias parts; ``literals``: string literals anywhere;
    ``filters``: literal conditions in WHERE/HAVING/JOIN ON (any scope, CTEs included);
    ``years``: years in WHERE literals (numbers and dates); ``condition_columns``: columns used in
    WHERE/JOIN ON; ``order``: (expression text, descending) of the outer ORDER BY; ``limit``.
    """

    parsed: bool
    kind: str
    tables: frozenset[str] = frozenset()
    identifiers: frozenset[str] = frozenset()
    aliases: frozenset[str] = frozenset()
    literals: frozenset[str] = frozenset()
    filters: tuple[SqlFilter, ...] = ()
    years: frozenset[int] = frozenset()
    aggregates: frozenset[str] = frozenset()
    count_only: bool = False
    group_by: bool = False
    order: tuple[tuple[str, bool], ...] = ()
    limit: int | None = None
    condition_columns: frozenset[str] = frozenset()
    all_columns: frozenset[str] = frozenset()
    error: str = ""
    #: string literals anywhere, as written (WHERE, CASE, IN lists ...)
    raw_literals: tuple[str, ...] = ()
    #: (output column name, source table) of the outer SELECT's plain column projections
    output_sources: tuple[tuple[str, str], ...] = ()
    #: the argument of each COUNT: ``"*"``, a column name, or ``"distinct <column>"``
    count_args: tuple[str, ...] = ()
    #: the outer FROM's first table
    from_table: str = ""
    #: a division or multiplication in the SELECT list (a rate, a share)
    arithmetic: bool = False
    #: an aggregate over a CASE/IIF/FILTER (a conditional count or sum)
    conditional_agg: bool = False
    #: parts of table names only (identifiers minus the columns and functions)
    table_parts: frozenset[str] = frozenset()
    #: numeric thresholds ``<expression> <op> <number>`` in WHERE/HAVING/JOIN ON, op gt/gte/lt/lte,
    #: whatever the expression (a column, or an aggregate such as ``count(*)`` in HAVING); ``column``
    #: holds the expression's SQL text
    thresholds: tuple[SqlFilter, ...] = ()
    #: bare columns beside COUNT/SUM/AVG in an outer SELECT without GROUP BY (one arbitrary row's value)
    ungrouped_columns: tuple[str, ...] = ()
    #: aggregates of a parent column over a one-to-many join (:func:`.failure_classes.fan_out_findings`)
    fan_out: tuple[str, ...] = ()
    #: (output column, unit word) of the outer SELECT (:func:`.failure_classes.output_units`)
    output_units: tuple[tuple[str, str], ...] = ()
    #: outer columns computed by a division with no decimal in it (:func:`.failure_classes.integer_divisions`)
    integer_divisions: tuple[tuple[int, str, bool], ...] = ()
    #: COUNTs over a UNION ALL (:func:`.failure_classes.union_all_counts`)
    union_all_counts: tuple[str, ...] = ()
    #: columns filtered IS NOT NULL anywhere (:func:`.failure_classes.not_null_columns`)
    not_null_columns: frozenset[str] = frozenset()
    #: AVG over per-group AVGs (:func:`.failure_classes.means_of_means`)
    means_of_means: tuple[str, ...] = ()
    #: LEFT JOINs a WHERE test on the right table makes inner (:func:`.failure_classes.left_joins_made_inner`)
    left_joins_made_inner: tuple[str, ...] = ()
    #: AVG of a COALESCE(x, 0) (:func:`.failure_classes.zero_filled_means`)
    zero_filled_means: tuple[str, ...] = ()

    @property
    def has_where(self) -> bool:
        return bool(self.filters) or bool(self.condition_columns)


_NAME_SEPARATORS = re.compile(r"[_\-\s.]+")


# Cached because the same few hundred column, table and function names are split tens of thousands of
# times per pass (every statement, every check); a tuple so no caller can mutate the shared value.
@functools.lru_cache(maxsize=8192)
def _parts(name: str) -> tuple[str, ...]:
    """The lower-case words of an identifier (``home_team.Score`` -> ``("home", "team", "score")``)."""
    return tuple(p for p in _NAME_SEPARATORS.split(name.lower()) if p)


_KINDS = ((exp.Select, "select"), (exp.Union, "select"), (exp.Insert, "insert"), (exp.Update, "update"),
          (exp.Delete, "delete"), (exp.Drop, "drop"), (exp.Create, "create"), (exp.Alter, "alter"))


_COMPARISONS = (exp.EQ, exp.NEQ, exp.In, exp.Like, exp.GT, exp.GTE, exp.LT, exp.LTE)


def _literal_year(lit: exp.Literal, years: set[int]) -> None:
    text = lit.this
    if lit.is_string:
        d = _ISO_DATE.search(text) or _YEAR_PREFIX.match(text)
        if d:
            years.add(int(d.group(1)))
        elif len(text) == 4 and text[:2] in ("19", "20") and text.isdigit():
            years.add(int(text))
        return
    try:
        v = float(text)
    except ValueError:
        return
    if v.is_integer() and _YEAR_MIN <= v <= _YEAR_MAX:
        years.add(int(v))


def _literal(n: exp.Expression) -> exp.Literal | None:
    if isinstance(n, exp.Literal):
        return n
    if isinstance(n, exp.Neg) and isinstance(n.this, exp.Literal) and not n.this.is_string:
        return exp.Literal(this=f"-{n.this.this}", is_string=False)
    return None


def _comparison_filters(node: exp.Expression, filters: list[SqlFilter], thresholds: list[SqlFilter]) -> None:
    """``column <op> literal`` (either side; ``IN`` lists; a negative number) -> :class:`SqlFilter` s in
    ``filters``; a numeric ``<expression> <op> number`` with op gt/gte/lt/lte -> ``thresholds``."""
    if isinstance(node, exp.In):
        col = node.this
        lits = [e for e in node.expressions if isinstance(e, exp.Literal)]
    else:
        left, right = node.this, node.expression
        col, lit_node = (left, right) if _literal(right) is not None else (right, left)
        lit_value = _literal(lit_node)
        lits = [lit_value] if lit_value is not None else []
    if not lits:
        return
    op = type(node).__name__.lower()
    if op in ("gt", "gte", "lt", "lte") and col is node.expression:  # literal on the left: flip
        op = {"gt": "lt", "gte": "lte", "lt": "gt", "lte": "gte"}[op]
    if op in ("gt", "gte", "lt", "lte") and not lits[0].is_string and col is not None:
        text = col.name.lower() if isinstance(col, exp.Column) else _SQLITE_SQL.generate(col).lower()
        thresholds.append(SqlFilter(text, op, lits[0].this, False))
    if not isinstance(col, exp.Column):
        return
    for lit in lits:
        filters.append(SqlFilter(col.name.lower(), op, lit.this, lit.is_string))


#: The node kinds :func:`analyse_sql` collects, first match wins (``exp.Where`` stands for every
#: condition holder: WHERE, HAVING and JOIN, kept in one list so their walk order is kept).
_BUCKET_KINDS = (exp.Column, exp.Literal, exp.Table, exp.Alias, exp.Where, exp.Group)
_CONDITION_HOLDERS = (exp.Where, exp.Having, exp.Join)
#: node class -> (its bucket in :data:`_BUCKET_KINDS` or ``None``, is it an ``exp.Func``). A tree has
#: thousands of nodes but a few dozen classes: deciding the isinstance chain once per class, not per
#: node, is most of the cost of the walk. Emptied by ``clear_caches`` like the other memos.
_NODE_KINDS: dict[type, tuple[type | None, bool]] = {}


#: The SQLite dialect and an ORDER BY key generator, built once: ``parse_one(read="sqlite")`` and
#: ``Expression.sql(dialect="sqlite")`` build a new dialect object (and generator) on every call.
#: Configuration, not a memo of inputs: they hold nothing of the statements they read.
_SQLITE = Dialect.get_or_raise("sqlite")
_SQLITE_SQL = _SQLITE.generator()


def _node_kind(cls: type) -> tuple[type | None, bool]:
    bucket = next((kind for kind in _BUCKET_KINDS
                   if issubclass(cls, _CONDITION_HOLDERS if kind is exp.Where else kind)), None)
    _NODE_KINDS[cls] = (bucket, issubclass(cls, exp.Func))
    return _NODE_KINDS[cls]


@functools.lru_cache(maxsize=4096)
def analyse_sql(sql: str) -> SqlAnalysis:
    """Parse ``sql`` (SQLite dialect) and collect :class:`SqlAnalysis` facts; cached per string.

    A statement sqlglot cannot parse gives ``parsed=False`` with the parser's message in ``error``.
    """
    try:
        tree = sqlglot.parse_one(sql, read=_SQLITE)
    except Exception as exc:  # sqlglot raises ParseError / TokenError; both mean "unparseable"
        return SqlAnalysis(parsed=False, kind="unknown", error=str(exc).splitlines()[0][:160])
    if tree is None:
        return SqlAnalysis(parsed=False, kind="unknown", error="empty statement")
    kind = next((k for cls, k in _KINDS if isinstance(tree, cls)), type(tree).__name__.lower())
    # one walk over the tree, bucketed by node kind (each find_all is a full walk of its own)
    buckets: dict[type, list[Any]] = {kind: [] for kind in _BUCKET_KINDS}
    funcs: list[exp.Func] = []
    for node in tree.walk():
        cls = type(node)
        bucket, is_func = _NODE_KINDS.get(cls) or _node_kind(cls)
        if bucket is not None:
            buckets[bucket].append(node)
        if is_func:
            funcs.append(node)
    columns: list[exp.Column] = buckets[exp.Column]
    literal_nodes: list[exp.Literal] = buckets[exp.Literal]
    table_nodes: list[exp.Table] = buckets[exp.Table]
    alias_nodes: list[exp.Alias] = buckets[exp.Alias]
    group_by = bool(buckets[exp.Group])
    # WHERE / HAVING / JOIN ON in walk order (the order of ``filters``)
    conditions: list[exp.Expression] = []
    for node in buckets[exp.Where]:
        cond = node.args.get("on") if isinstance(node, exp.Join) else node.this
        if cond is not None:
            conditions.append(cond)
    tables = frozenset(tb.name.lower() for tb in table_nodes if tb.name)
    alias_names = {a.alias.lower() for a in alias_nodes if a.alias}
    all_columns = frozenset(c.name.lower() for c in columns if c.name)
    identifiers: set[str] = set()
    for name in all_columns | tables:
        identifiers.update(_parts(name))
    aggregates: set[str] = set()
    agg_nodes: list[exp.AggFunc] = []
    for f in funcs:
        fname = (f.sql_name() if hasattr(f, "sql_name") else type(f).__name__).lower()
        identifiers.update(_parts(fname))
        if isinstance(f, exp.AggFunc):
            aggregates.add(fname)
            agg_nodes.append(f)
    literals = {lit.this.lower() for lit in literal_nodes if lit.is_string}
    numeric_literals = [lit.this for lit in literal_nodes if not lit.is_string]
    identifiers.update(numeric_literals)
    aliases: set[str] = set()
    for a in alias_names:
        aliases.update(_parts(a))

    filters: list[SqlFilter] = []
    thresholds: list[SqlFilter] = []
    years: set[int] = set()
    cond_cols: set[str] = set()
    for cond in conditions:
        for node in cond.walk():
            if isinstance(node, exp.Column):
                if node.name:
                    cond_cols.add(node.name.lower())
            elif isinstance(node, exp.Literal):
                _literal_year(node, years)
            elif isinstance(node, exp.Between):
                col, low, high = node.this, node.args.get("low"), node.args.get("high")
                for op, lit in (("gte", low), ("lte", high)):
                    if not isinstance(lit, exp.Literal):
                        continue
                    if isinstance(col, exp.Column):
                        filters.append(SqlFilter(col.name.lower(), op, lit.this, lit.is_string))
                    if not lit.is_string and col is not None:
                        text = col.name.lower() if isinstance(col, exp.Column) else _SQLITE_SQL.generate(col).lower()
                        thresholds.append(SqlFilter(text, op, lit.this, False))
            elif isinstance(node, _COMPARISONS):
                _comparison_filters(node, filters, thresholds)

    order: tuple[tuple[str, bool], ...] = ()
    limit: int | None = None
    outer = tree
    if isinstance(outer, exp.Select | exp.Union):
        o = outer.args.get("order")
        if o is not None:
            order = tuple((_SQLITE_SQL.generate(ordered.this).lower(), bool(ordered.args.get("desc")))
                          for ordered in o.expressions)
        lim = outer.args.get("limit")
        if lim is not None:
            expr = lim.args.get("expression") or lim.this
            try:
                limit = int(expr.this) if isinstance(expr, exp.Literal) else None
            except (TypeError, ValueError):
                limit = None
    count_only = bool(aggregates) and aggregates <= {"count"}
    raw_literals = tuple(dict.fromkeys(lit.this for lit in literal_nodes if lit.is_string))
    alias_to_table: dict[str, str] = {}
    for tb in table_nodes:
        if tb.name:
            alias_to_table[(tb.alias or tb.name).lower()] = tb.name.lower()
    output_sources: list[tuple[str, str]] = []
    count_args: list[str] = []
    from_table = ""
    arithmetic = conditional = False
    ungrouped: list[str] = []
    select = tree if isinstance(tree, exp.Select) else None
    if select is not None:
        bare: list[str] = []
        summarising = False  # an aggregate other than MIN/MAX in the outer SELECT list
        for proj in select.expressions:
            inner = proj.this if isinstance(proj, exp.Alias) else proj
            name = (proj.alias_or_name or "").lower()
            if isinstance(inner, exp.Column) and inner.table:
                output_sources.append((name, alias_to_table.get(inner.table.lower(), inner.table.lower())))
            if isinstance(inner, exp.Column) and inner.name:
                bare.append(inner.name.lower())
            if any(not isinstance(a, exp.Min | exp.Max) for a in proj.find_all(exp.AggFunc)) \
                    and not any(True for _ in proj.find_all(exp.Window)):
                summarising = True
            if any(True for _ in proj.find_all(exp.Div, exp.Mul)):
                arithmetic = True
        if summarising and bare and select.args.get("group") is None:
            # SQLite returns one arbitrary row's value for a bare column beside COUNT/SUM/AVG without
            # GROUP BY (beside MIN/MAX it is the extreme row's, which is meaningful)
            ungrouped = bare
        frm = select.args.get("from") or select.args.get("from_")
        first = frm.find(exp.Table) if frm is not None else None
        if first is not None and first.name:
            from_table = first.name.lower()
    for agg in agg_nodes:
        if isinstance(agg, exp.Count):
            arg = agg.this
            if isinstance(arg, exp.Distinct):
                cols = [c.name.lower() for c in arg.find_all(exp.Column)]
                count_args.append("distinct " + (cols[0] if cols else "*"))
            elif isinstance(arg, exp.Column):
                count_args.append(arg.name.lower())
            elif arg is None or isinstance(arg, exp.Star):
                count_args.append("*")
            else:
                count_args.append("expr")
        if any(True for _ in agg.find_all(exp.Case, exp.If)) or isinstance(agg.parent, exp.Filter):
            conditional = True
    column_and_function_parts: set[str] = set()
    for name in all_columns:
        column_and_function_parts.update(_parts(name))
    table_parts = frozenset(p for tname in tables for p in _parts(tname)) - column_and_function_parts
    fan_out = fan_out_findings(tree) if len(tables) > 1 and agg_nodes else ()
    units = output_units(select, _parts)
    int_divs = integer_divisions(select) if arithmetic else ()
    union_counts = union_all_counts(tree) if "count" in aggregates and "union" in sql_lower_for_union(tree) else ()
    return SqlAnalysis(parsed=True, kind=kind, tables=tables, identifiers=frozenset(identifiers),
                       aliases=frozenset(aliases), literals=frozenset(literals), filters=tuple(filters),
                       years=frozenset(years), aggregates=frozenset(aggregates), count_only=count_only,
                       group_by=group_by, order=order, limit=limit, condition_columns=frozenset(cond_cols),
                       all_columns=all_columns, raw_literals=raw_literals, output_sources=tuple(output_sources),
                       count_args=tuple(count_args), from_table=from_table, arithmetic=arithmetic,
                       conditional_agg=conditional, table_parts=table_parts, thresholds=tuple(thresholds),
                       ungrouped_columns=tuple(ungrouped), fan_out=fan_out, output_units=units,
                       integer_divisions=int_divs, union_all_counts=union_counts,
                       not_null_columns=not_null_columns(tree) if count_args else frozenset(),
                       means_of_means=means_of_means(tree) if "avg" in aggregates else (),
                       left_joins_made_inner=left_joins_made_inner(tree) if len(tables) > 1 else (),
                       zero_filled_means=zero_filled_means(tree) if "avg" in aggregates else ())


def sql_lower_for_union(tree: exp.Expression) -> str:
    """``"union"`` when the statement holds a UNION anywhere (a cheap gate for the UNION ALL walk)."""
    return "union" if any(True for _ in tree.find_all(exp.Union)) else ""


def measure_in_sql(measure: str, sql: SqlAnalysis, lexicon: Lexicon = DEFAULT) -> str:
    """Where ``measure`` appears in ``sql``: ``"computed"`` (a column, table, function or literal),
    ``"alias"`` (only as an output name), or ``""`` (absent)."""
    stems = lexicon.measures[measure][1]

    def hit(parts: Iterable[str]) -> bool:
        return any(p.startswith(s) for p in parts for s in stems)

    literal_parts = [p for lit in sql.literals for p in _parts(lit)]
    # a table's name computes a measure only when its rows are counted ("how many orders": COUNT(*)
    # FROM orders); a summed measure must be a column, a function or a literal
    # (a listing of a table's rows also shows them: no aggregate at all)
    parts = sql.identifiers if (not sql.aggregates or "count" in sql.aggregates) else sql.identifiers - sql.table_parts
    if hit(parts) or hit(literal_parts):
        return "computed"
    if hit(sql.aliases):
        return "alias"
    return ""


