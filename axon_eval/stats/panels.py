"""Judge panel design (study 10): which judges, reducer and samples are worth paying for.

Pure functions of a *members table* and labels; nothing judges again, nothing reads a run folder.
Every panel is computed from the members' stored verdicts.

Members table (one row per ``(member, segment_id, sample)`` judgement of the same evidence)
    ``member`` (the member's id; a simulated member's id starts with ``simulated:``), ``segment_id``,
    optional ``turn_id`` (default: read from ``segment_id``), ``sample`` (or ``sample_index``;
    default 0; a member holds samples ``0 .. n-1``), the four dimensions ``intent_understood``,
    ``sql_quality``, ``result_relevance``, ``answer_faithfulness`` (0-10, NaN = null; only
    faithfulness may be null on a judged row), ``verdict`` (good/partial/poor; missing with every
    dimension NaN = the member failed on that segment), the cap facts ``all_sql_failed``,
    ``ended_on_failure``, ``no_tools`` (bool, the same for every member of a segment), and optionally
    ``input_tokens``, ``output_tokens``, ``model``, ``cost_usd``, ``latency_s`` and ``simulated``.
    :func:`prepare_members` validates it and builds the arrays every panel reads.

Labels
    The constructed labels of :func:`axon_eval.labels.load_labels` (a labelled range
    ``[<d>_min, <d>_max]`` per dimension and a verdict), or a tidy human-labels frame
    (``segment_id, rater``, the four dimensions, ``verdict``, as ``labelling.import_labels`` gives):
    raters are averaged per dimension (a point range) and their verdicts combined by the ordinal
    median, a tie resolved toward the worse band (as :func:`axon_eval.stats.agreement.consensus`).
    :func:`panel_labels` normalises both to one row per segment.

A panel
    A subset of the members (size 1 .. ``max_size``), a reducer, and ``s`` samples per member: its
    ``k * s`` *votes* are the samples ``0 .. s-1`` of every member, pooled. Per dimension the judged
    votes are reduced (a null faithfulness vote is left out of that dimension, as in
    :class:`~axon_eval.judges.wrappers.EnsembleJudge`; all null -> null) and rounded to 6 decimals as the
    ensemble's ``_reduce`` does; the panel's verdict is the votes' majority verdict, ties -> the worse
    band. The reduced subscores go through the rubric's scorer (:func:`axon_eval.scoring.score_arrays`)
    with the segment's cap facts, exactly as an ``ensemble(...)`` run's record is scored. Reducers:

    ``mean``              the arithmetic mean (the ensemble's ``mean``)
    ``median``            the middle value, the mean of the two middle ones for an even count (the
                          ensemble's ``median``); refused for 2 votes (their median is their mean)
    ``majority``          the most frequent value, ties -> the lowest tied value (the ensemble's ``majority``)
    ``trimmed``           mean after cutting ``floor(TRIM_FRACTION * n)`` votes from each end (the
                          convention of ``scipy.stats.trim_mean``); only with at least
                          ``1 / TRIM_FRACTION`` votes, where it differs from the mean
    ``min_faithfulness``  the mean on the first three dimensions, the *lowest* faithfulness vote: the
                          conservative option (one member that finds an unsupported claim is believed)

    One vote has no reducer: that panel is named ``single``.

Agreement with labels (segments labelled and scored by the panel; ``n``)
    ``band_kappa``: Cohen's kappa of the panel's scored band against the labelled verdict, with the
    large-sample standard error of Fleiss, Cohen and Everitt (1969) (what
    ``statsmodels.stats.inter_rater.cohens_kappa`` reports as ``std_kappa``) and the interval
    ``kappa +- z * se`` clipped to [-1, 1]; ``verdict_kappa`` the same for the panel's categorical
    verdict; ``band_accuracy`` the share of equal bands. ``mae``: the mean distance (points) of a reduced
    subscore to its labelled range, 0 inside it (``|v - label|`` for point labels), over the cells where
    both are numbers (``mae_<dimension>`` per dimension); ``score_mae`` the mean ``|score - label score|``
    (the label score is the rubric's score of the labels' midpoints with the segment's caps).
    ``false_pass_rate``: share of the segments labelled partial or poor that the panel scores good;
    ``false_fail_rate``: share of those labelled good that it scores partial or poor.

Cost and latency
    A member's cost per call is the mean over its records with a known cost: the recorded ``cost_usd``,
    else ``input_tokens`` and ``output_tokens`` priced by :mod:`axon_eval.judges.prices` for its ``model``
    (``cost = (in * input + out * output) / 1e6``, USD per million tokens); without either, the cost
    declared for the member (``declared_cost``, USD per call); else unknown (NaN; the panel is left off
    the frontier). Calls per turn = segments / turns. ``cost_per_1k_turns = 1000 * s * sum_m
    cost_per_call_m * segments / turns``. Latency: per segment the slowest vote (members run
    concurrently, as an ensemble's ``latency_ms`` is the max of its members'), then the mean
    (``latency_s``) and the 95th percentile (``latency_p95_s``) over segments.

Member diagnostics
    The error of a member (its sample 0) is ``judge - label`` per dimension (the label's midpoint) and on
    the score. ``correlations[target]`` is the members' Pearson correlation matrix of errors
    (pairwise-complete segments). The effective number of independent members of a panel of ``k``::

        n_eff = k / (1 + (k - 1) * rho_bar)        rho_bar = mean off-diagonal score-error correlation

    the design effect of an equicorrelated mean (Kish 1965, section 8.2): the mean of ``k`` members'
    errors has the variance of the mean of ``n_eff`` independent ones, so three judges that make the same
    mistake (``rho_bar = 1``) are one judge.

The frontier and the recommendation
    A panel is Pareto-optimal when no other panel costs no more and agrees at least as well (band kappa
    lower bound), one of the two strictly. The recommendation is the cheapest panel whose band kappa lower
    bound reaches ``target`` (:data:`TARGET_KAPPA`), or with ``budget`` the best one costing at most the
    budget; with the runner-up and why it lost.

Escalation ("trust or escalate")
    A segment goes to a person when the panel's votes disagree by at least ``t`` points on some
    dimension (range over the judged votes, as the ensemble's ``disagree_at``) or their verdicts differ.
    For ``t`` over :data:`ESCALATION_GRID`: the share escalated and the agreement on what is left (the
    person's grade is not counted), and per panel the smallest share that reaches the target.

Offline members
    :func:`simulated_members` builds SIMULATED members with stated characters (lenient, harsh, noisy and
    two that share one blind spot), ids ``simulated:<name>``, flagged ``simulated``.
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
import pandas as pd

from ..judges.prices import PriceTable, price_table
from ..labels import LABELS_NOTE
from ..rubric import BANDS, CAP_FACTS, DIMENSIONS, REQUIRED_DIMENSIONS, Rubric
from ..scoring import UNSCORABLE_CODE, score_arrays
from .agreement import GATE_THRESHOLD, band_codes
from .intervals import CONFIDENCE, N_BOOT, SEED, cluster_bootstrap, turn_of, z_value

# =============================================================================================
# The study's numbers (one place)
# =============================================================================================
#: Target agreement: the band kappa's lower confidence bound must reach it (the seed's publication gate).
TARGET_KAPPA = GATE_THRESHOLD
#: Largest panel evaluated by default (every subset of the members up to this size).
MAX_PANEL_SIZE = 4
#: Reducers a panel may use (module docstring).
PANEL_REDUCERS: tuple[str, ...] = ("mean", "median", "majority", "trimmed", "min_faithfulness")
#: The name of the one-vote panel (no reducer).
SINGLE = "single"
#: Share of the votes cut from each end by the ``trimmed`` reducer (``floor(fraction * n)`` each side,
#: ``scipy.stats.trim_mean``'s convention): 0.25 cuts one of four votes at each end.
TRIM_FRACTION = 0.25
#: Escalation thresholds ``t`` (subscore points; a segment is escalated when some dimension's range over
#: the votes is at least ``t`` or the verdicts differ). ``inf``: only differing verdicts escalate.
ESCALATION_GRID: tuple[float, ...] = (1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, math.inf)
#: Cost is reported per this many turns.
TURNS_PER_COST = 1000
#: Fewer common segments than this give no error correlation (NaN).
MIN_CORRELATION_PAIRS = 3
#: Prefix of a simulated member's id.
SIMULATED_PREFIX = "simulated:"
#: Shown beside any result with a simulated member.
SIMULATED_NOTE = ("SIMULATED members (ids 'simulated:...') are offline stand-ins with stated characters, not "
                  "real judges: their figures show how the panel statistics behave, not what a model would do")
#: Default budget-free metric the frontier and recommendation rank by.
DEFAULT_METRIC = "band_kappa_lo"
#: Share of the labelled-not-good segments in the shared blind spot of the ``blind_*`` simulated members.
BLIND_SPOT_SHARE = 0.3
#: Points the blind-spot members add to result_relevance and answer_faithfulness in their blind spot
#: (they both read the same defective answers as sound).
BLIND_SPOT_SHIFT = 3.0

_BAND_CODE = {b: i for i, b in enumerate(BANDS)}
_N_BANDS = len(BANDS)
#: Above this many floats per block the panels of one size are evaluated in chunks.
_BLOCK_FLOATS = 2_000_000


# =============================================================================================
# Members
# =============================================================================================
@dataclass(frozen=True, eq=False)
class MemberSet:
    """The members' judgements as arrays (``M`` members, ``J`` samples, ``S`` segments).

    ``values`` (M, J, S, 4) subscores (NaN = null or not judged); ``verdicts`` (M, J, S) band codes
    0 good, 1 partial, 2 poor, -1 not judged; ``latency_s`` (M, J, S); ``facts`` (S, 3) in ``CAP_FACTS``
    order; ``n_samples`` (M,) samples each member holds; ``cost_per_call`` (M,) USD (NaN unknown) and
    ``cost_source``; ``simulated`` (M,) bool; ``notes``: what was found and how it was treated.
    """

    members: tuple[str, ...]
    segment_ids: np.ndarray
    turn_ids: np.ndarray
    values: np.ndarray
    verdicts: np.ndarray
    latency_s: np.ndarray
    facts: np.ndarray
    n_samples: np.ndarray
    cost_per_call: np.ndarray
    cost_source: tuple[str, ...]
    simulated: np.ndarray
    notes: tuple[str, ...] = ()

    @property
    def n_segments(self) -> int:
        return len(self.segment_ids)

    @property
    def n_turns(self) -> int:
        return len(pd.unique(self.turn_ids))

    @property
    def calls_per_turn(self) -> float:
        """Judge calls per turn and sample: segments / turns."""
        return self.n_segments / self.n_turns if self.n_turns else math.nan

    @property
    def cost_per_turn(self) -> np.ndarray:
        """(M,) USD per turn and sample: ``cost_per_call * segments / turns``."""
        return self.cost_per_call * self.calls_per_turn

    def index(self, member: str) -> int:
        try:
            return self.members.index(member)
        except ValueError:
            raise ValueError(f"unknown member {member!r}; the members are {list(self.members)}") from None

    def summary(self) -> pd.DataFrame:
        """One row per member: ``member``, ``simulated``, ``n_samples``, ``n_judged`` (segments judged in
        sample 0), ``n_failed``, ``cost_per_call_usd``, ``cost_per_1k_turns`` (one sample), ``cost_source``,
        ``latency_s`` (mean over its judgements)."""
        judged0 = self.verdicts[:, 0, :] >= 0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            latency = np.nanmean(self.latency_s.reshape(len(self.members), -1), axis=1)
        return pd.DataFrame({
            "member": list(self.members), "simulated": self.simulated.astype(bool),
            "n_samples": self.n_samples.astype(int), "n_judged": judged0.sum(axis=1).astype(int),
            "n_failed": (~judged0).sum(axis=1).astype(int), "cost_per_call_usd": self.cost_per_call,
            "cost_per_1k_turns": self.cost_per_turn * TURNS_PER_COST, "cost_source": list(self.cost_source),
            "latency_s": latency})


def _row_error(frame: pd.DataFrame, mask: np.ndarray, column: str, expected: str) -> ValueError:
    i = int(np.flatnonzero(mask)[0])
    row = frame.iloc[i]
    value = row[column].item() if isinstance(row[column], np.generic) else row[column]
    label = frame.index[i].item() if isinstance(frame.index[i], np.generic) else frame.index[i]
    return ValueError(f"members table row {label!r} (member {row['member']!r}, segment "
                      f"{row['segment_id']!r}): {column} = {value!r}; expected {expected} "
                      f"({int(mask.sum())} row(s) like it)")


def _numeric(frame: pd.DataFrame, column: str) -> np.ndarray:
    col = frame[column]
    values = pd.to_numeric(col, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    bad = col.notna().to_numpy() & np.isnan(values)
    if bad.any():
        raise _row_error(frame, bad, column, "a number or null")
    return values


def _member_costs(frame: pd.DataFrame, codes: np.ndarray, members: Sequence[str],
                  declared_cost: Mapping[str, float] | None, prices: PriceTable | None
                  ) -> tuple[np.ndarray, tuple[str, ...], list[str]]:
    """Mean known cost per call of each member and where it came from (module docstring)."""
    table = prices or price_table()
    n = len(frame)
    recorded = _numeric(frame, "cost_usd") if "cost_usd" in frame.columns else np.full(n, np.nan)
    priced = np.full(n, np.nan)
    if {"input_tokens", "output_tokens", "model"} <= set(frame.columns):
        tin, tout = _numeric(frame, "input_tokens"), _numeric(frame, "output_tokens")
        models = frame["model"].astype("string").fillna("").to_numpy(dtype=object)
        for model in pd.unique(models):
            rates = table.rates(str(model)) if model else None
            if rates is None:
                continue
            sel = (models == model) & np.isfinite(tin) & np.isfinite(tout)
            priced[sel] = np.round((tin[sel] * rates["input"] + tout[sel] * rates["output"]) / 1_000_000, 8)
    declared = dict(declared_cost or {})
    unknown_declared = sorted(set(declared) - set(members))
    if unknown_declared:
        raise ValueError(f"declared_cost names member(s) {unknown_declared} not in the members table "
                         f"{list(members)}")
    costs = np.full(len(members), np.nan)
    sources: list[str] = []
    notes: list[str] = []
    for m, member in enumerate(members):
        sel = codes == m
        rec, pri = recorded[sel], priced[sel]
        known = np.where(np.isfinite(rec), rec, pri)
        has_rec, has_pri = np.isfinite(rec).any(), (np.isfinite(pri) & ~np.isfinite(rec)).any()
        if np.isfinite(known).any():
            costs[m] = float(np.nanmean(known))
            sources.append(" and ".join(filter(None, [
                "recorded cost_usd" if has_rec else "",
                f"tokens x price table (copied {table.copied_on})" if has_pri else ""])))
            if member in declared:
                notes.append(f"member {member!r} has recorded costs; its declared cost {declared[member]!r} is not used")
        elif member in declared:
            value = declared[member]
            if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
                raise ValueError(f"declared_cost[{member!r}] must be a number of USD per call >= 0, got {value!r}")
            costs[m] = float(value)
            sources.append("declared")
        else:
            sources.append("unknown")
            notes.append(f"member {member!r} has no cost_usd, no priced tokens and no declared cost: its panels' "
                         "cost is unknown and they are left off the frontier")
    return costs, tuple(sources), notes


def prepare_members(members: pd.DataFrame, *, declared_cost: Mapping[str, float] | None = None,
                    prices: PriceTable | None = None) -> MemberSet:
    """Validate a members table (module docstring) and build its :class:`MemberSet`.

    Raises ``ValueError`` naming the row, the column, the value and what was expected for: a missing
    column, a verdict outside good/partial/poor, a subscore outside 0-10 or not a number, a judged row
    (verdict given) with a null required dimension, a row with subscores but no verdict, a repeated
    ``(member, segment_id, sample)``, samples of a member that are not ``0 .. n-1``, null cap facts, or
    cap facts that differ between rows of one segment. A member without a row for a segment counts as
    not judged there (said in ``notes``).
    """
    need = ["member", "segment_id", *DIMENSIONS, "verdict", *CAP_FACTS]
    missing = [c for c in need if c not in members.columns]
    if missing:
        raise ValueError(f"members table lacks column(s) {missing}; expected at least {need}")
    frame = members.copy()
    if "sample" not in frame.columns:
        frame["sample"] = frame["sample_index"] if "sample_index" in frame.columns else 0
    if len(frame) == 0:
        raise ValueError("members table is empty")
    for col in ("member", "segment_id"):
        bad = frame[col].isna().to_numpy() | (frame[col].astype(str).str.strip() == "").to_numpy()
        if bad.any():
            raise _row_error(frame, bad, col, "a non-empty id")
    frame["member"] = frame["member"].astype(str)
    frame["segment_id"] = frame["segment_id"].astype(str)
    sample = _numeric(frame, "sample")
    bad = ~np.isfinite(sample) | (sample < 0) | (sample != np.floor(sample))
    if bad.any():
        raise _row_error(frame, bad, "sample", "an integer >= 0")
    frame["sample"] = sample.astype(np.int64)
    dup = frame.duplicated(["member", "segment_id", "sample"]).to_numpy()
    if dup.any():
        raise _row_error(frame, dup, "segment_id", "one row per (member, segment_id, sample)")
    subs = np.column_stack([_numeric(frame, d) for d in DIMENSIONS])
    for j, d in enumerate(DIMENSIONS):
        bad = np.isfinite(subs[:, j]) & ((subs[:, j] < 0) | (subs[:, j] > 10))
        if bad.any():
            raise _row_error(frame, bad, d, "a subscore in [0, 10] or null")
    verdict = frame["verdict"]
    has_verdict = verdict.notna().to_numpy()
    bad = has_verdict & ~verdict.isin(BANDS).to_numpy()
    if bad.any():
        raise _row_error(frame, bad, "verdict", f"one of {list(BANDS)} or null (not judged)")
    req = subs[:, :len(REQUIRED_DIMENSIONS)]
    bad = has_verdict & np.isnan(req).any(axis=1)
    if bad.any():
        col = REQUIRED_DIMENSIONS[int(np.flatnonzero(np.isnan(req[np.flatnonzero(bad)[0]]))[0])]
        raise _row_error(frame, bad, col, "a number on a judged row (only answer_faithfulness may be null)")
    bad = ~has_verdict & np.isfinite(subs).any(axis=1)
    if bad.any():
        raise _row_error(frame, bad, "verdict", "a verdict on a row with subscores (null verdict = not judged)")
    for f in CAP_FACTS:
        bad = frame[f].isna().to_numpy()
        if bad.any():
            raise _row_error(frame, bad, f, "true or false (the segment's cap fact)")
    facts_by_seg = frame.groupby("segment_id", sort=False)[list(CAP_FACTS)].nunique()
    clash = facts_by_seg.gt(1).any(axis=1)
    if clash.any():
        seg = str(clash[clash].index[0])
        rows = frame.loc[frame["segment_id"] == seg, ["member", *CAP_FACTS]]
        raise ValueError(f"members table: the cap facts of segment {seg!r} differ between rows "
                         f"({rows.drop_duplicates(list(CAP_FACTS)).to_dict('records')}); members must judge the "
                         f"same evidence ({int(clash.sum())} segment(s) like it)")

    member_ids = tuple(pd.unique(frame["member"]))
    seg_ids = pd.unique(frame["segment_id"])
    m_code = pd.Index(member_ids).get_indexer(frame["member"])
    s_code = pd.Index(seg_ids).get_indexer(frame["segment_id"])
    notes: list[str] = []
    n_samples = np.zeros(len(member_ids), dtype=np.int64)
    for m, member in enumerate(member_ids):
        held = np.unique(frame["sample"].to_numpy()[m_code == m])
        if not np.array_equal(held, np.arange(len(held))):
            raise ValueError(f"member {member!r} holds samples {held.tolist()}; expected 0 .. n-1 (a repeat(n) run)")
        n_samples[m] = len(held)
    J = int(n_samples.max())
    S, M = len(seg_ids), len(member_ids)
    j_code = frame["sample"].to_numpy()
    values = np.full((M, J, S, len(DIMENSIONS)), np.nan)
    values[m_code, j_code, s_code] = subs
    verdicts = np.full((M, J, S), -1, dtype=np.int8)
    codes = np.where(has_verdict, verdict.map(_BAND_CODE).fillna(-1).to_numpy(), -1).astype(np.int8)
    verdicts[m_code, j_code, s_code] = codes
    latency = np.full((M, J, S), np.nan)
    if "latency_s" in frame.columns:
        latency[m_code, j_code, s_code] = _numeric(frame, "latency_s")
    first = frame.drop_duplicates("segment_id").set_index("segment_id").loc[seg_ids]
    facts = first[list(CAP_FACTS)].astype(bool).to_numpy()
    if "turn_id" in frame.columns and first["turn_id"].notna().all():
        turns = first["turn_id"].astype(str).to_numpy(dtype=object)
    else:
        turns = np.array([turn_of(s) for s in seg_ids], dtype=object)
    for m, member in enumerate(member_ids):
        absent = int(S - len(np.unique(s_code[m_code == m])))
        if absent:
            notes.append(f"member {member!r} has no row for {absent} of {S} segment(s): not judged there")
    costs, sources, cost_notes = _member_costs(frame, m_code, member_ids, declared_cost, prices)
    notes.extend(cost_notes)
    simulated = np.array([mid.startswith(SIMULATED_PREFIX) for mid in member_ids])
    if "simulated" in frame.columns:
        flagged = frame.groupby("member", sort=False)["simulated"].agg(lambda s: bool(s.fillna(False).astype(bool).any()))
        simulated |= flagged.reindex(list(member_ids)).fillna(False).to_numpy(dtype=bool)
    return MemberSet(members=member_ids, segment_ids=np.asarray(seg_ids, dtype=object), turn_ids=turns,
                     values=values, verdicts=verdicts, latency_s=latency, facts=facts, n_samples=n_samples,
                     cost_per_call=costs, cost_source=sources, simulated=simulated, notes=tuple(notes))


# =============================================================================================
# Labels
# =============================================================================================
def _ordinal_median_worse(codes: np.ndarray) -> int:
    """The ordinal median of band codes, a tie between two bands toward the worse (higher) code."""
    return int(np.ceil(np.median(codes)))


def panel_labels(labels: pd.DataFrame) -> pd.DataFrame:
    """One row per labelled segment (index ``segment_id``): ``verdict``, ``code`` (0 good .. 2 poor),
    ``lo_<d>``/``hi_<d>``/``mid_<d>`` per dimension (NaN = null) and ``n_raters``.

    Accepts the constructed labels (``<d>_min``/``<d>_max``: the labelled range, midpoint its centre;
    ``attrs["note"]`` = :data:`~axon_eval.labels.LABELS_NOTE`), a tidy human-labels frame (``rater`` and
    the dimension columns: the raters' mean per dimension, lo = hi = mid; verdict the ordinal median,
    ties toward the worse band), or a frame this function returned. A verdict outside good/partial/poor,
    a repeated segment of the constructed format, or a missing column is a ``ValueError`` naming it.
    """
    if all(f"lo_{d}" in labels.columns for d in DIMENSIONS) and "code" in labels.columns:
        return labels
    if "segment_id" not in labels.columns or "verdict" not in labels.columns:
        raise ValueError(f"labels need segment_id and verdict columns; got {list(labels.columns)}")
    bad = ~labels["verdict"].isin(BANDS).to_numpy()
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"labels row {labels.index[i]!r} (segment {labels['segment_id'].iloc[i]!r}): verdict "
                         f"{labels['verdict'].iloc[i]!r}; expected one of {list(BANDS)}")
    out: dict[str, Any]
    if all(f"{d}_min" in labels.columns and f"{d}_max" in labels.columns for d in DIMENSIONS):
        dup = labels["segment_id"].duplicated().to_numpy()
        if dup.any():
            raise ValueError(f"labels repeat segment {labels['segment_id'].iloc[int(np.flatnonzero(dup)[0])]!r}; "
                             "constructed labels have one row per segment")
        index = pd.Index(labels["segment_id"].astype(str), name="segment_id")
        out = {"verdict": labels["verdict"].to_numpy(dtype=object)}
        for d in DIMENSIONS:
            lo = pd.to_numeric(labels[f"{d}_min"], errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
            hi = pd.to_numeric(labels[f"{d}_max"], errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
            out[f"lo_{d}"], out[f"hi_{d}"], out[f"mid_{d}"] = lo, hi, (lo + hi) / 2
        out["n_raters"] = np.ones(len(labels), dtype=np.int64)
        frame = pd.DataFrame(out, index=index)
        frame.attrs["note"] = labels.attrs.get("note", LABELS_NOTE)
    elif all(d in labels.columns for d in DIMENSIONS):
        lab = labels.assign(segment_id=labels["segment_id"].astype(str),
                            _code=band_codes(labels["verdict"].tolist()))
        for d in DIMENSIONS:
            lab[d] = pd.to_numeric(lab[d], errors="coerce")
        g = lab.groupby("segment_id", sort=True)
        means = g[list(DIMENSIONS)].mean()
        out = {"verdict": [BANDS[_ordinal_median_worse(v.to_numpy())] for _, v in g["_code"]]}
        for d in DIMENSIONS:
            out[f"lo_{d}"] = out[f"hi_{d}"] = out[f"mid_{d}"] = means[d].to_numpy(dtype=np.float64)
        out["n_raters"] = (g["rater"].nunique() if "rater" in lab.columns else g.size()).to_numpy()
        frame = pd.DataFrame(out, index=means.index.rename("segment_id"))
        frame.attrs["note"] = labels.attrs.get("note")
    else:
        raise ValueError("labels must be constructed labels (<dimension>_min/_max columns) or tidy human labels "
                         f"(the dimension columns {list(DIMENSIONS)}); got {list(labels.columns)}")
    frame["code"] = frame["verdict"].map(_BAND_CODE).astype(np.int64)
    return frame


# =============================================================================================
# Reducing votes (vectorised over panels and segments)
# =============================================================================================
def _applicable(reducer: str, n_votes: int) -> bool:
    if n_votes == 1:
        return reducer == SINGLE
    if reducer == SINGLE:
        return False
    if reducer == "median":
        return n_votes >= 3
    if reducer == "trimmed":
        return int(TRIM_FRACTION * n_votes) >= 1
    return True


def reduce_votes(votes: np.ndarray, verdicts: np.ndarray, reducer: str) -> tuple[np.ndarray, np.ndarray]:
    """Combine ``V`` votes: ``votes`` (..., V, S, 4) subscores (NaN = null or not judged), ``verdicts``
    (..., V, S) band codes (-1 = not judged). Returns the reduced subscores (..., S, 4), rounded to 6
    decimals (NaN where no vote has a value), and the majority verdict (..., S), ties -> the worse band,
    -1 where no vote was judged. ``reducer``: one of :data:`PANEL_REDUCERS` or ``"single"`` (module
    docstring). Values are the ensemble's for ``mean``, ``median`` and ``majority``.
    """
    votes = np.asarray(votes, dtype=np.float64)
    verdicts = np.asarray(verdicts)
    if votes.ndim < 3 or votes.shape[-1] != len(DIMENSIONS) or verdicts.shape != votes.shape[:-1]:
        raise ValueError(f"votes must be (..., V, S, {len(DIMENSIONS)}) and verdicts (..., V, S); got "
                         f"{votes.shape} and {verdicts.shape}")
    axis = votes.ndim - 3
    return _reduce(votes, np.sort(votes, axis=axis), axis, reducer), _majority_verdict(verdicts, axis)


def _reduce(votes: np.ndarray, srt: np.ndarray, axis: int, reducer: str) -> np.ndarray:
    present = ~np.isnan(votes)
    n = present.sum(axis=axis)
    V = votes.shape[axis]
    with np.errstate(invalid="ignore", divide="ignore"):
        if reducer in ("mean", SINGLE, "min_faithfulness"):
            out = np.where(present, votes, 0.0).sum(axis=axis) / n
            if reducer == "min_faithfulness":
                low = np.take(srt, 0, axis=axis)  # NaN last: the lowest value, NaN only when all are null
                out[..., DIMENSIONS.index("answer_faithfulness")] = low[..., DIMENSIONS.index("answer_faithfulness")]
        elif reducer == "median":
            lo_i = np.expand_dims(np.maximum((n - 1) // 2, 0), axis)
            hi_i = np.expand_dims(np.maximum(n // 2, 0), axis)
            lo = np.take_along_axis(srt, lo_i, axis=axis).squeeze(axis)
            hi = np.take_along_axis(srt, hi_i, axis=axis).squeeze(axis)
            out = np.where(n > 0, (lo + hi) / 2, np.nan)
        elif reducer == "trimmed":
            g = np.floor(TRIM_FRACTION * n).astype(np.int64)
            shape = [1] * srt.ndim
            shape[axis] = V
            rank = np.arange(V).reshape(shape)
            keep = (rank >= np.expand_dims(g, axis)) & (rank < np.expand_dims(n - g, axis))
            out = np.where(keep, srt, 0.0).sum(axis=axis) / (n - 2 * g)
        elif reducer == "majority":
            # counts[i] = how many votes equal vote i (NaN equals nothing, so a null vote counts 0)
            counts = np.zeros(votes.shape, dtype=np.int64)
            for i in range(V):
                counts += votes == np.take(votes, [i], axis=axis)
            top = counts.max(axis=axis, keepdims=True)
            cand = np.where((counts == top) & present, votes, np.inf)
            out = cand.min(axis=axis)
            out = np.where(n > 0, out, np.nan)
        else:
            raise ValueError(f"unknown reducer {reducer!r}; expected one of {[*PANEL_REDUCERS, SINGLE]}")
    out = np.where(n > 0, out, np.nan)
    return np.round(out, 6)


def _majority_verdict(verdicts: np.ndarray, axis: int) -> np.ndarray:
    counts = np.stack([(verdicts == c).sum(axis=axis) for c in range(_N_BANDS)], axis=-1)
    worst_first = counts[..., ::-1]
    code = (_N_BANDS - 1) - worst_first.argmax(axis=-1)
    return np.where(counts.sum(axis=-1) > 0, code, -1).astype(np.int64)


def _disagreement(votes: np.ndarray, srt: np.ndarray, verdicts: np.ndarray, axis: int
                  ) -> tuple[np.ndarray, np.ndarray]:
    """(largest range over the dimensions, in points; verdicts differ) per segment."""
    n = (~np.isnan(votes)).sum(axis=axis)
    last = np.expand_dims(np.maximum(n - 1, 0), axis)
    hi = np.take_along_axis(srt, last, axis=axis).squeeze(axis)
    rng = np.where(n > 0, hi - np.take(srt, 0, axis=axis), 0.0)
    max_range = rng.max(axis=-1)
    seen = np.stack([(verdicts == c).any(axis=axis) for c in range(_N_BANDS)], axis=-1)
    return max_range, seen.sum(axis=-1) > 1


# =============================================================================================
# Kappa on many confusion tables at once
# =============================================================================================
def kappa_tables(tables: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Cohen's kappa and its large-sample standard error for confusion tables (..., K, K) of counts.

    With ``p_ij`` the proportions, ``r_i``/``c_j`` the row/column margins, ``p_o = sum_i p_ii``,
    ``p_e = sum_i r_i c_i`` and ``kappa = (p_o - p_e) / (1 - p_e)`` (Fleiss, Cohen & Everitt 1969)::

        A = sum_i p_ii (1 - (r_i + c_i)(1 - kappa))^2
        B = (1 - kappa)^2 sum_{i != j} p_ij (c_i + r_j)^2
        C = (kappa - p_e (1 - kappa))^2
        se = sqrt((A + B - C) / ((1 - p_e)^2 n))

    (``statsmodels.stats.inter_rater.cohens_kappa``'s ``kappa`` and ``std_kappa``). NaN where ``n = 0``
    or ``p_e = 1`` (kappa undefined).
    """
    t = np.asarray(tables, dtype=np.float64)
    n = t.sum(axis=(-2, -1))
    with np.errstate(invalid="ignore", divide="ignore"):
        p = t / n[..., None, None]
        r, c = p.sum(axis=-1), p.sum(axis=-2)
        diag = np.diagonal(p, axis1=-2, axis2=-1)
        po = diag.sum(axis=-1)
        pe = (r * c).sum(axis=-1)
        kappa = (po - pe) / (1 - pe)
        k1 = (1 - kappa)[..., None]
        a = (diag * (1 - (r + c) * k1) ** 2).sum(axis=-1)
        off = p * (c[..., :, None] + r[..., None, :]) ** 2
        off = off.sum(axis=(-2, -1)) - np.diagonal(off, axis1=-2, axis2=-1).sum(axis=-1)
        b = (1 - kappa) ** 2 * off
        cc = (kappa - pe * (1 - kappa)) ** 2
        var = (a + b - cc) / ((1 - pe) ** 2 * n)
    undefined = (n == 0) | ~(np.abs(1 - pe) > 1e-12)
    kappa = np.where(undefined, np.nan, kappa)
    se = np.where(undefined, np.nan, np.sqrt(np.maximum(var, 0.0)))
    return kappa, se


