"""Judge wrappers: ``repeat``, ``ensemble``, ``replay``, ``noise`` and ``simulate``.

repeat(spec, n)
    n independent samples per view from the inner judge, sample indexes ``0 .. n-1`` (each enters the
    cache key). Records are the inner judge's own records (their ``judge_id`` is the inner id):
    ``judge_many`` returns n records per view (view-major), ``judge_samples(view)`` returns the n
    records of one view, and ``judge(view, k)`` returns sample k only. Nothing is combined.

ensemble(spec, spec, ..., reducer=mean|median|majority, disagree_at=<points>)
    Every member judges the view (same sample index); per dimension the judged members' subscores are
    combined by the reducer (members giving null faithfulness are left out of that dimension; null when
    all are null). ``mean``/``median`` may give non-integer subscores (kept as floats, the scorer accepts
    floats in [0, 10]); ``majority`` takes the most frequent value, ties -> the lowest tied value
    (conservative). The median of two members is their mean, so ``reducer=median`` with two members is
    refused (``ValueError``); when members fail at run time and two judged members remain, the median
    is their mean and ``extra["reducer_note"]`` says so. The categorical verdict is the members'
    majority, ties -> the worse band.

    Disagreement is defined on the numbers. Each judged member's subscores are scored by the ensemble's
    rubric (``Rubric.default()`` unless ``rubric=`` is given) with the view's own trajectory facts
    (:attr:`EvidenceView.facts`, so caps apply exactly as in the run), and ``extra["disagreement"]`` is
    true when the members' scored bands differ, or any dimension's range (max - min over judged
    members) is at least ``disagree_at`` points (default 2). ``extra["disagreement_reasons"]`` lists
    what triggered it; ``extra["verdicts_differ"]`` keeps the old categorical comparison for reference.
    A run scored under another rubric can re-score the members from ``extra["members"]`` and
    ``extra["facts"]`` (``axon_eval.stats.noise.members_frame`` with ``rubric=``).

    ``extra`` holds ``members`` (per member, in spec order: ``judge_id``, ``verdict``, ``subscores``
    (the four values), ``raw_score``, ``score``, ``band``, ``unscorable_reason``, ``error``, ``cached``, ``latency_ms``,
    ``input_tokens``, ``output_tokens``, ``cache_read_tokens``, ``cost_usd``), ``spread`` (population sd
    and range per dimension), ``disagreement``, ``disagreement_reasons``, ``disagree_at``,
    ``verdicts_differ``, ``facts`` (the three cap facts), ``rubric_id``, ``reducer``, ``n_members``,
    ``n_judged`` and ``unscorable_reason``. A failed member is recorded there; all members failed -> error
    record. Tokens and cost are summed over members (cost ``None`` if any member's is unknown).

    A judged member (or combination) the ensemble's rubric cannot score
    (:class:`~axon_eval.scoring.UnscorableError`: e.g. all the weight on faithfulness and faithfulness
    null) is never banded and never a 0: the member keeps its subscores and verdict, its ``raw_score``,
    ``score`` and ``band`` are ``None`` and its ``unscorable_reason`` is the scorer's reason (``None``
    for a scored member); members banded alongside unscorable ones are a disagreement (reason
    ``"k of n scored members unscorable under rubric <id>: <ids>"``). The combined verdict is still
    returned (a run scores it, and reports it unjudged with ``verdict could not be scored: unscorable:
    <reason>``); ``extra["unscorable_reason"]`` is the combination's reason under the ensemble's rubric.

replay(run_folder)
    The stored records of an earlier run (``<run>/verdicts.jsonl``) looked up by
    ``(segment_id, sample_index)``; they keep their original ``judge_id``. Missing -> error record
    ``not in replayed run``.

noise(spec, sd=<points>, seed=<int>)
    A labelled simulation: the inner judge's subscores plus Gaussian noise N(0, sd^2), rounded to the
    nearest integer and clamped to [0, 10]. The noise of a record depends only on
    ``sha256(seed, segment_id, sample_index)`` so judging order does not matter. The categorical verdict
    is the inner judge's. ``judge_id`` = ``noise(sd=<sd>,seed=<seed>)[<inner id>]``.

simulate(spec, sd=<points>, difficulty=<sd>, seed=<int>, edge=<0-1>, corr=<0-1>)
    A SIMULATED judge meant as a credible offline stand-in for a sampled language-model judge. For a
    base subscore ``v`` of the inner judge (``p = v / 10``), segment ``s``, sample ``j``, dimension ``d``::

        shape(v)   = edge + (1 - edge) * 4 p (1 - p)        1 at v = 5, ``edge`` at v = 0 and 10
        m_s        = exp(difficulty * u_s - difficulty^2)     per-segment difficulty, E[m_s^2] = 1
        z_sjd      = sqrt(corr) * g_sj + sqrt(1 - corr) * e_sjd      g, e, u ~ N(0, 1)
        value      = clamp(round_half_up(v + sd * m_s * shape(v) * z_sjd), 0, 10)     an integer

    so ``sd`` is the root-mean-square noise SD in points of a mid-range subscore, hard segments
    (large ``m_s``) are noisier on every sample, values near 0 and 10 move less (and only inwards at the
    bounds), and ``corr`` makes the four dimensions of one sample move together (a harsher or kinder
    reading of the whole turn). ``u_s`` depends only on ``sha256(seed, segment_id)``; ``g`` and ``e`` on
    ``sha256(seed, segment_id, sample_index)``: judging order does not matter. A null stays null. The
    categorical verdict is the inner judge's, moved by as many bands as the noise moved the rubric's
    raw (uncapped) band of the subscores. Defaults: ``sd=1`` (the source documents' "about one point on
    a subscore for borderline turns"), ``difficulty=0.5``, ``edge=0.3``, ``corr=0.5``, ``seed=0``.
    ``judge_id`` = ``simulated(sd=..,difficulty=..,edge=..,corr=..,seed=..)[<inner id>]``; every record
    has ``extra["simulated"] = True`` and an explanation starting ``[SIMULATED``;
    ``SimulatedJudge.simulation_parameters`` (and :func:`simulations` for any judge tree) give the
    parameters for a report's first page.

Caching: wrappers do not cache their own (cheap, derived) records; they pass the cache down so every
leaf judge's records are cached under the leaf's own id.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import math
import statistics
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

from ..rubric import BANDS, CAP_FACTS, DIMENSIONS, Rubric
from ..scoring import UnscorableError, score_arrays, score_turn
from ..view import EvidenceView
from .base import Judge, JudgeRecord, Verdict, run_sync
from .cache import VerdictCache

Reducer = Literal["mean", "median", "majority"]
REDUCERS: tuple[str, ...] = ("mean", "median", "majority")
#: Band order from best to worst, used to break verdict ties towards the worse band.
_BAND_RANK = {b: i for i, b in enumerate(BANDS)}
#: Default dimension range (points) at which ensemble members are flagged as disagreeing.
DEFAULT_DISAGREE_AT = 2.0


class RepeatJudge(Judge):
    """n samples per view of ``inner`` (see module docstring)."""

    def __init__(self, inner: Judge, n: int) -> None:
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise ValueError(f"repeat needs n >= 1 samples, got {n!r}")
        self.inner = inner
        self.n = n
        self.default_samples = n
        self.model = inner.model
        self.prompt_version = inner.prompt_version
        self.judge_id = f"repeat(n={n})[{inner.judge_id}]"

    async def ajudge(self, view: EvidenceView, sample_index: int = 0) -> JudgeRecord:
        return await self.inner.ajudge(view, sample_index)

    async def ajudge_cached(self, view: EvidenceView, sample_index: int = 0,
                            cache: VerdictCache | None = None) -> JudgeRecord:
        return await self.inner.ajudge_cached(view, sample_index, cache)

    def cache_key(self, view: EvidenceView, sample_index: int = 0) -> str:
        return self.inner.cache_key(view, sample_index)

    async def ajudge_samples(self, view: EvidenceView, cache: VerdictCache | None = None) -> list[JudgeRecord]:
        """The n records of one view (sample indexes 0..n-1), concurrently."""
        try:
            return list(await asyncio.gather(*(self.ajudge_cached(view, s, cache) for s in range(self.n))))
        finally:
            await self.aclose()

    def judge_samples(self, view: EvidenceView, cache: VerdictCache | None = None) -> list[JudgeRecord]:
        return run_sync(lambda: self.ajudge_samples(view, cache))

    async def aclose(self) -> None:
        await self.inner.aclose()


def _reduce(values: list[float], reducer: str) -> float:
    if reducer == "mean":
        result = statistics.fmean(values)
    elif reducer == "median":
        result = float(statistics.median(values))
    else:
        counts = Counter(values)
        top = max(counts.values())
        result = min(v for v, c in counts.items() if c == top)
    return int(result) if float(result).is_integer() else round(result, 6)


def _majority_verdict(labels: list[str]) -> str:
    counts = Counter(labels)
    top = max(counts.values())
    return max((label for label, c in counts.items() if c == top), key=lambda b: _BAND_RANK[b])


class EnsembleJudge(Judge):
    """Per-dimension combination of several judges, with a disagreement flag on the numbers (module docstring)."""

    cacheable = False

    def __init__(self, members: Sequence[Judge], reducer: str = "mean", *,
                 disagree_at: float = DEFAULT_DISAGREE_AT, rubric: Rubric | None = None) -> None:
        if len(members) < 2:
            raise ValueError(f"an ensemble needs at least 2 members, got {len(members)}")
        if reducer not in REDUCERS:
            raise ValueError(f"unknown ensemble reducer {reducer!r}; expected one of {list(REDUCERS)}")
        if reducer == "median" and len(members) == 2:
            raise ValueError("reducer='median' with 2 members: the median of two values is their mean; "
                             "use reducer='mean' or add a third member")
        if isinstance(disagree_at, bool) or not isinstance(disagree_at, int | float) or not disagree_at > 0:
            raise ValueError(f"disagree_at must be a positive number of points, got {disagree_at!r}")
        self.members = list(members)
        self.reducer = reducer
        self.disagree_at = float(disagree_at)
        self.rubric = Rubric.default() if rubric is None else rubric
        self.model = "+".join(m.model for m in self.members)
        versions = sorted({m.prompt_version for m in self.members})
        self.prompt_version = "+".join(versions)
        self.judge_id = f"ensemble(reducer={reducer})[{', '.join(m.judge_id for m in self.members)}]"

    async def ajudge(self, view: EvidenceView, sample_index: int = 0) -> JudgeRecord:
        return await self.ajudge_cached(view, sample_index, None)

    async def ajudge_cached(self, view: EvidenceView, sample_index: int = 0,
                            cache: VerdictCache | None = None) -> JudgeRecord:
        records = await asyncio.gather(*(m.ajudge_cached(view, sample_index, cache) for m in self.members),
                                       return_exceptions=True)
        member_records: list[JudgeRecord] = []
        for member, rec in zip(self.members, records, strict=True):
            if isinstance(rec, BaseException):
                rec = member.error_record(view, sample_index, f"{type(rec).__name__}: {rec}")
            member_records.append(rec)
        return self.combine(view, sample_index, member_records)

    def _member_info(self, record: JudgeRecord, facts: dict[str, Any]) -> dict[str, Any]:
        info: dict[str, Any] = {"judge_id": record.judge_id, "verdict": record.verdict.verdict if record.verdict else None,
                                "subscores": record.subscores(), "raw_score": None, "score": None, "band": None,
                                "error": record.error, "cached": record.cached, "latency_ms": record.latency_ms,
                                "input_tokens": record.input_tokens, "output_tokens": record.output_tokens,
                                "cache_read_tokens": record.cache_read_tokens, "cost_usd": record.cost_usd}
        info["unscorable_reason"] = None
        if record.judged and record.verdict is not None:
            try:
                scored = score_turn(record.verdict.subscores(), facts, self.rubric)
            except UnscorableError as exc:  # judged, but the rubric cannot score it: never banded, never a 0
                info["unscorable_reason"] = exc.reason
            else:
                info.update(raw_score=scored.raw_score, score=scored.score, band=scored.band)
        return info

    def combine(self, view: EvidenceView, sample_index: int, member_records: list[JudgeRecord]) -> JudgeRecord:
        """Combine member records of one (view, sample) into the ensemble record."""
        judged = [r for r in member_records if r.judged and r.verdict is not None]
        facts = {f: bool(getattr(view.facts, f)) for f in CAP_FACTS}
        members_info = [self._member_info(r, facts) for r in member_records]
        latencies = [r.latency_ms for r in member_records if r.latency_ms is not None]
        common: dict[str, Any] = dict(
            latency_ms=max(latencies) if latencies else None,
            input_tokens=_sum_or_none(r.input_tokens for r in member_records),
            output_tokens=_sum_or_none(r.output_tokens for r in member_records),
            cache_read_tokens=_sum_or_none(r.cache_read_tokens for r in member_records),
            cache_creation_tokens=_sum_or_none(r.cache_creation_tokens for r in member_records),
            cost_usd=_cost_sum(member_records),
        )
        extra: dict[str, Any] = {"reducer": self.reducer, "n_members": len(member_records),
                                 "n_judged": len(judged), "members": members_info, "facts": facts,
                                 "rubric_id": self.rubric.id, "disagree_at": self.disagree_at}
        if not judged:
            errors = "; ".join(f"{r.judge_id}: {r.error}" for r in member_records)
            return self.error_record(view, sample_index, f"all {len(member_records)} ensemble members failed: {errors}",
                                     extra=extra, **common)
        combined: dict[str, Any] = {}
        spread: dict[str, dict[str, float] | None] = {}
        reasons: list[str] = []
        for dim in DIMENSIONS:
            values = [float(getattr(r.verdict, dim)) for r in judged if getattr(r.verdict, dim) is not None]
            if not values:
                combined[dim], spread[dim] = None, None
                continue
            combined[dim] = _reduce(values, self.reducer)
            spread[dim] = {"sd": round(statistics.pstdev(values), 6), "range": max(values) - min(values)}
            if spread[dim]["range"] >= self.disagree_at:
                reasons.append(f"{dim} range {spread[dim]['range']:g} >= {self.disagree_at:g}")
        bands = [m["band"] for m in members_info if m["band"] is not None]
        if len(set(bands)) > 1:
            # named best first so the reason reads the same whatever the member order
            reasons.insert(0, "scored bands differ: " + ", ".join(sorted(set(bands), key=_BAND_RANK.__getitem__)))
        unscorable = [m["judge_id"] for m in members_info if m["unscorable_reason"] is not None]
        if unscorable and bands:
            # some members banded, others not scorable at all: the members differ on what can be scored
            reasons.insert(0, f"{len(unscorable)} of {len(bands) + len(unscorable)} scored members unscorable under "
                              f"rubric {self.rubric.id}: {', '.join(unscorable)}")
        labels = [r.verdict.verdict for r in judged if r.verdict is not None]
        extra["spread"] = spread
        extra["disagreement"] = bool(reasons)
        extra["disagreement_reasons"] = reasons
        extra["verdicts_differ"] = len(set(labels)) > 1
        if self.reducer == "median" and len(judged) == 2:
            extra["reducer_note"] = "only 2 members judged: their median is their mean"
        failed = len(member_records) - len(judged)
        explanation = (f"Ensemble of {len(member_records)} judges ({self.reducer}; {len(judged)} judged"
                       + (f", {failed} failed" if failed else "") + "). "
                       + " | ".join(f"[{r.judge_id}: {r.verdict.verdict}] {r.verdict.explanation}"
                                    for r in judged if r.verdict is not None))
        verdict = Verdict(**combined, verdict=_majority_verdict(labels), explanation=explanation)
        try:
            score_turn(verdict.subscores(), facts, self.rubric)
            extra["unscorable_reason"] = None
        except UnscorableError as exc:  # the run scores the verdict and reports it unscorable with this reason
            extra["unscorable_reason"] = exc.reason
        return JudgeRecord(segment_id=view.segment_id, judge_id=self.judge_id, model=self.model,
                           prompt_version=self.prompt_version, sample_index=sample_index, verdict=verdict,
                           cache_key=self.cache_key(view, sample_index), extra=extra, **common)

    async def aclose(self) -> None:
        for m in self.members:
            await m.aclose()


def _sum_or_none(values: Any) -> int | None:
    present = [v for v in values if v is not None]
    return sum(present) if present else None


def _cost_sum(records: list[JudgeRecord]) -> float | None:
    called = [r for r in records if r.input_tokens is not None or r.cost_usd is not None]
    if not called:
        return None
    if any(r.cost_usd is None for r in called):
        return None
    return round(sum(r.cost_usd for r in called if r.cost_usd is not None), 8)


class ReplayJudge(Judge):
    """Serve the records of an earlier run (see module docstring)."""

    cacheable = False

    def __init__(self, run_folder: str | Path) -> None:
        path = Path(run_folder)
        file = path if path.is_file() else path / "verdicts.jsonl"
        if not file.is_file():
            raise FileNotFoundError(f"replay: no verdicts.jsonl at {file} (give a run folder or the file itself)")
        self.source = file
        self.records: dict[tuple[str, int], JudgeRecord] = {}
        judge_ids: set[str] = set()
        models: set[str] = set()
        versions: set[str] = set()
        for lineno, line in enumerate(file.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                rec = JudgeRecord.from_json_line(line)
            except ValueError as exc:
                raise ValueError(f"replay: {file}:{lineno}: not a judge record: {str(exc).splitlines()[0]}") from None
            self.records[(rec.segment_id, rec.sample_index)] = rec
            judge_ids.add(rec.judge_id)
            models.add(rec.model)
            versions.add(rec.prompt_version)
        self.replayed_judge_ids = sorted(judge_ids)
        self.model = "+".join(sorted(models)) or "replay"
        self.prompt_version = "+".join(sorted(versions)) or "replay"
        self.judge_id = f"replay({file.parent.name})[{', '.join(self.replayed_judge_ids)}]"

    async def ajudge(self, view: EvidenceView, sample_index: int = 0) -> JudgeRecord:
        rec = self.records.get((view.segment_id, sample_index))
        if rec is None:
            return self.error_record(view, sample_index,
                                     f"not in replayed run {self.source} (segment {view.segment_id!r}, "
                                     f"sample {sample_index})")
        return rec.model_copy(update={"extra": {**rec.extra, "replayed_from": str(self.source)}})


class _PerturbingJudge(Judge):
    """A simulation over ``self.inner``: every record the inner judge gives (judged or from its cache)
    goes through :meth:`perturb`. Never cached itself: the simulated draws depend on its parameters."""

    cacheable = False
    inner: Judge

    def perturb(self, record: JudgeRecord) -> JudgeRecord:  # pragma: no cover - abstract
        raise NotImplementedError

    async def ajudge(self, view: EvidenceView, sample_index: int = 0) -> JudgeRecord:
        return self.perturb(await self.inner.ajudge(view, sample_index))

    async def ajudge_cached(self, view: EvidenceView, sample_index: int = 0,
                            cache: VerdictCache | None = None) -> JudgeRecord:
        return self.perturb(await self.inner.ajudge_cached(view, sample_index, cache))

    async def aclose(self) -> None:
        await self.inner.aclose()


class NoiseJudge(_PerturbingJudge):
    """Seeded Gaussian noise on another judge's subscores: a simulation (see module docstring)."""

    def __init__(self, inner: Judge, sd: float, seed: int = 0) -> None:
        if not sd >= 0:
            raise ValueError(f"noise sd must be >= 0 points, got {sd!r}")
        self.inner = inner
        self.sd = float(sd)
        self.seed = int(seed)
        self.model = inner.model
        self.prompt_version = inner.prompt_version
        self.default_samples = inner.default_samples
        self.judge_id = f"noise(sd={self.sd},seed={self.seed})[{inner.judge_id}]"

    @property
    def simulation_parameters(self) -> dict[str, Any]:
        """The simulation's parameters, for a report's first page (labelled SIMULATED)."""
        return {"label": "SIMULATED judge noise", "wrapper": "noise", "judge_id": self.judge_id,
                "inner_judge_id": self.inner.judge_id, "sd": self.sd, "seed": self.seed,
                "model": "value = clamp(round(v + N(0, sd^2)), 0, 10), per (seed, segment_id, sample_index)"}

    def _rng(self, segment_id: str, sample_index: int) -> random.Random:
        digest = hashlib.sha256(json.dumps([self.seed, segment_id, sample_index]).encode()).digest()
        return random.Random(int.from_bytes(digest[:8], "big"))

    def perturb(self, record: JudgeRecord) -> JudgeRecord:
        """The noisy copy of ``record`` (error records pass through, relabelled)."""
        base = dict(segment_id=record.segment_id, judge_id=self.judge_id, model=self.model,
                    prompt_version=self.prompt_version, sample_index=record.sample_index)
        keep = {k: getattr(record, k) for k in ("latency_ms", "input_tokens", "output_tokens", "cache_read_tokens",
                                                "cache_creation_tokens", "cost_usd")}
        if record.verdict is None:
            return JudgeRecord(**base, **keep, error=f"inner judge failed: {record.error}",
                               extra={"simulation": True, "simulated": True, "inner_judge_id": record.judge_id})
        rng = self._rng(record.segment_id, record.sample_index)
        noisy: dict[str, Any] = {}
        draws: dict[str, float] = {}
        for dim in DIMENSIONS:  # always draw 4 numbers so a null dimension does not shift the others
            draw = rng.gauss(0.0, self.sd)
            value = getattr(record.verdict, dim)
            draws[dim] = round(draw, 6)
            noisy[dim] = None if value is None else int(min(10, max(0, round(value + draw))))
        verdict = Verdict(**noisy, verdict=record.verdict.verdict,
                          explanation=f"[SIMULATED NOISE sd={self.sd} seed={self.seed}] {record.verdict.explanation}")
        return JudgeRecord(**base, **keep, verdict=verdict, cache_key=record.cache_key, cached=record.cached,
                           extra={"simulation": True, "inner_judge_id": record.judge_id,
                                  "simulated": True, "base_subscores": record.subscores(), "noise_draws": draws,
                                  "sd": self.sd, "seed": self.seed})



