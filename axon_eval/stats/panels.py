"""Judge panel design (study 10): which judges, reducer and samples are worth paying for.

Pure functions of a *members table* and labels; nothing judges again, nothing reads a run folder.
Every panel is computed from the members' stored verdicts.

The study is split by job; every name below stays importable from this module:

:mod:`axon_eval.stats.panel_members`
    the members table, the labels, a member's cost, the study's constants
:mod:`axon_eval.stats.panel_votes`
    reducers, kappa on many confusion tables, the members' correlated errors (``n_eff``)
:mod:`axon_eval.stats.panel_records`
    the records: a panel's result, the recommendation, the study
:mod:`axon_eval.stats.panel_frontier`
    the Pareto frontier, the recommendation and trust-or-escalate
:mod:`axon_eval.stats.panel_simulated`
    SIMULATED members and the benchmark's inputs

This module evaluates every panel (:func:`evaluate_panels`, :func:`panel_detail`) and runs the study
(:func:`panel_study`): every panel of up to ``max_size`` members, each reducer and sample count, its
agreement with the labels (band kappa with the large-sample standard error of Fleiss, Cohen and Everitt
1969) and its cost; then the frontier, the recommendation, escalation, and a cluster-bootstrap
confirmation of the chosen panel's kappa (turns as clusters).
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import fields
from typing import Any

import numpy as np
import pandas as pd

from ..rubric import BANDS, CAP_FACTS, DIMENSIONS, Rubric
from ..scoring import UNSCORABLE_CODE, score_arrays
from .agreement import band_codes
from .intervals import CONFIDENCE, N_BOOT, SEED, cluster_bootstrap, z_value
from .panel_members import (BLIND_SPOT_SHARE, BLIND_SPOT_SHIFT, DEFAULT_METRIC, ESCALATION_GRID, MAX_PANEL_SIZE,
    MemberSet, MIN_CORRELATION_PAIRS, panel_labels, PANEL_REDUCERS, prepare_members, SIMULATED_NOTE,
    SIMULATED_PREFIX, SINGLE, TARGET_KAPPA, TRIM_FRACTION, TURNS_PER_COST, _BLOCK_FLOATS, _N_BANDS)  # noqa: F401 - re-exported
from .panel_votes import (kappa_tables, mean_offdiagonal, MemberDiagnostics, n_effective, reduce_votes, _applicable,
    _diagnostics, _disagreement, _kappa_ci, _majority_verdict, _member_errors, _reduce, _tables)  # noqa: F401 - re-exported
from .panel_records import ESCALATION_COLUMNS, PANEL_COLUMNS, panel_id, PanelResult, PanelStudy, Recommendation, _jf  # noqa: F401 - re-exported
from .panel_frontier import pareto_optimal, recommend, trust_or_escalate  # noqa: F401 - re-exported
from .panel_simulated import panels_benchmark_inputs, SIMULATED_CHARACTERS, simulated_members, SimulatedCharacter  # noqa: F401 - re-exported

# =============================================================================================
# Evaluating panels
# =============================================================================================

def _votes(ms: MemberSet, subsets: np.ndarray, s: int, seg_idx: np.ndarray | None = None
           ) -> tuple[np.ndarray, np.ndarray]:
    """Votes (C, k*s, L, 4) and verdicts (C, k*s, L) of the panels ``subsets`` (C, k)."""
    vals, verd = ms.values[:, :s], ms.verdicts[:, :s]
    if seg_idx is not None:
        vals, verd = vals[:, :, seg_idx], verd[:, :, seg_idx]
    C, k = subsets.shape
    v = vals[subsets].reshape(C, k * s, *vals.shape[2:])
    c = verd[subsets].reshape(C, k * s, verd.shape[2])
    return v, c


def _score(reduced: np.ndarray, facts: np.ndarray, rubric: Rubric) -> tuple[np.ndarray, np.ndarray]:
    C, L = reduced.shape[:2]
    fact_arr = np.broadcast_to(facts, (C, L, len(CAP_FACTS))).reshape(-1, len(CAP_FACTS))
    _raw, score, code = score_arrays(reduced.reshape(-1, len(DIMENSIONS)), fact_arr, rubric)
    return score.reshape(C, L), code.reshape(C, L)


def panel_detail(ms: MemberSet, members: Sequence[str], reducer: str = "mean", samples: int = 1,
                 rubric: Rubric | None = None) -> pd.DataFrame:
    """One panel over every segment of ``ms``: ``segment_id``, ``turn_id``, the reduced dimensions, ``verdict``
    (majority; ``None`` unjudged), ``score``, ``band`` (``None`` unscorable), ``max_range`` (points),
    ``verdicts_differ``, ``n_judged_votes``, ``latency_s`` (the slowest vote). This is what an ensemble run
    of the same members records, computed from their stored verdicts."""
    rubric = Rubric.default() if rubric is None else rubric
    idx = [ms.index(m) for m in members]
    if len(set(idx)) != len(idx):
        raise ValueError(f"panel members repeat: {list(members)}")
    short = [m for m, i in zip(members, idx) if ms.n_samples[i] < samples]
    if samples < 1 or short:
        raise ValueError(f"samples={samples!r}: member(s) {short} hold fewer samples "
                         f"({[int(ms.n_samples[ms.index(m)]) for m in short]})" if short else
                         f"samples must be >= 1, got {samples!r}")
    n_votes = len(idx) * samples
    if not _applicable(reducer, n_votes):
        raise ValueError(f"reducer {reducer!r} is not defined for {n_votes} vote(s) (median needs 3, trimmed "
                         f"{math.ceil(1 / TRIM_FRACTION)}, one vote is the 'single' panel)")
    sub = np.array([idx])
    votes, verd = _votes(ms, sub, samples)
    srt = np.sort(votes, axis=1)
    reduced = _reduce(votes, srt, 1, reducer)
    verdict = _majority_verdict(verd, 1)
    score, code = _score(reduced, ms.facts, rubric)
    max_range, vdiff = _disagreement(votes, srt, verd, 1)
    lat = ms.latency_s[:, :samples][sub].reshape(1, n_votes, -1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        latency = np.nanmax(lat, axis=1)
    bands = np.array([*BANDS, None], dtype=object)
    return pd.DataFrame({
        "segment_id": ms.segment_ids, "turn_id": ms.turn_ids,
        **{d: reduced[0, :, j] for j, d in enumerate(DIMENSIONS)},
        "verdict": pd.Series(bands[np.where(verdict[0] < 0, _N_BANDS, verdict[0])], dtype=object),
        "score": score[0], "band": pd.Series(bands[np.minimum(code[0], _N_BANDS)], dtype=object),
        "max_range": max_range[0], "verdicts_differ": vdiff[0],
        "n_judged_votes": (verd[0] >= 0).sum(axis=0), "latency_s": latency[0]})


def _subsets(M: int, max_size: int) -> Iterator[np.ndarray]:
    for k in range(1, min(max_size, M) + 1):
        yield np.array(list(itertools.combinations(range(M), k)), dtype=np.int64)


def _panel_batches(ms: MemberSet, max_size: int, reducers: Sequence[str], samples: Sequence[int] | None,
                   n_labelled: int) -> Iterator[tuple[np.ndarray, int, list[str]]]:
    """(subsets chunk (C, k), samples, reducers applicable) for every panel to evaluate."""
    for subsets in _subsets(len(ms.members), max_size):
        k = subsets.shape[1]
        held = ms.n_samples[subsets].min(axis=1)
        for s in range(1, int(held.max()) + 1):
            if samples is not None and s not in samples:
                continue
            chosen = subsets[held >= s]
            here = [SINGLE] if k * s == 1 else [r for r in reducers if _applicable(r, k * s)]
            if not len(chosen) or not here:
                continue
            per_panel = k * s * n_labelled * (len(DIMENSIONS) + 2)
            step = max(1, _BLOCK_FLOATS // max(per_panel, 1))
            for i in range(0, len(chosen), step):
                yield chosen[i:i + step], s, here


def evaluate_panels(ms: MemberSet, labels: pd.DataFrame, *, rubric: Rubric | None = None,
                    max_size: int = MAX_PANEL_SIZE, reducers: Sequence[str] = PANEL_REDUCERS,
                    samples: Sequence[int] | None = None, escalation_grid: Sequence[float] = ESCALATION_GRID,
                    target: float = TARGET_KAPPA, confidence: float = CONFIDENCE
                    ) -> tuple[pd.DataFrame, pd.DataFrame, MemberDiagnostics, list[str]]:
    """Every panel's figures (``panels``), its escalation table, the member diagnostics and notes.

    The work behind :func:`panel_study`, vectorised: the panels of one size and sample count are reduced,
    scored and compared with the labels as (panels x segments) arrays, in chunks of bounded memory.
    ``pareto`` is filled by :func:`panel_study`.
    """
    rubric = Rubric.default() if rubric is None else rubric
    unknown = [r for r in reducers if r not in PANEL_REDUCERS]
    if unknown:
        raise ValueError(f"unknown reducer(s) {unknown}; expected some of {list(PANEL_REDUCERS)}")
    if isinstance(max_size, bool) or not isinstance(max_size, int) or max_size < 1:
        raise ValueError(f"max_size must be an integer >= 1, got {max_size!r}")
    z = z_value(confidence)
    lab = panel_labels(labels)
    pos = pd.Index(ms.segment_ids).get_indexer(lab.index)
    notes: list[str] = []
    n_unjudged_labels = int((pos < 0).sum())
    if n_unjudged_labels:
        notes.append(f"{n_unjudged_labels} labelled segment(s) are not in the members table: left out")
    lab = lab[pos >= 0]
    seg_idx = pos[pos >= 0]
    if len(seg_idx) == 0:
        raise ValueError("no labelled segment is in the members table")
    n_unlabelled = ms.n_segments - len(seg_idx)
    if n_unlabelled:
        notes.append(f"{n_unlabelled} judged segment(s) have no label: in cost and latency, not in agreement")
    L = len(seg_idx)
    y = lab["code"].to_numpy(dtype=np.int64)
    lo = lab[[f"lo_{d}" for d in DIMENSIONS]].to_numpy(dtype=np.float64)
    hi = lab[[f"hi_{d}" for d in DIMENSIONS]].to_numpy(dtype=np.float64)
    mids = lab[[f"mid_{d}" for d in DIMENSIONS]].to_numpy(dtype=np.float64)
    facts = ms.facts[seg_idx]
    _lr, label_score, _lc = score_arrays(mids, facts, rubric)
    errors = _member_errors(ms, lab, seg_idx, label_score, rubric)
    diagnostics = _diagnostics(ms, errors)
    corr = diagnostics.matrix("score").to_numpy()
    cost_turn = ms.cost_per_turn
    bad_y, good_y = y >= 1, y == 0
    panel_frames, esc_frames = [], []
    members_arr = np.array(ms.members, dtype=object)
    for chunk, s, here in _panel_batches(ms, max_size, reducers, samples, L):
        C, k = chunk.shape
        votes, verd = _votes(ms, chunk, s, seg_idx)
        srt = np.sort(votes, axis=1)
        verdict = _majority_verdict(verd, 1)
        max_range, vdiff = _disagreement(votes, srt, verd, 1)
        lat = ms.latency_s[:, :s][chunk].reshape(C, k * s, -1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            slowest = np.nanmax(lat, axis=1)
            latency = np.nanmean(slowest, axis=1)
            latency_p95 = np.nanpercentile(slowest, 95, axis=1)
        v_ok = verdict >= 0
        vk, vlo, vhi, _vse = _kappa_ci(_tables(verdict, np.broadcast_to(y, verdict.shape), v_ok), z)
        rho_bar = mean_offdiagonal(corr, chunk)
        n_eff = n_effective(np.full(C, k), rho_bar)
        cost = TURNS_PER_COST * s * cost_turn[chunk].sum(axis=1)
        names = [tuple(members_arr[row]) for row in chunk]
        simulated = ms.simulated[chunk].any(axis=1)
        for reducer in here:
            reduced = _reduce(votes, srt, 1, reducer)
            score, code = _score(reduced, facts, rubric)
            ok = code < UNSCORABLE_CODE
            yy = np.broadcast_to(y, code.shape)
            tables = _tables(code, yy, ok)
            bk, blo, bhi, bse = _kappa_ci(tables, z)
            n_ok = ok.sum(axis=1)
            with np.errstate(invalid="ignore", divide="ignore"):
                acc = np.trace(tables, axis1=1, axis2=2) / n_ok
                dist = np.maximum(np.maximum(lo - reduced, reduced - hi), 0.0)
                cell = np.isfinite(dist)
                dist0 = np.where(cell, dist, 0.0)
                mae_dim = dist0.sum(axis=1) / cell.sum(axis=1)
                mae = dist0.sum(axis=(1, 2)) / cell.sum(axis=(1, 2))
                serr = np.abs(score - label_score)
                sok = np.isfinite(serr)
                score_mae = np.where(sok, serr, 0.0).sum(axis=1) / sok.sum(axis=1)
                nb, ng = (ok & bad_y).sum(axis=1), (ok & good_y).sum(axis=1)
                fpr = (ok & bad_y & (code == 0)).sum(axis=1) / nb
                ffr = (ok & good_y & (code >= 1)).sum(axis=1) / ng
            ids = [panel_id(nm, reducer, s) for nm in names]
            frame = pd.DataFrame({
                "panel_id": ids, "members": names, "reducer": reducer, "k": k, "samples": s, "n_votes": k * s,
                "n": n_ok, "n_unscored": L - n_ok, "band_kappa": bk, "band_kappa_lo": blo, "band_kappa_hi": bhi,
                "band_kappa_se": bse, "band_accuracy": acc, "verdict_kappa": vk, "verdict_kappa_lo": vlo,
                "verdict_kappa_hi": vhi, "mae": mae,
                **{f"mae_{d}": mae_dim[:, j] for j, d in enumerate(DIMENSIONS)},
                "score_mae": score_mae, "false_pass_rate": fpr, "n_labelled_not_good": nb,
                "false_fail_rate": ffr, "n_labelled_good": ng, "cost_per_1k_turns": cost,
                "latency_s": latency, "latency_p95_s": latency_p95, "rho_bar": rho_bar, "n_eff": n_eff,
                "simulated": simulated, "pareto": False, "reaches_target": blo >= target})
            panel_frames.append(frame)
            if k * s < 2:
                continue
            for t in escalation_grid:
                esc = ok & ((max_range >= t) | vdiff)
                keep = ok & ~esc
                ek, elo, ehi, _ese = _kappa_ci(_tables(code, yy, keep), z)
                n_esc = esc.sum(axis=1)
                with np.errstate(invalid="ignore", divide="ignore"):
                    share = n_esc / n_ok
                rule = "verdicts differ" if not math.isfinite(t) else f"a dimension's range >= {t:g} points or verdicts differ"
                esc_frames.append(pd.DataFrame({
                    "panel_id": ids, "t": float(t), "rule": rule, "share_escalated": share, "n_escalated": n_esc,
                    "n_left": keep.sum(axis=1), "band_kappa": ek, "band_kappa_lo": elo, "band_kappa_hi": ehi,
                    "reaches_target": elo >= target}))
    panels = pd.concat(panel_frames, ignore_index=True).loc[:, list(PANEL_COLUMNS)]
    escalation = (pd.concat(esc_frames, ignore_index=True) if esc_frames else
                  pd.DataFrame(columns=list(ESCALATION_COLUMNS)))
    return panels, escalation.loc[:, list(ESCALATION_COLUMNS)], diagnostics, notes


def kappa_statistic(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """A vectorised statistic for :func:`axon_eval.stats.intervals.cluster_bootstrap`: ``values`` are the
    pair codes ``a * K + b`` of (panel band, labelled verdict), ``weights`` (B, n) the replicates' unit
    weights; returns the (B,) kappas of the weighted confusion tables (:func:`kappa_tables`)."""
    codes = np.asarray(values, dtype=np.int64)
    onehot = np.zeros((len(codes), _N_BANDS ** 2))
    onehot[np.arange(len(codes)), codes] = 1.0
    tables = (np.asarray(weights, dtype=np.float64) @ onehot).reshape(-1, _N_BANDS, _N_BANDS)
    return kappa_tables(tables)[0]


def _confirm(ms: MemberSet, lab: pd.DataFrame, result: PanelResult, rubric: Rubric, n_boot: int, seed: int,
             confidence: float, target: float) -> dict[str, Any]:
    """The band kappa of one panel with a cluster-bootstrap interval over turns (segments of a turn move
    together), from :func:`axon_eval.stats.intervals.cluster_bootstrap`."""
    detail = panel_detail(ms, result.members, result.reducer, result.samples, rubric).set_index("segment_id")
    joined = detail.join(lab["code"].rename("label"), how="inner")
    joined = joined[joined["band"].notna()]
    pairs = band_codes(joined["band"].astype(str).tolist()) * _N_BANDS + joined["label"].to_numpy(dtype=np.int64)
    iv = cluster_bootstrap(pairs.astype(np.float64), joined["turn_id"].to_numpy(dtype=object), kappa_statistic,
                           n_boot=n_boot, seed=seed, confidence=confidence)
    return {**{k: (_jf(v) if isinstance(v, float) else v) for k, v in iv.as_dict().items()},
            "statistic": "band kappa", "reaches_target": bool(math.isfinite(iv.lo) and iv.lo >= target)}


def panel_study(members: pd.DataFrame | MemberSet, labels: pd.DataFrame, *, rubric: Rubric | None = None,
                max_size: int = MAX_PANEL_SIZE, reducers: Sequence[str] = PANEL_REDUCERS,
                samples: Sequence[int] | None = None, target: float = TARGET_KAPPA, budget: float | None = None,
                metric: str = DEFAULT_METRIC, escalation_grid: Sequence[float] = ESCALATION_GRID,
                declared_cost: Mapping[str, float] | None = None, confidence: float = CONFIDENCE,
                confirm_n_boot: int | None = N_BOOT, seed: int = SEED) -> PanelStudy:
    """Study 10 from a members table (or a prepared :class:`MemberSet`) and labels (:func:`panel_labels`).

    Evaluates every panel of up to ``max_size`` members x every applicable reducer x every sample count
    the members hold (or those in ``samples``), marks the Pareto frontier (cost per 1,000 turns against
    ``metric``), recommends (``target``, or ``budget``), tabulates escalation over ``escalation_grid`` and
    the member diagnostics. ``confirm_n_boot``: replicates of the seeded cluster bootstrap (over turns) of
    the recommended panel's and the runner-up's band kappa (``None`` skips it). ``declared_cost``: USD per call of members whose
    rows carry neither ``cost_usd`` nor priced tokens.
    """
    rubric = Rubric.default() if rubric is None else rubric
    ms = members if isinstance(members, MemberSet) else prepare_members(members, declared_cost=declared_cost)
    lab = panel_labels(labels)
    panels, escalation, diagnostics, notes = evaluate_panels(
        ms, lab, rubric=rubric, max_size=max_size, reducers=reducers, samples=samples,
        escalation_grid=escalation_grid, target=target, confidence=confidence)
    panels["pareto"] = pareto_optimal(panels["cost_per_1k_turns"], panels[metric])
    rec = recommend(panels, target=target, budget=budget, metric=metric)
    if confirm_n_boot is not None:
        conf = {r.panel_id: _confirm(ms, lab, r, rubric, confirm_n_boot, seed, confidence, target)
                for r in (rec.chosen, rec.runner_up) if r is not None}
        rec = Recommendation(**{**{f.name: getattr(rec, f.name) for f in fields(rec)}, "confirmation": conf})
    trust = trust_or_escalate(escalation, panels, target=target)
    singles = panels[panels["k"] == 1].drop_duplicates("members")
    own = singles.assign(member=[m[0] for m in singles["members"]]).set_index("member")
    member_table = ms.summary().merge(
        own[["band_kappa", "band_kappa_lo", "band_kappa_hi", "verdict_kappa", "mae", "score_mae",
             "false_pass_rate", "false_fail_rate"]].reset_index()
        .drop_duplicates("member"), on="member", how="left")
    member_table = member_table.merge(diagnostics.errors, on="member", how="left")
    all_notes = [*ms.notes, *notes]
    skipped = [f"median needs 3 votes and trimmed {math.ceil(1 / TRIM_FRACTION)} (cutting "
               f"floor({TRIM_FRACTION:g} * n) from each end); fewer votes are not evaluated with them"]
    all_notes.extend(skipped)
    if ms.simulated.any():
        all_notes.append(SIMULATED_NOTE)
    lab_in = lab[lab.index.isin(ms.segment_ids)]
    parameters = {"rubric_id": rubric.id, "max_size": max_size, "reducers": list(reducers),
                  "samples": None if samples is None else list(samples), "target": target, "budget": budget,
                  "metric": metric, "escalation_grid": list(escalation_grid), "confidence": confidence,
                  "kappa_interval": "kappa +- z * se, se of Fleiss, Cohen & Everitt (1969), clipped to [-1, 1]",
                  "trim_fraction": TRIM_FRACTION, "turns_per_cost": TURNS_PER_COST,
                  "confirm_n_boot": confirm_n_boot, "seed": seed,
                  "declared_cost": dict(declared_cost or {})}
    return PanelStudy(panels=panels, escalation=escalation, trust=trust, members=member_table,
                      diagnostics=diagnostics, recommendation=rec, parameters=parameters, notes=tuple(all_notes),
                      n_segments=ms.n_segments, n_labelled=len(lab_in), n_turns=ms.n_turns,
                      labels_note=lab.attrs.get("note"))
