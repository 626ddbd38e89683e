"""Judge records: the verdict of one judgement and the record of one attempt (below ``base`` and ``cache``).

``Verdict``         the graded judgement of one view: four subscores on 0-10 (``answer_faithfulness``
                    may be null), a categorical ``verdict`` and an ``explanation`` citing specifics.
``parse_verdict``   pure function: JSON text or a mapping -> ``Verdict``, or ``VerdictParseError``
                    naming the bad field and value. Our own code does the 0-10 range checks
                    (structured-output schemas do not enforce ``minimum``/``maximum``).
``parse_free_text_verdict``  pure function: a judge's prose reply (free-text mode) -> ``Verdict``, or
                    ``VerdictParseError`` when a grade or the verdict is missing, ambiguous or invalid.
``JudgeRecord``     one judgement attempt: the verdict *or* an error, plus provenance (judge id, model,
                    prompt version, sample index), latency, tokens, cost and cache information. A failed
                    or unparseable judgement is an error record: the segment is *unjudged*, never 0.

Both :mod:`~axon_eval.judges.base` (the ``Judge`` protocol) and :mod:`~axon_eval.judges.cache` (the
verdict cache) import this module; it imports neither.

Faithfulness and captured answers (a documented choice)
-------------------------------------------------------
* answer captured, ``answer_faithfulness`` null -> ``VerdictParseError`` (a judge may not skip the
  hallucination check; silently dropping it would renormalise the weights and inflate the score);
* no answer captured, ``answer_faithfulness`` given -> coerced to ``None`` and a note is added
  (``record.extra["notes"]``): the number cannot refer to any text, and the other three subscores are
  still valid judgements.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ..rubric import BANDS, DIMENSIONS, REQUIRED_DIMENSIONS

VerdictLabel = Literal["good", "partial", "poor"]
SUBSCORE_MIN, SUBSCORE_MAX = 0, 10


class VerdictParseError(ValueError):
    """A judge's output could not be turned into a valid :class:`Verdict`.

    ``field`` names the offending field (or ``"<json>"`` / ``"<root>"``), ``value`` the bad value.
    """

    def __init__(self, field: str, value: Any, message: str) -> None:
        self.field = field
        self.value = value
        shown = repr(value)
        if len(shown) > 200:
            shown = shown[:200] + "..."
        super().__init__(f"{field}: {message} (got {shown})")


Subscore = int | float


class Verdict(BaseModel):
    """A graded judgement. Subscores are in [0, 10].

    Judges return integers; combined verdicts (``ensemble`` with ``reducer=mean``/``median``) may
    carry floats, which the scorer accepts. ``answer_faithfulness`` is ``None`` when no answer text
    was captured.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    intent_understood: Subscore
    sql_quality: Subscore
    result_relevance: Subscore
    answer_faithfulness: Subscore | None
    verdict: VerdictLabel
    explanation: str = Field(min_length=1)

    @field_validator("intent_understood", "sql_quality", "result_relevance", "answer_faithfulness")
    @classmethod
    def _in_range(cls, v: Subscore | None, info: Any) -> Subscore | None:
        if v is None:
            return v
        if isinstance(v, bool) or not math.isfinite(float(v)) or not SUBSCORE_MIN <= v <= SUBSCORE_MAX:
            raise ValueError(f"{info.field_name} must be a number in [0, 10], got {v!r}")
        return v

    def subscores(self) -> dict[str, Subscore | None]:
        """The four dimensions by name (the mapping ``score_turn`` reads)."""
        return {d: getattr(self, d) for d in DIMENSIONS}


def verdict_json_schema() -> dict[str, Any]:
    """JSON Schema sent for structured outputs (Anthropic ``output_config`` / OpenAI ``json_schema``).

    Integer subscores without ``minimum``/``maximum`` (not enforced by the APIs; checked by
    :func:`parse_verdict`), ``additionalProperties: false`` and every property required, as strict
    structured-output modes demand.
    """
    integer = {"type": "integer", "description": "0 (worst) to 10 (best)"}
    return {
        "type": "object",
        "properties": {
            "intent_understood": dict(integer),
            "sql_quality": dict(integer),
            "result_relevance": dict(integer),
            "answer_faithfulness": {"anyOf": [{"type": "integer"}, {"type": "null"}],
                                    "description": "0 to 10, or null when no answer was captured"},
            "verdict": {"type": "string", "enum": list(BANDS)},
            "explanation": {"type": "string", "description": "a few sentences citing specifics"},
        },
        "required": [*DIMENSIONS, "verdict", "explanation"],
        "additionalProperties": False,
    }