def _tables(a: np.ndarray, b: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """(C, K, K) counts of (a, b) over ``mask`` per row of the (C, L) code arrays."""
    C = a.shape[0]
    idx = (np.arange(C)[:, None] * _N_BANDS ** 2 + np.clip(a, 0, _N_BANDS - 1) * _N_BANDS
           + np.clip(b, 0, _N_BANDS - 1))
    counts = np.bincount(idx[mask], minlength=C * _N_BANDS ** 2)
    return counts.reshape(C, _N_BANDS, _N_BANDS)


def _kappa_ci(tables: np.ndarray, z: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    kappa, se = kappa_tables(tables)
    return kappa, np.clip(kappa - z * se, -1, 1), np.clip(kappa + z * se, -1, 1), se


# =============================================================================================
# Member diagnostics
# =============================================================================================
def n_effective(k: int | np.ndarray, rho_bar: float | np.ndarray) -> np.ndarray | float:
    """``n_eff = k / (1 + (k - 1) * rho_bar)``: the number of independent members whose mean has the error
    variance of the mean of ``k`` members with mean pairwise error correlation ``rho_bar`` (Kish's design
    effect). 1 for ``k = 1``; ``k`` at ``rho_bar = 0``; 1 at ``rho_bar = 1``; ``inf`` when the
    denominator is not positive; NaN when ``rho_bar`` is NaN and ``k > 1``."""
    k_arr, r = np.asarray(k, dtype=np.float64), np.asarray(rho_bar, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        den = 1 + (k_arr - 1) * r
        out = np.where(k_arr == 1, 1.0, np.where(den > 0, k_arr / den, np.inf))
    out = np.where((k_arr > 1) & np.isnan(r), np.nan, out)
    return float(out) if out.ndim == 0 else out


def mean_offdiagonal(matrix: np.ndarray, subsets: np.ndarray) -> np.ndarray:
    """(P,) mean of ``matrix[i, j]`` over the pairs ``i < j`` of each row of ``subsets`` (P, k) (NaN
    entries left out; NaN for ``k = 1`` or when every pair is NaN)."""
    subsets = np.asarray(subsets, dtype=np.int64)
    P, k = subsets.shape
    if k < 2:
        return np.full(P, np.nan)
    iu = np.triu_indices(k, 1)
    vals = np.asarray(matrix, dtype=np.float64)[subsets[:, iu[0]], subsets[:, iu[1]]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(vals, axis=1)


@dataclass(frozen=True, eq=False)
class MemberDiagnostics:
    """Members' errors against the labels (their sample 0).

    ``correlations[target]``: M x M Pearson correlation of the errors ``judge - label`` (``target`` a
    dimension, against the label's midpoint, or ``"score"``, against the label score), over the segments
    both members judged (NaN below :data:`MIN_CORRELATION_PAIRS` or for a constant error);
    ``n_common[target]`` those counts; ``errors``: one row per member with ``bias_<target>`` (mean error)
    and ``abs_error_<target>`` (mean absolute error against the midpoint, unlike the panels' ``mae``,
    which is the distance to the labelled range) and ``n`` (segments with a score error).
    """

    correlations: dict[str, pd.DataFrame]
    n_common: dict[str, pd.DataFrame]
    errors: pd.DataFrame

    def matrix(self, target: str = "score") -> pd.DataFrame:
        if target not in self.correlations:
            raise ValueError(f"unknown target {target!r}; expected one of {list(self.correlations)}")
        return self.correlations[target]

    def n_eff(self, members: Sequence[str], target: str = "score") -> float:
        """``n_eff`` of the panel of ``members`` (:func:`n_effective` with the mean off-diagonal correlation)."""
        corr = self.matrix(target)
        idx = [corr.index.get_loc(m) for m in members]
        rho = mean_offdiagonal(corr.to_numpy(), np.array([idx]))[0] if len(idx) > 1 else math.nan
        return float(n_effective(len(idx), rho))


def _member_errors(ms: MemberSet, lab: pd.DataFrame, seg_idx: np.ndarray, label_score: np.ndarray,
                   rubric: Rubric) -> dict[str, np.ndarray]:
    """(M, L) errors per target of every member's sample 0 on the labelled segments."""
    vals = ms.values[:, 0][:, seg_idx]  # (M, L, 4)
    M, L = vals.shape[:2]
    mids = lab[[f"mid_{d}" for d in DIMENSIONS]].to_numpy(dtype=np.float64)
    out = {d: vals[:, :, j] - mids[None, :, j] for j, d in enumerate(DIMENSIONS)}
    _raw, score, _code = score_arrays(vals.reshape(-1, len(DIMENSIONS)),
                                      np.broadcast_to(ms.facts[seg_idx], (M, L, len(CAP_FACTS))).reshape(-1, len(CAP_FACTS)),
                                      rubric)
    out["score"] = score.reshape(M, L) - label_score[None, :]
    return out


def _diagnostics(ms: MemberSet, errors: dict[str, np.ndarray]) -> MemberDiagnostics:
    corr, common, rows = {}, {}, {m: {"member": m} for m in ms.members}
    for target, e in errors.items():
        frame = pd.DataFrame(e.T, columns=list(ms.members))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            corr[target] = frame.corr(min_periods=MIN_CORRELATION_PAIRS).rename_axis(index="member", columns="member")
        ok = np.isfinite(e).astype(np.int64)
        common[target] = pd.DataFrame(ok @ ok.T, index=list(ms.members), columns=list(ms.members))
        for m, member in enumerate(ms.members):
            x = e[m][np.isfinite(e[m])]
            rows[member][f"bias_{target}"] = float(x.mean()) if len(x) else math.nan
            rows[member][f"abs_error_{target}"] = float(np.abs(x).mean()) if len(x) else math.nan
            if target == "score":
                rows[member]["n"] = int(len(x))
    return MemberDiagnostics(corr, common, pd.DataFrame(list(rows.values())))


# =============================================================================================
# Records
# =============================================================================================
@dataclass(frozen=True)
class PanelResult:
    """One panel's row of :attr:`PanelStudy.panels` (the module docstring defines every figure).

    Shares are fractions 0-1; ``mae*`` in subscore points, ``score_mae`` in score points (0-100);
    ``cost_per_1k_turns`` in USD (NaN unknown); latencies in seconds; ``n`` labelled segments compared,
    ``n_unscored`` labelled segments the panel could not score (every vote failed).
    """

    panel_id: str
    members: tuple[str, ...]
    reducer: str
    k: int
    samples: int
    n_votes: int
    n: int
    n_unscored: int
    band_kappa: float
    band_kappa_lo: float
    band_kappa_hi: float
    band_kappa_se: float
    band_accuracy: float
    verdict_kappa: float
    verdict_kappa_lo: float
    verdict_kappa_hi: float
    mae: float
    mae_intent_understood: float
    mae_sql_quality: float
    mae_result_relevance: float
    mae_answer_faithfulness: float
    score_mae: float
    false_pass_rate: float
    n_labelled_not_good: int
    false_fail_rate: float
    n_labelled_good: int
    cost_per_1k_turns: float
    latency_s: float
    latency_p95_s: float
    rho_bar: float
    n_eff: float
    simulated: bool
    pareto: bool = False
    reaches_target: bool = False

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> PanelResult:
        kw = {f.name: row[f.name] for f in fields(cls)}
        kw["members"] = tuple(kw["members"])
        for name in ("k", "samples", "n_votes", "n", "n_unscored", "n_labelled_not_good", "n_labelled_good"):
            kw[name] = int(kw[name])
        for name in ("simulated", "pareto", "reaches_target"):
            kw[name] = bool(kw[name])
        return cls(**kw)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields(self):
            v = getattr(self, f.name)
            out[f.name] = list(v) if isinstance(v, tuple) else _jf(v) if isinstance(v, float) else v
        return out


PANEL_COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(PanelResult))
ESCALATION_COLUMNS: tuple[str, ...] = ("panel_id", "t", "rule", "share_escalated", "n_escalated", "n_left",
                                       "band_kappa", "band_kappa_lo", "band_kappa_hi", "reaches_target")


def _jf(x: Any) -> float | None:
    if x is None:
        return None
    x = float(x)
    return None if not math.isfinite(x) else round(x, 6)


@dataclass(frozen=True)
class Recommendation:
    """The panel to use and the runner-up.

    ``mode`` ``"target"``: the cheapest panel whose ``metric`` reaches ``target`` (ties: better metric,
    fewer votes); ``"budget"``: the best ``metric`` among panels costing at most ``budget`` USD per 1,000
    turns (ties: cheaper). ``chosen`` is ``None`` when nothing qualifies (``reason`` says what came
    closest, which is then ``runner_up``). ``confirmation``: by ``panel_id``, the band kappa of the chosen
    panel and the runner-up with a seeded cluster-bootstrap percentile interval over turns
    (:func:`axon_eval.stats.intervals.cluster_bootstrap`: the segments of a turn are resampled together,
    which the asymptotic interval of the panels table does not do) and whether its lower bound reaches
    the target; empty when not asked for.
    """

    mode: str
    metric: str
    target: float | None
    budget: float | None
    chosen: PanelResult | None
    runner_up: PanelResult | None
    reason: str
    runner_up_reason: str
    confirmation: dict[str, dict[str, Any]]

    def text(self) -> str:
        return " ".join(filter(None, [self.reason, self.runner_up_reason]))

    def to_json(self) -> dict[str, Any]:
        return {"mode": self.mode, "metric": self.metric, "target": self.target, "budget": self.budget,
                "chosen": None if self.chosen is None else self.chosen.to_json(),
                "runner_up": None if self.runner_up is None else self.runner_up.to_json(),
                "reason": self.reason, "runner_up_reason": self.runner_up_reason,
                "confirmation": self.confirmation}


@dataclass(frozen=True, eq=False)
class PanelStudy:
    """Everything study 10 reports.

    ``panels``: one row per panel (:data:`PANEL_COLUMNS`), ``pareto`` marking the frontier;
    ``escalation``: one row per panel of two or more votes and threshold (:data:`ESCALATION_COLUMNS`);
    ``trust``: per panel the smallest escalation share that reaches the target (:func:`trust_or_escalate`);
    ``members``: :meth:`MemberSet.summary` with each member's own agreement; ``diagnostics``;
    ``recommendation``; ``parameters`` (every number used); ``notes`` (what was found in the input,
    what was skipped and why, and :data:`SIMULATED_NOTE` when a member is simulated); ``labels_note``.
    """

    panels: pd.DataFrame
    escalation: pd.DataFrame
    trust: pd.DataFrame
    members: pd.DataFrame
    diagnostics: MemberDiagnostics
    recommendation: Recommendation
    parameters: dict[str, Any]
    notes: tuple[str, ...]
    n_segments: int
    n_labelled: int
    n_turns: int
    labels_note: str | None = None

    def panel(self, panel_id: str) -> PanelResult:
        rows = self.panels[self.panels["panel_id"] == panel_id]
        if rows.empty:
            raise ValueError(f"no panel {panel_id!r}; e.g. {self.panels['panel_id'].head(3).tolist()}")
        return PanelResult.from_row(rows.iloc[0].to_dict())

    def frontier(self) -> pd.DataFrame:
        """The Pareto-optimal panels, cheapest first."""
        metric = self.parameters.get("metric", DEFAULT_METRIC)
        return self.panels[self.panels["pareto"]].sort_values(["cost_per_1k_turns", metric],
                                                              ascending=[True, False]).reset_index(drop=True)

    def to_json(self) -> dict[str, Any]:
        """``study.json`` payload: counts, parameters, the recommendation, the frontier, the members and
        the trust-or-escalate summary (NaN -> ``None``)."""
        def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
            out = []
            for row in frame.to_dict("records"):
                out.append({k: (list(v) if isinstance(v, tuple) else _jf(v) if isinstance(v, float) else
                                bool(v) if isinstance(v, np.bool_) else int(v) if isinstance(v, np.integer) else v)
                            for k, v in row.items()})
            return out
        params = {k: (None if isinstance(v, float) and not math.isfinite(v) else v)
                  for k, v in self.parameters.items() if k != "escalation_grid"}
        params["escalation_grid"] = [None if not math.isfinite(t) else t for t in self.parameters["escalation_grid"]]
        return {"n_segments": self.n_segments, "n_labelled": self.n_labelled, "n_turns": self.n_turns,
                "n_panels": int(len(self.panels)), "parameters": params,
                "recommendation": self.recommendation.to_json(), "frontier": records(self.frontier()),
                "members": records(self.members), "trust": records(self.trust), "notes": list(self.notes),
                "labels_note": self.labels_note}


# =============================================================================================
# Evaluating panels
# =============================================================================================
def panel_id(members: Sequence[str], reducer: str, samples: int) -> str:
    """``"<reducer>[<m1>, <m2>, ...] x<samples>"``, e.g. ``"mean[heuristic, simulated:harsh] x1"``."""
    return f"{reducer}[{', '.join(members)}] x{samples}"


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


# =============================================================================================
# Frontier, recommendation, escalation
# =============================================================================================
def pareto_optimal(cost: Sequence[float] | np.ndarray, agreement: Sequence[float] | np.ndarray) -> np.ndarray:
    """Boolean mask: no other point has ``cost <=`` and ``agreement >=`` with one of them strict (lower
    cost is better, higher agreement is better). Points with a NaN coordinate are never optimal and never
    dominate. Equal points are all optimal."""
    c, a = np.asarray(cost, dtype=np.float64), np.asarray(agreement, dtype=np.float64)
    ok = np.isfinite(c) & np.isfinite(a)
    out = np.zeros(len(c), dtype=bool)
    ci, ai = c[ok], a[ok]
    if not len(ci):
        return out
    order = np.lexsort((-ai, ci))  # cost ascending, then agreement descending
    cs, as_ = ci[order], ai[order]
    # best agreement among points strictly cheaper, and among points of the same cost
    best_before = np.full(len(cs), -np.inf)
    running = -np.inf
    i = 0
    while i < len(cs):
        j = i
        while j < len(cs) and cs[j] == cs[i]:
            j += 1
        best_before[i:j] = running
        running = max(running, as_[i:j].max())
        i = j
    group_max = pd.Series(as_).groupby(cs).transform("max").to_numpy()
    optimal_sorted = (as_ > best_before) & (as_ == group_max)
    idx = np.flatnonzero(ok)[order]
    out[idx] = optimal_sorted
    return out


def _fmt(x: float, digits: int = 2) -> str:
    return "-" if x is None or not math.isfinite(float(x)) else f"{float(x):.{digits}f}"


def _usd(x: float) -> str:
    if x is None or not math.isfinite(float(x)):
        return "unknown cost"
    x = float(x)
    return f"${x:.0f}" if x >= 100 else f"${x:.2f}" if x >= 0.1 or x == 0 else f"${x:.2g}"


def recommend(panels: pd.DataFrame, *, target: float = TARGET_KAPPA, budget: float | None = None,
              metric: str = DEFAULT_METRIC) -> Recommendation:
    """The cheapest panel whose ``metric`` reaches ``target``, or with ``budget`` (USD per 1,000 turns) the
    best ``metric`` within it; with the runner-up and why it lost (see :class:`Recommendation`).
    Panels with an unknown cost or metric are not candidates."""
    if metric not in panels.columns:
        raise ValueError(f"unknown metric {metric!r}; expected a column of the panels table, e.g. {DEFAULT_METRIC}")
    p = panels[np.isfinite(panels["cost_per_1k_turns"].astype(float)) & np.isfinite(panels[metric].astype(float))]
    label = f"{metric} "
    if budget is None:
        qual = p[p[metric] >= target].sort_values([ "cost_per_1k_turns", metric, "n_votes", "panel_id"],
                                                  ascending=[True, False, True, True])
        if qual.empty:
            best = p.sort_values([metric, "cost_per_1k_turns", "panel_id"], ascending=[False, True, True])
            runner = PanelResult.from_row(best.iloc[0].to_dict()) if len(best) else None
            reason = (f"no panel reaches {label}>= {target:g}" +
                      (f"; the best is {runner.panel_id} with {_fmt(getattr(runner, metric))} at "
                       f"{_usd(runner.cost_per_1k_turns)} per 1,000 turns" if runner else "") + ".")
            return Recommendation("target", metric, target, None, None, runner, reason, "", {})
        chosen = PanelResult.from_row(qual.iloc[0].to_dict())
        reason = (f"{chosen.panel_id} is the cheapest panel reaching {label}>= {target:g}: "
                  f"{_fmt(getattr(chosen, metric))} at {_usd(chosen.cost_per_1k_turns)} per 1,000 turns.")
        if len(qual) > 1:
            runner = PanelResult.from_row(qual.iloc[1].to_dict())
            if runner.cost_per_1k_turns > chosen.cost_per_1k_turns:
                why = (f"it also reaches the target ({_fmt(getattr(runner, metric))}) but costs "
                       f"{_usd(runner.cost_per_1k_turns - chosen.cost_per_1k_turns)} more per 1,000 turns")
            elif getattr(runner, metric) < getattr(chosen, metric):
                why = f"same cost, lower {metric} ({_fmt(getattr(runner, metric))})"
            else:
                why = f"same cost and {metric}, more votes or later in order ({runner.n_votes} votes)"
        else:
            rest = p[p["panel_id"] != chosen.panel_id].sort_values([metric, "cost_per_1k_turns"], ascending=[False, True])
            runner = PanelResult.from_row(rest.iloc[0].to_dict()) if len(rest) else None
            why = (f"its {metric} {_fmt(getattr(runner, metric))} misses the target {target:g}" if runner else "")
        runner_reason = f"Runner-up {runner.panel_id}: {why}." if runner else ""
        return Recommendation("target", metric, target, None, chosen, runner, reason, runner_reason, {})
    within = p[p["cost_per_1k_turns"] <= budget].sort_values([metric, "cost_per_1k_turns", "n_votes", "panel_id"],
                                                             ascending=[False, True, True, True])
    if within.empty:
        cheapest = p.sort_values(["cost_per_1k_turns", metric], ascending=[True, False])
        runner = PanelResult.from_row(cheapest.iloc[0].to_dict()) if len(cheapest) else None
        reason = (f"no panel costs at most {_usd(budget)} per 1,000 turns" +
                  (f"; the cheapest is {runner.panel_id} at {_usd(runner.cost_per_1k_turns)}" if runner else "") + ".")
        return Recommendation("budget", metric, target, budget, None, runner, reason, "", {})
    chosen = PanelResult.from_row(within.iloc[0].to_dict())
    reaches = "reaches" if getattr(chosen, metric) >= target else "does not reach"
    reason = (f"{chosen.panel_id} has the best {metric} within {_usd(budget)} per 1,000 turns: "
              f"{_fmt(getattr(chosen, metric))} at {_usd(chosen.cost_per_1k_turns)}; it {reaches} the target {target:g}.")
    runner = PanelResult.from_row(within.iloc[1].to_dict()) if len(within) > 1 else None
    runner_reason = ""
    if runner is not None:
        if getattr(runner, metric) < getattr(chosen, metric):
            why = f"lower {metric} ({_fmt(getattr(runner, metric))} vs {_fmt(getattr(chosen, metric))})"
        elif runner.cost_per_1k_turns > chosen.cost_per_1k_turns:
            why = f"same {metric}, costs {_usd(runner.cost_per_1k_turns - chosen.cost_per_1k_turns)} more per 1,000 turns"
        else:
            why = f"same {metric} and cost, more votes or later in order ({runner.n_votes} votes)"
        runner_reason = f"Runner-up {runner.panel_id}: {why}."
    return Recommendation("budget", metric, target, budget, chosen, runner, reason, runner_reason, {})


def trust_or_escalate(escalation: pd.DataFrame, panels: pd.DataFrame, *, target: float = TARGET_KAPPA) -> pd.DataFrame:
    """Per panel, the smallest share of segments to escalate to a person so that the band kappa lower bound
    on what is left reaches ``target``: ``panel_id``, ``reached`` (bool), ``share_escalated`` (0 when the
    panel reaches it alone), ``t`` (the threshold; NaN alone; ``inf`` = verdict differences only),
    ``rule``, ``band_kappa_lo`` on what is left, ``n_left``, ``cost_per_1k_turns``. Ties in share go to
    the larger ``t``. Sorted: reached first, then by share, then cost."""
    rows = []
    esc = escalation.groupby("panel_id", sort=False)
    groups = dict(iter(esc)) if len(escalation) else {}
    for r in panels.itertuples(index=False):
        if r.band_kappa_lo >= target:
            rows.append({"panel_id": r.panel_id, "reached": True, "share_escalated": 0.0, "t": math.nan,
                         "rule": "no escalation", "band_kappa_lo": r.band_kappa_lo, "n_left": r.n,
                         "cost_per_1k_turns": r.cost_per_1k_turns})
            continue
        g = groups.get(r.panel_id)
        hit = g[g["band_kappa_lo"] >= target] if g is not None else None
        if hit is None or hit.empty:
            rows.append({"panel_id": r.panel_id, "reached": False, "share_escalated": math.nan, "t": math.nan,
                         "rule": "no threshold of the grid reaches the target", "band_kappa_lo": math.nan,
                         "n_left": 0, "cost_per_1k_turns": r.cost_per_1k_turns})
            continue
        best = hit.sort_values(["share_escalated", "t"], ascending=[True, False]).iloc[0]
        rows.append({"panel_id": r.panel_id, "reached": True, "share_escalated": float(best["share_escalated"]),
                     "t": float(best["t"]), "rule": best["rule"], "band_kappa_lo": float(best["band_kappa_lo"]),
                     "n_left": int(best["n_left"]), "cost_per_1k_turns": r.cost_per_1k_turns})
    out = pd.DataFrame(rows, columns=["panel_id", "reached", "share_escalated", "t", "rule", "band_kappa_lo",
                                      "n_left", "cost_per_1k_turns"])
    return out.sort_values(["reached", "share_escalated", "cost_per_1k_turns"],
                           ascending=[False, True, True], na_position="last").reset_index(drop=True)


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
