"""Trends across runs: every headline figure per run date, with its interval, read through DuckDB from
any set of run folders without copying them.

:func:`open_runs` reads each folder's ``manifest.json`` (small) into a table ``manifests`` and makes one
SQL view, ``trend_results``, over all their results datasets (``results/part-*.parquet``) at once
(``read_parquet([...], filename=true, union_by_name=true)``, joined to ``manifests`` on the file name):
DuckDB scans the files where they are. :func:`trend` refuses runs whose judge (id, prompt) or rubric
ids differ -- a trend across a judge change measures the change, not the assistant -- unless
``allow_mixed=True``; then it computes, per run (and per ``by`` group: ``surface``, ``region`` or
``client``), every headline figure with its interval
(:func:`axon_eval.stats.intervals.headline_table`: cluster bootstrap over turns for means, Wilson
for shares of independent units; one seed for every run, recorded). ``attrs["read_seconds"]`` is the
time DuckDB took to read the rows.

Every run says what its judge was not (:func:`axon_eval.runs.disclosure.judge_disclosure`): each row of
the trend carries its run's ``simulated``, ``local_server`` and ``judge_disclosure`` (``"SIMULATED"``,
``"local server, not the provider"``, both, or ``""``); :func:`wide` shows the disclosure beside each
run and :func:`format_trend` starts with a line naming the runs of a simulated judge or a local server
(:func:`disclosure_headlines`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ..display import fmt_estimate
from ..stats.intervals import CONFIDENCE, INTERVAL_COVERS, N_BOOT, SEED, headline_table
from ..summaries import MixedResultsError
from .disclosure import judge_disclosure
from .io import results_files
from .manifest import RunManifest

#: Columns read from every results part (the rest stay on disk).
TREND_COLUMNS: tuple[str, ...] = (
    "segment_id", "turn_id", "sample_index", "status", "score", "band", "caps_applied", "intent_understood",
    "sql_quality", "result_relevance", "answer_faithfulness", "judge_id", "prompt_version", "rubric_id",
)
#: The groupings a trend may be broken down by.
TREND_BY: tuple[str, ...] = ("surface", "region", "client")
MANIFEST_COLUMNS: tuple[str, ...] = ("run_id", "run_dir", "results_file", "run_date", "status", "judge_id",
                                     "prompt_version", "rubric_id", "judge_endpoint", "n_segments", "simulated",
                                     "local_server", "judge_disclosure")
#: The columns of :data:`MANIFEST_COLUMNS` that every trend row carries from its run.
DISCLOSURE_COLUMNS: tuple[str, ...] = ("simulated", "local_server", "judge_disclosure")


def _study_simulated(folder: Path) -> Any:
    """The ``simulated`` flag of the folder's ``study.json`` (a study run), or ``None`` without one."""
    path = folder / "study.json"
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8")).get("simulated")
    except (OSError, ValueError, AttributeError) as exc:
        raise ValueError(f"{path} is unreadable: {exc}") from None


def run_manifests(run_dirs: Iterable[str | Path]) -> pd.DataFrame:
    """One row per run folder (:data:`MANIFEST_COLUMNS`), in run-date order; ``simulated``,
    ``local_server`` and ``judge_disclosure`` are the run's
    :func:`~axon_eval.runs.disclosure.judge_disclosure` (from its manifest and ``study.json``). A folder
    without a manifest or a results dataset is a ValueError naming it. ``results_file`` names the run's
    results (its ``results/`` folder, or the one file of the older layout)."""
    rows = []
    for d in run_dirs:
        folder = Path(d)
        parts = results_files(folder)
        if not parts:
            raise ValueError(f"{folder} is not a run folder with results: no results dataset (results/part-*.parquet)")
        results = parts[0].parent if parts[0].parent != folder else parts[0]
        m = RunManifest.read(folder)
        disclosure = judge_disclosure({**m.model_dump(mode="json"), "simulated": _study_simulated(folder)})
        rows.append({"run_id": m.run_id, "run_dir": str(folder), "results_file": str(results.resolve()),
                     "run_date": m.started_at, "status": m.status, "judge_id": m.judge_id,
                     "prompt_version": m.prompt_version, "rubric_id": m.rubric_id,
                     "judge_endpoint": m.judge_endpoint, "n_segments": m.counts.segments,
                     "simulated": disclosure.simulated, "local_server": disclosure.local_server,
                     "judge_disclosure": disclosure.label})
    if not rows:
        raise ValueError("no run folders given: a trend needs at least one run")
    out = pd.DataFrame(rows, columns=list(MANIFEST_COLUMNS))
    dup = out["results_file"][out["results_file"].duplicated()]
    if len(dup):
        raise ValueError(f"run folder given twice: {dup.iloc[0]}")
    return out.sort_values(["run_date", "run_id"], kind="stable").reset_index(drop=True)


