"""The headline figures of a run with their intervals, as lines for the CLI summary:
the mean score and the share in each band, each with its 95% interval and n, then the one sentence of
what the intervals cover (:data:`axon_eval.stats.intervals.INTERVAL_COVERS`); :func:`headline_lines`,
the two lines ``python -m axon_eval run`` prints after an evaluation's run folder, and
:func:`headline_table_lines`, the same two lines from a headline table (``report.html`` opens with them)."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from ..stats.intervals import N_BOOT, SEED, Interval, headline_table
from ..summaries import MixedResultsError

#: The figures the CLI summary gives intervals for (the rest are in report.html and study 09).
SUMMARY_FIGURES: tuple[str, ...] = ("mean score", "share good", "share partial", "share poor")


def interval_lines(results: pd.DataFrame, figures: Sequence[str] = SUMMARY_FIGURES, *, n_boot: int = N_BOOT,
                   seed: int | None = SEED) -> list[str]:
    """``"intervals (95%, ...)"`` then one indented line per figure (``estimate (lo-hi), n = ...``; shares
    as percentages; a figure without an interval says why); nothing when no segment was judged; one line
    saying why when the results mix judges or rubrics."""
    if "status" not in results.columns or not (results["status"] == "judged").any():
        return []
    try:
        table = headline_table(results, n_boot=n_boot, seed=seed)
    except MixedResultsError as exc:
        return [f"intervals: not computed ({exc})"]
    rows = table.set_index("figure").loc[list(figures)]
    level = f"{table.attrs['confidence']:.0%}"
    lines = [f"intervals ({level}; turns resampled, seed {seed}, {n_boot} resamples; Wilson for independent shares):"]
    for figure, r in rows.iterrows():
        iv = Interval(r.estimate, r.lo, r.hi, int(r.n), int(r.n_clusters), r.method, r.confidence, note=r.note or "")
        lines.append(f"  {figure}: {iv.text(share=r.kind == 'share')}")
    lines.append(f"  {table.attrs['covers']}")
    return lines


def headline_lines(results: pd.DataFrame, *, n_boot: int = N_BOOT, seed: int | None = SEED) -> list[str]:
    """An evaluation's headline in two lines (:func:`~axon_eval.stats.intervals.headline_table`, the
    intervals every reader of a run shows, then :func:`headline_table_lines`): the mean score with its
    interval and n (segments, and turns when they differ), and the band shares with theirs; both
    prefixed ``SIMULATED`` for a simulated judge. Nothing when no segment was judged; one line saying why
    when the results mix judges or rubrics."""
    from ..summaries import is_simulated_judge

    if "status" not in results.columns or not (results["status"] == "judged").any():
        return []
    try:
        table = headline_table(results, n_boot=n_boot, seed=seed)
    except MixedResultsError as exc:
        return [f"no headline: {exc}"]
    judges = results["judge_id"].dropna().astype(str).unique() if "judge_id" in results.columns else []
    return headline_table_lines(table, simulated=is_simulated_judge(list(judges)))


def headline_table_lines(table: pd.DataFrame, *, simulated: bool = False) -> list[str]:
    """The two headline lines of a :func:`~axon_eval.stats.intervals.headline_table` (what
    :func:`headline_lines` prints and ``report.html`` opens with): ``mean score 77.5 (72.0 to 82.4), n = 97
    segments in 90 turns (95% intervals; ...)`` and ``bands: good 64% (54% to 73%), ...``, every estimate
    through :func:`axon_eval.display.fmt_estimate`; prefixed ``SIMULATED`` when ``simulated``. The
    bootstrap's seed and resamples are read from the table's ``attrs``."""
    from ..display import fmt_estimate, fmt_number, fmt_share

    rows = table.set_index("figure")
    prefix = "SIMULATED " if simulated else ""
    m = rows.loc["mean score"]
    turns = f" in {fmt_number(int(m['n_clusters']))} turns" if int(m["n_clusters"]) != int(m["n"]) else ""
    level = fmt_share(table.attrs.get("confidence", 0.95))
    seed, n_boot = table.attrs.get("seed"), table.attrs.get("n_boot")
    bands = ", ".join(f"{f.removeprefix('share ')} {fmt_estimate(rows.loc[f, 'estimate'], rows.loc[f, 'lo'], rows.loc[f, 'hi'], share=True)}"
                      for f in SUMMARY_FIGURES[1:])
    return [f"{prefix}mean score {fmt_estimate(m['estimate'], m['lo'], m['hi'])}, n = {fmt_number(int(m['n']))} "
            f"segments{turns} ({level} intervals; turns resampled, seed {seed}, {fmt_number(n_boot)} resamples)",
            f"{prefix}bands: {bands}"]
