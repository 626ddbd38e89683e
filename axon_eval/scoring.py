"""Deterministic scorer: judge subscores + trajectory facts -> score out of 100, band and audit.

The judge never does arithmetic. For one segment with subscores ``s_d`` (0-10, clamped) over the
observed dimensions ``O`` (``answer_faithfulness`` may be null and is then left out)::

    effective weight   e_d = w_d / sum_{k in O} w_k                    (renormalised nominal weights)
    contribution       c_d = 10 * e_d * s_d                            (points out of 100)
    raw_score          = 10 * sum_{d in O} w_d * s_d / sum_{d in O} w_d  in [0, 100]
    capped             = min(raw_score, cap_f for every triggered fact f,
                             cap_c for every subscore cap c with s_c <= threshold_c)
    score              = capped rounded to one decimal, half away from zero (see Rounding below)
    band               = good if score >= 80, partial if score >= 50, else poor

A segment that cannot be scored is **unscorable**, never banded: a required dimension is missing, or the
rubric leaves no weight on its observed dimensions (``sum_{k in O} w_k = 0``, e.g. all the weight on
faithfulness and faithfulness null). :func:`score_turn` raises :class:`UnscorableError` (a
``ValueError``) with the reason; :func:`score_frame` gives such rows NaN ``raw_score``/``score``, a
missing band and the same reason in ``unscorable_reason``; :func:`score_arrays` gives NaN and band code
:data:`UNSCORABLE_CODE`; :func:`unscorable_mask` says which rows are, without scoring them.
A missing value is ``None``, ``pd.NA`` or a NaN of any float width (Python, numpy float16/32/64): one
test (:func:`is_missing`) on every path.

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

Rounding: the exact decimal value of ``capped`` is rounded to one decimal, half away from zero, so
a reader's hand arithmetic agrees: (9, 0, 0, null) is exactly ``10 * 2.7 / 0.8 = 33.75`` and scores
33.8, although its binary value is 33.749999999999996. The kernel computes
``score = copysign(floor(10 |capped| + 0.5 + TIE_TOLERANCE), capped) / 10`` on the float value
(:func:`round_tenths`), treating anything within ``TIE_TOLERANCE = 1e-10`` tenths of a half-tenth as
the half-tenth. This is exact, not approximate, whenever the exact value ``10 * capped`` is a
fraction ``p/q`` with ``q < 4.9e9``: a value that is not a tie is then at least ``1/(2q) > 1.02e-10``
tenths from one, while the float error of ``10 * capped`` (non-negative terms, about a dozen
roundings of relative size ``2**-53`` on a value <= 1000) is below ``2e-12``. Weights that are
decimals of up to 6 places (every packaged rubric has 2) with integer subscores give
``q <= 10**6``; subscores that are means of up to 10 samples (denominators dividing 2520) give
``q <= 2.52e9``. The tests compare every integer combination (11^4 + 11^3 = 15,972) with
``fractions.Fraction`` arithmetic under every packaged rubric. Outside that domain (weights with 17
significant digits from a random design) the rule is still one fixed rule on the float value,
used by every path, so every path gives the same number.
"""

from __future__ import annotations

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
FRAME_OUTPUT_COLUMNS: tuple[str, ...] = ("raw_score", "score", "band", "unscorable_reason")

_BAND_CODES = np.array(BANDS, dtype=object)  # 0 good, 1 partial, 2 poor
#: Band code (:func:`score_arrays`) of an unscorable segment: not a band (``BANDS[3]`` is an IndexError,
#: so it can never be read as ``poor``).
UNSCORABLE_CODE = len(BANDS)
#: Tenths of a point within which a value counts as a half-tenth tie (see the module docstring).
TIE_TOLERANCE = 1e-10
_HALF_UP = 0.5 + TIE_TOLERANCE
#: Every unscorable reason starts with this (a run records it in a row's ``error``; summaries look for it).
UNSCORABLE_PREFIX = "unscorable: "
#: Why a row is unscorable (kernel reason codes; 0 = scorable).
_SCORABLE, _REQUIRED_MISSING, _NO_WEIGHT = 0, 1, 2


