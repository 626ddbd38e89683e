"""Statistics from mergeable parts: a run's headline figures from per-partition sums.

A partitioned run writes its results as several parts, one per partition of whole turns (a bundled
turn's segments, and a repeated run's samples of a segment, never straddle two parts). A driver computes
every headline figure of :func:`axon_eval.stats.intervals.headline_table` without loading the whole run:

1. :func:`partition_summary` reads one part and returns a :class:`PartialSums`: small arrays whose
   size does not depend on the number of rows (``n_boot x figures`` for the interval, a few numbers per
   figure otherwise);
2. :func:`merge_summaries` adds parts together. Every sum is held as an exact integer (below), so the
   merge is exactly associative and commutative: any partitioning and any merge order give the same
   arrays, bit for bit, as :func:`partition_summary` of the whole run;
3. :func:`headline_from_summary` gives the rows of ``headline_table`` (same columns, figures, estimates);
   :func:`confusion_from_summary` / :func:`kappa_from_summary` the judge's band against labelled bands;
   :func:`ppi_from_summary` the PPI++ mean of :func:`axon_eval.stats.ppi.ppi_mean`.

**The unit.** As in ``headline_table``: a repeated run's samples are first collapsed to one row per
segment (:func:`axon_eval.summaries.segment_table`: the mean of the judged samples' scores, the band of
that mean), judged segments only; the resampled unit is the turn (``turn_id``, else the turn read from
``segment_id``).

**The point estimates** are ratios of sums (a figure's sum over the segments with a value, and their
count), so they equal the in-memory figures up to rounding (the fixed point below: under 1e-12).

**The interval: a Poisson bootstrap over turns** (Chamandy, Muralidharan, Najmi & Naidu 2012,
"Estimating uncertainty for massive data streams", Google; Hanley & MacGibbon 2006). The multinomial
cluster bootstrap of ``headline_table`` draws ``C`` turns with replacement, which needs all ``C`` turns
in one place. Instead each turn ``t`` gets, in replicate ``b``, an independent weight
``w_tb ~ Poisson(1)`` (the large-``C`` limit of one multinomial count), and replicate ``b`` of a mean is
``sum_t w_tb S_t / sum_t w_tb N_t`` (``S_t`` the turn's sum of the figure, ``N_t`` its number of segments
with a value). A partition emits the two weighted sums per replicate and figure; the parts add up.
The interval is the percentile interval of the replicates (numpy's linear interpolation, as
``headline_table``); a replicate whose weights miss every turn with a value (``sum_t w_tb N_t = 0``,
probability ``exp(-C)``) is undefined, left out and counted in the note. The method reads
:data:`POISSON_METHOD`. As in ``headline_table``, a share whose turns each hold one segment (known from
the merged counts of segments and turns) keeps the Wilson interval.

**The weights are a hash, not a stream.** ``w_tb`` must not depend on which partition holds turn ``t``
or in which order its rows come, so nothing is drawn from a shared generator:

* the turn's key is a 64-bit BLAKE2b digest of its id keyed by the seed
  (``hashlib.blake2b(turn_id, digest_size=8, key=seed, person=b"axon-pboot")``): stable across
  processes, machines and Python versions (Python's ``hash`` of a string is salted per process);
* replicate ``b``'s key is the ``b``-th output of SplitMix64 from state 0
  (``mix64((b + 1) * 0x9E3779B97F4A7C15)``; Steele, Lea & Flood 2014);
* ``w_tb`` is ``mix64(turn_key ^ replicate_key)`` (Stafford's "variant 13" 64-bit finaliser, the one
  SplitMix64 uses: a bijection with full avalanche), its top 53 bits a uniform ``u`` in [0, 1), and
  ``u`` through the inverse CDF of Poisson(1) (the table :data:`POISSON1_CDF`, weights 0 to 17: the
  CDF at 16 is the last below 1 in double precision, and a weight above 17 has probability 6e-17), read
  from a 65,536-entry table of the hash's top 16 bits (exact: the 8 bins a step of the CDF crosses are
  resolved on the full uniform).

This is vectorised (a few numpy passes over a ``turns x n_boot`` block, blocks of
:data:`BLOCK_WEIGHTS` weights, so memory per partition is ``O(n_boot x figures)`` and not
``O(rows x n_boot)``); ``tests/test_mergeable.py`` checks its mean (1), variance (1), frequencies and
independence across turns and replicates, and that it is deterministic. :func:`poisson_weights` gives
the weights of given turns.

**Exact sums.** Each value is rounded to the fixed point ``2**-40`` (:data:`FIXED_POINT_BITS`) and
held as three signed 20-bit limbs; a turn's limbs, and their Poisson-weighted sums over a partition,
are integers far below ``2**53``, so the BLAS product that forms them is exact whatever its order and
the parts are summed as int64. Values must lie in ``(-2**20, 2**20)``; a partition too large for exact
sums (about ``4e8`` segments) is refused with a ``ValueError``.

**Labels.** Given ``labels_part`` (one row per labelled ``segment_id`` with the human values under the
figure's column names: ``band``, ``score``, the dimensions, ``capped``; a frame of ``verdict`` labels is
read as ``band``), the summary also carries the confusion table of the judge's band (rows) against the
labelled band (columns), and per figure the PPI++ sufficient statistics of a simple random sample of
labels (:mod:`axon_eval.stats.ppi`: the labelled pairs' ``n``, ``sum Y``, ``sum Yhat``, ``sum Y^2``,
``sum Yhat^2``, ``sum Y Yhat``; the unlabelled judged segments' ``N``, ``sum Yhat_u``,
``sum Yhat_u^2``; the least and largest judge value, for ``ppi_kernel``'s constant-prediction rule).
Only the labels of the partition's own judged segments count, so every partition may be handed the
whole labels frame.

The caller guarantees that parts hold disjoint sets of whole turns; a turn split across parts would be
counted as two turns (its weights still agree, so the estimates and bootstrap sums stay right; the turn
counts, and with them the choice of a Wilson interval, would not).
"""

