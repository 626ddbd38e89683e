"""Judge noise: the study 03 notebook's inputs: which judge to repeat, and the samples table of its run."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ...rubric import CAP_FACTS, DIMENSIONS
from .common import COST_COLUMNS, NOISE_COLUMNS
from .members import _num


# =============================================================================================
# The study 03 notebook's inputs: which judge to repeat, and the samples table of its run
# =============================================================================================
#: The Claude model the study 03 notebook suggests for a paid run; it runs only when passed explicitly as
#: ``judge="anthropic:claude-sonnet-4-5"`` (never because a key happens to be in the environment).
NOISE_STUDY_MODEL = "claude-sonnet-4-5"
#: Points from the nearest band edge within which a segment's mean score counts as borderline.
BORDERLINE_POINTS = 5.0
#: Columns of :func:`samples_from_results`, in order.
SAMPLE_COLUMNS: tuple[str, ...] = (
    "segment_id", "sample_index", "turn_id", *DIMENSIONS, "score", "band", *CAP_FACTS, "judge_id", "rubric_id",
    "status", "error", *COST_COLUMNS, "cached",
)
_API_LEAF = ("anthropic:", "claude:", "openai:")  # claude: is the registry's alias of anthropic:
_MODES = ("structured", "free_text")


def default_noise_judge(*, seed: int = 0) -> str:
    """The spec study 03 repeats when none is named: always the offline SIMULATED stand-in
    ``simulate(heuristic, sd=1, difficulty=0.5, seed=<seed>)``, whatever the environment holds (a paid
    judge runs only when named)."""
    return f"simulate(heuristic, sd=1, difficulty=0.5, seed={int(seed)})"


@dataclass(frozen=True)
class NoiseStudyJudge:
    """What study 03 runs: ``spec`` = ``repeat(<inner>, <n>)``; ``batch`` when ``inner`` is a plain
    ``anthropic:`` leaf (Message Batches, half price); ``free_text_spec`` the same repeat in ``#free_text``
    mode for a plain ``anthropic:``/``openai:`` leaf, else None with ``free_text_note`` saying why;
    ``note`` says how the judge was chosen."""

    inner: str
    n_samples: int
    spec: str
    batch: bool
    free_text_spec: str | None
    free_text_note: str
    note: str


def noise_study_judge(judge: str | None, n_samples: int, *, seed: int = 0) -> NoiseStudyJudge:
    """Resolve study 03's ``judge`` parameter (the spec to repeat; None: :func:`default_noise_judge`, the
    offline SIMULATED judge, never a paid one: the environment is not read).

    Raises ``ValueError`` for ``n_samples < 2`` (noise needs two judgements of the same evidence), a
    non-string judge, or a judge that is already ``repeat(...)`` (``n_samples`` sets the repeats).
    """
    if isinstance(n_samples, bool) or not isinstance(n_samples, int | np.integer) or n_samples < 2:
        raise ValueError(f"n_samples must be an integer >= 2 (noise needs repeated judgements), got {n_samples!r}")
    if judge is None:
        inner = default_noise_judge(seed=seed)
        note = ("judge=None: a SIMULATED judge stands in for a sampled language model; a paid judge runs only "
                f"when named, e.g. judge=\"anthropic:{NOISE_STUDY_MODEL}\"")
    elif isinstance(judge, str) and judge.strip():
        inner = judge.strip()
        note = "judge named by the parameter"
    else:
        raise ValueError(f"judge must be a judge spec string or None, got {judge!r}")
    if inner.startswith("repeat(") or inner.startswith("repeat ("):
        raise ValueError(f"judge is the spec to repeat, not a repeat(...): got {inner!r}; n_samples sets the repeats")
    plain_leaf = inner.startswith(_API_LEAF) and "(" not in inner and ")" not in inner
    free_text_spec: str | None = None
    if plain_leaf:
        body, hash_, mode = inner.rpartition("#")
        leaf = body if hash_ and mode in _MODES else inner
        free_text_spec = f"repeat({leaf}#free_text, {int(n_samples)})"
        free_text_note = "the same repeat in #free_text mode: the rubric asked for in prose, numbers parsed"
    elif inner.startswith(("simulate(", "noise(")) or inner == "heuristic":
        free_text_note = ("the judge is not a language model (SIMULATED or the heuristic): there is no prose to "
                          "ask for, so structured against free-text judging cannot be measured offline")
    else:
        free_text_note = "free-text mode is compared for a single anthropic:/openai: judge only"
    return NoiseStudyJudge(inner=inner, n_samples=int(n_samples), spec=f"repeat({inner}, {int(n_samples)})",
                           batch=plain_leaf and inner.startswith(("anthropic:", "claude:")), free_text_spec=free_text_spec,
                           free_text_note=free_text_note, note=note)


def samples_from_results(results: pd.DataFrame, records: Iterable[Any] | None = None) -> pd.DataFrame:
    """The tidy samples table (:data:`SAMPLE_COLUMNS`) of a repeated run: one row per
    ``(segment_id, sample_index)`` from the run's results, with the token counts of ``records`` (the
    run's :class:`~axon_eval.judges.records.JudgeRecord` objects or ``verdicts.jsonl`` dicts) matched on
    the same key; tokens are NaN (unknown) without records or when a record does not state them."""
    missing = [c for c in ("segment_id", "sample_index", *DIMENSIONS, "score", "band") if c not in results.columns]
    if missing:
        raise ValueError(f"results lack columns {missing}; columns: {list(results.columns)}")
    frame = results.reindex(columns=[c for c in SAMPLE_COLUMNS if c not in COST_COLUMNS[1:]]).copy()
    frame["sample_index"] = frame["sample_index"].astype(int)
    tokens = ["input_tokens", "output_tokens", "cache_read_tokens"]
    rows = []
    for rec in records or ():
        data = rec.model_dump() if hasattr(rec, "model_dump") else dict(rec)
        rows.append({"segment_id": data["segment_id"], "sample_index": int(data.get("sample_index", 0)),
                     **{t: _num(data.get(t)) for t in tokens}})
    found = (pd.DataFrame(rows, columns=["segment_id", "sample_index", *tokens])
             .drop_duplicates(["segment_id", "sample_index"], keep="last"))
    frame = frame.merge(found, on=["segment_id", "sample_index"], how="left", validate="many_to_one")
    for column in (*tokens, "cost_usd"):
        frame[column] = pd.to_numeric(frame[column], errors="coerce").astype(np.float64)
    return frame[list(SAMPLE_COLUMNS)].sort_values(["segment_id", "sample_index"], kind="stable").reset_index(drop=True)


def borderline_sd(segments: pd.DataFrame, within: float = BORDERLINE_POINTS) -> pd.DataFrame:
    """Pooled within-segment SD per column for borderline segments (mean score within ``within`` points
    of the nearest band edge), the others, and all, from :func:`segment_noise` / ``summary.segments``.

    One row per group: ``group``, ``n_segments`` (with an SD, i.e. >= 2 judged samples) and ``sd_<column>``
    for each of :data:`NOISE_COLUMNS`: ``sqrt(sum_i w_i s_i^2 / sum_i w_i)`` with ``w_i = n_judged_i - 1``
    over segments whose ``s_i`` is known (the "all" row equals the pooled SD when no dimension is null on
    only some samples of a segment).
    """
    if not within >= 0:
        raise ValueError(f"within must be >= 0 points, got {within!r}")
    need = ["n_judged", "distance_to_edge", "sd_score"]
    if any(c not in segments.columns for c in need):
        raise ValueError(f"segments need columns {need} (from segment_noise); columns: {list(segments.columns)}")
    near = segments["distance_to_edge"].to_numpy(dtype=np.float64) <= within
    groups = {f"borderline (mean within {within:g} points of a band edge)": near,
              f"clear (further than {within:g} points)": ~near, "all": np.ones(len(segments), dtype=bool)}
    weight = (segments["n_judged"].to_numpy(dtype=np.float64) - 1.0)
    rows = []
    for name, mask in groups.items():
        row: dict[str, Any] = {"group": name,
                               "n_segments": int((mask & segments["sd_score"].notna().to_numpy()).sum())}
        for column in NOISE_COLUMNS:
            key = f"sd_{column}"
            s = segments[key].to_numpy(dtype=np.float64) if key in segments.columns else np.full(len(segments), np.nan)
            use = mask & ~np.isnan(s) & (weight > 0)
            row[key] = float(math.sqrt((weight[use] * s[use] ** 2).sum() / weight[use].sum())) if use.any() else float("nan")
        rows.append(row)
    return pd.DataFrame(rows)
