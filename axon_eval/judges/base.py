"""Judge protocol and records.

``Verdict``         the graded judgement of one view: four subscores on 0-10 (``answer_faithfulness``
                    may be null), a categorical ``verdict`` and an ``explanation`` citing specifics.
``parse_verdict``   pure function: JSON text or a mapping -> ``Verdict``, or ``VerdictParseError``
                    naming the bad field and value. Our own code does the 0-10 range checks
                    (structured-output schemas do not enforce ``minimum``/``maximum``).
``JudgeRecord``     one judgement attempt: the verdict *or* an error, plus provenance (judge id, model,
                    prompt version, sample index), latency, tokens, cost and cache information. A failed
                    or unparseable judgement is an error record: the segment is *unjudged*, never 0.
``Judge``           base class: ``judge`` / ``ajudge`` for one view, ``judge_many`` / ``ajudge_many``
                    for many (bounded concurrency, progress bar, verdict cache, input order kept).

Faithfulness and captured answers (a documented choice)
-------------------------------------------------------
* answer captured, ``answer_faithfulness`` null -> ``VerdictParseError`` (a judge may not skip the
  hallucination check; silently dropping it would renormalise the weights and inflate the score);
* no answer captured, ``answer_faithfulness`` given -> coerced to ``None`` and a note is added
  (``record.extra["notes"]``): the number cannot refer to any text, and the other three subscores are
  still valid judgements.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
import json
import math
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ..evidence import SCHEMA_VERSION
from ..rubric import BANDS, DIMENSIONS, REQUIRED_DIMENSIONS

if TYPE_CHECKING:  # pragma: no cover
    from ..view import EvidenceView
    from .cache import VerdictCache

T = TypeVar("T")

VerdictLabel = Literal["good", "partial", "poor"]
SUBSCORE_MIN, SUBSCORE_MAX = 0, 10


class MissingApiKey(RuntimeError):
    """Raised when an API judge is built without its key in the environment (before any work)."""


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


def cache_key(judge_id: str, prompt_version: str, view_sha256: str, sample_index: int,
              schema_version: int = SCHEMA_VERSION) -> str:
    """Verdict cache key: hex SHA-256 (64 chars, ``[0-9a-f]``) of the five identifying parts.

    ``sha256(json([judge_id, prompt_version, view_sha256, sample_index, schema_version]))``. It also
    serves as the Message Batches ``custom_id`` (<= 64 chars of ``[a-zA-Z0-9_-]``).
    """
    blob = json.dumps([judge_id, prompt_version, view_sha256, int(sample_index), int(schema_version)],
                      separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def run_sync(factory: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run a coroutine to completion from synchronous code.

    Without a running event loop, ``asyncio.run``. Inside a running loop (Jupyter), the coroutine
    runs with its own loop in a worker thread and this call blocks until it finishes. ``factory``
    creates the coroutine in the thread that runs it.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(factory())
    with concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="axon-judge") as pool:
        return pool.submit(lambda: asyncio.run(factory())).result()


class Judge:
    """Base class of every judge.

    Subclasses set ``judge_id`` (a string that fully identifies the judge's behaviour: kind, model,
    prompt version and sampling settings), ``model`` and ``prompt_version``, and implement
    :meth:`ajudge`. Wrappers that delegate to other judges override :meth:`ajudge_cached` to pass the
    cache down to their members (``cacheable = False`` at their own level).

    Records from :meth:`judge_many` are returned in input order, view-major: for views ``v0, v1`` and
    2 samples, ``[v0/s0, v0/s1, v1/s0, v1/s1]``.
    """

    judge_id: str
    model: str
    prompt_version: str
    #: Whether records of this judge are stored in / read from the verdict cache at its own level.
    cacheable: ClassVar[bool] = True
    #: Samples per view when ``judge_many(samples=None)``; ``repeat(spec, n)`` sets n.
    default_samples: int = 1
    #: The spec string this judge was built from (set by the registry), for manifests.
    spec: str | None = None

    # -- one view --------------------------------------------------------------------------------
    async def ajudge(self, view: EvidenceView, sample_index: int = 0) -> JudgeRecord:
        """Judge one view; must return an error record rather than raise for judgement failures."""
        raise NotImplementedError(f"{type(self).__name__} does not implement ajudge")

    def judge(self, view: EvidenceView, sample_index: int = 0) -> JudgeRecord:
        """Synchronous :meth:`ajudge` (works inside a running event loop too)."""
        return run_sync(lambda: self.ajudge(view, sample_index))

    def cache_key(self, view: EvidenceView, sample_index: int = 0) -> str:
        return cache_key(self.judge_id, self.prompt_version, view.sha256, sample_index)

    async def ajudge_cached(self, view: EvidenceView, sample_index: int = 0,
                            cache: VerdictCache | None = None) -> JudgeRecord:
        """Judge through the verdict cache: a hit returns the stored record (``cached=True``,
        ``segment_id`` set to this view's) without a call; a judged miss is stored; errors never are.
        """
        if cache is None or not self.cacheable:
            return await self.ajudge(view, sample_index)
        key = self.cache_key(view, sample_index)
        hit = cache.get(key)
        if hit is not None:
            return hit.model_copy(update={"segment_id": view.segment_id, "cached": True, "cache_key": key})
        record = await self.ajudge(view, sample_index)
        if record.judged:
            cache.put(key, record.model_copy(update={"cache_key": key}), view_sha256=view.sha256)
        return record

    # -- many views ------------------------------------------------------------------------------
    async def ajudge_many(self, views: Sequence[EvidenceView], *, concurrency: int = 8,
                          cache: VerdictCache | None = None, progress: bool = True,
                          samples: int | None = None) -> list[JudgeRecord]:
        """Judge every view ``samples`` times (default ``self.default_samples``).

        At most ``concurrency`` judgements are in flight (asyncio semaphore). Records come back in
        input order (view-major). A judgement that raises is turned into an error record; this method
        never raises for a single failed judgement.
        """
        if concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {concurrency!r}")
        n_samples = self.default_samples if samples is None else samples
        if n_samples < 1:
            raise ValueError(f"samples must be >= 1, got {samples!r}")
        jobs = [(view, s) for view in views for s in range(n_samples)]
        semaphore = asyncio.Semaphore(concurrency)
        bar = _progress_bar(len(jobs), self.judge_id, progress)

        async def one(view: EvidenceView, sample_index: int) -> JudgeRecord:
            async with semaphore:
                try:
                    return await self.ajudge_cached(view, sample_index, cache)
                except Exception as exc:  # a bug in one judgement must not sink the run
                    return self.error_record(view, sample_index, f"{type(exc).__name__}: {exc}")
                finally:
                    if bar is not None:
                        bar.update(1)

        try:
            return list(await asyncio.gather(*(one(v, s) for v, s in jobs)))
        finally:
            if bar is not None:
                bar.close()
            await self.aclose()

    def judge_many(self, views: Sequence[EvidenceView], *, concurrency: int = 8,
                   cache: VerdictCache | None = None, progress: bool = True,
                   samples: int | None = None) -> list[JudgeRecord]:
        """Synchronous :meth:`ajudge_many` (works inside a running event loop too)."""
        return run_sync(lambda: self.ajudge_many(views, concurrency=concurrency, cache=cache,
                                                 progress=progress, samples=samples))

    async def aclose(self) -> None:
        """Release per-event-loop resources (HTTP clients); called at the end of ``ajudge_many``."""

    # -- helpers ---------------------------------------------------------------------------------
    def error_record(self, view: EvidenceView, sample_index: int, error: str, **fields: Any) -> JudgeRecord:
        """An error record (unjudged segment) for ``view``."""
        return JudgeRecord(segment_id=view.segment_id, judge_id=self.judge_id, model=self.model,
                           prompt_version=self.prompt_version, sample_index=sample_index,
                           error=error, cache_key=self.cache_key(view, sample_index), **fields)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.judge_id!r})"


def _progress_bar(total: int, label: str, enabled: bool) -> Any:
    if not enabled or total == 0:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=f"judging [{label}]", unit="judgement")

