"""Word lists of analytics questions and answers (no ids, no scenario names): spelled numbers,
scale words, measures and their SQL stems, unit nouns, question-shape words, direction, hedge,
absolute and instruction-like wording, and the capitalised words that are not names."""

from __future__ import annotations

import re


# =============================================================================================
# Lexicon (domain-general words of analytics questions; no ids, no scenario names)
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
SCALE_WORDS: dict[str, float] = {"thousand": 1e3, "k": 1e3, "million": 1e6, "m": 1e6, "mn": 1e6,
                                 "billion": 1e9, "bn": 1e9}

#: Measures a question can ask for -> (question pattern, stems of SQL identifiers/literals that
#: compute it). A stem matches an underscore/hyphen-separated part of a column, table, function or
#: literal that *starts with* it.
MEASURES: dict[str, tuple[re.Pattern[str], tuple[str, ...]]] = {
    name: (re.compile(pattern, re.I), stems) for name, pattern, stems in [
        ("tries", r"\btr(?:y|ies)\b", ("try", "tries")),
        ("points", r"\bpoints?\b", ("point", "score")),
        ("score", r"\bthe (?:final )?score\b|\bscoreline\b", ("score", "point")),
        ("conceded", r"\bconced", ("against", "conced")),
        ("penalties", r"\bpenalt", ("penalt",)),
        ("conversions", r"\bconversions?\b", ("conversion",)),
        ("drop goals", r"\bdrop goals?\b", ("drop",)),
        ("cards", r"\bcards?\b|\bsent off\b|\bdisciplin", ("card", "yellow", "red")),
        ("attendance", r"\battendance|\bcrowds?\b|\bspectators?\b|\battended\b", ("attendance",)),
        ("capacity", r"\bcapacity\b", ("capacity",)),
        ("average", r"\baverage|\baveraged\b|\bon average\b|\bper (?:game|match)\b|\bmean\b", ("avg", "average")),
        ("percentage", r"\bpercent|%|\bshare\b|\brate\b|\bproportion\b|\bhow often\b", ("pct", "percent", "rate", "share", "100")),
        ("margin", r"\bmargin\b|\bdifference\b", ("margin", "difference", "diff")),
    ]
}
#: Words that follow a number and name its unit -> column-name stems that can support it.
UNIT_STEMS: dict[str, tuple[str, ...]] = {
    "try": ("tri", "try"), "tries": ("tri", "try"),
    "point": ("point", "score"), "points": ("point", "score"),
    "yellow": ("yellow",), "yellows": ("yellow",), "red": ("red",), "reds": ("red",),
    "conversion": ("conversion",), "conversions": ("conversion",),
    "penalty": ("penalt",), "penalties": ("penalt",),
    "spectators": ("attendance",), "people": ("attendance",), "fans": ("attendance",),
    "matches": ("matches", "played", "games"), "games": ("matches", "played", "games"),
    "wins": ("won", "win"), "win": ("won", "win"),
    "players": ("players",), "tables": ("tables",), "columns": ("columns",),
}
_SCHEMA_WORDS = re.compile(
    r"\b(tables?|columns?|schema|fields?|data ?model|recorded|stored|how do i (?:find|query|join|get)|"
    r"which data|what data|foreign keys?|primary keys?|join)\b", re.I)
_DATA_WORDS = re.compile(
    r"\b(how many|how much|who|which|what (?:was|were|is|are)|when|did|total|average|most|least|"
    r"fewest|highest|lowest|percentage|rate|score|won|win|record)\b", re.I)
_AGGREGATE_WORDS = re.compile(r"\b(how many|how much|total|number of|count|average|on average|"
                              r"per (?:game|match)|percentage|share|how often|rate)\b", re.I)
_DESC_WORDS = re.compile(r"\b(most|highest|biggest|largest|best|top|leading|maximum|greatest)\b", re.I)
_ASC_WORDS = re.compile(r"\b(fewest|least|lowest|smallest|minimum)\b", re.I)
_TOP_N = re.compile(r"\b(?:top|leading|best|first|biggest|highest)\s+(\d+|" + "|".join(WORD_NUMBERS) +
                    r")\b|\b(\d+|" + "|".join(WORD_NUMBERS) + r")\s+(?:leading|best|top|highest|biggest)\b", re.I)
_SET_WORDS = re.compile(r"\b(who scored|which (?:teams|players|matches|grounds|venues)|list (?:all|every|the)|"
                        r"all (?:the )?(?:players|teams|scorers|matches)|scorers|the tries)\b", re.I)
_HOME_AWAY_WORDS = re.compile(r"\b(home|away|host|hosts|visiting|visitors)\b", re.I)
#: Words in the question that qualify a compound category (``semi``-final, ``yellow`` card, ...).
QUALIFIERS = frozenset({"semi", "quarter", "pre", "grand", "red", "yellow", "drop", "home", "away"})
_HEDGE = re.compile(r"\b(at least|partial|couldn'?t|could not|unable|not able|incomplete|missing|"
                    r"failed|timed out|not available|only (?:retrieved|returned|shows?|have)|some of)\b", re.I)
_UNIVERSAL = re.compile(r"\b(never|unbeaten|undefeated|not once|no one|nobody|none of|every|always|"
                        r"without (?:a|any) (?:defeat|loss|win))\b", re.I)
_NEG_DIRECTION = re.compile(r"\b(lost|los(?:e|ing)|defeat(?:ed)?|beaten|behind|trail(?:ed|ing)?|deficit|"
                            r"down|fewer|less|short|negative|minus|in the red|worse)\b", re.I)
_POS_DIRECTION = re.compile(r"\b(won|win|winning|victory|beat|ahead|surplus|to the good|positive|plus|"
                            r"in credit|gain(?:ed)?)\b", re.I)
_INJECTION = re.compile(
    r"(ignore (?:all |any |the )?(?:previous|prior|above|earlier) (?:instructions|rules)|"
    r"give (?:this|the|it)?\s*(?:answer |turn )?(?:full|maximum|top) (?:marks|score)|"
    r"score every dimension|rate this (?:answer|turn)|\bsystem\s*:|note to the (?:evaluator|judge|grader)|"
    r"you are now|disregard (?:the|your) (?:rules|instructions))", re.I)

# Capitalised words that are not names when they stand alone (sentence starters, months, days, ...).
_NOT_NAME_WORDS = frozenset("""
the a an in on at of for to from by with and or but if then so as it its this that these those there
their they he she his her we our you your i me my is are was were be been has have had do does did
no yes not what which who whom whose when where why how all any each every both either neither some
most more less few fewer top overall total average home away across after before during over under
between since until while also only just about around per use using note notes system answer
january february march april may june july august september october november december
monday tuesday wednesday thursday friday saturday sunday mr mrs ms dr st pool round final semi
quarter season stage match matches team teams player players venue venues try tries points
""".split())
# Generic words trimmed from the ends of a capitalised sequence before it counts as a name.
_GENERIC_EDGE = frozenset("""
the a an in on at of for to from by with and or this that these those their its pool round final
finals semi quarter season seasons stage match matches cup league table team teams player players
top overall note system no yes it there home away average total did does has have how who what
which when where is was were are can could would should give list show tell send drop change
""".split())
#: Particles inside a name (``of`` is not one: "A of B" is a player and his team).
_CONNECTORS = frozenset({"de", "da", "van", "von", "der", "du", "la", "le", "di", "al", "el"})