def open_runs(run_dirs: Iterable[str | Path], *, by: Sequence[str] = ()) -> tuple[Any, pd.DataFrame]:
    """A DuckDB connection holding the ``manifests`` table and the ``trend_results`` view (see the
    module docstring), and the manifests frame."""
    import duckdb

    manifests = run_manifests(run_dirs)
    con = duckdb.connect()
    try:  # a terminal would get a progress bar on a long read; Jupyter without ipywidgets refuses the setting
        con.execute("SET enable_progress_bar = false")
    except duckdb.Error:
        pass
    con.register("manifests_df", manifests)
    con.execute("CREATE TABLE manifests AS SELECT * FROM manifests_df")
    con.unregister("manifests_df")
    parts = pd.DataFrame([{"filename": str(f.resolve()), "run_dir": run_dir}
                          for run_dir in manifests["run_dir"] for f in results_files(run_dir)])
    con.register("parts_df", parts)
    con.execute("CREATE TABLE result_parts AS SELECT * FROM parts_df")
    con.unregister("parts_df")
    files = parts["filename"].tolist()
    cols = ", ".join(f'r."{c}"' for c in (*TREND_COLUMNS, *by))
    listing = "[" + ", ".join("'" + f.replace("'", "''") + "'" for f in files) + "]"
    con.execute(
        f"CREATE VIEW trend_results AS SELECT m.run_dir, m.run_id, m.run_date, {cols} "
        f"FROM read_parquet({listing}, filename=true, union_by_name=true) AS r "
        "JOIN result_parts AS p ON r.filename = p.filename JOIN manifests AS m ON p.run_dir = m.run_dir")
    return con, manifests


def identity_problems(con: Any) -> list[str]:
    """The judge and rubric ids the runs mix, from both their manifests and their result rows."""
    problems = []
    for col, what in (("judge_id", "judge ids"), ("prompt_version", "judge prompts"), ("rubric_id", "rubric ids")):
        ids = sorted({str(v) for (v,) in con.execute(
            f"SELECT DISTINCT {col} FROM trend_results WHERE {col} IS NOT NULL "
            f"UNION SELECT DISTINCT {col} FROM manifests WHERE {col} IS NOT NULL").fetchall()})
        if len(ids) > 1:
            problems.append(f"{len(ids)} {what} {ids}")
    return problems


def _arrow_strings() -> dict[Any, Any]:
    import pyarrow as pa

    return {pa.string(): pd.StringDtype("pyarrow"), pa.large_string(): pd.StringDtype("pyarrow")}


_ARROW_STRINGS = _arrow_strings()


