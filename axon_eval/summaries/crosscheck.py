"""The cross-check: segments whose judge verdict is worse than their band, and the rubrics that move them.

A segment conflicts when ``BAND_RANK[judge_verdict] > BAND_RANK[band]`` (ranks best first: good 0, partial 1,
poor 2). Each packaged candidate rubric (:func:`candidate_rubrics`) rescores the conflicting segments from
their stored subscores and facts with the deterministic scorer (:func:`axon_eval.scoring.score_frame`); a
candidate *moves* a segment when its band there is worse than the scoring rubric's. Nothing is judged again.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..rubric import BANDS, CAP_FACTS, DIMENSIONS, Rubric
from ..scoring import round_tenths
from .segments import JUDGED, judged, _clean, _ids, _require, _segments


# -- the cross-check: the judge's verdict worse than the band -------------------------------------------
#: A band's rank, best first -- a verdict of a higher rank than the segment's band is worse than the band.
BAND_RANK: dict[str, int] = {b: i for i, b in enumerate(BANDS)}
#: The columns of :func:`verdict_conflicts` before the per-candidate ones.
CONFLICT_COLUMNS: tuple[str, ...] = ("segment_id", "turn_id", "score", "band", "judge_verdict", "conflict",
                                     *DIMENSIONS, "caps_applied", "moved_by")


def candidate_rubrics(exclude: Iterable[str] = ()) -> list[Rubric]:
    """Every packaged rubric (:func:`axon_eval.rubric.packaged_names`) whose id is not in ``exclude``
    (the rubric ids the results were scored under), in name order."""
    from ..rubric import packaged_names

    skip = set(exclude)
    rubrics = [Rubric.packaged(name) for name in packaged_names()]
    return [r for r in rubrics if r.id not in skip]


def describe_candidate(candidate: Rubric, base: Rubric | None = None) -> str:
    """What ``candidate`` changes against ``base`` (default ``axon-v1``), in words: each subscore cap it
    adds (``"answer_faithfulness <= 3 caps the score at 49"``), other weights, caps, band edges or row
    horizon; ``"the same numbers"`` when nothing differs."""
    base = base if base is not None else Rubric.default()
    known = [c.canonical() for c in base.subscore_caps]
    parts = [f"{c.dimension} <= {c.at_or_below:g} caps the score at {c.cap:g}" for c in candidate.subscore_caps
             if c.canonical() not in known]
    if len(candidate.subscore_caps) < len(base.subscore_caps):
        parts.append("fewer subscore caps")
    for what, a, b in (("weights", candidate.weights, base.weights), ("trajectory caps", candidate.caps, base.caps),
                       ("band edges", candidate.bands, base.bands), ("row horizon", candidate.row_horizon,
                                                                     base.row_horizon)):
        if a != b:
            parts.append(f"other {what}")
    return "; ".join(parts) or "the same numbers"


def _rescored_segments(rows: pd.DataFrame, candidate: Rubric) -> pd.DataFrame:
    """Per segment of the judged ``rows``: the mean of its samples' scores under ``candidate`` (each sample's
    stored subscores and trajectory facts scored by :func:`~axon_eval.scoring.score_arrays`, the vectorised
    kernel of :func:`~axon_eval.scoring.score_turn`: the same arithmetic, caps and rounding) and the band of
    that mean (rounded to 0.1, the candidate's edges): columns ``score`` and ``band``, indexed by segment
    id. A sample the candidate cannot score is left out."""
    from ..scoring import score_arrays

    subs = np.column_stack([pd.to_numeric(rows[d], errors="coerce").to_numpy(dtype=np.float64)
                            if d in rows.columns else np.full(len(rows), np.nan) for d in DIMENSIONS]) \
        if len(rows) else np.empty((0, len(DIMENSIONS)))
    facts = np.column_stack([rows[f].fillna(False).astype(bool).to_numpy() if f in rows.columns
                             else np.zeros(len(rows), dtype=bool) for f in CAP_FACTS]) \
        if len(rows) else np.empty((0, len(CAP_FACTS)), dtype=bool)
    _raw, scores, _code = score_arrays(subs, facts, candidate)
    mean = pd.Series(scores, index=rows.index, dtype="float64").groupby(rows["segment_id"], sort=False).mean()
    rounded = round_tenths(mean.to_numpy(dtype=np.float64))
    bands = [None if math.isnan(x) else candidate.band(float(x)) for x in rounded]
    return pd.DataFrame({"score": rounded, "band": bands}, index=mean.index)


def _conflicts_of(results: pd.DataFrame, segments: pd.DataFrame, candidates: Sequence[Rubric]) -> pd.DataFrame:
    j = judged(segments)
    if "judge_verdict" not in j.columns:
        j = j.assign(judge_verdict=None)
    verdict_rank = j["judge_verdict"].map(BAND_RANK)
    band_rank = j["band"].map(BAND_RANK)
    worse = j.loc[(verdict_rank > band_rank).fillna(False).astype(bool)].copy()
    worse["conflict"] = [f"{b} band, verdict {v}" for b, v in zip(worse["band"], worse["judge_verdict"], strict=True)]
    for c in CONFLICT_COLUMNS:
        if c not in worse.columns:
            worse[c] = None if c != "moved_by" else ""
    status = results["status"].astype("string") if len(results) else pd.Series(dtype="string")
    rows = results.loc[(status == JUDGED).fillna(False).to_numpy(dtype=bool)
                       & results["segment_id"].isin(set(worse["segment_id"])).to_numpy()]
    moved: dict[str, list[str]] = {sid: [] for sid in worse["segment_id"]}
    extra = []
    for candidate in candidates:
        rescored = _rescored_segments(rows, candidate).reindex(worse["segment_id"])
        worse[f"score {candidate.name}"] = rescored["score"].to_numpy()
        worse[f"band {candidate.name}"] = rescored["band"].to_numpy()
        extra += [f"score {candidate.name}", f"band {candidate.name}"]
        lower = rescored["band"].map(BAND_RANK) > worse.set_index("segment_id")["band"].map(BAND_RANK)
        for sid in lower.index[lower.fillna(False).astype(bool)]:
            moved[sid].append(candidate.name)
    worse["moved_by"] = [";".join(moved[sid]) for sid in worse["segment_id"]]
    return worse.loc[:, [*CONFLICT_COLUMNS, *extra]].reset_index(drop=True)


def verdict_conflicts(results: pd.DataFrame, rubric: Rubric | None = None,
                      candidates: Sequence[Rubric] | None = None) -> pd.DataFrame:
    """The cross-check of a run: every judged segment whose judge verdict is **worse than its band** (a
    good band with the verdict partial or poor, a partial band with the verdict poor), one row each, in
    results order.

    The rubric decides the band (``axon-v1`` is compensatory: a sound trajectory can carry a wrong answer
    to good); the judge's own verdict is the cross-check on that composite. For each segment listed, its
    judged samples are rescored under every candidate rubric (default :func:`candidate_rubrics`: the
    packaged rubrics other than the results' own) exactly as :func:`~axon_eval.scoring.score_turn` scores
    them (their stored subscores and trajectory facts through the scorer's kernel), and the segment gets
    the band of the mean over its samples by the candidate's edges.

    Columns :data:`CONFLICT_COLUMNS` (``conflict`` reads ``"good band, verdict partial"``; ``moved_by``
    names, ``;``-joined in candidate order, the candidates whose band for the segment is worse than its
    band now, empty when none does), then ``score <name>`` and ``band <name>`` per candidate. Pure: reads
    nothing but its arguments and the packaged rubrics.
    """
    _require(results, ["segment_id", "status", "score", "band"])
    if candidates is None:
        candidates = candidate_rubrics(_ids(results, "rubric_id"))
    return _conflicts_of(results, _segments(results, rubric), list(candidates))


def cross_check(results: pd.DataFrame, rubric: Rubric | None = None, candidates: Sequence[Rubric] | None = None,
                *, segments: pd.DataFrame | None = None) -> dict[str, Any]:
    """:func:`verdict_conflicts` as a plain (JSON-serialisable) dict, what the CLI summary and the report's
    first page print: ``count`` (segments whose verdict is worse than their band), ``of`` (judged segments
    with a verdict), ``by_kind`` (``{"good band, verdict partial": n, ...}``, every kind listed),
    ``candidates`` (per candidate rubric, in order: ``name``, ``id``, ``change`` (:func:`describe_candidate`
    against the scoring rubric), ``moves``: how many of the listed segments it moves to a worse band),
    ``not_moved`` (listed segments no candidate moves), ``rubric`` (the name of the rubric that scored the
    results, else their rubric ids) and
    ``items`` (every listed segment: ``segment_id``, ``score``, ``band``, ``judge_verdict``, ``conflict``,
    ``moved_by`` (names) and ``under``: per candidate its ``score`` and ``band``). ``segments``: the
    results' :func:`segment_table`, when the caller has it."""
    rubric_ids = _ids(results, "rubric_id")
    if candidates is None:
        candidates = candidate_rubrics(rubric_ids)
    candidates = list(candidates)
    segs = segments if segments is not None else _segments(results, rubric)
    table = _conflicts_of(results, segs, candidates)
    j = judged(segs)
    with_verdict = int(j["judge_verdict"].notna().sum()) if "judge_verdict" in j.columns else 0
    kinds = [f"{b} band, verdict {v}" for b in BANDS for v in BANDS if BAND_RANK[v] > BAND_RANK[b]]
    base = rubric if rubric is not None else Rubric.default()
    moved = [set(filter(None, str(m).split(";"))) for m in table["moved_by"]]
    items = []
    for r, names in zip(table.to_dict("records"), moved, strict=True):
        items.append({"segment_id": str(r["segment_id"]), "score": _clean(r["score"]), "band": r["band"],
                      "judge_verdict": r["judge_verdict"], "conflict": r["conflict"],
                      "moved_by": [c.name for c in candidates if c.name in names],
                      "under": {c.name: {"score": _clean(r[f"score {c.name}"]), "band": _clean(r[f"band {c.name}"])}
                                for c in candidates}})
    return {
        "count": len(table), "of": with_verdict,
        "by_kind": {k: int((table["conflict"] == k).sum()) for k in kinds},
        "candidates": [{"name": c.name, "id": c.id, "change": describe_candidate(c, base),
                        "moves": sum(c.name in names for names in moved)} for c in candidates],
        "not_moved": sum(not names for names in moved),
        "rubric": base.name if base.id in rubric_ids or not rubric_ids else ", ".join(rubric_ids),
        "items": items,
    }


def _under_text(item: Mapping[str, Any], name: str) -> str:
    under = (item.get("under") or {}).get(name) or {}
    score = under.get("score")
    return f"{name}: {under.get('band')}" + ("" if score is None else f" ({score:.1f})")


def cross_check_lines(check: Mapping[str, Any] | None, *, shown: int | None = None) -> list[str]:
    """The cross-check of :func:`cross_check` as text: one loud line with the count (``CROSS-CHECK: ...``)
    and its kinds, one line per listed segment (the first ``shown`` of its items; ``None``: every item
    given) naming the candidate rubric that moves it down, ``and N more`` with where they are listed (the
    check's ``listed_in``) when fewer items are given than counted, and one line per candidate with how
    many it moves. One quiet line when no verdict is worse than its band; nothing without a cross-check."""
    if not check:
        return []
    if not check["count"]:
        return [f"cross-check: the judge's verdict is nowhere worse than the band ({check['of']} judged segments "
                "with a verdict)"]
    kinds = ", ".join(f"{k} {n}" for k, n in check["by_kind"].items() if n)
    lines = [f"CROSS-CHECK: the judge's verdict is WORSE than the band on {check['count']} of {check['of']} judged "
             f"segments ({kinds}): rubric {check.get('rubric') or '-'} scores them above the judge's own verdict"]
    items = list(check.get("items") or [])
    items = items if shown is None else items[:shown]
    for item in items:
        names = item.get("moved_by") or []
        moved = ("; ".join(_under_text(item, n) for n in names) if names
                 else "no packaged candidate rubric moves it")
        lines.append(f"  {item['segment_id']}: score {item['score']:.1f}, band {item['band']}, judge verdict "
                     f"{item['judge_verdict']} -> {moved}")
    if len(items) < check["count"]:
        rest = f"and {check['count'] - len(items)} more" if items else "every one"
        lines.append(f"  {rest}: listed in {check.get('listed_in') or 'the results (judge_verdict against band)'}")
    for c in check.get("candidates") or []:
        lines.append(f"  candidate rubric {c['name']} ({c['change']}) moves {c['moves']} of the {check['count']} "
                     f"to a worse band")
    if check.get("not_moved"):
        lines.append(f"  {check['not_moved']} of the {check['count']} moved by no packaged candidate rubric")
    return lines