class UnscorableError(ValueError):
    """A segment that cannot be scored (a required dimension missing, or no weight on its observed
    dimensions); ``reason`` is the sentence :func:`score_frame` puts in ``unscorable_reason``."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def is_missing(value: Any) -> bool:
    """True for a missing subscore: ``None``, ``pd.NA`` or a NaN of any float width (Python float,
    numpy float16/32/64). Anything else (a number, a string) is not missing and is checked as a value."""
    if value is None or value is pd.NA:
        return True
    if isinstance(value, float | np.floating):
        return bool(np.isnan(value))
    return False


def round_tenths(x: Any) -> np.ndarray:
    """``x`` rounded to one decimal, half away from zero on its exact decimal value (module docstring):
    ``copysign(floor(10 |x| + 0.5 + TIE_TOLERANCE), x) / 10``; NaN stays NaN. Works elementwise.

    >>> float(round_tenths(10 * 0.3 * 9 / 0.8)), float(round_tenths(61.25)), float(round_tenths(-0.05))
    (33.8, 61.3, -0.1)
    """
    x = np.asarray(x, dtype=np.float64)
    return np.copysign(np.floor(np.abs(x) * 10.0 + _HALF_UP), x) / 10.0


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
    """(capped, score, band_code) from raw scores and the per-row lowest cap (broadcasting).

    ``score`` is :func:`round_tenths` of ``capped``; a NaN raw score (unscorable) stays NaN and gets
    :data:`UNSCORABLE_CODE`, never a band.
    """
    capped = np.minimum(raw, cap)
    score = round_tenths(capped)
    code = np.where(score >= rubric.bands.good, 0, np.where(score >= rubric.bands.partial, 1, 2))
    code = np.where(np.isnan(score), UNSCORABLE_CODE, code)
    return capped, score, code


def _unscorable_codes(subs: np.ndarray, rubric: Rubric) -> np.ndarray:
    """Per row: 0 scorable, 1 a required dimension is NaN, 2 no weight on the observed dimensions.

    Column by column (a reduction along rows of four is several times slower on millions of rows).
    """
    w = _weight_array(rubric)
    observed = [~np.isnan(subs[:, d]) for d in range(len(DIMENSIONS))]
    required_null = ~np.logical_and.reduce([observed[DIMENSIONS.index(d)] for d in REQUIRED_DIMENSIONS])
    den = np.zeros(subs.shape[0])
    for d, seen in enumerate(observed):
        if w[d] > 0:
            den = den + np.where(seen, w[d], 0.0)
    code = np.where(den <= 0, _NO_WEIGHT, _SCORABLE)
    return np.where(required_null, _REQUIRED_MISSING, code)


def _reason(code: int, row: np.ndarray, rubric: Rubric) -> str:
    """The sentence for one unscorable row (same text on every path)."""
    if code == _REQUIRED_MISSING:
        missing = [d for d, v in zip(REQUIRED_DIMENSIONS, row, strict=False) if np.isnan(v)]
        return (f"{UNSCORABLE_PREFIX}required dimension(s) {', '.join(missing)} missing; only answer_faithfulness "
                "may be null")
    observed = [d for d, v in zip(DIMENSIONS, row, strict=True) if not np.isnan(v)]
    weights = rubric.weights.as_dict()
    null = [d for d in DIMENSIONS if d not in observed]
    return (f"{UNSCORABLE_PREFIX}rubric {rubric.label} puts no weight on the observed dimensions "
            f"({', '.join(f'{d} {weights[d]:g}' for d in observed)}); the weight is all on "
            f"{', '.join(null)}, which is null")


def _reasons(why: np.ndarray, subs: np.ndarray, rubric: Rubric) -> np.ndarray:
    """Object array of reasons (``None`` when scorable), one sentence per distinct (code, null pattern)."""
    reasons = np.full(len(why), None, dtype=object)
    bad = np.flatnonzero(why != _SCORABLE)
    if len(bad):
        key = why[bad] * 16 + (np.isnan(subs[bad]) * (1 << np.arange(len(DIMENSIONS)))).sum(axis=1)
        _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
        texts = np.array([_reason(int(why[bad[i]]), subs[bad[i]], rubric) for i in first], dtype=object)
        reasons[bad] = texts[np.asarray(inverse).ravel()]
    return reasons


def unscorable_mask(subscores: np.ndarray, rubric: Rubric | None = None) -> np.ndarray:
    """Boolean (n,) mask of the rows of an (n, 4) subscore array (``DIMENSIONS`` order, NaN = null)
    that cannot be scored under ``rubric``: a required dimension is NaN, or the rubric's weights on
    the row's observed dimensions sum to 0. These are exactly the rows :func:`score_arrays` gives
    :data:`UNSCORABLE_CODE` and :func:`score_frame` an ``unscorable_reason``."""
    rubric = _validate_rubric(rubric)
    subs = _subscore_matrix(subscores)
    return _unscorable_codes(subs, rubric) != _SCORABLE


def _subscore_matrix(values: Any) -> np.ndarray:
    """(n, 4) float64 subscores with every missing value (:func:`is_missing`) as NaN."""
    arr = np.asarray(values)
    if arr.dtype == object:
        arr = np.array([np.nan if is_missing(v) else v for v in arr.ravel()], dtype=np.float64).reshape(arr.shape)
    arr = np.asarray(arr, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[1] != len(DIMENSIONS):
        raise ValueError(f"subscores must have shape (n, {len(DIMENSIONS)}), got {arr.shape}")
    return arr


def _kernel(subs: np.ndarray, facts: np.ndarray, rubric: Rubric
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Vectorised arithmetic shared by every entry point (and by :mod:`axon_eval.stats.sensitivity`).

    ``subs``: (n, 4) float array in DIMENSIONS order, already clamped, NaN = not observed.
    ``facts``: (n, 3) bool array in CAP_FACTS order. Returns (raw, capped, score, band_code,
    unscorable_code); unscorable rows (a required dimension NaN, or no weight on the observed
    dimensions) have NaN raw, capped and score and band code :data:`UNSCORABLE_CODE`.
    """
    w = _weight_array(rubric)
    observed = ~np.isnan(subs)
    s0 = np.where(observed, subs, 0.0)
    wo = np.where(observed, w, 0.0)
    raw = _weighted_raw([s0[:, d] for d in range(4)], [wo[:, d] for d in range(4)])
    why = _unscorable_codes(subs, rubric)
    raw = np.where(why != _SCORABLE, np.nan, raw)
    capped, score, code = _cap_round_band(raw, _effective_caps(subs, facts, rubric), rubric)
    return raw, capped, score, code, why


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
    subscores : Mapping[str, float | None]
        The four dimension names, each to a number in [0, 10] or ``None``. ``intent_understood``,
        ``sql_quality`` and ``result_relevance`` are required; ``answer_faithfulness`` may be ``None``
        (no answer captured) and is then left out of the weighting. Values outside [0, 10] are clamped
        and the clamp is noted.
    facts : TrajectoryFacts or Mapping[str, Any]
        A :class:`~axon_eval.evidence.TrajectoryFacts` or a mapping with at least ``all_sql_failed``,
        ``ended_on_failure``, ``no_tools`` (bools); ``recovered_errors`` (int) adds a note when positive.
    rubric : Rubric, optional
        The :class:`~axon_eval.rubric.Rubric` (default ``axon-v1``).
    judge_verdict : str, optional
        The judge's own ``good``/``partial``/``poor``; compared with the band, a mismatch is a note.

    Returns
    -------
    TurnScore
        ``raw_score`` and ``score`` in [0, 100] (score rounded to 0.1, half away from zero on the exact
        decimal value), the band and the audit.

    Raises
    ------
    UnscorableError
        A ``ValueError``: the segment cannot be scored. A required dimension is missing (``None``,
        ``pd.NA`` or NaN of any float width), or the rubric puts no weight on the observed dimensions.
        The reason is the one :func:`score_frame` gives in ``unscorable_reason``.
    ValueError
        An unknown dimension, a value that is not a number, or malformed facts.

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
        if is_missing(value):
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
    raw_a, capped_a, score_a, code_a, why = _kernel(subs, fact_arr, rubric)
    if why[0] != _SCORABLE:
        raise UnscorableError(_reason(int(why[0]), subs[0], rubric))
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

    ``subscores`` is (n, 4) in ``DIMENSIONS`` order (NaN, ``None`` or ``pd.NA`` = null); ``facts``
    is (n, 3) bool in ``CAP_FACTS`` order. Band codes: 0 good, 1 partial, 2 poor, and
    :data:`UNSCORABLE_CODE` (with NaN raw score and score) for a row that cannot be scored (see
    :func:`unscorable_mask`). Values are clamped to [0, 10] silently here; use :func:`score_turn` for
    the audited path.
    """
    rubric = _validate_rubric(rubric)
    subs = np.clip(_subscore_matrix(subscores), 0.0, 10.0)
    fact_arr = np.asarray(facts, dtype=bool)
    if fact_arr.shape != (subs.shape[0], len(CAP_FACTS)):
        raise ValueError(f"facts must have shape ({subs.shape[0]}, {len(CAP_FACTS)}), got {fact_arr.shape}")
    raw, _capped, score, code, _why = _kernel(subs, fact_arr, rubric)
    return raw, score, code


def _column_floats(col: pd.Series, name: str) -> np.ndarray:
    """One subscore column as float64 with every missing value (:func:`is_missing`) as NaN."""
    if col.dtype == object:
        values = [np.nan if is_missing(v) else v for v in col.tolist()]
        bad = [v for v in values
               if isinstance(v, bool | str) or not isinstance(v, int | float | np.integer | np.floating)]
        if bad:
            raise ValueError(f"subscore column {name} must hold numbers or nulls, got {bad[0]!r}")
        return np.asarray(values, dtype=np.float64)
    return col.to_numpy(dtype=np.float64, na_value=np.nan)


def score_frame(df: pd.DataFrame, rubric: Rubric | None = None) -> pd.DataFrame:
    """Score every row of ``df`` (one row per segment); returns a copy with ``raw_score``, ``score``,
    ``band`` and ``unscorable_reason``.

    ``df`` must have the columns ``intent_understood``, ``sql_quality``, ``result_relevance``,
    ``answer_faithfulness`` (NaN, ``None`` or ``pd.NA`` = null; only faithfulness may be null) and the
    fact columns ``all_sql_failed``, ``ended_on_failure``, ``no_tools`` (bool). Subscores are clamped
    to [0, 10]. The arithmetic is exactly :func:`score_turn`'s; ``band`` is a categorical
    good/partial/poor. A row that cannot be scored (a required dimension null, or no weight on its
    observed dimensions) gets NaN ``raw_score``/``score``, a missing band (never ``poor``, never 0)
    and the reason :func:`score_turn` would raise in ``unscorable_reason`` (``None`` on scored rows).
    Raises ``ValueError`` naming missing columns or null facts.
    """
    rubric = _validate_rubric(rubric)
    missing = [c for c in FRAME_INPUT_COLUMNS if c not in df.columns]
    if missing:
        raise ValueError(f"score_frame needs columns {missing}; got {list(df.columns)}")
    subs = np.column_stack([_column_floats(df[d], d) for d in DIMENSIONS]) if len(df) else \
        np.empty((0, len(DIMENSIONS)))
    fact_frame = df.loc[:, list(CAP_FACTS)]
    if fact_frame.isna().any().any():
        bad = df.index[fact_frame.isna().any(axis=1).to_numpy()][:10].tolist()
        raise ValueError(f"fact columns must not contain nulls (first index labels: {bad})")
    fact_arr = fact_frame.to_numpy(dtype=bool)
    raw, _capped, score, code, why = _kernel(np.clip(subs, 0.0, 10.0), fact_arr, rubric)
    reasons = _reasons(why, subs, rubric)
    out = df.copy()
    out["raw_score"] = raw
    out["score"] = score
    out["band"] = pd.Categorical.from_codes(np.where(code == UNSCORABLE_CODE, -1, code), categories=list(BANDS))
    out["unscorable_reason"] = pd.Series(reasons, index=df.index, dtype=object)
    return out