def parse_verdict(text_or_obj: str | bytes | Mapping[str, Any] | Verdict, *,
                  answer_captured: bool | None = None,
                  notes: list[str] | None = None) -> Verdict:
    """Parse a judge's output into a :class:`Verdict`, or raise :class:`VerdictParseError`.

    Accepts JSON text (optionally wrapped in a Markdown code fence) or a mapping. Checks, in order:
    valid JSON object; no missing or unknown fields; each subscore an integer (``7.0`` accepted as 7,
    ``7.5``, ``"7"`` and booleans rejected) within 0-10; ``verdict`` one of good/partial/poor; a
    non-empty ``explanation``. ``answer_captured`` applies the faithfulness rule of the module
    docstring when given; coercions are appended to ``notes``.
    """
    if isinstance(text_or_obj, Verdict):
        obj: Any = text_or_obj.model_dump()
    elif isinstance(text_or_obj, str | bytes):
        raw = text_or_obj.decode("utf-8", "replace") if isinstance(text_or_obj, bytes) else text_or_obj
        stripped = raw.strip()
        if stripped.startswith("```"):
            stripped = stripped.strip("`")
            stripped = stripped[4:] if stripped.lower().startswith("json") else stripped
        try:
            obj = json.loads(stripped)
        except json.JSONDecodeError as exc:
            raise VerdictParseError("<json>", raw, f"not valid JSON: {exc.msg} at position {exc.pos}") from None
    else:
        obj = dict(text_or_obj)
    if not isinstance(obj, dict):
        raise VerdictParseError("<root>", obj, f"expected a JSON object, got {type(obj).__name__}")
    expected = [*DIMENSIONS, "verdict", "explanation"]
    for name in expected:
        if name not in obj:
            raise VerdictParseError(name, None, "missing field")
    unknown = sorted(set(obj) - set(expected))
    if unknown:
        raise VerdictParseError(unknown[0], obj[unknown[0]], f"unknown field; expected only {expected}")
    values: dict[str, Any] = {}
    for name in DIMENSIONS:
        v = obj[name]
        if v is None:
            if name in REQUIRED_DIMENSIONS:
                raise VerdictParseError(name, v, "must be an integer 0-10, not null")
            values[name] = None
            continue
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise VerdictParseError(name, v, "must be an integer 0-10")
        if isinstance(v, float):
            if not math.isfinite(v) or v != int(v):
                raise VerdictParseError(name, v, "must be a whole number 0-10")
            v = int(v)
        if not SUBSCORE_MIN <= v <= SUBSCORE_MAX:
            raise VerdictParseError(name, v, "out of range 0-10")
        values[name] = v
    if answer_captured is True and values["answer_faithfulness"] is None:
        raise VerdictParseError("answer_faithfulness", None,
                                "is null but an answer was captured; faithfulness must be graded")
    if answer_captured is False and values["answer_faithfulness"] is not None:
        if notes is not None:
            notes.append(f"answer_faithfulness {values['answer_faithfulness']} given although no answer "
                         "was captured; coerced to null")
        values["answer_faithfulness"] = None
    label = obj["verdict"]
    if label not in BANDS:
        raise VerdictParseError("verdict", label, f"must be one of {list(BANDS)}")
    explanation = obj["explanation"]
    if not isinstance(explanation, str) or not explanation.strip():
        raise VerdictParseError("explanation", explanation, "must be a non-empty string")
    return Verdict(**values, verdict=label, explanation=explanation.strip())


# -- free-text replies -------------------------------------------------------------------------------
_NUMBER_WORDS = {"zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
                 "eight": 8, "nine": 9, "ten": 10}
