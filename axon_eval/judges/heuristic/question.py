"""The question profile: what a question asks for, read with plain rules (cached per text)."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from .lexicon import (
    MEASURES,
    WORD_NUMBERS,
    _AGGREGATE_WORDS,
    _ASC_WORDS,
    _DATA_WORDS,
    _DESC_WORDS,
    _HOME_AWAY_WORDS,
    _SCHEMA_WORDS,
    _SET_WORDS,
    _TOP_N,
)

from .text import (
    NumberMention,
    _QUOTED,
    _TOKEN,
    _norm,
    _stem,
    extract_dates,
    extract_names,
    extract_numbers,
    extract_years,
)


# =============================================================================================
# Question profile
# =============================================================================================
@dataclass(frozen=True)
class QuestionProfile:
    """What the question asks for, read with plain rules.

    ``entities``: names and quoted strings; ``years``/``dates``; ``measures``: keys of
    :data:`MEASURES`; ``direction``: ``"desc"`` (most/highest/top), ``"asc"`` (fewest/lowest) or
    ``None``; ``top_n``: N of "top N"; ``wants_aggregate``: how many / total / average / rate;
    ``wants_set``: a full list is asked for (who scored the tries, which teams, ...);
    ``schema_question``: about tables/columns rather than data; ``home_away``: the question itself
    mentions home or away.
    """

    text: str
    entities: tuple[str, ...]
    years: frozenset[int]
    dates: frozenset[str]
    measures: frozenset[str]
    direction: str | None
    top_n: int | None
    wants_aggregate: bool
    wants_set: bool
    schema_question: bool
    data_question: bool
    home_away: bool
    numbers: tuple[NumberMention, ...]
    norm: str
    stems: frozenset[str]


def _int_word(token: str) -> int | None:
    if token.isdigit():
        return int(token)
    return WORD_NUMBERS.get(token.lower())


# Caches are bounded so that a streamed run's memory stays flat over a large file; they pay only when
# texts repeat within a run (identical questions or SQL), which a few thousand entries cover.
@functools.lru_cache(maxsize=2048)
def profile_question(question: str) -> QuestionProfile:
    """Profile a question (cached per text). See :class:`QuestionProfile`."""
    names = [n.token for n in extract_names(question)]
    quoted = [m.group(1) for m in _QUOTED.finditer(question) if not m.group(1).endswith("s ")]
    entities = tuple(dict.fromkeys(e for e in names + quoted if len(_norm(e)) > 1))
    measures = frozenset(k for k, (pat, _) in MEASURES.items() if pat.search(question))
    desc, asc = bool(_DESC_WORDS.search(question)), bool(_ASC_WORDS.search(question))
    direction = "desc" if desc and not asc else "asc" if asc and not desc else None
    top_n = None
    m = _TOP_N.search(question)
    if m:
        top_n = _int_word(m.group(1) or m.group(2))
    schema = bool(_SCHEMA_WORDS.search(question)) and not re.search(r"\b(19|20)\d\d\b", question)
    norm = _norm(question)
    return QuestionProfile(
        text=question, entities=entities, years=extract_years(question),
        dates=frozenset(d.token for d in extract_dates(question)), measures=measures,
        direction=direction, top_n=top_n,
        wants_aggregate=bool(_AGGREGATE_WORDS.search(question)),
        wants_set=bool(_SET_WORDS.search(question)) and top_n is None and direction is None,
        schema_question=schema, data_question=bool(_DATA_WORDS.search(question)) and not schema,
        home_away=bool(_HOME_AWAY_WORDS.search(question)),
        numbers=tuple(extract_numbers(question)), norm=norm,
        stems=frozenset(_stem(t) for t in _TOKEN.findall(norm)),
    )