from __future__ import annotations

import functools
import hashlib
import math
import operator
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd

from ..rubric import BANDS, Rubric
from ..summaries import check_homogeneous
from .agreement import kappa_from_codes
from .intervals import (
    CONFIDENCE,
    HEADLINE_COLUMNS,
    HEADLINE_FIGURES,
    INTERVAL_COVERS,
    N_BOOT,
    SEED,
    Interval,
    figure_values,
    headline_segments,
    wilson_interval,
    z_value,
)
from .ppi import MIN_LABELLED, PLAIN_PPI_LAM, PPIResult, ppi_rule

#: The method named on every bootstrap row of :func:`headline_from_summary`.
POISSON_METHOD = "Poisson bootstrap percentile (turns)"
#: The headline figures, in the order of :data:`~axon_eval.stats.intervals.HEADLINE_FIGURES` (the
#: second axis of every per-figure array of :class:`PartialSums`).
FIGURES: tuple[str, ...] = tuple(f for f, _ in HEADLINE_FIGURES)
#: Bits after the binary point of the fixed point every value is rounded to (``2**-40``, about 9e-13).
FIXED_POINT_BITS = 40
#: Bits per limb; three limbs hold ``|value| * 2**40`` below ``2**60``.
LIMB_BITS = 20
N_LIMBS = 3
#: Values must satisfy ``|value| < MAX_ABS_VALUE`` (scores are 0-100, dimensions 0-10, shares 0/1).
MAX_ABS_VALUE = float(2 ** (N_LIMBS * LIMB_BITS - FIXED_POINT_BITS))
#: Poisson weights per block of the bootstrap (``turns x n_boot``): about 4 MB per array of the block.
BLOCK_WEIGHTS = 1 << 19
#: The PPI++ moments kept per figure, in the order of the second axis of :attr:`PartialSums.ppi_sums`.
PPI_MOMENTS: tuple[str, ...] = ("y", "yhat", "y2", "yhat2", "y_yhat", "yhat_u", "yhat_u2")

_LIMB_MASK = (1 << LIMB_BITS) - 1
_EXACT = float(2 ** 53)
_GAMMA = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_PERSON = b"axon-pboot"


def _poisson1_cdf() -> np.ndarray:
    """``P(K <= k)`` for ``K ~ Poisson(1)``, ``k = 0..``, up to the first entry that rounds to 1 (set to 1)."""
    pmf = [math.exp(-1.0)]
    while math.fsum(pmf) < 1.0 and len(pmf) < 40:
        pmf.append(pmf[-1] / len(pmf))
    cdf = np.array([math.fsum(pmf[:k + 1]) for k in range(len(pmf))])
    cdf[-1] = 1.0
    return cdf


#: The inverse-CDF table of Poisson(1), giving weight ``k`` for a uniform ``u`` with
#: ``cdf[k-1] <= u < cdf[k]``.
POISSON1_CDF: np.ndarray = _poisson1_cdf()
#: The largest weight the table can give.
POISSON_MAX = len(POISSON1_CDF) - 1


# -- the weights -------------------------------------------------------------------------------------
def _seed_key(seed: Any) -> bytes:
    if seed is None:
        raise ValueError("a partitioned bootstrap needs a fixed seed (every partition must draw the same "
                         "weights for a turn); got seed=None")
    s = operator.index(seed)
    if not 0 <= s < 2 ** 64:
        raise ValueError(f"seed must be an integer in [0, 2**64), got {seed!r}")
    return s.to_bytes(8, "little")


def _mix64(z: np.ndarray) -> np.ndarray:
    """Stafford's variant 13 finaliser (SplitMix64's output function), element-wise on uint64 (``z`` is
    overwritten)."""
    with np.errstate(over="ignore"):
        z ^= z >> np.uint64(30)
        z *= _M1
        z ^= z >> np.uint64(27)
        z *= _M2
        z ^= z >> np.uint64(31)
    return z


def turn_keys(turn_ids: Iterable[Any], seed: int = SEED) -> np.ndarray:
    """The 64-bit key of each turn: ``blake2b(str(turn_id), digest_size=8, key=seed, person=b"axon-pboot")``
    read little-endian, as ``uint64``."""
    key = _seed_key(seed)
    ids = [str(t) for t in turn_ids]
    return np.fromiter((int.from_bytes(hashlib.blake2b(t.encode("utf-8"), digest_size=8, key=key,
                                                       person=_PERSON).digest(), "little") for t in ids),
                       dtype=np.uint64, count=len(ids))


def replicate_keys(n_boot: int) -> np.ndarray:
    """The key of each replicate ``b = 0..n_boot-1``: the ``b``-th SplitMix64 output from state 0."""
    if n_boot < 1:
        raise ValueError(f"n_boot must be >= 1, got {n_boot!r}")
    with np.errstate(over="ignore"):
        states = np.arange(1, n_boot + 1, dtype=np.uint64) * _GAMMA
    return _mix64(states)


