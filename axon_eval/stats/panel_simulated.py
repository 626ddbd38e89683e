"""Judge panel design offline: SIMULATED members and the benchmark's synthetic inputs.

Offline members
    :func:`simulated_members` builds SIMULATED members with stated characters (lenient, harsh, noisy and
    two that share one blind spot), ids ``simulated:<name>``, flagged ``simulated``.

Each character draws, per segment, sample and dimension, ``clamp(round_half_up(centre + bias + sd * e +
blind * BLIND_SPOT_SHIFT), 0, 10)`` with ``e ~ N(0, 1)`` (the formula in full in :func:`simulated_members`);
seeded, so a study is reproducible. :func:`panels_benchmark_inputs` builds a synthetic members table and
labels for timing :func:`axon_eval.stats.panels.panel_study`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..rubric import BANDS, CAP_FACTS, DIMENSIONS
from ..scoring import score_arrays
from .intervals import SEED
from .panel_members import (BLIND_SPOT_SHARE, BLIND_SPOT_SHIFT, panel_labels, prepare_members, SIMULATED_NOTE,
    SIMULATED_PREFIX, _N_BANDS)


# =============================================================================================
# SIMULATED members
# =============================================================================================
@dataclass(frozen=True)
class SimulatedCharacter:
    """A simulated member: ``bias`` points added to every dimension, independent Gaussian noise of
    ``sd`` points per dimension and sample, and, with ``blind_spot``, the shared blind spot (module
    constants :data:`BLIND_SPOT_SHARE`, :data:`BLIND_SPOT_SHIFT`)."""

    name: str
    bias: float
    sd: float
    blind_spot: bool
    description: str


#: The offline members of study 10 (each labelled SIMULATED).
SIMULATED_CHARACTERS: tuple[SimulatedCharacter, ...] = (
    SimulatedCharacter("lenient", 1.5, 0.7, False, "reads every turn 1.5 points kinder"),
    SimulatedCharacter("harsh", -1.5, 0.7, False, "reads every turn 1.5 points harsher"),
    SimulatedCharacter("noisy", 0.0, 2.0, False, "unbiased, with 2 points of noise per subscore"),
    SimulatedCharacter("blind_a", 0.0, 0.7, True, "misses the same defects as blind_b"),
    SimulatedCharacter("blind_b", 0.0, 0.7, True, "misses the same defects as blind_a"),
)


def simulated_members(base: pd.DataFrame, labels: pd.DataFrame, seed: int = SEED, *,
                      characters: Sequence[SimulatedCharacter] = SIMULATED_CHARACTERS,
                      n_samples: int = 1, center: str = "labels") -> pd.DataFrame:
    """A members table of SIMULATED members, one per character, over the segments of ``base``.

    ``base``: a members table of one member (its sample 0 is used; it gives the segments, turns, cap facts
    and latency). ``center``: ``"labels"`` draws around the labels' midpoints (the truth; segments without
    a label are skipped and counted in ``attrs["skipped"]``), ``"base"`` around the base member's subscores
    and verdict. For character ``c``, segment ``i``, sample ``j``, dimension ``d``::

        value = clamp(round_half_up(centre_id + bias_c + sd_c * e_cijd + blind_i * BLIND_SPOT_SHIFT * [d in
                      result_relevance, answer_faithfulness]), 0, 10)         e ~ N(0, 1)

    where ``blind_i`` is 1 for the blind-spot characters on a seeded :data:`BLIND_SPOT_SHARE` of the
    segments labelled partial or poor (the same segments for both). A null centre stays null. The verdict is
    the centre's verdict moved by as many bands as the noise moved the rubric's raw band (as
    :class:`~axon_eval.judges.wrappers.SimulatedJudge`). Draws come from ``numpy.random.default_rng([seed,
    character position])`` over segments in sorted id order, so row order does not matter. Rows: ``member``
    ``simulated:<name>``, ``simulated`` True, ``cost_usd``/tokens NaN (declare a cost to use them on the
    frontier), ``latency_s`` copied from the base. ``attrs``: ``seed``, ``characters``, ``label`` SIMULATED.
    """
    if center not in ("labels", "base"):
        raise ValueError(f"center must be 'labels' or 'base', got {center!r}")
    if isinstance(n_samples, bool) or not isinstance(n_samples, int) or n_samples < 1:
        raise ValueError(f"n_samples must be an integer >= 1, got {n_samples!r}")
    names = [c.name for c in characters]
    if len(set(names)) != len(names):
        raise ValueError(f"character names repeat: {names}")
    ms = prepare_members(base)
    if len(ms.members) != 1:
        raise ValueError(f"base must hold one member, got {list(ms.members)}")
    lab = panel_labels(labels)
    order = np.argsort(ms.segment_ids.astype(str), kind="stable")
    seg = ms.segment_ids[order]
    skipped = 0
    if center == "labels":
        have = pd.Index(seg).isin(lab.index)
        skipped = int((~have).sum())
        order, seg = order[have], seg[have]
        centre = lab.loc[seg, [f"mid_{d}" for d in DIMENSIONS]].to_numpy(dtype=np.float64)
        centre_verdict = lab.loc[seg, "code"].to_numpy(dtype=np.int64)
    else:
        centre = ms.values[0, 0][order]
        centre_verdict = ms.verdicts[0, 0][order].astype(np.int64)
    judged = centre_verdict >= 0
    S = len(seg)
    labelled_bad = pd.Index(seg).map(lambda s: s in lab.index and lab.at[s, "code"] >= 1).to_numpy(dtype=bool)
    blind_rng = np.random.default_rng([seed, 1_000_003])
    blind = labelled_bad & (blind_rng.random(S) < BLIND_SPOT_SHARE)
    shift_dims = np.array([d in ("result_relevance", "answer_faithfulness") for d in DIMENSIONS], dtype=float)
    facts = ms.facts[order]
    no_facts = np.zeros((S, len(CAP_FACTS)), dtype=bool)
    _r, _s, base_band = score_arrays(centre, no_facts)
    frames = []
    for ci, ch in enumerate(characters):
        rng = np.random.default_rng([seed, ci])
        for j in range(n_samples):
            e = rng.standard_normal((S, len(DIMENSIONS)))
            raw = centre + ch.bias + ch.sd * e + (blind[:, None] * BLIND_SPOT_SHIFT * shift_dims if ch.blind_spot else 0.0)
            vals = np.clip(np.floor(raw + 0.5), 0, 10)
            vals = np.where(np.isnan(centre), np.nan, vals)
            _r2, _s2, new_band = score_arrays(np.where(judged[:, None], vals, 5.0), no_facts)
            code = np.clip(centre_verdict + (new_band - base_band), 0, _N_BANDS - 1)
            vals = np.where(judged[:, None], vals, np.nan)
            frames.append(pd.DataFrame({
                "member": f"{SIMULATED_PREFIX}{ch.name}", "segment_id": seg, "turn_id": ms.turn_ids[order],
                "sample": j, **{d: vals[:, k] for k, d in enumerate(DIMENSIONS)},
                "verdict": np.where(judged, np.array(BANDS, dtype=object)[np.where(judged, code, 0)], None),
                **{f: facts[:, k] for k, f in enumerate(CAP_FACTS)},
                "input_tokens": np.nan, "output_tokens": np.nan, "cost_usd": np.nan,
                "latency_s": ms.latency_s[0, 0][order], "simulated": True}))
    out = pd.concat(frames, ignore_index=True)
    out.attrs.update({"label": "SIMULATED", "seed": seed, "center": center, "skipped": skipped,
                      "characters": [c.__dict__ for c in characters], "blind_spot_share": BLIND_SPOT_SHARE,
                      "blind_spot_shift": BLIND_SPOT_SHIFT, "note": SIMULATED_NOTE})
    return out


# =============================================================================================
# Bench inputs
# =============================================================================================
def panels_benchmark_inputs(n_members: int = 8, n_segments: int = 10_000, seed: int = 0
                            ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A synthetic members table and constructed-format labels for timing :func:`panel_study`.

    Truth per segment: a band drawn good/partial/poor (40/35/25%) and subscores around it; labels are the
    range ``[truth - 1, truth + 1]`` (clamped) with the truth's scored band as verdict; 5% of segments have
    a null faithfulness, 3% the ``all_sql_failed`` fact. Member ``m`` (``bench-m<m>``) = truth + a bias in
    [-1, 1] + a shared error (sd 0.8, common to all members) + its own error (sd 0.6 .. 1.6), rounded and
    clamped; its verdict is its subscores' raw band; tokens ~2,000 in / 300 out priced as
    ``claude-haiku-4-5`` or ``gpt-4.1-mini``; latency lognormal around 2 s. One sample each; seeded.
    """
    rng = np.random.default_rng(seed)
    S = int(n_segments)
    seg = np.array([f"b-{i:06d}" for i in range(S)], dtype=object)
    band = rng.choice(3, size=S, p=[0.40, 0.35, 0.25])
    centre = np.array([8.8, 6.5, 3.0])[band]
    truth = np.clip(np.rint(centre[:, None] + rng.normal(0, 1.0, (S, len(DIMENSIONS)))), 0, 10)
    null_f = rng.random(S) < 0.05
    truth[null_f, 3] = np.nan
    facts = np.zeros((S, len(CAP_FACTS)), dtype=bool)
    facts[:, 0] = rng.random(S) < 0.03
    _r, _s, code = score_arrays(truth, facts)
    labels = pd.DataFrame({"segment_id": seg, "turn_id": seg, "verdict": np.array(BANDS, dtype=object)[code]})
    for j, d in enumerate(DIMENSIONS):
        labels[f"{d}_min"] = pd.array(np.where(np.isnan(truth[:, j]), np.nan, np.clip(truth[:, j] - 1, 0, 10)),
                                      dtype="Float64").astype("Int64")
        labels[f"{d}_max"] = pd.array(np.where(np.isnan(truth[:, j]), np.nan, np.clip(truth[:, j] + 1, 0, 10)),
                                      dtype="Float64").astype("Int64")
    shared = rng.normal(0, 0.8, (S, len(DIMENSIONS)))
    frames = []
    models = ("claude-haiku-4-5", "gpt-4.1-mini")
    for m in range(int(n_members)):
        bias = rng.uniform(-1, 1)
        own = rng.normal(0, 0.6 + m / max(n_members - 1, 1), (S, len(DIMENSIONS)))
        vals = np.clip(np.rint(truth + bias + shared + own), 0, 10)
        _r, _s, vcode = score_arrays(vals, np.zeros_like(facts))
        frames.append(pd.DataFrame({
            "member": f"bench-m{m}", "segment_id": seg, "turn_id": seg, "sample": 0,
            **{d: vals[:, j] for j, d in enumerate(DIMENSIONS)},
            "verdict": np.array(BANDS, dtype=object)[vcode],
            **{f: facts[:, j] for j, f in enumerate(CAP_FACTS)},
            "input_tokens": rng.integers(1500, 2500, S), "output_tokens": rng.integers(200, 400, S),
            "model": models[m % 2], "latency_s": rng.lognormal(np.log(2.0), 0.3, S)}))
    return pd.concat(frames, ignore_index=True), labels
