"""Decisions a CI job can wait on: thresholds and non-inferiority, decided on interval bounds.

A gate never decides on a point estimate: a figure that happens to land above a threshold in this
week's sample may not be above it in the traffic the sample stands for. Each check uses one end of the
figure's two-sided interval at ``confidence`` (0.95 by default), which is a **one-sided test at
(1 + confidence) / 2** (97.5%):

* **threshold** (:func:`threshold_gate`): a minimum passes when the interval's lower bound is at least
  the threshold (``lo >= minimum``); a maximum when its upper bound is at most the threshold
  (``hi <= maximum``). An interval that cannot be computed fails the check, saying why.
* **non-inferiority** (:func:`non_inferiority_gate`) of run B against baseline A with a margin ``m``:
  for a figure where higher is better (the mean score, the share good) B passes when the lower bound of
  ``B - A`` is at least ``-m``; where lower is better (the share poor) when the upper bound is at most
  ``+m``. It fails when the interval says B may be worse than A by more than the margin (Wellek 2010,
  "Testing Statistical Hypotheses of Equivalence and Noninferiority", ch. 2).

**Several figures at once need no multiplicity correction.** The gate passes only when *every* check
passes, so it is an intersection-union test (Berger 1982, Technometrics 24:295; Berger & Hsu 1996,
Statistical Science 11:283): the chance of passing a gate that should fail is at most the chance of
passing the one check whose null hypothesis is true, which is at most ``(1 - confidence) / 2``. A
correction (Bonferroni) would make the gate needlessly strict. Pure: intervals in, a typed decision out.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import pandas as pd

from .intervals import CONFIDENCE

#: Figures where a lower value is better (their non-inferiority bound is the upper one).
LOWER_IS_BETTER: frozenset[str] = frozenset({"share poor", "share partial", "share capped"})


def one_sided_level(confidence: float) -> float:
    """The one-sided level of a bound of a two-sided ``confidence`` interval: ``(1 + confidence) / 2``."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    return (1 + confidence) / 2


@dataclass(frozen=True)
class GateCheck:
    """One gated figure: the ``rule`` (``"min"``, ``"max"`` or ``"non-inferiority"``), the ``threshold``
    (for non-inferiority the margin), the ``estimate`` and its interval ``lo`` to ``hi``, the ``bound``
    the decision used (``"lower"`` or ``"upper"``), ``passed``, the interval's ``method`` and ``n``,
    a ``reason`` in words, and a ``note`` every output carries beside the verdict (the interval's own
    note, and the SIMULATED coverage of a human-corrected interval at its n, when the row has them)."""

    figure: str
    rule: str
    threshold: float
    estimate: float
    lo: float
    hi: float
    bound: str
    passed: bool
    method: str
    n: int
    reason: str
    note: str = ""

    @property
    def bound_value(self) -> float:
        return self.lo if self.bound == "lower" else self.hi


@dataclass(frozen=True)
class GateDecision:
    """Every check and the decision: ``passed`` when every check passed (and at least one was asked).
    ``statistic`` names what was gated, ``confidence`` the two-sided level of the intervals and
    ``one_sided`` the level of each bound; ``corrected`` whether the intervals are human-corrected."""

    checks: tuple[GateCheck, ...]
    statistic: str
    confidence: float
    corrected: bool
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def passed(self) -> bool:
        return bool(self.checks) and all(c.passed for c in self.checks)

    @property
    def one_sided(self) -> float:
        return one_sided_level(self.confidence)

    @property
    def failed(self) -> tuple[GateCheck, ...]:
        return tuple(c for c in self.checks if not c.passed)

    def as_dict(self) -> dict[str, Any]:
        return {"passed": self.passed, "statistic": self.statistic, "confidence": self.confidence,
                "one_sided_level": self.one_sided, "corrected": self.corrected,
                "checks": [asdict(c) for c in self.checks], "notes": list(self.notes)}


def _finite(x: Any) -> bool:
    try:
        return math.isfinite(float(x))
    except (TypeError, ValueError):
        return False


def fmt_figure(figure: str, x: float, *, signed: bool = False) -> str:
    """A figure's value for people by the one display rule (:mod:`axon_eval.display`): a share as a
    percentage (:func:`~axon_eval.display.fmt_share`), or in percentage points ``"+2.1 pp"`` when
    ``signed`` (a difference); the mean score and dimensions in points, three significant digits."""
    from ..display import fmt_number, fmt_share, fmt_signed

    if x is None or not _finite(x):
        return "n/a"
    if figure.startswith("share "):
        return f"{fmt_signed(x, share=True)} pp" if signed else fmt_share(x)
    return fmt_signed(x) if signed else fmt_number(x)


def fmt_figure_against(figure: str, x: float, limit: float, *, signed: bool = False) -> tuple[str, str]:
    """A bound and the threshold it is compared with, as :func:`fmt_figure` reads them, with more digits
    only when the rule would show the two alike (:func:`axon_eval.display.fmt_compared`)."""
    from ..display import fmt_compared

    share = figure.startswith("share ")
    value, threshold = fmt_compared(x, limit, share=share, signed=signed)
    unit = " pp" if share and signed else ""
    return value + unit, threshold + unit


def _row(intervals: pd.DataFrame, figure: str) -> pd.Series:
    table = intervals.set_index("figure")
    if figure not in table.index:
        raise ValueError(f"no figure {figure!r} to gate; the run's figures are {list(table.index)}")
    return table.loc[figure]