def read_runs(run_dirs: Iterable[str | Path], *, by: Sequence[str] = (), allow_mixed: bool = False
              ) -> tuple[pd.DataFrame, pd.DataFrame, list[str], float]:
    """Every result row of the runs (:data:`TREND_COLUMNS` and ``by``, with ``run_id`` and ``run_date``)
    read through the ``trend_results`` view, the manifests, the identity problems
    (:func:`identity_problems`) and the seconds the read took. Mixed judge or rubric ids raise
    :class:`~axon_eval.summaries.MixedResultsError` unless ``allow_mixed``."""
    con, manifests = open_runs(run_dirs, by=by)
    try:
        problems = identity_problems(con)
        if problems and not allow_mixed:
            raise MixedResultsError("runs mix " + " and ".join(problems) + "; a trend across a judge or rubric "
                                    "change measures the change: pass allow_mixed=True (--allow-mixed) to join them knowingly")
        t0 = time.perf_counter()
        rel = con.sql("SELECT * FROM trend_results")
        table = rel.to_arrow_table() if hasattr(rel, "to_arrow_table") else rel.arrow()
        # strings stay Arrow-backed: no Python object per cell (the read of 2,000,000 rows stays in seconds)
        rows = table.to_pandas(types_mapper=_ARROW_STRINGS.get)
        read_seconds = time.perf_counter() - t0
    finally:
        con.close()
    return rows, manifests, problems, read_seconds


def trend(run_dirs: Iterable[str | Path], *, by: str | None = None, allow_mixed: bool = False,
          n_boot: int = N_BOOT, seed: int | None = SEED, confidence: float = CONFIDENCE) -> pd.DataFrame:
    """Every headline figure of every run (and ``by`` group), one row each: ``run_dir``, ``run_id``, ``run_date``,
    [``by``], ``figure``, ``kind``, ``estimate``, ``lo``, ``hi``, ``n``, ``n_clusters``, ``method``,
    ``note``, and the run's ``simulated``, ``local_server`` and ``judge_disclosure``; shares as fractions.
    Raises :class:`~axon_eval.summaries.MixedResultsError` when the runs mix judge, prompt or rubric ids,
    unless ``allow_mixed`` (then ``attrs["mixed"]`` says what is mixed). ``attrs``: ``read_seconds``,
    ``n_runs``, ``n_rows``, ``covers``, ``seed``, ``n_boot``, ``confidence``, ``mixed``, ``by``, and
    ``simulated_runs`` / ``local_server_runs`` (the run ids of a simulated judge / a local server, in
    run-date order)."""
    if by is not None and by not in TREND_BY:
        raise ValueError(f"by must be one of {TREND_BY} or None, got {by!r}")
    groups = (by,) if by else ()
    rows, manifests, problems, read_seconds = read_runs(run_dirs, by=groups, allow_mixed=allow_mixed)
    keys = ["run_dir", "run_id", "run_date", *groups]  # run_dir: two folders may share a run id
    parts = []
    for key, frame in rows.groupby(keys, sort=False, dropna=False):
        table = headline_table(frame.drop(columns=keys), n_boot=n_boot, seed=seed, confidence=confidence,
                                   allow_mixed=True)
        parts.append(table.assign(**dict(zip(keys, key, strict=True))))
    columns = [*keys, "figure", "kind", "estimate", "lo", "hi", "n", "n_clusters", "method", "note"]
    out = pd.concat(parts, ignore_index=True)[columns] if parts else pd.DataFrame(columns=columns)
    out = out.join(manifests.set_index("run_dir")[list(DISCLOSURE_COLUMNS)], on="run_dir")
    order = {r: i for i, r in enumerate(manifests["run_dir"])}
    out = out.assign(_order=out["run_dir"].map(order)).sort_values(["_order", *groups], kind="stable") \
        .drop(columns="_order").reset_index(drop=True)
    out.attrs.update({"read_seconds": read_seconds, "n_runs": len(manifests), "n_rows": len(rows),
                      "covers": INTERVAL_COVERS, "seed": seed, "n_boot": n_boot, "confidence": confidence,
                      "mixed": "; ".join(problems) if problems else None, "by": by,
                      "simulated_runs": manifests.loc[manifests["simulated"], "run_id"].tolist(),
                      "local_server_runs": manifests.loc[manifests["local_server"], "run_id"].tolist()})
    return out