_WORD_NUMBER = r"\b(?:" + "|".join(_NUMBER_WORDS) + r")\b"
#: How each dimension may be named in prose (longest first; text is lower-cased, ``_`` read as a space).
_DIMENSION_NAMES: dict[str, tuple[str, ...]] = {
    "intent_understood": (r"intent\s+understood", r"understood\s+(?:the\s+)?intent", r"intent\s+understanding",
                          r"understanding\s+of\s+(?:the\s+)?(?:intent|question)", r"intent"),
    "sql_quality": (r"sql\s+quality", r"quality\s+of\s+(?:the\s+)?sql", r"query\s+quality"),
    "result_relevance": (r"results?\s+relevance", r"relevance\s+of\s+(?:the\s+)?(?:results?|rows)", r"relevance"),
    "answer_faithfulness": (r"answer\s+faithfulness", r"faithfulness\s+of\s+(?:the\s+)?answer", r"faithfulness"),
}
_DIMENSION_RE = re.compile(r"\b(?:" + "|".join(
    f"(?P<{name}>{'|'.join(aliases)})" for name, aliases in _DIMENSION_NAMES.items()) + r")\b")
#: Words that may stand between a dimension's name and its grade ("SQL quality: 7", "intent is 9",
#: "relevance gets a 6", "| sql quality | 7 |").
_FILLER = (r"(?:is|was|gets?|got|deserves?|earns?|scores?|scored|rated|rating|grade[ds]?|receives?|received|"
           r"at|of|a|an|score|would\s+be|i\s+(?:would\s+)?(?:give|rate)(?:\s+(?:it|this))?)")
_SEPARATORS = r"[\s:=|()\[\]\-\u2013\u2014>,\"']*"
_PLAIN_GAP = re.compile(rf"^{_SEPARATORS}(?:{_FILLER}\b{_SEPARATORS})*$")
_NULL_GRADE = re.compile(rf"{_SEPARATORS}(?:{_FILLER}\b{_SEPARATORS})*"
                         r"(?:not\s+applicable|n/a\b|null\b|none\b|not\s+graded|no\s+answer)")
_NUMBER = re.compile(r"\d+(?:\.\d+)?|" + _WORD_NUMBER)
_SCALE = re.compile(r"\s*(?:/|out\s+of|of)\s*(?:10|ten)\b")
#: How far after a dimension's name a grade on a 10-point scale may stand (same line).
_SCALED_REACH = 100
_GRADE_BEFORE = re.compile(r"(?P<num>\d+(?:\.\d+)?|" + _WORD_NUMBER + r")\s*(?:/|out\s+of)\s*(?:10|ten)\s+"
                           r"(?:for|on|in)\s+(?:the\s+)?$")
_OTHER_SCALE = re.compile(r"\s*(?:/|out\s+of)\s*(\d+(?:\.\d+)?)")
_RANGE = re.compile(r"\s*(?:-|\u2013|to|or)\s*\d")
_BAND = r"(good|partial|poor)"
_VERDICT_RES = (
    re.compile(r"\bverdict\b[^\n]{0,40}?\b" + _BAND + r"\b"),
    re.compile(r"\boverall(?:\s+(?:assessment|rating|judge?ment|grade|band))?\s*[:=\-\u2013\u2014]\s*" + _BAND + r"\b"),
    re.compile(r"\b(?:rate|judge|classify|consider|call)\s+(?:this|the)\s+(?:turn|answer|response)\s+"
               r"(?:as\s+)?(?:an?\s+)?" + _BAND + r"\b"),
    re.compile(r"\boverall,?\s+(?:this|the)\s+turn\s+is\s+(?:a\s+)?" + _BAND + r"\b"),
)
_BAND_LIST = re.compile(r"\s*(?:/|,|or|and)\s*(?:good|partial|poor)\b")


def _normalise_prose(text: str) -> str:
    """Lower-case, markdown emphasis and code marks removed, ``_`` as a space (``sql_quality``)."""
    return re.sub(r"[*`]", "", text).replace("_", " ").lower()


