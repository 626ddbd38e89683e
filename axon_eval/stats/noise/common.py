"""Judge noise, common ground: the tidy samples table as segment x rater matrices, and the constants.

Pure functions of a *tidy samples table*: one row per ``(segment_id, sample_index)`` judgement of the
same fixed evidence, with the four dimension columns ``intent_understood``, ``sql_quality``,
``result_relevance``, ``answer_faithfulness`` (NaN = null), ``score`` and ``band`` (NaN score = an
unjudged sample), and optionally ``cost_usd``, ``input_tokens``, ``output_tokens``,
``cache_read_tokens``, the cap facts ``all_sql_failed``, ``ended_on_failure``, ``no_tools``,
``judge_id`` and ``rubric_id``. A cross-judge ensemble is the same table with a ``member`` column (one
row per ``(segment_id, member)``, see :func:`members_frame`); every function takes ``rater=`` to name
the column that indexes the repeated judgements and picks ``member`` when present, else
``sample_index``. What is measured is judge-only noise: the evidence of a segment is fixed, so all the
variation between its samples is the judge's. Counts are of segments, never of samples.

Notation: ``x_ij`` is judgement ``j = 1..k`` of segment ``i = 1..n`` (one dimension, or the score);
``m_i`` the segment mean, ``g`` the grand mean.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ...rubric import BANDS, CAP_FACTS, DIMENSIONS, Rubric


#: The columns whose noise is measured: the four dimensions and the score.
NOISE_COLUMNS: tuple[str, ...] = (*DIMENSIONS, "score")
#: Optional per-judgement cost columns (NaN = unknown).
COST_COLUMNS: tuple[str, ...] = ("cost_usd", "input_tokens", "output_tokens", "cache_read_tokens")
#: Rater columns tried in order when ``rater=None``.
RATER_COLUMNS: tuple[str, ...] = ("member", "sample_index")
ENSEMBLE_REDUCERS: tuple[str, ...] = ("mean", "median")
STUDY_NAME = "03_judge_noise"
#: The exact keys of :meth:`JudgeNoiseSummary.to_json` (``study.json``), in order.
STUDY_KEYS: tuple[str, ...] = ("study", "judge_id", "simulated", "n_segments", "n_samples", "sd", "icc1",
                               "band_flip_rate", "ensemble", "recommended_k")
#: Markers of a simulated judge in a judge id (``simulate(...)`` and ``noise(...)`` wrappers).
SIMULATED_MARKERS: tuple[str, ...] = ("simulated(", "noise(")


# =============================================================================================
# The samples table as segment x rater matrices
# =============================================================================================
@dataclass(frozen=True, eq=False)
class SampleMatrix:
    """A tidy samples table pivoted to ``(n_segments, n_raters)`` float matrices (NaN = missing).

    ``values[column][i, j]`` is judgement ``j`` (``raters[j]``) of segment ``segment_ids[i]``.
    ``facts`` is ``(n_segments, 3)`` bool in ``CAP_FACTS`` order when the table has the fact columns.
    """

    segment_ids: np.ndarray
    raters: np.ndarray
    rater: str
    values: dict[str, np.ndarray]
    facts: np.ndarray | None

    @property
    def n_segments(self) -> int:
        return len(self.segment_ids)

    @property
    def n_raters(self) -> int:
        return len(self.raters)

    def complete(self, column: str) -> np.ndarray:
        """Bool mask of segments with every rater's value of ``column`` present."""
        return ~np.isnan(self.values[column]).any(axis=1)


def resolve_rater(samples_df: pd.DataFrame, rater: str | None = None) -> str:
    """The column indexing repeated judgements: ``rater`` if given, else ``member``, else ``sample_index``."""
    if rater is not None:
        if rater not in samples_df.columns:
            raise ValueError(f"rater column {rater!r} is not in the samples table; columns: {list(samples_df.columns)}")
        return rater
    for name in RATER_COLUMNS:
        if name in samples_df.columns:
            return name
    raise ValueError(f"the samples table needs a rater column, one of {list(RATER_COLUMNS)}; "
                     f"columns: {list(samples_df.columns)}")