def _raw_band_ranks(rows: Sequence[dict[str, Any]], rubric: Rubric) -> list[int]:
    """Band rank (0 good .. 2 poor) of the rubric's raw, uncapped score of each subscore mapping."""
    subs = np.array([[np.nan if r[d] is None else float(r[d]) for d in DIMENSIONS] for r in rows])
    _raw, _score, codes = score_arrays(subs, np.zeros((len(rows), len(CAP_FACTS)), dtype=bool), rubric)
    return [int(c) for c in codes]


class SimulatedJudge(_PerturbingJudge):
    """A SIMULATED sampled judge: integer subscores, mid-range noise, per-segment difficulty (module docstring)."""

    def __init__(self, inner: Judge, sd: float = 1.0, difficulty: float = 0.5, seed: int = 0, *,
                 edge: float = 0.3, corr: float = 0.5) -> None:
        for name, value, low, high in (("sd", sd, 0.0, math.inf), ("difficulty", difficulty, 0.0, math.inf),
                                       ("edge", edge, 0.0, 1.0), ("corr", corr, 0.0, 1.0)):
            if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
                raise ValueError(f"simulate {name} must be a number in [{low:g}, {high:g}], got {value!r}")
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise ValueError(f"simulate seed must be an integer, got {seed!r}")
        self.inner = inner
        self.sd = float(sd)
        self.difficulty = float(difficulty)
        self.edge = float(edge)
        self.corr = float(corr)
        self.seed = seed
        self.rubric = Rubric.default()
        self.model = inner.model
        self.prompt_version = inner.prompt_version
        self.default_samples = inner.default_samples
        self.judge_id = (f"simulated(sd={self.sd:g},difficulty={self.difficulty:g},edge={self.edge:g},"
                         f"corr={self.corr:g},seed={self.seed})[{inner.judge_id}]")

    @property
    def simulation_parameters(self) -> dict[str, Any]:
        """The simulation's parameters and model, for a report's first page (labelled SIMULATED)."""
        return {"label": "SIMULATED judge", "wrapper": "simulate", "judge_id": self.judge_id,
                "inner_judge_id": self.inner.judge_id, "sd": self.sd, "difficulty": self.difficulty,
                "edge": self.edge, "corr": self.corr, "seed": self.seed,
                "model": ("value = clamp(round_half_up(v + sd * m_s * shape(v) * z), 0, 10); "
                          "shape(v) = edge + (1 - edge) * 4p(1 - p), p = v/10; "
                          "m_s = exp(difficulty * u_s - difficulty^2), u_s ~ N(0,1) per (seed, segment_id); "
                          "z = sqrt(corr) * g + sqrt(1 - corr) * e_d, g, e ~ N(0,1) per (seed, segment_id, "
                          "sample_index); verdict moved by the change of the raw band")}

    def _generator(self, *key: Any) -> np.random.Generator:
        digest = hashlib.sha256(json.dumps(["simulate", self.seed, *key]).encode()).digest()
        return np.random.default_rng(int.from_bytes(digest[:16], "big"))

    def difficulty_multiplier(self, segment_id: str) -> float:
        """``m_s = exp(difficulty * u_s - difficulty^2)`` of one segment (same for all its samples)."""
        u = float(self._generator("difficulty", segment_id).standard_normal())
        return math.exp(self.difficulty * u - self.difficulty ** 2)

    def shape(self, value: float) -> float:
        """``edge + (1 - edge) * 4 p (1 - p)`` with ``p = value / 10`` (clamped): 1 at 5, ``edge`` at 0 and 10."""
        p = min(max(float(value), 0.0), 10.0) / 10.0
        return self.edge + (1 - self.edge) * 4 * p * (1 - p)

    def noise_sd(self, value: float, segment_id: str) -> float:
        """The noise SD (points) of a base subscore ``value`` in ``segment_id``: ``sd * m_s * shape(v)``."""
        return self.sd * self.difficulty_multiplier(segment_id) * self.shape(value)

    def perturb(self, record: JudgeRecord) -> JudgeRecord:
        """The simulated sample of ``record`` (error records pass through, relabelled)."""
        base = dict(segment_id=record.segment_id, judge_id=self.judge_id, model=self.model,
                    prompt_version=self.prompt_version, sample_index=record.sample_index)
        keep = {k: getattr(record, k) for k in ("latency_ms", "input_tokens", "output_tokens", "cache_read_tokens",
                                                "cache_creation_tokens", "cost_usd")}
        parameters = {"sd": self.sd, "difficulty": self.difficulty, "edge": self.edge, "corr": self.corr,
                      "seed": self.seed}
        if record.verdict is None:
            return JudgeRecord(**base, **keep, error=f"inner judge failed: {record.error}",
                               extra={"simulated": True, "simulation": "simulate", "inner_judge_id": record.judge_id,
                                      "parameters": parameters})
        multiplier = self.difficulty_multiplier(record.segment_id)
        # always 1 shared + 4 own draws, so a null dimension does not shift the others
        draws = self._generator("noise", record.segment_id, record.sample_index).standard_normal(1 + len(DIMENSIONS))
        shared, own = draws[0], draws[1:]
        base_subs = record.verdict.subscores()
        noisy: dict[str, int | None] = {}
        sds: dict[str, float | None] = {}
        zs: dict[str, float] = {}
        for i, dim in enumerate(DIMENSIONS):
            z = math.sqrt(self.corr) * shared + math.sqrt(1 - self.corr) * own[i]
            zs[dim] = round(float(z), 6)
            value = base_subs[dim]
            if value is None:
                noisy[dim], sds[dim] = None, None
                continue
            sd = self.sd * multiplier * self.shape(value)
            sds[dim] = round(sd, 6)
            noisy[dim] = int(min(10, max(0, math.floor(float(value) + sd * z + 0.5))))
        # A real judge's verdict moves with its reading of the turn: shift the inner verdict by the
        # number of bands the noise moved the raw band of the subscores (clamped to good..poor).
        base_rank, noisy_rank = _raw_band_ranks([base_subs, noisy], self.rubric)
        shift = noisy_rank - base_rank
        label = BANDS[min(len(BANDS) - 1, max(0, _BAND_RANK[record.verdict.verdict] + shift))]
        verdict = Verdict(**noisy, verdict=label,
                          explanation=(f"[SIMULATED judge sd={self.sd:g} difficulty={self.difficulty:g} "
                                       f"seed={self.seed}] {record.verdict.explanation}"))
        return JudgeRecord(**base, **keep, verdict=verdict, cache_key=record.cache_key, cached=record.cached,
                           extra={"simulated": True, "simulation": "simulate", "inner_judge_id": record.judge_id,
                                  "parameters": parameters, "base_subscores": base_subs,
                                  "base_verdict": record.verdict.verdict,
                                  "difficulty_multiplier": round(multiplier, 6), "noise_sd": sds, "noise_z": zs})



def simulations(judge: Judge) -> list[dict[str, Any]]:
    """``simulation_parameters`` of every simulated judge (``simulate``/``noise``) in a judge tree, outermost first.

    Empty when nothing in the tree is simulated. Walks ``inner`` (repeat, noise, simulate) and
    ``members`` (ensemble).
    """
    found: list[dict[str, Any]] = []
    stack: list[Judge] = [judge]
    while stack:
        node = stack.pop(0)
        if isinstance(node, SimulatedJudge | NoiseJudge):
            found.append(node.simulation_parameters)
        inner = getattr(node, "inner", None)
        if isinstance(inner, Judge):
            stack.append(inner)
        stack.extend(m for m in getattr(node, "members", []) if isinstance(m, Judge))
    return found


def is_simulated(judge: Judge) -> bool:
    """True when any judge in the tree is simulated (its results must be labelled SIMULATED)."""
    return bool(simulations(judge))