def _poisson_lookup() -> tuple[np.ndarray, np.ndarray]:
    """Per value ``i`` of a hash's top 16 bits: the weight every uniform of that bin maps to, and whether
    a step of the CDF falls inside the bin (then the full 53-bit uniform decides)."""
    i = np.arange(1 << 16, dtype=np.float64)
    u_min = i * 2.0 ** -16
    u_max = ((i + 1) * 2.0 ** 37 - 1) * 2.0 ** -53  # the largest 53-bit uniform of the bin (exact)
    lo = np.searchsorted(POISSON1_CDF, u_min, side="right")
    hi = np.searchsorted(POISSON1_CDF, u_max, side="right")
    return lo.astype(np.uint8), lo != hi


_BIN_WEIGHT, _BIN_STRADDLES = _poisson_lookup()


def _weights_from_keys(keys: np.ndarray, reps: np.ndarray) -> np.ndarray:
    """``(len(keys), len(reps))`` Poisson(1) weights (uint8) of turns with these keys: the inverse CDF of
    ``u = (z >> 11) / 2**53`` with ``z = mix64(turn_key ^ replicate_key)``, read from a table of the top 16
    bits of ``z`` (exact: the few bins a CDF step crosses are resolved on the full uniform)."""
    z = _mix64(keys[:, None] ^ reps[None, :])
    top = (z >> np.uint64(48)).astype(np.intp)
    w = _BIN_WEIGHT[top]
    straddles = _BIN_STRADDLES[top]
    if straddles.any():
        u = (z[straddles] >> np.uint64(11)).astype(np.float64) * (1.0 / 2 ** 53)
        w[straddles] = np.searchsorted(POISSON1_CDF, u, side="right")
    return w


def poisson_weights(turn_ids: Sequence[Any], n_boot: int = N_BOOT, seed: int = SEED) -> np.ndarray:
    """``(turns, n_boot)`` Poisson(1) bootstrap weights of the given turns (uint8): weight ``[t, b]`` is a
    function of ``(seed, turn_ids[t], b)`` alone (module docstring), so the same turn gets the same row
    in any partition, in any order, in any process."""
    return _weights_from_keys(turn_keys(turn_ids, seed), replicate_keys(n_boot))


# -- fixed point -------------------------------------------------------------------------------------
def _to_limbs(values: np.ndarray) -> np.ndarray:
    """Finite ``values`` (any shape) as signed int64 limbs (shape + ``(3,)``) of ``round(v * 2**40)``."""
    v = np.asarray(values, dtype=np.float64)
    if v.size and not np.abs(v).max() < MAX_ABS_VALUE:
        raise ValueError(f"values must lie within +-{MAX_ABS_VALUE:g} for exact sums; got {np.abs(v).max()!r}")
    m = np.rint(np.ldexp(v, FIXED_POINT_BITS)).astype(np.int64)
    sign, a = np.sign(m), np.abs(m)
    return np.stack([sign * (a >> (2 * LIMB_BITS)), sign * ((a >> LIMB_BITS) & _LIMB_MASK), sign * (a & _LIMB_MASK)],
                    axis=-1)


def _exact(limbs: np.ndarray) -> int:
    """The integer ``sum * 2**40`` that three limb sums stand for (exact)."""
    l0, l1, l2 = (int(x) for x in limbs)
    return (l0 << (2 * LIMB_BITS)) + (l1 << LIMB_BITS) + l2


def _fraction(limbs: np.ndarray) -> Fraction:
    return Fraction(_exact(limbs), 1 << FIXED_POINT_BITS)


def _limb_floats(limbs: np.ndarray) -> np.ndarray:
    """The sums three limbs stand for, as floats (last axis the limbs)."""
    lf = limbs.astype(np.float64)
    return lf[..., 0] + (lf[..., 1] + lf[..., 2] * 2.0 ** -LIMB_BITS) * 2.0 ** -LIMB_BITS


