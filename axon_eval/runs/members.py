"""Run folders as the *members table* of study 10 (judge panel design): the I/O edge of
:mod:`axon_eval.stats.panels`, which never reads a folder itself.

One run folder = one panel member. From each run's results (one row per segment and judge
sample) and ``manifest.json``:

* ``judge_verdict -> verdict`` and ``sample_index -> sample``; ``member`` is the name given for that
  run, else the run's ``judge_id``;
* ``latency_s = latency_ms / 1000``;
* a row whose ``status`` is not ``judged`` keeps its segment (so the member counts as having *failed*
  there) with ``verdict`` and the four dimensions set to null, never dropped;
* ``simulated``: the judge id names a simulation (:func:`axon_eval.summaries.is_simulated_judge`) or
  the member's id starts with ``simulated:``.

Cost per call, in this order (the first one the run has):

1. the rows' own ``cost_usd`` (the heuristic records 0.0; an API judge records what the API billed);
2. the manifest's token totals spread evenly over the run's judged calls
   (``input_tokens = manifest.input_tokens / n_judged``, the same for output), priced by the panels
   module from :mod:`axon_eval.judges.prices` for the rows' ``model``; the mean over calls, which is
   all the study uses, is then exact;
3. the manifest's total ``cost_usd`` spread evenly over the judged calls;
4. ``declared_cost[member]`` (USD per call), which the caller must then pass on to
   :func:`~axon_eval.stats.panels.panel_study` (it is in ``attrs["declared_cost"]``).

A run with none of these is a ``ValueError`` naming the run folder and the member, so no panel silently
gets an unknown cost. Other checks raise naming the run: a missing folder or results file, a run with no
rows, a missing column, two judges in one run, two runs with the same member id, a ``names`` list of the
wrong length.

:func:`estimate_member_runs` is the cost gate before making member runs with paid judges: the estimate of
:mod:`axon_eval.runs.budget` per judge and in total, refused above ``max_cost_usd`` (or when unknown under
a budget) before anything is sent.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..judges.prices import price_table
from ..rubric import CAP_FACTS, DIMENSIONS
from ..summaries import is_simulated_judge
from .budget import BudgetExceeded, estimate_cost, format_usd
from .io import has_results
from .load import load_run

#: Prefix of a simulated member's id (the same as :data:`axon_eval.stats.panels.SIMULATED_PREFIX`).
SIMULATED_PREFIX = "simulated:"
#: Columns a run's results must hold to become a member.
REQUIRED_RESULT_COLUMNS: tuple[str, ...] = ("segment_id", "status", "judge_verdict", *DIMENSIONS, *CAP_FACTS)
#: Columns of the members table this module returns (``stats.panels`` reads these).
MEMBER_COLUMNS: tuple[str, ...] = ("member", "segment_id", "turn_id", "sample", *DIMENSIONS, "verdict",
                                   *CAP_FACTS, "model", "cost_usd", "input_tokens", "output_tokens",
                                   "latency_s", "simulated", "judge_id", "status", "run")


def _run_member(folder: Path, name: str | None, declared: Mapping[str, float]) -> tuple[pd.DataFrame, str, str]:
    """(members rows, member id, cost source) of one run folder (module docstring)."""
    if not (folder / "manifest.json").is_file():
        raise ValueError(f"member run {str(folder)!r}: no manifest.json (expected a run folder made by "
                         "'python -m axon_eval evaluate' or runs.evaluate)")
    run = load_run(folder)
    results, manifest = run.results, run.manifest
    if not has_results(folder) or results.empty:
        raise ValueError(f"member run {str(folder)!r}: its results are missing or have no rows "
                         f"(run status {manifest.status!r}); expected one row per segment and sample")
    missing = [c for c in REQUIRED_RESULT_COLUMNS if c not in results.columns]
    if missing:
        raise ValueError(f"member run {str(folder)!r}: its results lack column(s) {missing}; expected "
                         f"{list(REQUIRED_RESULT_COLUMNS)}")
    judge_ids = sorted(results["judge_id"].dropna().astype(str).unique()) if "judge_id" in results else []
    if len(judge_ids) > 1:
        raise ValueError(f"member run {str(folder)!r} holds {len(judge_ids)} judges {judge_ids}; a member is "
                         "one judge (split the run, or give each judge its own run)")
    judge_id = manifest.judge_id or (judge_ids[0] if judge_ids else None)
    member = name if name is not None else judge_id
    if not member or not str(member).strip():
        raise ValueError(f"member run {str(folder)!r}: no judge_id in its manifest or results; give it a name")
    member = str(member)

    df = results.rename(columns={"judge_verdict": "verdict", "sample_index": "sample"}).copy()
    if "sample" not in df.columns:
        df["sample"] = 0
    judged = (df["status"].astype(str) == "judged").to_numpy()
    df["verdict"] = df["verdict"].astype(object).where(judged, None)
    for d in DIMENSIONS:
        df[d] = pd.to_numeric(df[d], errors="coerce").astype(np.float64).where(judged, np.nan)
    df["member"] = member
    if "turn_id" not in df.columns:
        df["turn_id"] = None
    df["latency_s"] = (pd.to_numeric(df["latency_ms"], errors="coerce") / 1000.0 if "latency_ms" in df.columns
                       else np.nan)
    if "model" not in df.columns:
        df["model"] = manifest.judge_model
    df["model"] = df["model"].astype(object).where(df["model"].notna(), manifest.judge_model)
    df["judge_id"] = judge_id
    df["run"] = str(folder)
    df["simulated"] = bool(is_simulated_judge(judge_id) or member.startswith(SIMULATED_PREFIX))

    cost = (pd.to_numeric(df["cost_usd"], errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
            if "cost_usd" in df.columns else np.full(len(df), np.nan))
    n_judged = int(judged.sum())
    df["input_tokens"] = np.nan
    df["output_tokens"] = np.nan
    tin, tout = manifest.input_tokens, manifest.output_tokens
    models = {str(m) for m in df.loc[judged, "model"].dropna()}
    priced = bool(models) and all(price_table().rates(m) is not None for m in models)
    if np.isfinite(cost[judged]).any():
        source = "recorded cost_usd"
    elif n_judged and tin and tout and priced:
        df.loc[judged, "input_tokens"] = tin / n_judged
        df.loc[judged, "output_tokens"] = tout / n_judged
        cost = np.full(len(df), np.nan)
        source = f"manifest tokens ({tin:,} in, {tout:,} out) over {n_judged} calls x price table"
    elif n_judged and manifest.cost_usd is not None and math.isfinite(manifest.cost_usd):
        cost = np.where(judged, manifest.cost_usd / n_judged, np.nan)
        source = f"manifest cost_usd {format_usd(manifest.cost_usd)} over {n_judged} calls"
    elif member in declared:
        cost = np.full(len(df), np.nan)
        source = "declared"
    else:
        raise ValueError(
            f"member run {str(folder)!r} (member {member!r}): no cost_usd on its rows, no priced token counts "
            f"and no total cost in its manifest; a declared cost is required: pass "
            f"declared_cost={{{member!r}: <USD per call>}}")
    df["cost_usd"] = cost
    return df.loc[:, list(MEMBER_COLUMNS)], member, source


def members_from_runs(run_dirs: Sequence[str | Path], names: Sequence[str | None] | None = None, *,
                      declared_cost: Mapping[str, float] | None = None) -> pd.DataFrame:
    """The members table of study 10 from run folders, one member per run (module docstring).

    ``names``: the member ids, one per run (default, or a ``None`` entry: that run's ``judge_id``). ``declared_cost``: USD per
    call of members whose runs record no cost. Returns one row per member x segment x sample with
    :data:`MEMBER_COLUMNS`; ``attrs``: ``runs`` (member -> folder), ``cost_source`` (member -> where its
    cost comes from), ``declared_cost`` (the declared costs that are used: pass them to ``panel_study``),
    ``simulated`` (any simulated member).
    """
    folders = [Path(p) for p in run_dirs]
    if not folders:
        raise ValueError("members_from_runs needs at least one run folder, got none")
    if names is not None and len(names) != len(folders):
        raise ValueError(f"names has {len(names)} entries for {len(folders)} run folders; give one per run")
    declared = dict(declared_cost or {})
    frames, runs, sources = [], {}, {}
    for i, folder in enumerate(folders):
        if not folder.is_dir():
            raise ValueError(f"member run {str(folder)!r} is not a folder")
        name = None if names is None or names[i] is None else str(names[i])
        frame, member, source = _run_member(folder, name, declared)
        if member in runs:
            raise ValueError(f"member id {member!r} is used by run {runs[member]!r} and run {str(folder)!r}; "
                             "pass names=[...] to tell them apart")
        frames.append(frame)
        runs[member], sources[member] = str(folder), source
    unknown = sorted(set(declared) - set(runs))
    if unknown:
        raise ValueError(f"declared_cost names member(s) {unknown} that no run provides; the members are {list(runs)}")
    out = pd.concat(frames, ignore_index=True)
    out.attrs.update({"runs": runs, "cost_source": sources,
                      "declared_cost": {m: declared[m] for m, s in sources.items() if s == "declared"},
                      "simulated": bool(out["simulated"].any())})
    return out


def estimate_member_runs(judges: Mapping[str, Any], views: Sequence[Any], *, max_cost_usd: float | None,
                         batch: bool = False) -> pd.DataFrame:
    """The estimated cost of judging ``views`` once with each judge of ``judges`` (spec -> judge object),
    by :func:`axon_eval.runs.budget.estimate_cost`; one row per judge (``spec``, ``judge_id``,
    ``estimated_usd``, NaN = a model without a price) and ``attrs["total_usd"]`` (NaN when any is unknown).

    Raises :class:`~axon_eval.runs.budget.BudgetExceeded` (nothing has been sent) when ``max_cost_usd`` is
    set and the total exceeds it or cannot be priced."""
    rows = []
    for spec, judge in judges.items():
        est = estimate_cost(judge, views, batch=batch)
        rows.append({"spec": spec, "judge_id": getattr(judge, "judge_id", spec),
                     "estimated_usd": math.nan if est is None else float(est)})
    table = pd.DataFrame(rows, columns=["spec", "judge_id", "estimated_usd"])
    total = float(table["estimated_usd"].sum(skipna=False)) if len(table) else 0.0
    table.attrs["total_usd"] = total
    if max_cost_usd is not None and not (math.isfinite(total) and total <= max_cost_usd):
        shown = format_usd(total) if math.isfinite(total) else "unknown (a model is not in the price table)"
        raise BudgetExceeded(f"estimated cost of the member runs {shown} for {len(views)} segments x "
                             f"{len(table)} judge(s) exceeds max_cost_usd={format_usd(max_cost_usd)} (or is unknown); "
                             "fewer judges or segments, or raise max_cost_usd (None: no budget). Nothing was sent.")
    return table
