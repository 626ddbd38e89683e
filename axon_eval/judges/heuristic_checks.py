"""Compatibility module: the heuristic's checks now live in the package :mod:`axon_eval.judges.heuristic`
(one module per job: ``lexicon``, ``text``, ``question``, ``sql_facts``, ``evidence_index``, ``claims``,
``targeting``, ``segments``, ``intent``, ``sql_quality``, ``relevance``, ``faithfulness``, ``judge``).

Every name this module used to define is re-exported here unchanged, so ``from
axon_eval.judges import heuristic_checks as hc`` keeps working. New code imports from the package.
"""

from __future__ import annotations

from .heuristic.lexicon import (  # noqa: F401
    MEASURES,
    ORDINAL_WORDS,
    QUALIFIERS,
    SCALE_WORDS,
    UNIT_STEMS,
    WORD_NUMBERS,
    _AGGREGATE_WORDS,
    _ASC_WORDS,
    _CONNECTORS,
    _DATA_WORDS,
    _DESC_WORDS,
    _GENERIC_EDGE,
    _HEDGE,
    _HOME_AWAY_WORDS,
    _INJECTION,
    _NEG_DIRECTION,
    _NOT_NAME_WORDS,
    _POS_DIRECTION,
    _SCHEMA_WORDS,
    _SET_WORDS,
    _TOP_N,
    _UNIVERSAL,
)
from .heuristic.text import (  # noqa: F401
    NumberMention,
    TextMention,
    detect_injection,
    enclosing_text,
    extract_dates,
    extract_names,
    extract_numbers,
    extract_years,
    split_sentences,
    _CLAUSE_SPLIT,
    _ISO_DATE,
    _NUMBER,
    _QUOTED,
    _RANK_CLAIM,
    _SENTENCE_SPLIT,
    _TOKEN,
    _WORD,
    _WORD_NUMBER,
    _YEAR_MAX,
    _YEAR_MIN,
    _is_cap,
    _norm,
    _sentence_starts,
    _stem,
    _unit_after,
)
from .heuristic.question import (  # noqa: F401
    QuestionProfile,
    profile_question,
    _int_word,
)
from .heuristic.sql_facts import (  # noqa: F401
    SqlAnalysis,
    SqlFilter,
    analyse_sql,
    measure_in_sql,
    _KINDS,
    _parts,
)
from .heuristic.evidence_index import (  # noqa: F401
    Cell,
    Evidence,
    StepInfo,
    build_evidence,
    _PLAIN_NUMBER,
    _cell_text,
    _mention_key,
)
from .heuristic.claims import (  # noqa: F401
    ClaimCheck,
    SUPPORTED,
    UNSUPPORTED,
    UNVERIFIABLE,
    affiliation_partner,
    injection_spans,
    name_supported,
    number_support,
    _AFFILIATION,
    _claims,
    _columns_named_in,
    _fmt_value,
    _matches,
    _may_count_rows,
    _same_row,
    _unit_columns,
)
from .heuristic.common import (  # noqa: F401
    CheckResult,
    _clamp,
    _facts,
)
from .heuristic.targeting import (  # noqa: F401
    Targeting,
    assess_targeting,
    pick_answer_step,
    step_grounding,
    _PARTICIPANT_PARTS,
    _literal_conflict,
    _quote_lit,
    _years,
)
from .heuristic.segments import (  # noqa: F401
    answer_for_segment,
    _overlap,
)
from .heuristic.intent import (  # noqa: F401
    check_intent,
)
from .heuristic.sql_quality import (  # noqa: F401
    check_sql_quality,
)
from .heuristic.relevance import (  # noqa: F401
    check_relevance,
    expected_total,
)
from .heuristic.faithfulness import (  # noqa: F401
    check_faithfulness,
)