# -- the summary -------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class PartialSums:
    """The mergeable sums of one partition of a run (or of several merged).

    Per figure of :data:`FIGURES` (the last or second axis ``F``): ``counts`` (segments with a value),
    ``clusters`` (turns with a value), ``sums`` (``F x 3`` int64 limbs of the figure's sum; read with
    :meth:`figure_sums`); for the Poisson bootstrap ``boot_sums`` (``n_boot x F x 3`` limbs of
    ``sum_t w_tb S_t``) and ``boot_counts`` (``n_boot x F``, ``sum_t w_tb N_t``). ``n_segments`` counts
    the segments of the part (any status), ``n_judged`` the judged ones, ``n_turns`` the turns with a
    judged segment. ``judge_ids``/``rubric_ids`` are the ids seen (mixing is refused when the figures
    are read); ``band_edges`` the ``(good, partial)`` edges the bands of repeated samples' means used.

    With labels (``label_figures`` the figures the labels carry; ``None`` when no labels were given):
    ``confusion`` (3 x 3, judge band rows, labelled band columns, :data:`~axon_eval.rubric.BANDS`
    order), ``ppi_counts`` (``F x 2``: labelled pairs, unlabelled judged segments), ``ppi_sums``
    (``F x 7 x 3`` limbs of :data:`PPI_MOMENTS`) and ``ppi_min``/``ppi_max`` (the judge's least and
    largest value over both; ``NaN`` when none). The unlabelled sums are kept even without labels (a
    part without labels is all unlabelled). Every array is small: see :attr:`nbytes`.

    Instances compare equal when every field is identical (arrays element for element).
    """

    n_boot: int
    seed: int
    band_edges: tuple[float, float]
    n_segments: int
    n_judged: int
    n_turns: int
    counts: np.ndarray
    clusters: np.ndarray
    sums: np.ndarray
    boot_sums: np.ndarray
    boot_counts: np.ndarray
    confusion: np.ndarray
    ppi_counts: np.ndarray
    ppi_sums: np.ndarray
    ppi_min: np.ndarray
    ppi_max: np.ndarray
    judge_ids: frozenset[str] = frozenset()
    rubric_ids: frozenset[str] = frozenset()
    cluster_sources: frozenset[str] = frozenset()
    label_figures: frozenset[str] | None = None
    n_parts: int = field(default=1, compare=False)

    _ARRAYS = ("counts", "clusters", "sums", "boot_sums", "boot_counts", "confusion", "ppi_counts", "ppi_sums",
               "ppi_min", "ppi_max")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PartialSums):
            return NotImplemented
        scalars = ("n_boot", "seed", "band_edges", "n_segments", "n_judged", "n_turns", "judge_ids", "rubric_ids",
                   "cluster_sources", "label_figures")
        return (all(getattr(self, k) == getattr(other, k) for k in scalars)
                and all(np.array_equal(getattr(self, k), getattr(other, k), equal_nan=k.startswith("ppi_m"))
                        and getattr(self, k).dtype == getattr(other, k).dtype for k in self._ARRAYS))

    __hash__ = None  # type: ignore[assignment]

    @property
    def nbytes(self) -> int:
        """Bytes held by the arrays (what a partition ships to the driver)."""
        return sum(getattr(self, k).nbytes for k in self._ARRAYS)

    def figure_sums(self) -> dict[str, float]:
        """Each figure's sum over the segments with a value (correctly rounded from the exact sum)."""
        return {f: float(_fraction(self.sums[j])) for j, f in enumerate(FIGURES)}

    def figure_counts(self) -> dict[str, int]:
        """Each figure's number of segments with a value."""
        return {f: int(self.counts[j]) for j, f in enumerate(FIGURES)}

    @property
    def score_sum(self) -> float:
        """Sum of the judged segments' (mean) scores."""
        return self.figure_sums()["mean score"]

    @property
    def band_counts(self) -> dict[str, int]:
        """Judged segments per band."""
        return {b: _exact(self.sums[FIGURES.index(f"share {b}")]) >> FIXED_POINT_BITS for b in BANDS}

    @property
    def n_capped(self) -> int:
        """Judged segments some cap lowered."""
        return _exact(self.sums[FIGURES.index("share capped")]) >> FIXED_POINT_BITS

    def dimension_sums(self) -> dict[str, float]:
        """Each dimension's sum over its non-null values."""
        return {f.removeprefix("mean "): v for f, v in self.figure_sums().items()
                if f.startswith("mean ") and f != "mean score"}

    def dimension_counts(self) -> dict[str, int]:
        """Each dimension's number of non-null values."""
        return {f.removeprefix("mean "): v for f, v in self.figure_counts().items()
                if f.startswith("mean ") and f != "mean score"}


def _turn_sums(codes: np.ndarray, n_turns: int, matrix: np.ndarray) -> np.ndarray:
    """Row sums of ``matrix`` (int64, one row per segment) per turn code ``0..n_turns-1``."""
    if not len(codes):
        return np.zeros((n_turns, matrix.shape[1]), dtype=np.int64)
    order = np.argsort(codes, kind="stable")
    sorted_codes = codes[order]
    starts = np.flatnonzero(np.r_[True, sorted_codes[1:] != sorted_codes[:-1]])
    out = np.zeros((n_turns, matrix.shape[1]), dtype=np.int64)
    out[sorted_codes[starts]] = np.add.reduceat(matrix[order], starts, axis=0)
    return out