def pivot_samples(samples_df: pd.DataFrame, columns: Sequence[str] = NOISE_COLUMNS, rater: str | None = None,
                  ) -> SampleMatrix:
    """Pivot a tidy samples table into :class:`SampleMatrix` (segments and raters sorted).

    Raises ``ValueError`` naming a missing column or the first duplicated ``(segment_id, rater)`` pair
    (a members table of a repeated ensemble must be cut to one sample index first).
    """
    rater = resolve_rater(samples_df, rater)
    missing = [c for c in ("segment_id", *columns) if c not in samples_df.columns]
    if missing:
        raise ValueError(f"the samples table lacks columns {missing}; columns: {list(samples_df.columns)}")
    seg_codes, seg_ids = pd.factorize(samples_df["segment_id"], sort=True)
    rat_codes, rat_ids = pd.factorize(samples_df[rater], sort=True)
    if (seg_codes < 0).any() or (rat_codes < 0).any():
        raise ValueError(f"segment_id and {rater} must not be null")
    n_seg, n_rat = len(seg_ids), len(rat_ids)
    flat = seg_codes.astype(np.int64) * n_rat + rat_codes
    if len(np.unique(flat)) != len(flat):
        dup = samples_df.loc[pd.Series(flat, index=samples_df.index).duplicated(), ["segment_id", rater]].iloc[0]
        seg, who = (v.item() if isinstance(v, np.generic) else v for v in (dup["segment_id"], dup[rater]))
        raise ValueError(f"the samples table holds ({seg!r}, {rater}={who!r}) more than once; "
                         f"one row per (segment_id, {rater}) is expected")
    values: dict[str, np.ndarray] = {}
    for column in columns:
        matrix = np.full(n_seg * n_rat, np.nan)
        matrix[flat] = pd.to_numeric(samples_df[column], errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
        values[column] = matrix.reshape(n_seg, n_rat)
    facts = None
    if all(f in samples_df.columns for f in CAP_FACTS):
        raw = samples_df.loc[:, list(CAP_FACTS)].to_numpy(dtype=bool, na_value=False)
        any_true = np.zeros((n_seg, len(CAP_FACTS)), dtype=bool)
        all_true = np.ones((n_seg, len(CAP_FACTS)), dtype=bool)
        np.logical_or.at(any_true, seg_codes, raw)
        np.logical_and.at(all_true, seg_codes, raw)
        varying = np.flatnonzero((any_true != all_true).any(axis=1))
        if varying.size:
            raise ValueError(f"cap facts differ between judgements of segment {seg_ids[varying[0]]!r}; "
                             "facts come from the evidence and must be constant per segment")
        facts = any_true
    return SampleMatrix(segment_ids=np.asarray(seg_ids), raters=np.asarray(rat_ids), rater=rater,
                        values=values, facts=facts)


def _band_codes(score: np.ndarray, rubric: Rubric) -> np.ndarray:
    """0 good, 1 partial, 2 poor (``BANDS`` order), -1 for NaN; the scorer's edges (score >= edge)."""
    code = np.where(score >= rubric.bands.good, 0, np.where(score >= rubric.bands.partial, 1, 2))
    return np.where(np.isnan(score), -1, code)


def _check_table(samples_df: pd.DataFrame, rubric: Rubric) -> None:
    """Refuse a table scored under another rubric, or whose band column disagrees with its scores."""
    if "rubric_id" in samples_df.columns:
        ids = sorted({str(v) for v in samples_df["rubric_id"].dropna().unique()})
        if ids and ids != [rubric.id]:
            raise ValueError(f"the samples table was scored with rubric id(s) {ids}, not {rubric.id!r}; "
                             "pass the run's rubric (or rescore the run)")
    if "band" in samples_df.columns:
        score = pd.to_numeric(samples_df["score"], errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
        judged = ~np.isnan(score)
        expected = np.asarray(BANDS, dtype=object)[_band_codes(score[judged], rubric)]
        given = samples_df["band"].astype(object).to_numpy()[judged]
        bad = np.flatnonzero(expected != given)
        if bad.size:
            first = samples_df.loc[judged].iloc[bad[0]]
            raise ValueError(f"band column disagrees with rubric {rubric.id!r} edges on {bad.size} row(s); first: "
                             f"segment {first['segment_id']!r} score {first['score']} band {first['band']!r}")