def _check(figure: str, rule: str, threshold: float, row: pd.Series, bound: str, ok: bool, reason: str) -> GateCheck:
    parts = [row.get("note", ""), row.get("coverage_note", "")] if ok or _finite(row["lo"]) else [row.get("coverage_note", "")]
    note = "; ".join(p for p in parts if isinstance(p, str) and p)
    return GateCheck(figure, rule, float(threshold), float(row["estimate"]), float(row["lo"]), float(row["hi"]),
                     bound, ok, str(row.get("method", "")), int(row.get("n", 0) or 0), reason, note)


def threshold_gate(intervals: pd.DataFrame, *, minimums: Mapping[str, float] | None = None,
                   maximums: Mapping[str, float] | None = None, statistic: str = "",
                   confidence: float = CONFIDENCE, corrected: bool = False) -> GateDecision:
    """Gate one run's figures on thresholds (module docstring). ``intervals``: one row per figure with
    ``figure``, ``estimate``, ``lo``, ``hi`` (and ``method``, ``n``, ``coverage_note``), e.g.
    :func:`axon_eval.stats.gate_intervals.gate_table`; shares are fractions, the mean score points.
    An unknown figure is a ``ValueError`` naming the figures there are."""
    checks = []
    level = one_sided_level(confidence)
    for rule, limits in (("min", minimums or {}), ("max", maximums or {})):
        for figure, threshold in limits.items():
            if not _finite(threshold):
                raise ValueError(f"{rule} threshold for {figure!r} must be a finite number, got {threshold!r}")
            row = _row(intervals, figure)
            bound = "lower" if rule == "min" else "upper"
            value = row["lo"] if rule == "min" else row["hi"]
            if not _finite(value):
                checks.append(_check(figure, rule, threshold, row, bound, False,
                                     f"no interval ({row.get('note', '') or 'not computable'}): cannot show it"))
                continue
            ok = value >= threshold if rule == "min" else value <= threshold
            sign = (">=" if ok else "<") if rule == "min" else ("<=" if ok else ">")
            shown, limit_shown = fmt_figure_against(figure, value, threshold)
            checks.append(_check(figure, rule, threshold, row, bound, bool(ok),
                                 f"{bound} {level:.1%} bound {shown} {sign} {limit_shown}"))
    return GateDecision(tuple(checks), statistic or "each figure's interval bound", confidence, corrected)


def non_inferiority_gate(differences: pd.DataFrame, margins: Mapping[str, float], *, statistic: str = "",
                         confidence: float = CONFIDENCE, corrected: bool = False) -> GateDecision:
    """Non-inferiority of B against A (module docstring). ``differences``: one row per figure of
    ``B - A`` with ``figure``, ``estimate``, ``lo``, ``hi``; ``margins``: figure -> margin (>= 0, in the
    figure's units: points for the mean score, fractions for shares)."""
    checks = []
    level = one_sided_level(confidence)
    for figure, margin in margins.items():
        if not _finite(margin) or float(margin) < 0:
            raise ValueError(f"margin for {figure!r} must be a number >= 0, got {margin!r}")
        row = _row(differences, figure)
        lower_better = figure in LOWER_IS_BETTER
        bound = "upper" if lower_better else "lower"
        value = row["hi"] if lower_better else row["lo"]
        if not _finite(value):
            checks.append(_check(figure, "non-inferiority", margin, row, bound, False,
                                 f"no interval ({row.get('note', '') or 'not computable'}): cannot show it"))
            continue
        ok = value <= margin if lower_better else value >= -margin
        shown, limit = fmt_figure_against(figure, value, margin if lower_better else -margin, signed=True)
        sign = ("<=" if ok else ">") if lower_better else (">=" if ok else "<")
        reason = (f"{bound} {level:.1%} bound of B - A {shown} {sign} {limit}: B "
                  + ("is not worse by more than the margin" if ok else "may be worse by more than the margin"))
        checks.append(_check(figure, "non-inferiority", margin, row, bound, bool(ok), reason))
    return GateDecision(tuple(checks), statistic or "the interval of B - A", confidence, corrected)


def uninformative_figures(table: pd.DataFrame, figures: Sequence[str]) -> list[str]:
    """The reasons a human-corrected gate must not decide on ``figures`` of ``table`` (rows of
    :func:`axon_eval.calibration.corrected.corrected_headlines`: ``figure``, ``n``, ``kind``,
    ``simulated_coverage``): fewer than :data:`~axon_eval.stats.ppi.MIN_INFORMATIVE_LABELS` labels ("not
    informative"), or a share whose intervals' SIMULATED coverage at that n is below
    :data:`~axon_eval.stats.ppi.COVERAGE_WARNING_BELOW` (a share's rectifier is mostly 0 at few labels,
    so its interval is too narrow there). Empty when every figure may be gated."""
    from .ppi import COVERAGE_WARNING_BELOW, MIN_INFORMATIVE_LABELS

    reasons = []
    by = table.set_index("figure")
    for figure in figures:
        if figure not in by.index:
            continue
        r = by.loc[figure]
        n = int(r.get("n", 0) or 0)
        coverage = r.get("simulated_coverage", math.nan)
        if n < MIN_INFORMATIVE_LABELS:
            reasons.append(f"{figure}: {n} labelled segment(s), fewer than {MIN_INFORMATIVE_LABELS}: not informative")
        elif r.get("kind", "") == "share" and _finite(coverage) and float(coverage) < COVERAGE_WARNING_BELOW:
            reasons.append(f"{figure}: at {n} labels its interval's SIMULATED coverage is {float(coverage):.0%}, below "
                           f"{COVERAGE_WARNING_BELOW:.0%}: label more before gating a share on them")
    return reasons