def wide(table: pd.DataFrame, figures: Sequence[str] = ("mean score", "share good", "share partial", "share poor")) -> pd.DataFrame:
    """A table for people: one row per run (and group), one column per figure as ``estimate (lo to hi)``
    (:func:`axon_eval.display.fmt_estimate`, as every headline reads; shares as percentages), n, and
    ``judge_disclosure`` (``"SIMULATED"``, ``"local server, not the provider"``, both, or ``""``) when the
    trend carries it."""
    keys = [c for c in ("run_dir", "run_id", "run_date", *TREND_BY) if c in table.columns]
    sel = table[table["figure"].isin(figures)].copy()
    sel["text"] = [fmt_estimate(r.estimate, r.lo, r.hi, share=r.kind == "share") for r in sel.itertuples(index=False)]
    out = sel.pivot_table(index=keys, columns="figure", values="text", aggfunc="first", sort=False)[list(figures)]
    n = sel[sel["figure"] == figures[0]].set_index(keys)["n"]
    out["n"] = n
    out = out.reset_index()
    if "judge_disclosure" in table.columns and "run_dir" in out.columns:
        label = table.drop_duplicates("run_dir").set_index("run_dir")["judge_disclosure"]
        out["judge_disclosure"] = out["run_dir"].map(label).fillna("")
    return out


#: How many run ids a headline of :func:`disclosure_headlines` names before ``and N more``.
HEADLINE_RUNS_SHOWN = 5


def _named(run_ids: Sequence[str]) -> str:
    shown = ", ".join(run_ids[:HEADLINE_RUNS_SHOWN])
    more = len(run_ids) - HEADLINE_RUNS_SHOWN
    return shown + (f" and {more} more" if more > 0 else "")


def disclosure_headlines(table: pd.DataFrame) -> list[str]:
    """The headline lines of a trend (from ``attrs["simulated_runs"]`` / ``attrs["local_server_runs"]``,
    see :func:`trend`): one saying how many of its runs a SIMULATED judge judged and which, one saying how
    many were judged against a local server instead of the provider and which. Empty when neither."""
    a = table.attrs
    n_runs = a.get("n_runs", "?")
    lines = []
    simulated = list(a.get("simulated_runs") or ())
    if simulated:
        lines.append(f"SIMULATED: {len(simulated)} of {n_runs} run(s) in this trend were judged by a simulated "
                     f"judge (generated noise around another judge's verdicts, not a model's grading): "
                     f"{_named(simulated)}")
    local = list(a.get("local_server_runs") or ())
    if local:
        lines.append(f"LOCAL SERVER: {len(local)} of {n_runs} run(s) in this trend were judged against a local "
                     f"server, not the provider (not a real model's verdicts): {_named(local)}")
    return lines


def format_trend(table: pd.DataFrame) -> str:
    """The trend as text for the CLI: the headlines of a simulated judge or a local server
    (:func:`disclosure_headlines`), the wide table (with the ``judge_disclosure`` column when a run has
    one), how long the read took, and what intervals cover."""
    people = wide(table).drop(columns="run_dir", errors="ignore")
    if "judge_disclosure" in people.columns and not people["judge_disclosure"].astype(bool).any():
        people = people.drop(columns="judge_disclosure")
    lines = [*disclosure_headlines(table), people.to_string(index=False)]
    a = table.attrs
    if a.get("mixed"):
        lines.append(f"MIXED RUNS: {a['mixed']} (joined because allow_mixed was set)")
    lines.append(f"{a.get('n_runs', '?')} run(s), {a.get('n_rows', 0):,} result rows read by DuckDB in "
                 f"{a.get('read_seconds', float('nan')):.2f} s; intervals {a.get('confidence', CONFIDENCE):.0%}, "
                 f"seed {a.get('seed')}, {a.get('n_boot')} resamples.")
    lines.append(a.get("covers", INTERVAL_COVERS))
    return "\n".join(lines)