def _grade_value(num: str) -> int | float:
    """``"7"`` -> 7, ``"seven"`` -> 7, ``"7.5"`` -> 7.5 (refused later as not whole), ``"-1"`` -> -1."""
    if num in _NUMBER_WORDS:
        return _NUMBER_WORDS[num]
    value = float(num)
    return int(value) if value.is_integer() else value


def _grade_after(prose: str, start: int, limit: int) -> tuple[str, int, bool] | None:
    """The grade after a dimension name at ``start`` (before ``limit``, on the same line):
    ``(number text, end of the number, on a 10-point scale)``, or ``None``.

    A number counts when only separators and filler words stand before it ("SQL quality: 7",
    "relevance gets a 6"), or when it is on a 10-point scale ("9/10", "nine out of ten") within
    :data:`_SCALED_REACH` characters. Other numbers ("step 2", "2024") are passed over.
    """
    stop = prose.find("\n", start, limit)
    stop = min(limit if stop < 0 else stop, start + _SCALED_REACH)
    for candidate in _NUMBER.finditer(prose, start, stop):
        num = candidate.group(0)
        if num[0].isdigit() and prose[candidate.start() - 1] == "-" and not prose[candidate.start() - 2].isalnum():
            num = "-" + num  # "intent: -1" is a negative grade (refused as out of range), "intent - 9" is 9
        if _SCALE.match(prose, candidate.end()):
            return num, candidate.end(), True
        if num not in _NUMBER_WORDS and _PLAIN_GAP.match(prose[start:candidate.start()]):
            return num, candidate.end(), False
    return None


def parse_free_text_verdict(text: str, *, answer_captured: bool | None = None,
                            notes: list[str] | None = None) -> Verdict:
    """Parse a prose reply (free-text judging) into a :class:`Verdict`, or raise :class:`VerdictParseError`.

    Each dimension is found by its name (``intent understood`` / ``intent_understood`` / ``intent``,
    ``SQL quality``, ``result relevance`` / ``relevance``, ``answer faithfulness`` / ``faithfulness``, and
    a few ``X of the Y`` forms), then its grade: a number right after it ("SQL quality: 7",
    "intent is 9", ``| relevance | 6 |``, "faithfulness gets a 4"), a number on a 10-point scale a few
    words later ("Intent understood: the agent grasped it, I give it 9/10", "nine out of ten") or just
    before it ("8/10 for SQL quality"). Faithfulness may be "not applicable" / "n/a" / "null". The
    verdict is the band named after "verdict" ("Verdict: partial", "my overall verdict is **poor**"),
    else after "overall:" or "I would rate this turn as ...".

    Refused (the reply becomes an error record, never a guess): a dimension with no grade, a grade stated
    twice with different values, a range ("7-8"), another scale ("4/5"), a non-whole or out-of-range
    grade, no verdict, a negated verdict ("not good"), a list of bands ("good/partial/poor") or two
    different verdicts. Range and faithfulness rules are those of :func:`parse_verdict` (this function
    builds the mapping and calls it). The explanation is the whole reply, trimmed.
    """
    if not isinstance(text, str) or not text.strip():
        raise VerdictParseError("<text>", text, "empty free-text reply")
    prose = _normalise_prose(text)
    mentions = list(_DIMENSION_RE.finditer(prose))
    grades: dict[str, list[int | float | None]] = {name: [] for name in DIMENSIONS}
    for i, mention in enumerate(mentions):
        name = next(k for k, v in mention.groupdict().items() if v is not None)
        end = mention.end()
        limit = mentions[i + 1].start() if i + 1 < len(mentions) else len(prose)
        before = _GRADE_BEFORE.search(prose[max(0, mention.start() - 40):mention.start()])
        if before:
            grades[name].append(_grade_value(before.group("num")))
        if name == "answer_faithfulness" and _NULL_GRADE.match(prose, end, limit):
            grades[name].append(None)
            continue
        grade = _grade_after(prose, end, limit)
        if grade is None:
            continue
        num, num_end, scaled = grade
        if not scaled:
            other = _OTHER_SCALE.match(prose, num_end, limit)
            if other and float(other.group(1)) != 10:
                raise VerdictParseError(name, f"{num}/{other.group(1)}", "graded on a scale other than 0-10")
        rest_start = _SCALE.match(prose, num_end).end() if scaled else num_end  # type: ignore[union-attr]
        if _RANGE.match(prose, rest_start, limit):
            shown = prose[num_end - len(num):rest_start + 8].split("\n")[0].strip()
            raise VerdictParseError(name, shown, "a range, not one grade")
        grades[name].append(_grade_value(num))
    values: dict[str, Any] = {}
    for name in DIMENSIONS:
        found = list(dict.fromkeys(grades[name]))
        if len(found) > 1:
            raise VerdictParseError(name, found, "stated with different grades")
        if not found:
            if name == "answer_faithfulness" and answer_captured is False:
                values[name] = None
                continue
            raise VerdictParseError(name, None, "no grade found in the free-text reply")
        values[name] = found[0]
    labels: list[str] = []
    for pattern in _VERDICT_RES:
        for match in pattern.finditer(prose):
            if re.search(r"\bnot\s+(?:a\s+)?$", prose[max(0, match.start(1) - 8):match.start(1)]):
                raise VerdictParseError("verdict", match.group(0), "negated verdict; name one band")
            if _BAND_LIST.match(prose, match.end(1)):
                raise VerdictParseError("verdict", prose[match.start(1):match.end(1) + 20],
                                        "lists several bands; name one")
            labels.append(match.group(1))
        if labels:
            break
    distinct = list(dict.fromkeys(labels))
    if not distinct:
        raise VerdictParseError("verdict", None, f"no verdict ({', '.join(BANDS)}) found in the free-text reply")
    if len(distinct) > 1:
        raise VerdictParseError("verdict", distinct, "different verdicts stated")
    return parse_verdict({**values, "verdict": distinct[0], "explanation": text.strip()},
                         answer_captured=answer_captured, notes=notes)


