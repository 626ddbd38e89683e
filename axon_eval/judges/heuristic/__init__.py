"""The offline heuristic judge (spec ``heuristic``): deterministic evidence checks, no model, no key.

One module per job; each reads only what an :class:`~axon_eval.view.EvidenceView` holds (question,
SQL text, statuses, shown rows, row counts, tool outputs, answer), never labels, turn ids or
scenario names.

==================== =====================================================================================
module               job
==================== =====================================================================================
``lexicon``          word lists (spelled numbers, scale words, measures, units, question-shape, direction,
                     hedge and absolute wording)
``text``             ``extract_numbers`` / ``extract_dates`` / ``extract_names`` / ``extract_years``,
                     sentences, instruction-like text
``question``         ``profile_question(q)``: entities, years, dates, measures, direction, top-N, ...
``sql_facts``        ``analyse_sql(sql)``: sqlglot facts about one statement (cached per SQL string)
``evidence_index``   ``build_evidence(view)``: every value a claim may rest on
``claims``           ``number_support`` / ``name_supported``: is one claim supported?
``periods``          the date and year ranges a statement selects, the bounds and thresholds a question states
``wording``          how the question's words read in the statement (literals, codes, column words, measures)
``targeting``        the statement that answers the question and how it targets it
``segments``         the part of a bundled answer that serves one segment
``intent`` ...       the four checks (``intent``, ``sql_quality``, ``relevance``, ``faithfulness``), one
                     subscore each (0-10) plus the findings that explain it
``judge``            :class:`HeuristicJudge`, the judge the registry builds
==================== =====================================================================================
"""

from __future__ import annotations

from .lexicon import (
    DEFAULT_LEXICON,
    MEASURES,
    ORDINAL_WORDS,
    QUALIFIERS,
    SCALE_WORDS,
    UNIT_STEMS,
    WORD_NUMBERS,
    Lexicon,
    available_lexicons,
    load_lexicon,
)
from .text import (
    NumberMention,
    TextMention,
    detect_injection,
    enclosing_text,
    extract_dates,
    extract_names,
    extract_numbers,
    extract_years,
    split_sentences,
)
from .question import QuestionProfile, profile_question
from .sql_facts import SqlAnalysis, SqlFilter, analyse_sql, measure_in_sql
from .evidence_index import Cell, Evidence, StepInfo, build_evidence
from .claims import (
    ClaimCheck,
    SUPPORTED,
    UNSUPPORTED,
    UNVERIFIABLE,
    affiliation_partner,
    injection_spans,
    name_supported,
    number_support,
)
from .common import CheckResult
from .targeting import Targeting, assess_targeting, pick_answer_step, step_grounding
from .segments import answer_for_segment
from .intent import check_intent
from .sql_quality import check_sql_quality
from .relevance import check_relevance, expected_total
from .faithfulness import check_faithfulness
from .question import question_periods
from .targeting import filter_maps_to, sql_date_range
from .judge import HEURISTIC_VERSION, HeuristicJudge, decide_verdict, heuristic_code_hash


def clear_caches() -> None:
    """Empty every memo cache of the heuristic (question profiles, SQL analyses, identifier words,
    numbers of a text, word stems, node classes of the SQL walk, scores of subscore combinations, the
    fitted judge's statement facts):
    a cold start, as for a benchmark."""
    from .judge import _score_and_band
    from .signals import statement_facts
    from .sql_facts import _NODE_KINDS, _parts
    from .text import _numbers_in, _stem

    profile_question.cache_clear()
    analyse_sql.cache_clear()
    _parts.cache_clear()
    _NODE_KINDS.clear()
    _numbers_in.cache_clear()
    _stem.cache_clear()
    _score_and_band.cache_clear()
    statement_facts.cache_clear()  # the fitted judge's own SQL facts
