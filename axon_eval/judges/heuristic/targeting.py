"""Targeting: which statement answers the question, and how its filters, measures and ordering
compare with what the question asks (shared by the intent, SQL and relevance checks)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from .evidence_index import StepInfo, _mention_key
from .lexicon import QUALIFIERS
from .question import QuestionProfile
from .sql_facts import SqlFilter, _parts, measure_in_sql
from .text import _ISO_DATE, _TOKEN, _norm, _stem


def step_grounding(profile: QuestionProfile, info: StepInfo) -> float:
    """How well a statement matches the question (used to pick the statement that answers it).

    +2 per question measure the SQL computes, +2 per question entity in the filters or rows,
    +1 per question year in the filters, +1 when a top-N question meets a LIMIT/ORDER BY, +1 per
    question word stem found in the SQL's identifiers or literals.
    """
    sql = info.sql
    score = 0.0
    for meas in profile.measures:
        if measure_in_sql(meas, sql) == "computed":
            score += 2
    literal_text = " ".join(sql.literals)
    for ent in profile.entities:
        e = ent.lower()
        if e in literal_text or e in info.text:
            score += 2
    score += len(profile.years & sql.years)
    if profile.top_n and (sql.limit or sql.order):
        score += 1
    sql_words = {_stem(p) for p in sql.identifiers} | {_stem(p) for lit in sql.literals for p in _parts(lit)}
    score += 0.5 * len(profile.stems & sql_words)
    return score


def pick_answer_step(profile: QuestionProfile, steps: Sequence[StepInfo]) -> StepInfo | None:
    """The statement that answers this question: the best-grounded one (ties: the later one)."""
    best, best_score = None, -1.0
    for info in steps:
        s = step_grounding(profile, info)
        if s >= best_score:
            best, best_score = info, s
    return best


@dataclass
class Targeting:
    """Targeting problems of the answering statement (shared by intent, SQL and relevance)."""

    wrong_scope: list[str] = field(default_factory=list)  # answers a different question
    narrowing: list[str] = field(default_factory=list)  # filters that cut the asked-for set
    unfiltered: list[str] = field(default_factory=list)  # asked entity not used as a filter
    missing_measure: list[str] = field(default_factory=list)
    absent_entities: list[str] = field(default_factory=list)


def _literal_conflict(profile: QuestionProfile, literal: str) -> str | None:
    """A category literal that contradicts the question's qualifier (``quarter-final`` vs ``semi-finals``)."""
    words = [_stem(w) for w in _TOKEN.findall(_norm(literal))]
    if not words or any(ch.isupper() for ch in literal[:1]) or _ISO_DATE.fullmatch(literal):
        return None
    qwords = [_stem(w) for w in _TOKEN.findall(profile.norm)]
    head = words[-1]
    if head not in qwords:
        return None
    phrase = " ".join(words)
    if phrase in " ".join(qwords):
        return None
    for i, w in enumerate(qwords):
        if w == head:
            prev = qwords[i - 1] if i > 0 else ""
            lit_prev = words[-2] if len(words) > 1 else ""
            if prev in QUALIFIERS and prev != lit_prev:
                return f"the question says \"{prev} {head}\" but the SQL filters '{literal}'"
    return None


_PARTICIPANT_PARTS = frozenset({"team", "score", "side", "club", "player", "points", "goals", "tries"})


def assess_targeting(profile: QuestionProfile, info: StepInfo, horizon: int,
                     other_steps: Sequence[StepInfo] = ()) -> Targeting:
    """Compare the question with the statement that answers it (years, entities, categories,
    measures, ordering, one-sided joins, narrowing and missing filters).

    ``other_steps``: the other successful statements; an entity they filter on or show in their rows
    is not "absent" (the turn retrieved it), though the answering statement still decides scope.
    """
    t = Targeting()
    sql = info.sql
    if not sql.parsed:
        return t
    # period
    if profile.years:
        if sql.years and not (profile.years & sql.years):
            t.wrong_scope.append(f"the question asks about {_years(profile.years)} but the SQL filters "
                                 f"{_years(sql.years)}")
        elif not sql.years and not any(str(y) in info.text for y in profile.years):
            t.wrong_scope.append(f"the question asks about {_years(profile.years)} but the SQL has no "
                                 "period filter, so the rows cover every season")
    # entities
    literal_text = " | ".join(sql.literals)
    specific = [f for f in sql.filters if f.specific and f.value.lower() not in profile.norm
                and _norm(f.value) not in profile.norm]
    for ent in profile.entities:
        e = ent.lower()
        if e in literal_text:
            continue
        if e in info.text:
            t.unfiltered.append(ent) if info.truncated else None
            continue
        if info.truncated and _mention_key(ent) not in info.absent_mentions:
            t.unfiltered.append(ent)
        elif any(e in " | ".join(o.sql.literals) or e in o.text for o in other_steps):
            continue
        elif specific:
            f = specific[0]
            t.wrong_scope.append(f"the question names {ent} but the SQL filters {f.column} = "
                                 f"{_quote_lit(f)} and {ent} is not in the rows")
        else:
            t.absent_entities.append(ent)
    for d in profile.dates:
        if d not in literal_text and info.truncated:
            t.unfiltered.append(d)
    # categories and measures
    for lit in sql.literals:
        conflict = _literal_conflict(profile, lit)
        if conflict:
            t.wrong_scope.append(conflict)
    for meas in sorted(profile.measures):
        where = measure_in_sql(meas, sql)
        if where == "alias" and sql.count_only:
            t.wrong_scope.append(f"the question asks for {meas} but the SQL only names a COUNT '{meas}' "
                                 "without any condition that selects them")
        elif where == "":
            t.missing_measure.append(meas)
    # ordering direction
    if profile.direction and sql.order:
        key, desc = sql.order[0]
        if (profile.direction == "asc") == desc and "min(" not in key and "max(" not in key:
            t.wrong_scope.append(f"the question asks for the {'fewest/lowest' if profile.direction == 'asc' else 'most/highest'}"
                                 f" but the SQL orders by {key} {'DESC' if desc else 'ASC'}")
    # one-sided home/away joins
    if not profile.home_away:
        # a side column of a participant (home_team_id, away_score, ...), not e.g. home_venue_id
        cond_parts = {p for c in sql.condition_columns for p in _parts(c)
                      if _PARTICIPANT_PARTS & set(_parts(c))}
        all_parts = {p for c in sql.all_columns for p in _parts(c)}
        for side, other in (("home", "away"), ("away", "home")):
            if side in cond_parts and other not in all_parts:
                t.narrowing.append(f"the SQL only uses the {side} side ({side}_* columns) and never the "
                                   f"{other} side, which the question does not restrict")
    # narrowing filters on specific values the question never mentions
    for f in specific:
        if f.is_string and _ISO_DATE.fullmatch(f.value) and not profile.dates:
            t.narrowing.append(f"the filter {f.column} = '{f.value}' is not in the question and narrows the set")
    return t


def _quote_lit(f: SqlFilter) -> str:
    return f"'{f.value}'" if f.is_string else f.value


def _years(years: Iterable[int]) -> str:
    return ", ".join(str(y) for y in sorted(years))


