"""Study 04: the row-sample horizon, and what an evidence-aware row sampler buys over the first rows.

A judge sees at most ``h`` rows of each SQL statement (the *horizon*, or row budget), chosen by a
*sampler* (``head``: the first ``h``; ``evidence``: see :mod:`axon_eval.view`), plus the full row
count. This module evaluates the same segments at several horizons and compares each with the
judgement made on every row. Pure computation over DataFrames, except :func:`evaluate_horizons`
(which calls the judge it is given, through the verdict cache) and :func:`load_horizon_labels`.

Definitions
-----------
horizon ``h``
    rows per statement shown: an integer >= 0 (``0`` = row counts only) or ``None`` = every row
    (written ``"all"`` in tables). ``None`` is the *reference*.
flagged
    the judge's own verdict or the score band is below ``good`` (either one: a judge that calls a
    turn partial has noticed a problem even when the weights keep the score above 80).
band agreement
    share of the segments judged both at ``(sampler, h)`` and at every row whose score band equals
    the all-rows band; in [0, 1].
score delta
    ``|score(sampler, h) - score(all rows)|`` in points (0-100); mean and max over those segments.
seeded defect
    a labelled segment whose labelled verdict is not ``good`` (horizon-set kinds
    ``fabricated_value``, ``unseen_row_figure``, ``dropped_category``).
beyond the horizon
    a segment whose ``decisive_row`` (1-based) exceeds ``h`` while its result has more than ``h``
    rows (a result shown whole has nothing beyond the horizon; at ``h = None`` nothing is beyond).
defects caught / missed / unjudged at ``(sampler, h)``
    the seeded defects beyond the horizon that are judged and flagged / judged and not flagged / not
    judged at all (a failed or unusable judgement: neither caught nor missed, its own count), so
    ``defects_beyond = defects_caught + defects_missed + defects_unjudged``. ``defects_flagged`` counts
    every seeded defect flagged, wherever its decisive row.
correct answers wrongly penalised / unjudged
    labelled-``good`` segments that are judged and flagged at ``(sampler, h)``, wherever the decisive
    row / that are not judged (``correct_unjudged``: neither penalised nor spared, its own count).
prompt size
    ``view_chars``: characters of the rendered view, the judge's input besides its fixed system
    prompt. ``input_tokens``: exact when the judge records carry token counts (input + cache-read +
    cache-creation tokens of an LLM call, system prompt included); otherwise the stated estimate
    ``view_chars / 4`` (:data:`CHARS_PER_TOKEN_ESTIMATE`), marked ``input_tokens_estimated``.

The goal of the horizon study (:func:`compare_samplers`): at a budget of 20 rows, ``evidence`` flags at least
90% of the seeded defects beyond the horizon that ``head`` misses, flags no more correct answers than
``head``, and costs at most 1.1x the characters of ``head`` (1.2x the tokens when tokens are exact).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..evidence import SqlStep, Turn, split_segments, trajectory_facts
from ..labels import LABELS_NOTE, load_labels
from ..rubric import DIMENSIONS, ROW_SAMPLERS, Rubric
from ..scoring import score_turn
from ..view import EvidenceView, render_view

#: Horizons of the study -- counts only, 5, 10, 20, 50, 200 rows, every row (``None``).
DEFAULT_HORIZONS: tuple[int | None, ...] = (0, 5, 10, 20, 50, 200, None)
DEFAULT_SAMPLERS: tuple[str, ...] = ("head", "evidence")
#: The stated token estimate when no judge record carries token counts -- one token per 4 characters.
CHARS_PER_TOKEN_ESTIMATE = 4
#: Name of the study in ``study.json``.
STUDY_NAME = "04_row_horizon"
#: The goal's thresholds.
GOAL_CATCH_SHARE = 0.9
GOAL_CHAR_RATIO = 1.1
GOAL_TOKEN_RATIO = 1.2
#: Horizon-set label columns beyond those of ``labels.csv``.
HORIZON_EXTRA_COLUMNS: tuple[str, ...] = ("kind", "decisive_position", "decisive_row", "source_row", "row_count")
#: Columns of :func:`evaluate_horizons`' result (one row per sampler x horizon x segment).
RESULT_COLUMNS: tuple[str, ...] = (
    "sampler", "horizon", "horizon_label", "segment_id", "turn_id", *DIMENSIONS, "raw_score", "score", "band",
    "judge_verdict", "flagged", "status", "error", "judge_id", "rubric_id", "view_sha256", "view_chars",
    "shown_rows", "total_rows", "input_tokens", "output_tokens", "cached", "simulated", "explanation",
)


def horizon_label(horizon: int | None) -> str:
    """``"all"`` for ``None`` (every row), else the number as text."""
    return "all" if horizon is None else str(int(horizon))


def _check_horizons(horizons: Sequence[int | None]) -> list[int | None]:
    out = []
    for h in horizons:
        if h is not None and (not isinstance(h, int | np.integer) or isinstance(h, bool) or h < 0):
            raise ValueError(f"a horizon must be an integer >= 0 or None (every row), got {h!r}")
        out.append(None if h is None else int(h))
    if len(set(out)) != len(out):
        raise ValueError(f"horizons repeat a value: {list(horizons)}")
    return out


def _check_samplers(samplers: Sequence[str]) -> list[str]:
    bad = [s for s in samplers if s not in ROW_SAMPLERS]
    if bad:
        raise ValueError(f"unknown row sampler(s) {bad}; expected some of {sorted(ROW_SAMPLERS)}")
    if not samplers:
        raise ValueError("give at least one row sampler")
    return list(dict.fromkeys(samplers))


# =============================================================================================
# Inputs
# =============================================================================================
def load_horizon_labels(path: str | Path) -> pd.DataFrame:
    """Read ``horizon_labels.csv``: :func:`axon_eval.labels.load_labels` (validated, ``claims`` list)
    plus the study columns ``kind``, ``decisive_position``, ``decisive_row`` (int), ``source_row``
    (nullable int) and ``row_count`` (int). Raises ``ValueError`` naming a missing column."""
    base = load_labels(path)
    raw = pd.read_csv(path, dtype=str, keep_default_na=False)
    missing = [c for c in HORIZON_EXTRA_COLUMNS if c not in raw.columns]
    if missing:
        raise ValueError(f"{path}: missing horizon column(s) {missing}; expected {list(HORIZON_EXTRA_COLUMNS)}")
    out = base.copy()
    out["kind"] = raw["kind"].to_numpy()
    out["decisive_position"] = raw["decisive_position"].to_numpy()
    for col in ("decisive_row", "source_row", "row_count"):
        out[col] = pd.array([int(v) if v.strip() else pd.NA for v in raw[col]], dtype="Int64")
    out.attrs["note"] = LABELS_NOTE
    return out


# =============================================================================================
# Evaluation at every horizon (judges in memory; the notebook writes the run folder)
# =============================================================================================
def _view_rows(view: EvidenceView) -> tuple[int, int]:
    steps = [s for s in view.steps if isinstance(s, SqlStep)]
    return sum(len(s.rows) for s in steps), sum(s.total_rows for s in steps)


def _exact_input_tokens(record: Any) -> float:
    parts = [record.input_tokens, record.cache_read_tokens, record.cache_creation_tokens]
    if all(p is None for p in parts):
        return math.nan
    return float(sum(p or 0 for p in parts))


def evaluate_horizons(turns: Iterable[Turn], judge: Any, rubric: Rubric | None = None,
                      horizons: Sequence[int | None] = DEFAULT_HORIZONS,
                      samplers: Sequence[str] = DEFAULT_SAMPLERS, cache: Any = None, *,
                      concurrency: int = 8, progress: bool = False) -> pd.DataFrame:
    """Judge every segment of ``turns`` at every ``(sampler, horizon)`` and score it; one call.

    Views are rendered with :func:`axon_eval.view.render_view`; identical views (a result no larger
    than the horizon renders the same text at several horizons and for both samplers) are judged
    once, and every view goes through ``judge.judge_many(..., cache=cache)``, so the verdict cache
    serves any view judged before. Scores come from :func:`axon_eval.scoring.score_turn` with
    ``rubric`` (default ``axon-v1``) and the turn's trajectory facts. Nothing is written to disk.

    Returns one row per sampler x horizon x segment with :data:`RESULT_COLUMNS`: ``horizon`` is a
    nullable integer (``<NA>`` = every row) and ``horizon_label`` its text (``"all"``); ``flagged``
    is the module's definition; ``input_tokens`` is the exact total from the record (``NaN`` when
    the judge reports none); ``rubric_id`` is the scoring rubric's id; ``simulated`` is true for a
    record of a simulated judge (``noise``/``simulate`` wrappers). Only sample 0 of each view is judged.
    """
    rubric = rubric or Rubric.default()
    horizons = _check_horizons(horizons)
    samplers = _check_samplers(samplers)
    plan: list[tuple[str, int | None, EvidenceView, dict[str, Any]]] = []
    for turn in turns:
        facts = trajectory_facts(turn).to_dict()
        for segment in split_segments(turn):
            for sampler in samplers:
                for h in horizons:
                    plan.append((sampler, h, render_view(segment, h, sampler), facts))
    unique: dict[str, EvidenceView] = {}
    for _, _, view, _ in plan:
        unique.setdefault(view.sha256, view)
    views = list(unique.values())
    records = judge.judge_many(views, cache=cache, concurrency=concurrency, progress=progress, samples=1)
    by_sha = {v.sha256: r for v, r in zip(views, records)}
    rows = []
    for sampler, h, view, facts in plan:
        record = by_sha[view.sha256]
        shown, total = _view_rows(view)
        row: dict[str, Any] = {
            "sampler": sampler, "horizon": h, "horizon_label": horizon_label(h),
            "segment_id": view.segment_id, "turn_id": view.turn_id,
            "judge_id": record.judge_id, "rubric_id": rubric.id, "view_sha256": view.sha256,
            "view_chars": len(view.text), "shown_rows": shown, "total_rows": total,
            "input_tokens": _exact_input_tokens(record),
            "output_tokens": math.nan if record.output_tokens is None else float(record.output_tokens),
            "cached": bool(record.cached), "error": record.error,
            "simulated": bool(isinstance(record.extra, dict) and record.extra.get("simulated")),
        }
        scored = None
        if record.verdict is not None:
            try:
                scored = score_turn(record.verdict.subscores(), facts, rubric, judge_verdict=record.verdict.verdict)
            except ValueError as exc:  # a verdict the scorer cannot use is unjudged, with the reason
                row["error"] = f"verdict could not be scored: {exc}"
        for d in DIMENSIONS:
            value = scored.subscores[d] if scored is not None else None
            row[d] = math.nan if value is None else float(value)
        if scored is not None:
            assert record.verdict is not None
            row.update(raw_score=scored.raw_score, score=scored.score, band=scored.band,
                       judge_verdict=record.verdict.verdict, status="judged",
                       flagged=scored.band != "good" or record.verdict.verdict != "good",
                       explanation=record.verdict.explanation)
        else:
            row.update(raw_score=math.nan, score=math.nan, band=None, judge_verdict=None, status="unjudged",
                       flagged=None, explanation=None)
        rows.append(row)
    frame = pd.DataFrame(rows, columns=list(RESULT_COLUMNS))
    frame["horizon"] = pd.array(frame["horizon"].tolist(), dtype="Int64")
    frame["flagged"] = frame["flagged"].astype("boolean")
    return frame


def stack_results(per_horizon: Mapping[Any, pd.DataFrame], sampler: str = "head") -> pd.DataFrame:
    """One long table from per-horizon results tables (e.g. each run's results).

    Keys are a horizon (``int`` or ``None``; sampler ``sampler``) or a ``(sampler, horizon)`` pair.
    Adds ``sampler``, ``horizon`` (nullable int), ``horizon_label`` and, when missing, ``flagged``
    (from ``band`` and ``judge_verdict``); only judged rows of sample 0 are kept when the tables
    carry ``status`` / ``sample_index``.
    """
    parts = []
    for key, df in per_horizon.items():
        s, h = key if isinstance(key, tuple) else (sampler, key)
        _check_samplers([s])
        (h,) = _check_horizons([h])
        part = df.copy()
        if "sample_index" in part.columns:
            part = part[part["sample_index"] == 0]
        part["sampler"], part["horizon"], part["horizon_label"] = s, h, horizon_label(h)
        parts.append(part)
    if not parts:
        raise ValueError("no results tables given")
    out = pd.concat(parts, ignore_index=True)
    out["horizon"] = pd.array([None if pd.isna(v) else int(v) for v in out["horizon"]], dtype="Int64")
    if "flagged" not in out.columns:
        judged = out["band"].notna() & out["judge_verdict"].notna()
        out["flagged"] = pd.array([bool(b != "good" or v != "good") if j else pd.NA
                                   for b, v, j in zip(out["band"], out["judge_verdict"], judged)], dtype="boolean")
    return out


# =============================================================================================
# Per-horizon figures
# =============================================================================================
def _prepare(results: pd.DataFrame) -> pd.DataFrame:
    need = ["sampler", "horizon", "segment_id", "score", "band", "judge_verdict", "flagged"]
    missing = [c for c in need if c not in results.columns]
    if missing:
        raise ValueError(f"results lack column(s) {missing}; build them with evaluate_horizons or stack_results")
    if "judge_id" in results.columns:
        ids = sorted(results["judge_id"].dropna().unique())
        if len(ids) > 1:
            raise ValueError(f"results mix judge ids {ids}; study one judge at a time")
    dup = results.duplicated(["sampler", "horizon", "segment_id"])
    if dup.any():
        raise ValueError("results repeat (sampler, horizon, segment_id) "
                         f"{results.loc[dup, ['sampler', 'horizon', 'segment_id']].head(3).values.tolist()}")
    if not results["horizon"].isna().any():
        raise ValueError("results hold no all-rows reference (horizon None); include it in the horizons")
    return results


def _reference(results: pd.DataFrame) -> pd.DataFrame:
    """Per segment: the all-rows band and score (the same view for every sampler; the first wins)."""
    ref = results[results["horizon"].isna()].drop_duplicates("segment_id")
    return ref.set_index("segment_id")[["band", "score", "flagged"]].rename(
        columns={"band": "band_all", "score": "score_all", "flagged": "flagged_all"})


def _beyond(decisive_row: pd.Series, row_count: pd.Series, horizon: Any) -> pd.Series:
    if pd.isna(horizon):
        return pd.Series(False, index=decisive_row.index)
    h = int(horizon)
    return ((decisive_row.astype("Float64") > h) & (row_count.astype("Float64") > h)).fillna(False).astype(bool)


def _unjudged(rows: pd.DataFrame) -> pd.Series:
    """True where a row has no judgement to count: ``flagged`` is null (no usable verdict, or no row at
    all) or ``status`` is given and is not ``judged``."""
    out = rows["flagged"].isna()
    if "status" in rows.columns:
        status = rows["status"].astype("string")
        out = out | (status.notna() & (status != "judged")).fillna(False)
    return out.astype(bool)


def _with_labels(results: pd.DataFrame, labels: pd.DataFrame) -> pd.DataFrame:
    missing = [c for c in ("segment_id", "verdict", "decisive_row", "row_count") if c not in labels.columns]
    if missing:
        raise ValueError(f"labels lack column(s) {missing}; load them with load_horizon_labels")
    keep = ["segment_id", "verdict", "decisive_row", "row_count"] + [c for c in ("kind", "decisive_position")
                                                                      if c in labels.columns]
    merged = results.merge(labels[keep].rename(columns={"verdict": "label_verdict"}), on="segment_id", how="left")
    return merged.join(_reference(results), on="segment_id")


def horizon_summary(results: pd.DataFrame, labels: pd.DataFrame) -> pd.DataFrame:
    """One row per ``(sampler, horizon)`` with the module's figures.

    Columns: ``sampler``, ``horizon`` (nullable int), ``horizon_label``, ``n_segments``, ``n_judged``,
    ``band_agreement``, ``mean_abs_score_delta``, ``max_abs_score_delta``, ``defects_beyond``,
    ``defects_caught``, ``defects_missed``, ``defects_unjudged`` (beyond the horizon and not judged),
    ``defects_flagged`` (every seeded defect flagged), ``n_defects``, ``correct_n``, ``correct_penalised``,
    ``correct_unjudged``, ``mean_chars``, ``mean_input_tokens``, ``input_tokens_estimated``. Rows follow
    the samplers' order and ascending horizons, all rows last.
    """
    m = _with_labels(_prepare(results), labels)
    out = []
    samplers = list(dict.fromkeys(m["sampler"]))
    for sampler in samplers:
        part_s = m[m["sampler"] == sampler]
        horizons = sorted({int(h) for h in part_s["horizon"].dropna()}) + [None]
        for h in horizons:
            part = part_s[part_s["horizon"].isna()] if h is None else part_s[part_s["horizon"] == h]
            judged = part[part["band"].notna()]
            both = judged[judged["band_all"].notna()]
            delta = (both["score"] - both["score_all"]).abs()
            labelled = part[part["label_verdict"].notna()]
            defects = labelled[labelled["label_verdict"] != "good"]
            correct = labelled[labelled["label_verdict"] == "good"]
            flagged = defects["flagged"].fillna(False).astype(bool)
            defect_unjudged = _unjudged(defects)
            beyond = _beyond(defects["decisive_row"], defects["row_count"], h)
            exact = part["input_tokens"].notna().all() if "input_tokens" in part.columns and len(part) else False
            chars = part["view_chars"] if "view_chars" in part.columns else pd.Series(dtype=float)
            tokens = (part["input_tokens"] if exact else chars / CHARS_PER_TOKEN_ESTIMATE)
            out.append({
                "sampler": sampler, "horizon": h, "horizon_label": horizon_label(h),
                "n_segments": int(part["segment_id"].nunique()), "n_judged": len(judged),
                "band_agreement": float((both["band"] == both["band_all"]).mean()) if len(both) else math.nan,
                "mean_abs_score_delta": float(delta.mean()) if len(delta) else math.nan,
                "max_abs_score_delta": float(delta.max()) if len(delta) else math.nan,
                "defects_beyond": int(beyond.sum()),
                "defects_caught": int((beyond & flagged).sum()),
                "defects_missed": int((beyond & ~flagged & ~defect_unjudged).sum()),
                "defects_unjudged": int((beyond & defect_unjudged).sum()),
                "defects_flagged": int(flagged.sum()), "n_defects": len(defects),
                "correct_n": len(correct),
                "correct_penalised": int(correct["flagged"].fillna(False).astype(bool).sum()),
                "correct_unjudged": int(_unjudged(correct).sum()),
                "mean_chars": float(chars.mean()) if len(chars.dropna()) else math.nan,
                "mean_input_tokens": float(tokens.mean()) if len(tokens.dropna()) else math.nan,
                "input_tokens_estimated": not exact,
            })
    frame = pd.DataFrame(out)
    frame["horizon"] = pd.array(frame["horizon"].tolist(), dtype="Int64")
    return frame


def changed_bands(results: pd.DataFrame, labels: pd.DataFrame | None = None) -> pd.DataFrame:
    """Every segment whose band at some ``(sampler, horizon)`` differs from its all-rows band, in full:
    sampler, horizon, segment, (label kind, position, decisive row, row count), both bands, both
    scores, the verdict and the judge's explanation at that horizon."""
    res = _prepare(results)
    m = _with_labels(res, labels) if labels is not None else res.join(_reference(res), on="segment_id")
    changed = m[m["horizon"].notna() & m["band"].notna() & m["band_all"].notna() & (m["band"] != m["band_all"])]
    cols = ["sampler", "horizon_label", "segment_id"]
    cols += [c for c in ("kind", "decisive_position", "decisive_row", "row_count", "label_verdict") if c in changed]
    cols += ["band_all", "band", "score_all", "score", "judge_verdict", "explanation"]
    return changed[[c for c in cols if c in changed.columns]].reset_index(drop=True)


# =============================================================================================
# The sampler comparison (the goal)
# =============================================================================================
@dataclass
class SamplerComparison:
    """``candidate`` vs ``baseline`` at one ``budget`` (see the module docstring for the goal).

    ``baseline_missed``: seeded defects beyond the horizon the baseline does not flag;
    ``candidate_caught``: those of them the candidate flags; ``catch_share`` = caught / missed (nan
    when nothing was missed). ``catchable_missed``/``catchable_caught``: the same restricted to the
    defects the all-rows judgement flags (a defect no horizon can reveal to this judge is not a
    sampler failure). ``*_penalised``: correct answers flagged. ``char_ratio``: mean view characters,
    candidate / baseline; ``token_ratio``: the same for exact input tokens (``None`` when not exact).
    ``baseline_unjudged``: seeded defects beyond the horizon the baseline did not judge (neither missed
    nor caught, so not in ``baseline_missed``); ``candidate_unjudged``: defects of ``baseline_missed``
    the candidate did not judge (not caught, and not counted as a candidate miss either);
    ``*_correct_unjudged``: correct answers not judged (neither penalised nor spared). ``notes`` says in
    words what the unjudged items leave unmeasured.
    """

    baseline: str
    candidate: str
    budget: int
    baseline_missed: list[str]
    candidate_caught: list[str]
    catch_share: float
    catchable_missed: list[str]
    catchable_caught: list[str]
    catchable_share: float
    baseline_penalised: int
    candidate_penalised: int
    char_ratio: float
    token_ratio: float | None
    goal_met: bool
    reasons: list[str] = field(default_factory=list)
    baseline_unjudged: list[str] = field(default_factory=list)
    candidate_unjudged: list[str] = field(default_factory=list)
    baseline_correct_unjudged: int = 0
    candidate_correct_unjudged: int = 0
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return _json_safe(asdict(self))


def compare_samplers(results: pd.DataFrame, labels: pd.DataFrame, budget: int = 20, baseline: str = "head",
                     candidate: str = "evidence") -> SamplerComparison:
    """The issue's goal at ``budget`` rows: catch share, correct answers penalised, cost ratios."""
    m = _with_labels(_prepare(results), labels)
    at = {s: m[(m["sampler"] == s) & (m["horizon"] == budget)].set_index("segment_id") for s in (baseline, candidate)}
    for s, part in at.items():
        if part.empty:
            raise ValueError(f"results hold no rows for sampler {s!r} at horizon {budget}")
    base, cand = at[baseline], at[candidate]
    lab = base[base["label_verdict"].notna()]
    defects = lab[lab["label_verdict"] != "good"]
    beyond = _beyond(defects["decisive_row"], defects["row_count"], budget)
    flagged_b = defects["flagged"].fillna(False).astype(bool)
    unjudged_b = _unjudged(defects)
    missed = sorted(defects.index[beyond & ~flagged_b & ~unjudged_b])
    base_unjudged = sorted(defects.index[beyond & unjudged_b])
    cand_rows = cand.reindex(missed)
    cand_unjudged = sorted(cand_rows.index[_unjudged(cand_rows)]) if missed else []
    cand_flag = cand["flagged"].reindex(missed).fillna(False).astype(bool)
    caught = sorted(cand_flag.index[cand_flag])
    all_flag = base["flagged_all"].reindex(missed).fillna(False).astype(bool)
    catchable = sorted(all_flag.index[all_flag])
    catchable_caught = [s for s in caught if s in set(catchable)]
    correct = lab.index[lab["label_verdict"] == "good"]
    pen_b = int(base["flagged"].reindex(correct).fillna(False).astype(bool).sum())
    pen_c = int(cand["flagged"].reindex(correct).fillna(False).astype(bool).sum())
    correct_unjudged_b = int(_unjudged(base.reindex(correct)).sum()) if len(correct) else 0
    correct_unjudged_c = int(_unjudged(cand.reindex(correct)).sum()) if len(correct) else 0
    notes = []
    if base_unjudged:
        notes.append(f"{len(base_unjudged)} seeded defect(s) beyond the horizon were not judged by {baseline} "
                     f"({', '.join(base_unjudged)}): neither caught nor missed, they are left out of the catch share")
    if cand_unjudged:
        notes.append(f"{len(cand_unjudged)} of the defects {baseline} misses were not judged by {candidate} "
                     f"({', '.join(cand_unjudged)}): counted as not caught")
    for name, n in ((baseline, correct_unjudged_b), (candidate, correct_unjudged_c)):
        if n:
            notes.append(f"{n} correct answer(s) were not judged by {name}: neither penalised nor spared")
    char_ratio = float(cand["view_chars"].mean() / base["view_chars"].mean()) if "view_chars" in cand else math.nan
    exact = ("input_tokens" in cand.columns and cand["input_tokens"].notna().all()
             and base["input_tokens"].notna().all())
    token_ratio = float(cand["input_tokens"].mean() / base["input_tokens"].mean()) if exact else None
    share = len(caught) / len(missed) if missed else math.nan
    reasons = []
    if missed and share < GOAL_CATCH_SHARE:
        reasons.append(f"{candidate} flags {len(caught)} of the {len(missed)} defects {baseline} misses "
                       f"({share:.0%} < {GOAL_CATCH_SHARE:.0%})")
    if pen_c > pen_b:
        reasons.append(f"{candidate} flags {pen_c} correct answers, {baseline} {pen_b}")
    if not char_ratio <= GOAL_CHAR_RATIO:
        reasons.append(f"{candidate} costs {char_ratio:.3f}x the characters of {baseline} (> {GOAL_CHAR_RATIO})")
    if token_ratio is not None and token_ratio > GOAL_TOKEN_RATIO:
        reasons.append(f"{candidate} costs {token_ratio:.3f}x the input tokens of {baseline} (> {GOAL_TOKEN_RATIO})")
    return SamplerComparison(
        baseline=baseline, candidate=candidate, budget=budget, baseline_missed=missed, candidate_caught=caught,
        catch_share=share, catchable_missed=catchable, catchable_caught=catchable_caught,
        catchable_share=len(catchable_caught) / len(catchable) if catchable else math.nan,
        baseline_penalised=pen_b, candidate_penalised=pen_c, char_ratio=char_ratio, token_ratio=token_ratio,
        goal_met=not reasons, reasons=reasons, baseline_unjudged=base_unjudged, candidate_unjudged=cand_unjudged,
        baseline_correct_unjudged=correct_unjudged_b, candidate_correct_unjudged=correct_unjudged_c, notes=notes)


# =============================================================================================
# study.json
# =============================================================================================
#: Keys of each ``by_horizon`` entry of ``study.json`` (the issue's stable keys, then extras).
BY_HORIZON_KEYS: tuple[str, ...] = ("sampler", "horizon", "band_agreement", "defects_caught", "defects_missed",
                                    "correct_penalised", "mean_chars", "mean_input_tokens")
BY_HORIZON_EXTRA_KEYS: tuple[str, ...] = ("input_tokens_estimated", "mean_abs_score_delta", "max_abs_score_delta",
                                          "defects_beyond", "defects_flagged", "correct_n", "n_judged",
                                          "defects_unjudged", "correct_unjudged")


def _json_safe(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    if value is pd.NA or value is None:
        return None
    if isinstance(value, np.bool_ | bool):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        return None if not math.isfinite(float(value)) else float(value)
    return value


@dataclass
class HorizonStudy:
    """The headline record of study 04; :meth:`to_json` is ``study.json``.

    Keys: ``study``, ``judge_id``, ``n_segments``, ``by_horizon`` (one entry per sampler x horizon
    with :data:`BY_HORIZON_KEYS` plus :data:`BY_HORIZON_EXTRA_KEYS`; ``horizon`` null = every row),
    ``goal_met`` (the issue's goal at ``row_budget``), then ``goal`` (the :class:`SamplerComparison`),
    ``row_budget``, ``simulated`` (true when any judge was simulated), ``source`` (the evidence read)
    and ``note`` (the labels are constructed).
    """

    study: str
    judge_id: str | None
    n_segments: int
    by_horizon: list[dict[str, Any]]
    goal_met: bool
    goal: dict[str, Any]
    row_budget: int
    simulated: bool
    source: str | None
    note: str = LABELS_NOTE

    def to_dict(self) -> dict[str, Any]:
        return _json_safe(asdict(self))

    def to_json(self, indent: int = 1) -> str:
        return json.dumps(self.to_dict(), indent=indent, sort_keys=False)


def summarise_study(results: pd.DataFrame, labels: pd.DataFrame, *, row_budget: int = 20,
                    simulated: bool | None = None, source: str | None = None) -> HorizonStudy:
    """:class:`HorizonStudy` from the long results table (:func:`evaluate_horizons`/:func:`stack_results`)
    and the horizon labels. ``goal_met`` is ``evidence`` vs ``head`` at ``row_budget`` when both
    samplers were run, else ``False`` with the reason in ``goal``. ``simulated`` defaults to whether any
    row's ``simulated`` column is true (``False`` when the column is absent)."""
    res = _prepare(results)
    if simulated is None:
        simulated = bool("simulated" in res.columns and res["simulated"].fillna(False).astype(bool).any())
    summary = horizon_summary(res, labels)
    by_horizon = []
    for row in summary.to_dict("records"):
        entry = {k: row[k] for k in BY_HORIZON_KEYS}
        entry["horizon"] = None if pd.isna(row["horizon"]) else int(row["horizon"])
        entry.update({k: row[k] for k in BY_HORIZON_EXTRA_KEYS})
        by_horizon.append(entry)
    samplers = set(res["sampler"])
    if {"head", "evidence"} <= samplers:
        comparison = compare_samplers(res, labels, budget=row_budget).to_dict()
    else:
        comparison = {"goal_met": False, "reasons": [f"needs both head and evidence samplers, got {sorted(samplers)}"]}
    judge_ids = sorted(res["judge_id"].dropna().unique()) if "judge_id" in res.columns else []
    return HorizonStudy(study=STUDY_NAME, judge_id=judge_ids[0] if judge_ids else None,
                        n_segments=int(res["segment_id"].nunique()), by_horizon=by_horizon,
                        goal_met=bool(comparison["goal_met"]), goal=comparison, row_budget=row_budget,
                        simulated=bool(simulated), source=source)


# =============================================================================================
# The figures quoted in the README (the heuristic judge on the committed horizon set)
# =============================================================================================
def measure_horizon_set(turns_path: str | Path = "data/turns/horizon_turns.jsonl",
                        labels_path: str | Path = "data/turns/horizon_labels.csv", judge: Any = None,
                        horizons: Sequence[int | None] = DEFAULT_HORIZONS,
                        samplers: Sequence[str] = DEFAULT_SAMPLERS, row_budget: int = 20,
                        cache: Any = None) -> tuple[pd.DataFrame, pd.DataFrame, HorizonStudy]:
    """Evaluate ``turns_path`` at every horizon with ``judge`` (default: the heuristic) and return the
    long results, the per-horizon summary and the study record (``source`` = ``turns_path``)."""
    from ..evidence import load_turns
    from ..judges.heuristic import HeuristicJudge
    from ..judges.wrappers import is_simulated

    turns, invalid = load_turns(turns_path)
    if invalid:
        raise ValueError(f"{turns_path}: {len(invalid)} invalid line(s), first: {invalid[0]}")
    judge = judge or HeuristicJudge()
    labels = load_horizon_labels(labels_path)
    results = evaluate_horizons(turns, judge, horizons=horizons, samplers=samplers, cache=cache)
    simulated = is_simulated(judge)
    return (results, horizon_summary(results, labels),
            summarise_study(results, labels, row_budget=row_budget, simulated=simulated, source=str(turns_path)))


def main() -> int:  # pragma: no cover - prints the README figures
    """The per-horizon table and the goal with the heuristic judge on the committed horizon set:
    ``python -c "from axon_eval.stats.horizon import main; main()"`` (about 20 s)."""
    _, summary, study = measure_horizon_set()
    columns = ["sampler", "horizon_label", "band_agreement", "mean_abs_score_delta", "defects_beyond",
               "defects_caught", "defects_missed", "defects_unjudged", "correct_penalised", "correct_unjudged",
               "mean_chars", "mean_input_tokens"]
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(summary[columns].to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    goal = study.goal
    print(f"\ngoal met: {study.goal_met}; at {study.row_budget} rows evidence flags {len(goal['candidate_caught'])} of "
          f"the {len(goal['baseline_missed'])} defects beyond the horizon that head misses; correct answers "
          f"penalised: head {goal['baseline_penalised']}, evidence {goal['candidate_penalised']}; characters "
          f"{goal['char_ratio']:.3f}x head (tokens estimated as characters / {CHARS_PER_TOKEN_ESTIMATE})")
    for reason in goal.get("reasons", []):
        print(f"  not met: {reason}")
    for note in goal.get("notes", []):
        print(f"  note: {note}")
    return 0