class JudgeRecord(BaseModel):
    """One judgement attempt of one segment (one line of ``verdicts.jsonl``).

    Exactly one of ``verdict`` / ``error`` is set. Token fields: ``input_tokens`` are the input
    tokens billed at the base input rate (cache reads/writes are counted separately in
    ``cache_read_tokens`` / ``cache_creation_tokens``). ``cost_usd`` is ``None`` when unknown (no
    price for the model, or no API call), never a fabricated 0 for an API call. ``latency_ms`` is the
    wall time of the judgement including retries. ``cached`` is True when the record came from the
    verdict cache (no call made).
    """

    model_config = ConfigDict(extra="forbid")

    segment_id: str
    judge_id: str
    model: str
    prompt_version: str
    sample_index: int = Field(default=0, ge=0)
    verdict: Verdict | None = None
    error: str | None = None
    latency_ms: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_creation_tokens: int | None = None
    cost_usd: float | None = None
    cache_key: str | None = None
    cached: bool = False
    extra: dict[str, Any] = Field(default_factory=dict)

    @field_validator("error")
    @classmethod
    def _error_not_empty(cls, v: str | None) -> str | None:
        if v is not None and not v.strip():
            raise ValueError("error, when set, must be a non-empty message")
        return v

    @model_validator(mode="after")
    def _verdict_xor_error(self) -> JudgeRecord:
        if (self.verdict is None) == (self.error is None):
            raise ValueError("a JudgeRecord holds exactly one of verdict or error "
                             f"(segment {self.segment_id!r}, verdict={self.verdict!r}, error={self.error!r})")
        return self

    @property
    def judged(self) -> bool:
        """True when the record carries a verdict (an error record means *unjudged*)."""
        return self.verdict is not None and self.error is None

    def subscores(self) -> dict[str, Subscore | None] | None:
        """The verdict's four subscores, or ``None`` for an error record."""
        return self.verdict.subscores() if self.verdict is not None else None

    def to_json_line(self) -> str:
        """One compact JSON line (``verdicts.jsonl``); :meth:`from_json_line` reads it back equal."""
        return json.dumps(self.model_dump(mode="json"), ensure_ascii=False, sort_keys=True)

    @classmethod
    def from_json_line(cls, line: str) -> JudgeRecord:
        return cls.model_validate_json(line)
