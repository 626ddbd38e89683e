"""Judge wrappers: ``repeat``, ``ensemble``, ``replay`` and ``noise``.

repeat(spec, n)
    n independent samples per view from the inner judge, sample indexes ``0 .. n-1`` (each enters the
    cache key). Records are the inner judge's own records (their ``judge_id`` is the inner id):
    ``judge_many`` returns n records per view (view-major), ``judge_samples(view)`` returns the n
    records of one view, and ``judge(view, k)`` returns sample k only. Nothing is combined.

ensemble(spec, spec, ..., reducer=mean|median|majority)
    Every member judges the view (same sample index); per dimension the judged members' subscores are
    combined by the reducer (members giving null faithfulness are left out of that dimension; null when
    all are null). ``mean``/``median`` may give non-integer subscores (kept as floats, the scorer accepts
    floats in [0, 10]); ``majority`` takes the most frequent value, ties -> the lowest tied value
    (conservative). The categorical verdict is the members' majority, ties -> the worse band.
    ``extra`` holds ``members`` (each member's id, subscores, verdict or error), ``spread`` (population
    sd and range per dimension), ``disagreement`` (members' verdicts fall in different bands),
    ``reducer``, ``n_members`` and ``n_judged``. A failed member is recorded there; all members failed
    -> error record. Tokens and cost are summed over members (cost ``None`` if any member's is unknown).

replay(run_folder)
    The stored records of an earlier run (``<run>/verdicts.jsonl``) looked up by
    ``(segment_id, sample_index)``; they keep their original ``judge_id``. Missing -> error record
    ``not in replayed run``.

noise(spec, sd=<points>, seed=<int>)
    A labelled simulation: the inner judge's subscores plus Gaussian noise N(0, sd^2), rounded to the
    nearest integer and clamped to [0, 10]. The noise of a record depends only on
    ``sha256(seed, segment_id, sample_index)`` so judging order does not matter. The categorical verdict
    is the inner judge's. ``judge_id`` = ``noise(sd=<sd>,seed=<seed>)[<inner id>]``.

Caching: wrappers do not cache their own (cheap, derived) records; they pass the cache down so every
leaf judge's records are cached under the leaf's own id.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import statistics
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from ..rubric import BANDS, DIMENSIONS
from ..view import EvidenceView
from .base import Judge, JudgeRecord, Verdict, run_sync
from .cache import VerdictCache

Reducer = Literal["mean", "median", "majority"]
REDUCERS: tuple[str, ...] = ("mean", "median", "majority")
#: Band order from best to worst, used to break verdict ties towards the worse band.
_BAND_RANK = {b: i for i, b in enumerate(BANDS)}


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
    """Per-dimension combination of several judges (see module docstring)."""

    cacheable = False

    def __init__(self, members: Sequence[Judge], reducer: str = "mean") -> None:
        if len(members) < 2:
            raise ValueError(f"an ensemble needs at least 2 members, got {len(members)}")
        if reducer not in REDUCERS:
            raise ValueError(f"unknown ensemble reducer {reducer!r}; expected one of {list(REDUCERS)}")
        self.members = list(members)
        self.reducer = reducer
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

    def combine(self, view: EvidenceView, sample_index: int, member_records: list[JudgeRecord]) -> JudgeRecord:
        """Combine member records of one (view, sample) into the ensemble record."""
        judged = [r for r in member_records if r.judged and r.verdict is not None]
        members_info = [{"judge_id": r.judge_id, "verdict": r.verdict.verdict if r.verdict else None,
                         "subscores": r.subscores(), "error": r.error, "cached": r.cached}
                        for r in member_records]
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
                                 "n_judged": len(judged), "members": members_info}
        if not judged:
            errors = "; ".join(f"{r.judge_id}: {r.error}" for r in member_records)
            return self.error_record(view, sample_index, f"all {len(member_records)} ensemble members failed: {errors}",
                                     extra=extra, **common)
        combined: dict[str, Any] = {}
        spread: dict[str, dict[str, float] | None] = {}
        for dim in DIMENSIONS:
            values = [float(getattr(r.verdict, dim)) for r in judged if getattr(r.verdict, dim) is not None]
            if not values:
                combined[dim], spread[dim] = None, None
                continue
            combined[dim] = _reduce(values, self.reducer)
            spread[dim] = {"sd": round(statistics.pstdev(values), 6), "range": max(values) - min(values)}
        labels = [r.verdict.verdict for r in judged if r.verdict is not None]
        extra["spread"] = spread
        extra["disagreement"] = len(set(labels)) > 1
        failed = len(member_records) - len(judged)
        explanation = (f"Ensemble of {len(member_records)} judges ({self.reducer}; {len(judged)} judged"
                       + (f", {failed} failed" if failed else "") + "). "
                       + " | ".join(f"[{r.judge_id}: {r.verdict.verdict}] {r.verdict.explanation}"
                                    for r in judged if r.verdict is not None))
        verdict = Verdict(**combined, verdict=_majority_verdict(labels), explanation=explanation)
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


class NoiseJudge(Judge):
    """Seeded Gaussian noise on another judge's subscores: a simulation (see module docstring)."""

    cacheable = False

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
                               extra={"simulation": True, "inner_judge_id": record.judge_id})
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
                                  "base_subscores": record.subscores(), "noise_draws": draws,
                                  "sd": self.sd, "seed": self.seed})

    async def ajudge(self, view: EvidenceView, sample_index: int = 0) -> JudgeRecord:
        return self.perturb(await self.inner.ajudge(view, sample_index))

    async def ajudge_cached(self, view: EvidenceView, sample_index: int = 0,
                            cache: VerdictCache | None = None) -> JudgeRecord:
        return self.perturb(await self.inner.ajudge_cached(view, sample_index, cache))

    async def aclose(self) -> None:
        await self.inner.aclose()
