"""Judge panel design, the inputs: the members table, the labels and what a member costs.

Pure functions; nothing judges again, nothing reads a run folder. :func:`prepare_members` validates a members
table into the arrays every panel reads (:class:`MemberSet`); :func:`panel_labels` normalises the labels to
one row per segment. The numbers of the study (targets, grids, reducers) are module constants here, in one
place.

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

Cost and latency
    A member's cost per call is the mean over its records with a known cost: the recorded ``cost_usd``,
    else ``input_tokens`` and ``output_tokens`` priced by :mod:`axon_eval.judges.prices` for its ``model``
    (``cost = (in * input + out * output) / 1e6``, USD per million tokens); without either, the cost
    declared for the member (``declared_cost``, USD per call); else unknown (NaN; the panel is left off
    the frontier). Calls per turn = segments / turns. ``cost_per_1k_turns = 1000 * s * sum_m
    cost_per_call_m * segments / turns``. Latency: per segment the slowest vote (members run
    concurrently, as an ensemble's ``latency_ms`` is the max of its members'), then the mean
    (``latency_s``) and the 95th percentile (``latency_p95_s``) over segments.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..judges.prices import PriceTable, price_table
from ..labels import LABELS_NOTE
from ..rubric import BANDS, CAP_FACTS, DIMENSIONS, REQUIRED_DIMENSIONS
from .agreement import GATE_THRESHOLD, band_codes
from .intervals import turn_of


# =============================================================================================
# The study's numbers (one place)
# =============================================================================================
#: Target agreement -- the band kappa's lower confidence bound must reach it (the seed's publication gate).
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
        """Judge calls per turn and sample -- segments / turns."""
        return self.n_segments / self.n_turns if self.n_turns else math.nan

    @property
    def cost_per_turn(self) -> np.ndarray:
        """(M,) USD per turn and sample -- ``cost_per_call * segments / turns``."""
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