def _distinct_columns(columns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct non-zero columns of an integer matrix and, per column, its index among them (-1 for
    a zero column): identical columns (a share's empty limbs, the counts of figures without nulls) are
    multiplied by the weights once."""
    keep: list[int] = []
    index = np.full(columns.shape[1], -1, dtype=np.int64)
    ramp = np.linspace(1.0, 2.0, columns.shape[0])
    probe = [float(columns[:, k].astype(np.float64) @ ramp) for k in range(columns.shape[1])]  # fingerprints
    for k in range(columns.shape[1]):
        col = columns[:, k]
        if not col.any():
            continue
        same = next((i for i, kept in enumerate(keep) if probe[kept] == probe[k]
                     and np.array_equal(columns[:, kept], col)), None)
        if same is None:
            keep.append(k)
            same = len(keep) - 1
        index[k] = same
    return columns[:, keep], index


def _weighted_turn_sums(keys: np.ndarray, columns: np.ndarray, n_boot: int) -> np.ndarray:
    """``(n_boot, K)`` exact ``sum_t w_tb columns[t, k]`` of integer ``columns`` (turns x K), built in
    blocks of turns (:data:`BLOCK_WEIGHTS` weights each)."""
    out = np.zeros((n_boot, columns.shape[1]), dtype=np.int64)
    if columns.shape[0] == 0:
        return out
    unique, index = _distinct_columns(columns)
    if unique.shape[1] == 0:
        return out
    bound = float(POISSON_MAX) * float(np.abs(unique).astype(np.float64).sum(axis=0).max())
    if not bound < _EXACT:
        raise ValueError(f"partition too large for exact sums ({columns.shape[0]} turns); split it into smaller parts")
    reps = replicate_keys(n_boot)
    acc = np.zeros((unique.shape[1], n_boot))
    block = max(1, BLOCK_WEIGHTS // n_boot)
    for start in range(0, len(keys), block):
        w = _weights_from_keys(keys[start:start + block], reps).astype(np.float64)  # [Tb, B]
        acc += unique[start:start + block].T.astype(np.float64) @ w
    used = index >= 0
    out[:, used] = acc.T.astype(np.int64)[:, index[used]]
    return out


@functools.lru_cache(maxsize=1)
def _default_bands() -> Any:
    """The band edges of the packaged default rubric (read once)."""
    return Rubric.default().bands


def _labels_frame(labels_part: pd.DataFrame) -> pd.DataFrame:
    if "segment_id" not in labels_part.columns:
        raise ValueError(f"labels_part lacks the segment_id column; has {list(labels_part.columns)}")
    dup = labels_part["segment_id"][labels_part["segment_id"].duplicated()]
    if len(dup):
        raise ValueError(f"labels_part has {len(dup)} duplicated segment_id(s), e.g. {dup.iloc[0]!r}; give one row "
                         "per segment (average several raters first)")
    labels = labels_part
    if "band" not in labels.columns and "verdict" in labels.columns:
        labels = labels.rename(columns={"verdict": "band"})
    return labels.set_index("segment_id", drop=False)


def _label_figures(labels: pd.DataFrame) -> frozenset[str]:
    out = set()
    for figure in FIGURES:
        if figure == "share capped":
            column = "capped"
        elif figure.startswith("share "):
            column = "band"
        else:
            column = "score" if figure == "mean score" else figure.removeprefix("mean ")
        if column in labels.columns:
            out.add(figure)
    return frozenset(out)


def _values(segments: pd.DataFrame, figure: str) -> np.ndarray:
    """:func:`~axon_eval.stats.intervals.figure_values`, all ``NaN`` when the column is absent."""
    try:
        return figure_values(segments, figure)
    except KeyError:
        return np.full(len(segments), np.nan)


def _figure_matrix(segments: pd.DataFrame) -> np.ndarray:
    """``(segments, F)`` values of every figure: :func:`_values` column by column, the band read once for
    the three band shares (``NaN`` where the band is missing, else 0/1, as ``figure_values``)."""
    out = np.full((len(segments), len(FIGURES)), np.nan)
    band = (segments["band"].astype("string").to_numpy(dtype=object, na_value=None) if "band" in segments.columns
            else None)
    for j, figure in enumerate(FIGURES):
        if band is not None and figure.startswith("share ") and figure.removeprefix("share ") in BANDS:
            known = np.array([b is not None for b in band], dtype=bool)
            out[known, j] = band[known] == figure.removeprefix("share ")
        else:
            out[:, j] = _values(segments, figure)
    return out


def partition_summary(results_part: pd.DataFrame, *, rubric: Rubric | None = None, n_boot: int = N_BOOT,
                      seed: int = SEED, labels_part: pd.DataFrame | None = None,
                      cluster_col: str = "turn_id") -> PartialSums:
    """The :class:`PartialSums` of one part of a run's ``results`` (whole turns; every sample of a
    segment in the part).

    Collapses a repeated run's samples per segment (:func:`~axon_eval.stats.intervals.headline_segments`,
    ``rubric`` giving the band edges of a mean, as ``headline_table``; the turn is ``cluster_col``, else
    read from ``segment_id``), then :func:`segments_summary`: each figure summed over its segments with a
    value, segments and turns counted, the ``n_boot`` Poisson-weighted sums per figure (module docstring;
    ``seed`` keys the weights and must be the same for every part). With ``labels_part`` (one row per
    labelled segment; module docstring), the confusion table and the PPI++ sums too. Memory beyond the
    part itself: ``O(n_boot x figures)`` plus one block of weights. Judge and rubric ids are recorded,
    not checked: :func:`headline_from_summary` refuses a mix over the merged parts.
    """
    if n_boot < 1:
        raise ValueError(f"n_boot must be >= 1, got {n_boot!r}")
    _seed_key(seed)
    seg = headline_segments(results_part, rubric, cluster_col=cluster_col, allow_mixed=True)
    summary = segments_summary(seg, rubric=rubric, n_boot=n_boot, seed=seed, labels=labels_part,
                               cluster_col=cluster_col)
    ids = (lambda c: frozenset(str(v) for v in results_part[c].dropna().unique())
           if c in results_part.columns else frozenset())
    return replace(summary, judge_ids=ids("judge_id"), rubric_ids=ids("rubric_id"),
                   n_segments=int(results_part["segment_id"].nunique()) if "segment_id" in results_part.columns else 0)


def segments_summary(segments: pd.DataFrame, *, rubric: Rubric | None = None, n_boot: int = N_BOOT,
                     seed: int = SEED, labels: pd.DataFrame | None = None,
                     cluster_col: str = "turn_id") -> PartialSums:
    """:func:`partition_summary` from a part's judged segments already collapsed, one row each: the frame
    :func:`~axon_eval.stats.intervals.headline_segments` returns (``segment_id``, ``cluster``, ``capped``,
    ``score``, ``band``, the dimensions; ``judge_id``/``rubric_id`` when present). ``n_segments`` is then
    the number of these rows; ``rubric`` only records the band edges (for the merge's consistency check).
    """
    if n_boot < 1:
        raise ValueError(f"n_boot must be >= 1, got {n_boot!r}")
    _seed_key(seed)
    edges = rubric.bands if rubric is not None else _default_bands()
    seg = segments.reset_index(drop=True)
    n_fig = len(FIGURES)
    values = _figure_matrix(seg)
    has = np.isfinite(values)
    codes, uniques = pd.factorize(seg["cluster"].astype(str), sort=False)
    codes = codes.astype(np.int64)
    n_turns = len(uniques)

    limbs = _to_limbs(np.where(has, values, 0.0)).reshape(len(seg), n_fig * N_LIMBS)
    per_turn = _turn_sums(codes, n_turns, np.concatenate([limbs, has.astype(np.int64)], axis=1))
    sums = per_turn[:, :n_fig * N_LIMBS].sum(axis=0).reshape(n_fig, N_LIMBS)
    turn_counts = per_turn[:, n_fig * N_LIMBS:]
    boot = _weighted_turn_sums(turn_keys(uniques, seed), per_turn, n_boot)

    cluster_source = (cluster_col if cluster_col in seg.columns and seg[cluster_col].notna().all()
                      else "turn id from segment_id")
    ids = (lambda c: frozenset(str(v) for v in seg[c].dropna().unique()) if c in seg.columns else frozenset())
    ppi_counts, ppi_sums, ppi_min, ppi_max, confusion, label_figures = _label_sums(seg, values, has, labels)
    return PartialSums(
        n_boot=int(n_boot), seed=int(seed), band_edges=(float(edges.good), float(edges.partial)),
        n_segments=len(seg), n_judged=len(seg), n_turns=n_turns, counts=has.sum(axis=0).astype(np.int64),
        clusters=(turn_counts > 0).sum(axis=0).astype(np.int64), sums=sums,
        boot_sums=boot[:, :n_fig * N_LIMBS].reshape(n_boot, n_fig, N_LIMBS), boot_counts=boot[:, n_fig * N_LIMBS:],
        confusion=confusion, ppi_counts=ppi_counts, ppi_sums=ppi_sums, ppi_min=ppi_min, ppi_max=ppi_max,
        judge_ids=ids("judge_id"), rubric_ids=ids("rubric_id"),
        cluster_sources=frozenset({cluster_source}) if len(seg) else frozenset(), label_figures=label_figures)


def _label_sums(seg: pd.DataFrame, values: np.ndarray, has: np.ndarray,
                labels_part: pd.DataFrame | None) -> tuple[np.ndarray, ...]:
    """PPI++ counts, sums, min, max; confusion table; labelled figures (``None`` without labels)."""
    n_fig = len(FIGURES)
    counts = np.zeros((n_fig, 2), dtype=np.int64)
    sums = np.zeros((n_fig, len(PPI_MOMENTS), N_LIMBS), dtype=np.int64)
    lo, hi = np.full(n_fig, np.nan), np.full(n_fig, np.nan)
    confusion = np.zeros((len(BANDS), len(BANDS)), dtype=np.int64)
    label_figures = None
    human = np.full(values.shape, np.nan)
    labelled = np.zeros(len(seg), dtype=bool)
    if labels_part is not None:
        labels = _labels_frame(labels_part)
        label_figures = _label_figures(labels)
        labelled = seg["segment_id"].isin(labels.index).to_numpy()
        if labelled.any():
            mine = labels.loc[seg.loc[labelled, "segment_id"]]
            for j, figure in enumerate(FIGURES):
                if figure in label_figures:
                    human[labelled, j] = _values(mine, figure)
            judge_band = seg.loc[labelled, "band"].astype("string").to_numpy(dtype=object, na_value=None)
            label_band = mine["band"].astype("string").to_numpy(dtype=object, na_value=None) \
                if "band" in mine.columns else np.full(len(mine), None, dtype=object)
            code = {b: i for i, b in enumerate(BANDS)}
            a = np.array([code.get(x, -1) for x in judge_band], dtype=np.int64)
            b = np.array([code.get(x, -1) for x in label_band], dtype=np.int64)
            ok = (a >= 0) & (b >= 0)
            k = len(BANDS)
            confusion = np.bincount(a[ok] * k + b[ok], minlength=k * k).reshape(k, k)
    for j, figure in enumerate(FIGURES):
        figure_labelled = labelled if label_figures is not None and figure in label_figures else np.zeros_like(labelled)
        pair = figure_labelled & has[:, j] & np.isfinite(human[:, j])
        unl = has[:, j] & ~figure_labelled
        y, yhat, yu = human[pair, j], values[pair, j], values[unl, j]
        counts[j] = (len(y), len(yu))
        moments = [y, yhat, y * y, yhat * yhat, y * yhat, yu, yu * yu]
        sums[j] = np.stack([_to_limbs(m).sum(axis=0) if len(m) else np.zeros(N_LIMBS, dtype=np.int64)
                            for m in moments])
        pooled = np.concatenate([yhat, yu])
        if len(pooled):
            lo[j], hi[j] = pooled.min(), pooled.max()
    return counts, sums, lo, hi, confusion.astype(np.int64), label_figures


# -- merging -----------------------------------------------------------------------------------------
def merge_summaries(parts: Iterable[PartialSums]) -> PartialSums:
    """The summary of the union of disjoint parts: counts and sums added (exact int64), least and largest
    judge values combined, ids united. Exactly associative and commutative, so the result does not
    depend on the order or grouping of the parts (nor on the partitioning). The parts must share
    ``n_boot``, ``seed``, ``band_edges`` and, among those given labels, the labelled figures
    (``ValueError`` otherwise)."""
    items = list(parts)
    if not items:
        raise ValueError("merge_summaries needs at least one PartialSums")
    first = items[0]
    for p in items[1:]:
        for name in ("n_boot", "seed", "band_edges"):
            if getattr(p, name) != getattr(first, name):
                raise ValueError(f"cannot merge parts with different {name}: {getattr(first, name)!r} and "
                                 f"{getattr(p, name)!r}")
    label_sets = {p.label_figures for p in items if p.label_figures is not None}
    if len(label_sets) > 1:
        raise ValueError(f"cannot merge parts whose labels carry different figures: {sorted(map(sorted, label_sets))}")

    def total(name: str) -> Any:
        out = getattr(first, name)
        for p in items[1:]:
            out = out + getattr(p, name)
        return out

    lo, hi = first.ppi_min, first.ppi_max
    for p in items[1:]:
        lo, hi = np.fmin(lo, p.ppi_min), np.fmax(hi, p.ppi_max)
    return replace(
        first, n_segments=total("n_segments"), n_judged=total("n_judged"), n_turns=total("n_turns"),
        counts=total("counts"), clusters=total("clusters"), sums=total("sums"), boot_sums=total("boot_sums"),
        boot_counts=total("boot_counts"), confusion=total("confusion"), ppi_counts=total("ppi_counts"),
        ppi_sums=total("ppi_sums"), ppi_min=lo, ppi_max=hi,
        judge_ids=frozenset().union(*(p.judge_ids for p in items)),
        rubric_ids=frozenset().union(*(p.rubric_ids for p in items)),
        cluster_sources=frozenset().union(*(p.cluster_sources for p in items)),
        label_figures=next(iter(label_sets)) if label_sets else None, n_parts=sum(p.n_parts for p in items))


# -- figures from a summary --------------------------------------------------------------------------
def _check_mixed(summary: PartialSums, allow_mixed: bool) -> None:
    judges, rubrics = sorted(summary.judge_ids), sorted(summary.rubric_ids)
    length = max(len(judges), len(rubrics), 1)
    check_homogeneous(pd.DataFrame({"judge_id": judges + [None] * (length - len(judges)),
                                    "rubric_id": rubrics + [None] * (length - len(rubrics))}),
                      allow_mixed=allow_mixed)


def bootstrap_replicates(summary: PartialSums, figure: str) -> np.ndarray:
    """The ``n_boot`` Poisson-bootstrap replicates of one figure's mean (``NaN`` where undefined)."""
    j = FIGURES.index(figure)
    num = _limb_floats(summary.boot_sums[:, j, :])
    den = summary.boot_counts[:, j].astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def _figure_interval(summary: PartialSums, j: int, confidence: float) -> Interval:
    figure, kind = HEADLINE_FIGURES[j]
    n, n_clusters = int(summary.counts[j]), int(summary.clusters[j])
    total = _fraction(summary.sums[j])
    seed, n_boot = summary.seed, summary.n_boot
    n_missing = summary.n_judged - n
    missing = f"{n_missing} segment(s) without a value left out (null, not 0)" if n_missing else ""
    notes: list[str] = []
    if kind == "share" and n_clusters == n:
        iv = wilson_interval(int(total), n, confidence)  # Wilson: independent units (or none)
    elif n == 0:
        iv = Interval(math.nan, math.nan, math.nan, 0, 0, POISSON_METHOD, confidence, seed, n_boot, "no units")
    elif n_clusters < 2:
        iv = Interval(float(total / n), math.nan, math.nan, n, n_clusters, POISSON_METHOD, confidence, seed, n_boot,
                      "fewer than 2 clusters: nothing to resample")
    else:
        reps = bootstrap_replicates(summary, figure)
        undefined = int(np.isnan(reps).sum())
        if undefined:
            notes.append(f"{undefined} of {n_boot} replicates undefined and left out")
        alpha = 1 - confidence
        lo, hi = (np.nanquantile(reps, [alpha / 2, 1 - alpha / 2]) if undefined < n_boot else (math.nan, math.nan))
        iv = Interval(float(total / n), float(lo), float(hi), n, n_clusters, POISSON_METHOD, confidence, seed, n_boot)
    note = "; ".join(filter(None, [iv.note, *notes, missing]))
    return Interval(**{**iv.as_dict(), "note": note})


def headline_from_summary(summary: PartialSums, confidence: float = CONFIDENCE, *,
                          allow_mixed: bool = False) -> pd.DataFrame:
    """Every headline figure of a (merged) summary with its interval: the rows and columns of
    :func:`~axon_eval.stats.intervals.headline_table` (:data:`~axon_eval.stats.intervals.HEADLINE_COLUMNS`).

    ``estimate``, ``n``, ``n_clusters`` and notes are ``headline_table``'s (the estimate to rounding, under
    1e-12); a share whose turns each hold one segment has the same Wilson interval; every other row is the
    percentile interval of the Poisson bootstrap over turns (``method`` :data:`POISSON_METHOD`, ``seed`` and
    ``n_boot`` of the summary), which agrees with the multinomial one within Monte Carlo error.
    ``confidence`` may be chosen here: the replicates are kept. Refuses a summary mixing judge or rubric
    ids (:class:`~axon_eval.summaries.MixedResultsError`) unless ``allow_mixed``. ``attrs`` as
    ``headline_table``'s (``covers``, ``confidence``, ``n_boot``, ``seed``, ``cluster``) plus ``method``.
    """
    z_value(confidence)  # validates confidence
    _check_mixed(summary, allow_mixed)
    rows = []
    for j, (figure, kind) in enumerate(HEADLINE_FIGURES):
        iv = _figure_interval(summary, j, confidence)
        rows.append({"figure": figure, "kind": kind,
                     **{k: v for k, v in iv.as_dict().items() if k in HEADLINE_COLUMNS}})
    out = pd.DataFrame(rows, columns=list(HEADLINE_COLUMNS))
    out["seed"] = out["seed"].astype("Int64")
    out["n_boot"] = out["n_boot"].astype("Int64")
    out.attrs.update({"covers": INTERVAL_COVERS, "confidence": confidence, "n_boot": summary.n_boot,
                      "seed": summary.seed, "cluster": ", ".join(sorted(summary.cluster_sources)) or "turn_id",
                      "method": POISSON_METHOD})
    return out


def _require_labels(summary: PartialSums) -> None:
    if summary.label_figures is None:
        raise ValueError("the summary holds no labels: pass labels_part to partition_summary")


def confusion_from_summary(summary: PartialSums) -> pd.DataFrame:
    """The confusion table of the judge's band (rows ``judge``) against the labelled band (columns
    ``label``) over the labelled judged segments with a band on both sides."""
    _require_labels(summary)
    return pd.DataFrame(summary.confusion, index=pd.Index(list(BANDS), name="judge"),
                        columns=pd.Index(list(BANDS), name="label"))


def kappa_from_summary(summary: PartialSums, weights: str | None = None) -> float:
    """Cohen's kappa of the merged confusion table (:func:`~axon_eval.stats.agreement.cohens_kappa`'s
    formula; ``weights`` ``None``, ``"linear"`` or ``"quadratic"``); equals
    ``sklearn.metrics.cohen_kappa_score(judge_bands, labelled_bands)``. ``NaN`` when no segment is
    labelled or the chance disagreement is 0."""
    _require_labels(summary)
    k = len(BANDS)
    i, j = np.indices((k, k))
    return kappa_from_codes(i.ravel(), j.ravel(), k, weights, sample_weight=summary.confusion.ravel())


def ppi_from_summary(summary: PartialSums, figure: str = "mean score", *,
                     confidence: float = CONFIDENCE) -> PPIResult:
    """The PPI++ mean of ``figure`` (:func:`axon_eval.stats.ppi.ppi_mean` with ``lam=None``, unweighted:
    a simple random sample of labels; unlabelled = judged segments without a label) from the merged
    sufficient statistics; equals ``ppi_mean(y, yhat, yhat_unlabelled)`` on the whole run (to rounding):
    the same ``lam`` rule (:func:`~axon_eval.stats.ppi.ppi_rule`), the same variance and interval.
    Needs :data:`~axon_eval.stats.ppi.MIN_LABELLED` labelled pairs (``ValueError``)."""
    _require_labels(summary)
    if figure not in FIGURES:
        raise ValueError(f"unknown figure {figure!r}; expected one of {list(FIGURES)}")
    if figure not in summary.label_figures:  # type: ignore[operator]
        raise ValueError(f"the labels carry no value for {figure!r} "
                         f"(labelled figures: {sorted(summary.label_figures or ())})")
    j = FIGURES.index(figure)
    n, n_u = (int(x) for x in summary.ppi_counts[j])
    if n < MIN_LABELLED:
        raise ValueError(f"{figure}: {n} labelled pair(s); need at least {MIN_LABELLED}")
    sy, sh, syy, shh, syh, su, suu = (_fraction(summary.ppi_sums[j, m]) for m in range(len(PPI_MOMENTS)))
    cyy, chh, cyh = syy - sy * sy / n, shh - sh * sh / n, syh - sy * sh / n  # centred, times n
    rule = ppi_rule(n)
    q = rule.quantile(confidence)
    if n_u == 0:
        lam = 0.0
    elif not rule.tune_lam:
        lam = PLAIN_PPI_LAM
    else:
        cov = 2.0 * float(cyh / n)
        m = n + n_u
        var = float(((shh + suu) - (sh + su) ** 2 / m) / (m - 1))
        theta1 = float(su / n_u + (sy - sh) / n)
        lo, hi = float(summary.ppi_min[j]) - theta1, float(summary.ppi_max[j]) - theta1
        flat = hi - lo <= 1e-12 * max(abs(lo), abs(hi), 1e-300)
        lam = 0.0 if flat or var <= 0 else float(np.clip(cov / (2.0 * (1.0 + n / n_u) * var), 0.0, 1.0))
    lam_f = Fraction(lam)
    estimate = (sy - lam_f * sh) / n
    rect_ss = cyy - 2 * lam_f * cyh + lam_f * lam_f * chh
    var_est = rect_ss / (n - rule.ddof) / n
    if n_u:
        estimate += lam_f * su / n_u
        var_est += lam_f * lam_f * (suu - su * su / n_u) / n_u / n_u
    e, s = float(estimate), math.sqrt(max(float(var_est), 0.0))
    return PPIResult(e, e - q * s, e + q * s, s, lam, n, n_u, confidence, False, rule.df, rule)


__all__ = [
    "BLOCK_WEIGHTS",
    "FIGURES",
    "FIXED_POINT_BITS",
    "MAX_ABS_VALUE",
    "POISSON1_CDF",
    "POISSON_MAX",
    "POISSON_METHOD",
    "PPI_MOMENTS",
    "PartialSums",
    "bootstrap_replicates",
    "confusion_from_summary",
    "headline_from_summary",
    "kappa_from_summary",
    "merge_summaries",
    "partition_summary",
    "poisson_weights",
    "ppi_from_summary",
    "replicate_keys",
    "segments_summary",
    "turn_keys",
]
