"""Figures of study 09: the three estimates side by side, and a trend across runs.

Matplotlib figures from the frames of :mod:`axon_eval.stats.estimates` and :mod:`axon_eval.runs.trend`;
built without ``pyplot`` as :mod:`axon_eval.plots` does; saving is :func:`axon_eval.plots.save_figure`'s job.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd
from matplotlib.figure import Figure

#: (column prefix, legend label, colour) of the three estimates.
ESTIMATES: tuple[tuple[str, str, str], ...] = (
    ("judge", "judge only", "#888888"),
    ("labels", "labels only", "#d08c2b"),
    ("ppi", "PPI++", "#2b6cb0"),
)


def corrected_figure(corrected: pd.DataFrame, full_labels: dict[str, float] | None = None, *, note: str = "") -> Figure:
    """Three panels (mean score 0-100; band shares in %; dimension means 0-10), each figure with the
    judge-only, labels-only and PPI++ estimates and intervals side by side, and the all-labels value as a
    black tick when known."""
    panels = [("mean score", corrected[corrected["figure"] == "mean score"], 1.0),
              ("band shares (%)", corrected[corrected["figure"].str.startswith("share ")], 100.0),
              ("dimension means (0-10)", corrected[corrected["figure"].str.startswith("mean ") &
                                                   (corrected["figure"] != "mean score")], 1.0)]
    fig = Figure(figsize=(13, 4.2))
    axes = fig.subplots(1, 3, gridspec_kw={"width_ratios": [1, 3, 4]})
    for ax, (title, frame, scale) in zip(axes, panels, strict=True):
        for j, (prefix, label, colour) in enumerate(ESTIMATES):
            x = [i + (j - 1) * 0.22 for i in range(len(frame))]
            est = frame[f"{prefix}_estimate"].to_numpy() * scale
            lo = frame[f"{prefix}_lo"].to_numpy() * scale
            hi = frame[f"{prefix}_hi"].to_numpy() * scale
            ax.errorbar(x, est, yerr=[est - lo, hi - est], fmt="o", color=colour, label=label, capsize=3)
        if full_labels:
            for i, f in enumerate(frame["figure"]):
                v = full_labels.get(f, math.nan)
                if math.isfinite(v):
                    ax.plot([i - 0.35, i + 0.35], [v * scale] * 2, color="black", lw=1.5,
                            label="all labels" if i == 0 else None)
        ax.set_xticks(range(len(frame)), [f.removeprefix("share ").removeprefix("mean ") for f in frame["figure"]],
                      rotation=20)
        ax.set_title(title)
        ax.grid(axis="y", alpha=0.3)
    axes[0].legend(fontsize=8, loc="lower left")
    fig.suptitle("Headline figures three ways" + (f" -- {note}" if note else ""), fontsize=10)
    fig.tight_layout()
    return fig


#: Colour of the label beside a point whose run's judge was simulated or a local server.
DISCLOSURE_COLOUR = "#b00020"


def trend_figure(table: pd.DataFrame, figures: Sequence[str] = ("mean score", "share poor"), *, by: str | None = None,
                 note: str = "") -> Figure:
    """One panel per figure: its estimate per run date with the interval as error bars (shares in %),
    one line per ``by`` group when given. A point whose run's judge was simulated or a local server (the
    trend's ``judge_disclosure`` column, :func:`axon_eval.runs.disclosure.judge_disclosure`) carries that
    label in red above it, and the title says how many runs are so marked."""
    fig = Figure(figsize=(5.5 * len(figures), 3.8))
    axes = fig.subplots(1, len(figures), squeeze=False)
    disclosed = table["judge_disclosure"].fillna("").astype(str) if "judge_disclosure" in table.columns \
        else pd.Series("", index=table.index)
    for ax, figure in zip(axes[0], figures, strict=True):
        sel = table[table["figure"] == figure]
        scale = 100.0 if figure.startswith("share ") else 1.0
        groups = sel.groupby(by, sort=True) if by else [("all", sel)]
        _date_limits(ax, pd.to_datetime(sel["run_date"]))
        for name, g in groups:
            dates = pd.to_datetime(g["run_date"])
            est, lo, hi = (g[c].to_numpy(dtype=float) * scale for c in ("estimate", "lo", "hi"))
            ax.errorbar(dates, est, yerr=[est - lo, hi - est], fmt="o-", capsize=3, label=str(name))
            for date, value, label in zip(dates, est, disclosed.loc[g.index], strict=True):
                if label:
                    ax.annotate(label, (date, value), textcoords="offset points", xytext=(0, 9), ha="center",
                                fontsize=7, color=DISCLOSURE_COLOUR)
        ax.set_title(figure + (" (%)" if scale == 100 else ""))
        ax.grid(alpha=0.3)
        ax.tick_params(axis="x", rotation=20)
        if by:
            ax.legend(fontsize=8)
    title = "Headline figures per run date, with intervals" + (f" -- {note}" if note else "")
    marked = _disclosure_title(table, disclosed)
    fig.suptitle(title + (f"\n{marked}" if marked else ""), fontsize=10,
                 color=DISCLOSURE_COLOUR if marked else "black")
    fig.tight_layout()
    return fig


#: Least room on each side of a trend panel's dates: one run (or runs of one day) get a few days, not the
#: years matplotlib's date locator gives a single point.
DATE_PAD = pd.Timedelta(days=1)


def _date_limits(ax, dates: pd.Series) -> None:
    """x limits around the dates of a panel: their span plus 8% (at least :data:`DATE_PAD`) each side, and
    concise date ticks."""
    from matplotlib.dates import AutoDateLocator, ConciseDateFormatter

    dates = dates.dropna()
    if dates.empty:
        return
    first, last = dates.min(), dates.max()
    pad = max((last - first) * 0.08, DATE_PAD)
    ax.set_xlim(first - pad, last + pad)
    locator = AutoDateLocator(maxticks=6)
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(ConciseDateFormatter(locator))


def _disclosure_title(table: pd.DataFrame, disclosed: pd.Series) -> str:
    """``SIMULATED judge: k of n run(s); local server, not the provider: j of n run(s) (marked)``, the
    parts that apply, or ``""``."""
    from ..runs.disclosure import LOCAL_SERVER_LABEL, SIMULATED_LABEL

    if "run_dir" not in table.columns:
        return ""
    labels = disclosed.groupby(table["run_dir"], sort=False).first()
    parts = [f"{what}: {int(labels.str.contains(text, regex=False).sum())} of {len(labels)} run(s)"
             for what, text in ((f"{SIMULATED_LABEL} judge", SIMULATED_LABEL), (LOCAL_SERVER_LABEL, LOCAL_SERVER_LABEL))
             if labels.str.contains(text, regex=False).any()]
    return "; ".join(parts) + " (marked)" if parts else ""
