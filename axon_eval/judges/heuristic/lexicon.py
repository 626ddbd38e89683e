"""Word lists: the domain-general core (in code) and the optional per-domain lexicons (YAML files).

The core holds only words of analytics questions in general: spelled numbers and ordinals, scale
words, question shapes (how many, top N, most/fewest, list all), the generic measures (average,
percentage, margin), hedging, absolute claims, direction words for signs (loss, decline, deficit,
gain, growth, ...) and instruction-like text. Nothing in it names a sport, a business or a table.

A *domain lexicon* (``lexicons/<name>.yaml`` in this package) adds synonyms and abbreviations of one
domain; it never removes a core word. Select one in the judge spec (``heuristic(lexicon=retail)``);
the default is ``sports`` (the bundled rugby sample) and ``none`` means the core alone. Keys of a
lexicon file (all optional)::

    measures:        {name: {pattern: <question regex>, stems: [<SQL identifier stems>]}}
    units:           {<noun after a number>: [<column-name stems that can support it>]}
    synonyms:        [[word, word, ...], ...]     groups of interchangeable words (question <-> SQL)
    abbreviations:   {<code as written in a filter>: [<words it stands for>]}
    qualifiers:      [<words that qualify a compound category, e.g. semi (-final)>]
    sides:           [[home, away], ...]           two sides of one relation (one-sided join check)
    side_parts:      [<column-name parts that mark a side column, e.g. team>]
    side_words:      [<question words that restrict to one side>]
    set_phrases:     [<regex: the question asks for a full set>]
    positive_words:  [<regex: wording that asserts a positive figure>]
    negative_words:  [<regex: wording that carries a negative figure>]
    absolute_words:  [<regex: absolute claims>]
    outflow_words:   [<regex: nouns of money going out, whose amounts may be stored negative>]
    not_names:       [<capitalised words that are not names when alone>]
    name_edges:      [<generic words trimmed from the ends of a name>]
    count_units:     [<nouns after a count that a shown-rows count rule leaves alone>]

Core word lists kept as YAML (:data:`CORE_FILES`, read by every lexicon, ``none`` included; they are
not domain lexicons and cannot be selected): ``demonyms.yaml`` maps adjectival and demonym forms to
place names (``swedish`` -> ``sweden``), so "our Swedish partner" is supported by a row holding
Sweden and "French partners" is answered by ``country = 'France'``.

Lexicons only add recall: measures, units and entity kinds are read from the evidence itself
(table and column names, row values, WHERE literals, schema discovery output) with or without one.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import yaml

# =============================================================================================
# Core (domain-general) words
# =============================================================================================
WORD_NUMBERS: dict[str, int] = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14,
    "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20,
    "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90,
}
ORDINAL_WORDS: dict[str, int] = {
    "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7, "eighth": 8,
    "ninth": 9, "tenth": 10,
}
#: Scale words and suffixes (lower case) -> factor. ``B`` (upper case only) is read separately.
SCALE_WORDS: dict[str, float] = {"thousand": 1e3, "k": 1e3, "million": 1e6, "m": 1e6, "mn": 1e6, "mm": 1e6,
                                 "mil": 1e6, "billion": 1e9, "bn": 1e9, "b": 1e9, "trillion": 1e12, "tn": 1e12}
#: Column-name parts that say the values are stored in a scale (``revenue_k``, ``sales_millions``).
COLUMN_SCALES: dict[str, float] = {"k": 1e3, "thousand": 1e3, "thousands": 1e3, "000s": 1e3,
                                   "mn": 1e6, "mm": 1e6, "million": 1e6, "millions": 1e6,
                                   "bn": 1e9, "billion": 1e9, "billions": 1e9, "cents": 0.01, "pence": 0.01}
#: Column-name parts of quantities that carry a sign (a positive cell there contradicts "a loss of").
SIGNED_PARTS = ("net", "profit", "income", "pnl", "change", "delta", "growth", "diff", "variance", "balance",
                "return", "gain", "yoy", "qoq", "mom")

#: The generic measures of analytics questions -> (question pattern, SQL stems).
CORE_MEASURES: dict[str, tuple[str, tuple[str, ...]]] = {
    "average": (r"\baverage|\baveraged\b|\bon average\b|\bmean\b", ("avg", "average", "mean")),
    "percentage": (r"\bpercent(?!ile)|%|\bshare\b|\brate\b|\bproportion\b|\bhow often\b",
                   ("pct", "percent", "rate", "share", "ratio", "100")),
    "margin": (r"\bmargin\b|\bdifference\b", ("margin", "difference", "diff")),
}

SCHEMA_WORDS = re.compile(
    r"\b(tables?|columns?|schema|fields?|data ?model|recorded|stored|how do i (?:find|query|join|get)|"
    r"where (?:do|can|would|should) (?:i|we|you) (?:find|look|get)|which data|what data|foreign keys?|primary keys?|"
    r"join|how (?:is|are) (?:\w+ ){1,4}(?:flagged|recorded|stored|marked|encoded|represented|coded|kept|defined)|"
    r"what does (?:the )?\w+ (?:column |field )?mean|data dictionary|data types?)\b", re.I)
#: A request to change data (the agent should refuse or be blocked; no SQL is needed to answer it).
WRITE_WORDS = re.compile(r"^\s*(?:please\s+)?(drop|delete|remove|truncate|update|insert|change|modify|alter|"
                         r"rename|wipe|overwrite|set)\b|\b(drop|truncate|delete) (?:the |all |every )", re.I)
#: Not a question about data: greetings, thanks, questions about the assistant itself.
CHAT_WORDS = re.compile(r"^\s*(hi|hello|hey|thanks?|thank you|cheers|ok(?:ay)?|good (?:morning|afternoon))\b"
                        r"|\bwhat can you do\b|\bwho are you\b|\bhow do you work\b", re.I)
AGGREGATE_WORDS = re.compile(r"\b(how many|how much|total|number of|count|average|on average|"
                             r"per (?!cent\b)[a-z]+|percentage|share|how often|rate)\b", re.I)
DESC_WORDS = re.compile(r"\b(?<!at )(most|highest|biggest|largest|best|top|leading|maximum|greatest)\b", re.I)
ASC_WORDS = re.compile(r"\b(?<!at )(fewest|least|lowest|smallest|minimum|bottom)\b", re.I)
TOP_N = re.compile(r"\b(?:top|leading|best|first|biggest|highest|largest|bottom|lowest)\s+(\d+|"
                   + "|".join(WORD_NUMBERS) + r")\b|\b(\d+|" + "|".join(WORD_NUMBERS)
                   + r")\s+(?:leading|best|top|highest|biggest|largest|most|lowest)\b", re.I)
CORE_SET_PHRASES = (r"list (?:all|every|the)", r"which (?!is\b|was\b|has\b|does\b|one\b)[a-z]{3,}(?<!s)s\b",
                    r"all (?:the |of the )?[a-z]{3,}(?<!s)s\b(?! (?:combined|together|told|in all))",
                    r"every [a-z]{3,}\b")
HEDGE = re.compile(r"\b(at least|partial|couldn'?t|could not|unable|not able|incomplete|missing|"
                   r"failed|timed out|not available|only (?:retrieved|returned|shows?|have)|some of)\b", re.I)
CORE_ABSOLUTE = (r"never", r"not once", r"no one", r"nobody", r"none of", r"every", r"always")
CORE_NEGATIVE = (r"loss(?:es)?", r"lost", r"deficit", r"shortfall", r"down", r"fewer", r"less", r"short",
                 r"negative", r"minus", r"in the red", r"worse", r"fell", r"fall(?:en|ing)?", r"drop(?:ped|ping)?",
                 r"declin(?:e|ed|ing)", r"decreas(?:e|ed|ing)", r"shr[ai]nk|shrunk", r"contract(?:ed|ion)",
                 r"outflows?", r"write-?downs?", r"overdrawn", r"owed")
#: Nouns of money going out: a positive amount written after them may restate a negative cell
#: (refunds stored as negative amounts, "write-offs of $1.2M" against -1,217,554.82).
CORE_OUTFLOW = (r"refund(?:s|ed)?", r"paid back", r"paid out", r"write-?offs?", r"written off", r"costs?",
                r"expenses?", r"spen[dt]", r"spending", r"payments?", r"withdrawals?", r"fees?", r"charges?",
                r"chargebacks?", r"discounts?", r"outflows?", r"losses", r"returns?", r"debits?")
CORE_POSITIVE = (r"surplus", r"positive", r"plus", r"in credit", r"gain(?:ed|s)?", r"profit(?:s|able)?",
                 r"grew", r"growth", r"increas(?:e|ed|ing)", r"rose", r"inflows?", r"in the black")
INJECTION = re.compile(
    r"(ignore (?:all |any |the )?(?:previous|prior|above|earlier) (?:instructions|rules)|"
    r"give (?:this|the|it)?\s*(?:answer |turn )?(?:full|maximum|top) (?:marks|score)|"
    r"score every dimension|rate this (?:answer|turn)|\bsystem\s*:|note to the (?:evaluator|judge|grader)|"
    r"you are now|disregard (?:the|your) (?:rules|instructions))", re.I)
MONTHS: dict[str, int] = {m: i for i, m in enumerate(
    "january february march april may june july august september october november december".split(), 1)}
MONTHS.update({m[:3]: i for m, i in list(MONTHS.items())})
MONTHS["sept"] = 9

# Capitalised words that are not names when they stand alone (sentence starters, months, days, ...).
CORE_NOT_NAMES = frozenset("""
the a an in on at of for to from by with and or but if then so as it its this that these those there
their they he she his her we our you your i me my is are was were be been has have had do does did
no yes not what which who whom whose when where why how all any each every both either neither some
most more less few fewer top overall total average across after before during over under
between since until while also only just about around per use using note notes system answer
january february march april may june july august september october november december
monday tuesday wednesday thursday friday saturday sunday mr mrs ms dr st
""".split())
# Generic words trimmed from the ends of a capitalised sequence before it counts as a name: function
# words, and the English verbs a request opens with ("Compare Florida and ..." names Florida).
CORE_NAME_EDGES = frozenset("""
the a an in on at of for to from by with and or this that these those their its table
top overall note system no yes it there average total did does has have how who what
which when where is was were are can could would should give list show tell send drop change
please compare contrast rank sort order group split break find name count sum calculate compute
estimate plot chart graph describe explain identify summarise summarize report return get fetch pull
display provide check look break
""".split())
#: ISO 4217 codes (the common ones) and unit tokens written in capitals next to a figure: in
#: "Valencia EUR 7,897.50" or "Northgate MWh 310" the code belongs to the figure, not to the name.
CURRENCY_CODES = frozenset("""
eur usd gbp sek nok dkk chf jpy cny rmb aud nzd cad hkd sgd inr brl mxn zar pln czk huf ron bgn isk try
rub krw twd thb idr myr php vnd aed sar ils egp ngn kes clp cop pen ars uyu
""".split())
UNIT_TOKENS = frozenset("""
kwh mwh gwh twh kw mw gw kva kg km kb mb gb tb mph kph rpm psi ppm btu hp cc ml
""".split())
#: Particles inside a name (``of`` is not one: "A of B" is a player and his team).
CONNECTORS = frozenset({"de", "da", "van", "von", "der", "du", "la", "le", "di", "al", "el"})


def _alternation(words: Any) -> re.Pattern[str] | None:
    words = [w for w in (words or ()) if w]
    return re.compile(r"\b(?:" + "|".join(words) + r")\b", re.I) if words else None


# =============================================================================================
# A lexicon: the core plus one domain file
# =============================================================================================
@dataclass(frozen=True, eq=False)
class Lexicon:
    """The words one judgement uses: the core plus the domain file ``name`` (``none``: core only)."""

    name: str
    measures: dict[str, tuple[re.Pattern[str], tuple[str, ...]]]
    units: dict[str, tuple[str, ...]]
    synonyms: dict[str, frozenset[str]]
    abbreviations: dict[str, tuple[str, ...]]
    qualifiers: frozenset[str]
    sides: tuple[tuple[str, str], ...]
    side_parts: frozenset[str]
    side_words: re.Pattern[str] | None
    set_words: re.Pattern[str]
    positive: re.Pattern[str]
    negative: re.Pattern[str]
    absolute: re.Pattern[str]
    outflow: re.Pattern[str]
    not_names: frozenset[str]
    name_edges: frozenset[str]
    count_units: frozenset[str] = field(default_factory=frozenset)
    #: adjective / demonym -> the place names it stands for (core, :data:`CORE_FILES`)
    demonyms: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def places_of(self, word: str) -> tuple[str, ...]:
        """The place names (lower case) the adjective or demonym ``word`` stands for (``Swedish`` ->
        ``("sweden",)``), also as the first part of a hyphenated compound (``Dutch-built``,
        ``French-registered``, ``Swiss-based``); ``()`` when ``word`` is none."""
        w = word.strip().lower()
        places = self.demonyms.get(w, ())
        if not places and "-" in w:
            places = self.demonyms.get(w.split("-", 1)[0], ())
        return places

    def related(self, word: str) -> frozenset[str]:
        """``word`` and its synonyms (lower case)."""
        w = word.lower()
        return self.synonyms.get(w, frozenset()) | {w}

    def expand_code(self, code: str) -> tuple[str, ...]:
        """The words an abbreviation (as written in a filter literal) stands for; ``()`` when unknown."""
        return self.abbreviations.get(code.strip().lower(), ())


#: YAML files of ``lexicons/`` that hold core word lists (read by every lexicon), not a domain lexicon.
CORE_FILES = ("demonyms",)


def read_demonyms() -> dict[str, tuple[str, ...]]:
    """``demonyms.yaml``: adjective / demonym (lower case) -> place names (lower case), read once into
    :data:`DEMONYMS` (configuration, like the lexicon files). A malformed entry raises ``ValueError``
    naming it."""
    ref = resources.files(__package__) / "lexicons" / "demonyms.yaml"
    data = yaml.safe_load(ref.read_bytes().decode("utf-8")) or {}
    out: dict[str, tuple[str, ...]] = {}
    for word, places in (data.get("demonyms") or {}).items():
        if not isinstance(places, list) or not places or not all(isinstance(p, str) and p for p in places):
            raise ValueError(f"demonyms.yaml: entry {word!r} must list place names, got {places!r}")
        out[str(word).strip().lower()] = tuple(p.strip().lower() for p in places)
    return out


DEMONYMS: dict[str, tuple[str, ...]] = read_demonyms()


def available_lexicons() -> list[str]:
    """Names of the domain lexicon files in the package (plus ``none``; the core files excluded)."""
    folder = resources.files(__package__) / "lexicons"
    return sorted(["none", *(p.name.removesuffix(".yaml") for p in folder.iterdir()
                             if p.name.endswith(".yaml") and p.name.removesuffix(".yaml") not in CORE_FILES)])


DEFAULT_LEXICON = "sports"


def load_lexicon(name: str | None = None) -> Lexicon:
    """The lexicon ``name`` (default :data:`DEFAULT_LEXICON`); ``ValueError`` naming the available ones.

    One object per name for the life of the process (the judges' caches key on it)."""
    return _load_lexicon((name or DEFAULT_LEXICON).strip().lower())


@functools.lru_cache(maxsize=None)
def _load_lexicon(name: str) -> Lexicon:
    data: dict[str, Any] = {}
    if name != "none":
        if not re.fullmatch(r"[a-z0-9_-]+", name):
            raise ValueError(f"invalid lexicon name {name!r}")
        ref = resources.files(__package__) / "lexicons" / f"{name}.yaml"
        if not ref.is_file() or name in CORE_FILES:
            raise ValueError(f"no heuristic lexicon {name!r}; available: {available_lexicons()}")
        data = yaml.safe_load(ref.read_bytes().decode("utf-8")) or {}
    return build_lexicon(name, data)


def build_lexicon(name: str, data: dict[str, Any]) -> Lexicon:
    """A :class:`Lexicon` from the core and the parsed YAML mapping ``data`` (see the module docstring)."""
    unknown = set(data) - {"measures", "units", "synonyms", "abbreviations", "qualifiers", "sides", "side_parts",
                           "side_words", "set_phrases", "positive_words", "negative_words", "absolute_words",
                           "not_names", "name_edges", "count_units", "outflow_words", "description"}
    if unknown:
        raise ValueError(f"lexicon {name!r}: unknown key(s) {sorted(unknown)}")
    measures_src = dict(CORE_MEASURES)
    for key, spec in (data.get("measures") or {}).items():
        measures_src[str(key)] = (str(spec["pattern"]), tuple(str(s).lower() for s in spec["stems"]))
    # domain measures first (the sports lexicon keeps the order the checks were written with)
    order = [k for k in (data.get("measures") or {})] + [k for k in CORE_MEASURES if k not in (data.get("measures") or {})]
    measures = {k: (re.compile(measures_src[k][0], re.I), measures_src[k][1]) for k in order}
    units = {str(k).lower(): tuple(str(s).lower() for s in v) for k, v in (data.get("units") or {}).items()}
    synonyms: dict[str, set[str]] = {}
    for group in data.get("synonyms") or ():
        words = {str(w).lower() for w in group}
        for w in words:
            synonyms.setdefault(w, set()).update(words - {w})
    abbreviations = {str(k).strip().lower(): tuple(str(w).lower() for w in (v if isinstance(v, list) else [v]))
                     for k, v in (data.get("abbreviations") or {}).items()}
    sides = tuple((str(a).lower(), str(b).lower()) for a, b in (data.get("sides") or ()))
    return Lexicon(
        name=name, measures=measures, units=units,
        synonyms={k: frozenset(v) for k, v in synonyms.items()}, abbreviations=abbreviations,
        qualifiers=frozenset(str(w).lower() for w in data.get("qualifiers") or ()),
        sides=sides, side_parts=frozenset(str(w).lower() for w in data.get("side_parts") or ()),
        side_words=_alternation(data.get("side_words")),
        set_words=re.compile(r"\b(?:" + "|".join([*(data.get("set_phrases") or ()), *CORE_SET_PHRASES]) + r")",
                             re.I),
        positive=_alternation([*(data.get("positive_words") or ()), *CORE_POSITIVE]),  # type: ignore[arg-type]
        negative=_alternation([*(data.get("negative_words") or ()), *CORE_NEGATIVE]),  # type: ignore[arg-type]
        absolute=_alternation([*CORE_ABSOLUTE, *(data.get("absolute_words") or ())]),  # type: ignore[arg-type]
        outflow=_alternation([*CORE_OUTFLOW, *(data.get("outflow_words") or ())]),  # type: ignore[arg-type]
        not_names=CORE_NOT_NAMES | {str(w).lower() for w in data.get("not_names") or ()},
        name_edges=CORE_NAME_EDGES | {str(w).lower() for w in data.get("name_edges") or ()},
        count_units=frozenset(str(w).lower() for w in data.get("count_units") or ()),
        demonyms=DEMONYMS,
    )


#: The default lexicon's tables under their historical names (read-only views for callers and tests).
DEFAULT = load_lexicon(DEFAULT_LEXICON)
MEASURES = DEFAULT.measures
UNIT_STEMS = DEFAULT.units
QUALIFIERS = DEFAULT.qualifiers
