"""Deterministic scorer: judge subscores + trajectory facts -> score out of 100, band and audit.

The judge never does arithmetic. For one segment with subscores ``s_d`` (0-10, clamped) over the
observed dimensions ``O`` (``answer_faithfulness`` may be null and is then left out):

    effective weight   e_d = w_d / sum_{k in O} w_k                    (renormalised nominal weights)
    contribution       c_d = 10 * e_d * s_d                            (points out of 100)
    raw_score          = 10 * sum_{d in O} w_d * s_d / sum_{d in O} w_d  in [0, 100]
    capped             = min(raw_score, cap_f for every triggered fact f,
                             cap_c for every subscore cap c with s_c <= threshold_c)
    score              = round(capped, 1)
    band               = good if score >= 80, partial if score >= 50, else poor

Caps (``axon-v1``): every SQL execution failed -> 25; the chain ended on an unrecovered failure -> 70;
no tools and no SQL at all -> 40. Recovered errors carry no penalty and are recorded as a note. A
rubric may add subscore caps (``axon-v1-faithcap``: faithfulness <= 3 -> 49); a null subscore never
triggers one. Caps only ever lower a score, and none depends on the weights. The judge's categorical verdict is compared with the band; a mismatch is a
note, never a change of score.

:func:`score_frame` applies exactly the same arithmetic, vectorised, to a DataFrame with one row per
segment; :func:`score_turn` calls the same kernel on one row and adds the audit record, so both give
bit-identical numbers. The kernel's pieces (:func:`_effective_caps`, :func:`_weighted_raw`,
:func:`_cap_round_band`) broadcast, and :mod:`axon_eval.stats.sensitivity` calls them to score many
weight vectors at once with the same arithmetic.

Rounding: ``numpy.round`` (round half to even on the binary value), used by both paths.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .evidence import TrajectoryFacts
from .rubric import BANDS, CAP_FACTS, DIMENSIONS, REQUIRED_DIMENSIONS, SUBSCORE_CAP_INFIX, Rubric

#: Columns :func:`score_frame` reads.
FRAME_INPUT_COLUMNS: tuple[str, ...] = DIMENSIONS + CAP_FACTS
#: Columns :func:`score_frame` adds.
FRAME_OUTPUT_COLUMNS: tuple[str, ...] = ("raw_score", "score", "band")

_BAND_CODES = np.array(BANDS, dtype=object)  # 0 good, 1 partial, 2 poor


@dataclass(frozen=True)
class CapRecord:
    """One cap of the rubric for one segment.

    ``triggered``: its trajectory fact holds. ``applied``: triggered *and* the cap is below the raw
    score, i.e. on its own it would lower the score (several caps can be applied; the lowest binds).
    """

    name: str
    cap: float
    triggered: bool
    applied: bool


@dataclass(frozen=True)
class TurnScore:
    """The audit record of one scored segment: enough to retrace the score by hand."""

    subscores: dict[str, float | None]
    nominal_weights: dict[str, float]
    effective_weights: dict[str, float]
    contributions: dict[str, float]
    raw_score: float
    capped_score: float
    score: float
    band: str
    caps: list[CapRecord]
    notes: list[str]
    rubric_id: str
    judge_verdict: str | None = None
    verdict_matches_band: bool | None = None
    facts: dict[str, Any] = field(default_factory=dict)

    @property
    def caps_applied(self) -> list[str]:
        return [c.name for c in self.caps if c.applied]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _validate_rubric(rubric: Rubric | None) -> Rubric:
    return Rubric.default() if rubric is None else rubric


def _weight_array(rubric: Rubric) -> np.ndarray:
    """Nominal weights as a float64 array in ``DIMENSIONS`` order."""
    return np.array([rubric.weights.as_dict()[d] for d in DIMENSIONS], dtype=np.float64)


def _effective_caps(subs: np.ndarray, facts: np.ndarray, rubric: Rubric) -> np.ndarray:
    """Per row, the lowest cap that applies to it (``inf`` when none): it does not depend on the weights.

    Fact caps trigger on their trajectory fact; subscore caps on ``subscore <= at_or_below`` (a NaN
    subscore compares False, so a null faithfulness never triggers one). ``min(raw, lowest cap)`` is
    exactly ``min`` applied cap by cap, because ``min`` is exact in floating point.
    """
    cap = np.full(subs.shape[0], np.inf)
    fact_caps = rubric.caps.as_dict()
    for j, fact in enumerate(CAP_FACTS):
        cap = np.where(facts[:, j], np.minimum(cap, fact_caps[fact]), cap)
    for sc in rubric.subscore_caps:
        with np.errstate(invalid="ignore"):
            hit = subs[:, DIMENSIONS.index(sc.dimension)] <= sc.at_or_below
        cap = np.where(hit, np.minimum(cap, sc.cap), cap)
    return cap


def _weighted_raw(s_cols: Sequence[np.ndarray], w_cols: Sequence[np.ndarray]) -> np.ndarray:
    """``10 * sum(w_d s_d) / sum(w_d)`` from four subscore columns and four weight columns.

    Columns broadcast against each other, so the same code scores one weight vector against n rows
    (``w_cols`` scalars or (n,)) or K vectors against n rows (``w_cols`` (K, 1), ``s_cols`` (1, n)).
    Unobserved dimensions enter with weight 0 and subscore 0. The summation order is fixed, so every
    caller gets bit-identical numbers for the same weights and subscores.
    """
    s0, s1, s2, s3 = s_cols
    w0, w1, w2, w3 = w_cols
    num = w0 * s0 + w1 * s1 + w2 * s2 + w3 * s3
    den = w0 + w1 + w2 + w3
    with np.errstate(invalid="ignore", divide="ignore"):
        return 10.0 * num / den


def _cap_round_band(raw: np.ndarray, cap: np.ndarray, rubric: Rubric) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(capped, score, band_code) from raw scores and the per-row lowest cap (broadcasting)."""
    capped = np.minimum(raw, cap)
    score = np.round(capped, 1)
    code = np.where(score >= rubric.bands.good, 0, np.where(score >= rubric.bands.partial, 1, 2))
    return capped, score, code


def _kernel(subs: np.ndarray, facts: np.ndarray, rubric: Rubric) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Vectorised arithmetic shared by every entry point (and by :mod:`axon_eval.stats.sensitivity`).

    ``subs``: (n, 4) float array in DIMENSIONS order, already clamped, NaN = not observed
    (only faithfulness may be NaN). ``facts``: (n, 3) bool array in CAP_FACTS order.
    Returns (raw, capped, score, band_code).
    """
    w = _weight_array(rubric)
    observed = ~np.isnan(subs)
    s0 = np.where(observed, subs, 0.0)
    wo = np.where(observed, w, 0.0)
    raw = _weighted_raw([s0[:, d] for d in range(4)], [wo[:, d] for d in range(4)])
    capped, score, code = _cap_round_band(raw, _effective_caps(subs, facts, rubric), rubric)
    return raw, capped, score, code


def _as_fact_mapping(facts: TrajectoryFacts | Mapping[str, Any]) -> dict[str, Any]:
    data = facts.to_dict() if isinstance(facts, TrajectoryFacts) else dict(facts)
    missing = [f for f in CAP_FACTS if f not in data]
    if missing:
        raise ValueError(f"trajectory facts are missing {missing}; expected keys {list(CAP_FACTS)}")
    for f in CAP_FACTS:
        if not isinstance(data[f], bool | np.bool_):
            raise ValueError(f"trajectory fact {f} must be a bool, got {data[f]!r}")
    return data


def score_turn(
    subscores: Mapping[str, float | int | None],
    facts: TrajectoryFacts | Mapping[str, Any],
    rubric: Rubric | None = None,
    *,
    judge_verdict: str | None = None,
) -> TurnScore:
    """Score one segment and return its full audit record.

    Parameters
    ----------
    subscores : mapping of the four dimension names to a number in [0, 10] or ``None``.
        ``intent_understood``, ``sql_quality`` and ``result_relevance`` are required;
        ``answer_faithfulness`` may be ``None`` (no answer captured) and is then left out of the
        weighting. Values outside [0, 10] are clamped and the clamp is noted.
    facts : :class:`~axon_eval.evidence.TrajectoryFacts` or a mapping with at least
        ``all_sql_failed``, ``ended_on_failure``, ``no_tools`` (bools); ``recovered_errors`` (int)
        adds a note when positive.
    rubric : the :class:`~axon_eval.rubric.Rubric` (default ``axon-v1``).
    judge_verdict : the judge's own ``good``/``partial``/``poor``; compared with the band, a
        mismatch is a note.

    Returns
    -------
    TurnScore with ``raw_score`` and ``score`` in [0, 100] (score rounded to 0.1).

    Examples
    --------
    >>> r = score_turn({"intent_understood": 10, "sql_quality": 10, "result_relevance": 10,
    ...                 "answer_faithfulness": None},
    ...                {"all_sql_failed": False, "ended_on_failure": False, "no_tools": False})
    >>> r.score, r.band, r.effective_weights["intent_understood"]
    (100.0, 'good', 0.375)
    """
    rubric = _validate_rubric(rubric)
    unknown = sorted(set(subscores) - set(DIMENSIONS))
    if unknown:
        raise ValueError(f"unknown dimension(s) {unknown}; expected {list(DIMENSIONS)}")
    notes: list[str] = []
    clean: dict[str, float | None] = {}
    for d in DIMENSIONS:
        value = subscores.get(d)
        if value is None or (isinstance(value, float) and math.isnan(value)):
            if d in REQUIRED_DIMENSIONS:
                raise ValueError(f"required dimension {d} is missing (got {value!r}); only answer_faithfulness may be null")
            clean[d] = None
            continue
        if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
            raise ValueError(f"subscore {d} must be a number in [0, 10], got {value!r}")
        v = float(value)
        if v < 0 or v > 10:
            clamped = min(max(v, 0.0), 10.0)
            notes.append(f"{d} {v:g} clamped to {clamped:g}")
            v = clamped
        clean[d] = v
    fact_map = _as_fact_mapping(facts)

    subs = np.array([[np.nan if clean[d] is None else clean[d] for d in DIMENSIONS]], dtype=np.float64)
    fact_arr = np.array([[bool(fact_map[f]) for f in CAP_FACTS]], dtype=bool)
    raw_a, capped_a, score_a, code_a = _kernel(subs, fact_arr, rubric)
    raw, capped, score = float(raw_a[0]), float(capped_a[0]), float(score_a[0])
    band = str(_BAND_CODES[code_a[0]])

    nominal = rubric.weights.as_dict()
    observed_total = sum(nominal[d] for d in DIMENSIONS if clean[d] is not None)
    # Rounded to 12 decimals for readers (0.375, not 0.37499999999999994); raw_score is unrounded.
    effective = {d: (round(nominal[d] / observed_total, 12) if clean[d] is not None else 0.0) for d in DIMENSIONS}
    contributions = {d: (round(10.0 * effective[d] * clean[d], 10) if clean[d] is not None else 0.0) for d in DIMENSIONS}
    if clean["answer_faithfulness"] is None:
        notes.append("answer_faithfulness is null (no answer captured): weights renormalised over "
                     "the three observed dimensions")

    caps = rubric.caps.as_dict()
    cap_records = [
        CapRecord(name=f, cap=caps[f], triggered=bool(fact_map[f]), applied=bool(fact_map[f]) and caps[f] < raw)
        for f in CAP_FACTS
    ]
    for sc in rubric.subscore_caps:
        # A null subscore never triggers its cap (nothing to compare), exactly as NaN <= x is False in _kernel.
        value = clean[sc.dimension]
        hit = value is not None and value <= sc.at_or_below
        cap_records.append(CapRecord(name=sc.name, cap=sc.cap, triggered=hit, applied=hit and sc.cap < raw))
    binding = min((c for c in cap_records if c.applied), key=lambda c: c.cap, default=None)
    for c in cap_records:
        if c is binding:
            notes.append(f"capped at {c.cap:g} because {f_describe(c.name)}")
        elif c.applied:
            notes.append(f"cap {c.name} ({c.cap:g}) also triggered; the lower cap binds")
        elif c.triggered:
            notes.append(f"cap {c.name} ({c.cap:g}) triggered but did not bite (raw score {raw:.1f})")
    recovered = int(fact_map.get("recovered_errors", 0) or 0)
    if recovered:
        notes.append(f"{recovered} failed SQL execution(s) recovered by a later successful statement: no penalty")

    matches: bool | None = None
    if judge_verdict is not None:
        if judge_verdict not in BANDS:
            raise ValueError(f"judge verdict must be one of {list(BANDS)}, got {judge_verdict!r}")
        matches = judge_verdict == band
        if not matches:
            notes.append(f"judge verdict {judge_verdict!r} differs from band {band!r} (score unchanged)")

    return TurnScore(
        subscores=clean,
        nominal_weights=nominal,
        effective_weights=effective,
        contributions=contributions,
        raw_score=raw,
        capped_score=capped,
        score=score,
        band=band,
        caps=cap_records,
        notes=notes,
        rubric_id=rubric.id,
        judge_verdict=judge_verdict,
        verdict_matches_band=matches,
        facts=fact_map,
    )


_CAP_REASONS = {
    "all_sql_failed": "every SQL execution in the turn failed",
    "ended_on_failure": "the query chain ended on an unrecovered failure",
    "no_tools": "no tools and no SQL were run at all",
}


def f_describe(fact: str) -> str:
    """Plain-English reason for a cap (a fact name, or a subscore cap's ``<dimension>_at_or_below_<x>``)."""
    if fact in _CAP_REASONS:
        return _CAP_REASONS[fact]
    dimension, infix, threshold = fact.partition(SUBSCORE_CAP_INFIX)
    if infix and dimension in DIMENSIONS:
        return f"{dimension} was graded {threshold} or lower"
    return fact


def score_arrays(subscores: np.ndarray, facts: np.ndarray, rubric: Rubric | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Array form of :func:`score_frame` for studies: returns ``(raw_score, score, band_code)``.

    ``subscores`` is (n, 4) in ``DIMENSIONS`` order (NaN only in the last column); ``facts`` is
    (n, 3) bool in ``CAP_FACTS`` order. Band codes: 0 good, 1 partial, 2 poor. Values are clamped
    to [0, 10] silently here; use :func:`score_turn` for the audited path.
    """
    rubric = _validate_rubric(rubric)
    subs = np.clip(np.asarray(subscores, dtype=np.float64), 0.0, 10.0)
    if subs.ndim != 2 or subs.shape[1] != len(DIMENSIONS):
        raise ValueError(f"subscores must have shape (n, {len(DIMENSIONS)}), got {subs.shape}")
    fact_arr = np.asarray(facts, dtype=bool)
    if fact_arr.shape != (subs.shape[0], len(CAP_FACTS)):
        raise ValueError(f"facts must have shape ({subs.shape[0]}, {len(CAP_FACTS)}), got {fact_arr.shape}")
    if np.isnan(subs[:, :3]).any():
        bad = np.flatnonzero(np.isnan(subs[:, :3]).any(axis=1))[:10]
        raise ValueError(f"required dimensions are missing on rows {bad.tolist()}")
    raw, _capped, score, code = _kernel(subs, fact_arr, rubric)
    return raw, score, code


def score_frame(df: pd.DataFrame, rubric: Rubric | None = None) -> pd.DataFrame:
    """Score every row of ``df`` (one row per segment); returns a copy with ``raw_score``, ``score``, ``band``.

    ``df`` must have the columns ``intent_understood``, ``sql_quality``, ``result_relevance``,
    ``answer_faithfulness`` (NaN = null; only faithfulness may be null) and the fact columns
    ``all_sql_failed``, ``ended_on_failure``, ``no_tools`` (bool). Subscores are clamped to [0, 10].
    The arithmetic is exactly :func:`score_turn`'s; ``band`` is a categorical good/partial/poor.
    Raises ``ValueError`` naming missing columns or the index labels of rows whose required
    dimensions are null (score unjudged rows separately: they are never scored as 0).
    """
    rubric = _validate_rubric(rubric)
    missing = [c for c in FRAME_INPUT_COLUMNS if c not in df.columns]
    if missing:
        raise ValueError(f"score_frame needs columns {missing}; got {list(df.columns)}")
    subs = df.loc[:, list(DIMENSIONS)].to_numpy(dtype=np.float64, na_value=np.nan)
    null_required = np.isnan(subs[:, :3]).any(axis=1)
    if null_required.any():
        labels = df.index[null_required][:10].tolist()
        raise ValueError(
            f"{int(null_required.sum())} row(s) have a null required dimension (first index labels: {labels}); "
            "drop unjudged rows before scoring"
        )
    fact_frame = df.loc[:, list(CAP_FACTS)]
    if fact_frame.isna().any().any():
        raise ValueError("fact columns must not contain nulls")
    fact_arr = fact_frame.to_numpy(dtype=bool)
    raw, _capped, score, code = _kernel(np.clip(subs, 0.0, 10.0), fact_arr, rubric)
    out = df.copy()
    out["raw_score"] = raw
    out["score"] = score
    out["band"] = pd.Categorical.from_codes(code, categories=list(BANDS))
    return out
