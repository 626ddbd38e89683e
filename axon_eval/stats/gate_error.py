"""SIMULATED one-sided error of the gate's decisions: how often a run that sits exactly at the threshold passes.

A gate's promise is a one-sided error of at most ``(1 - confidence) / 2`` (2.5% at 95%); the house
allows :data:`~axon_eval.stats.gate_intervals.MAX_GATE_ERROR` (3%) at every n the gate accepts. Each cell
of :func:`gate_error_table` draws ``replicates`` samples of ``n`` turns from a population whose true
figure is **exactly** the threshold (or, for non-inferiority, B exactly one margin worse than A) and
counts the samples that pass:

* **threshold on a mean** (``min mean``, ``max mean``): a population of turns, each its segments' sum
  ``S_t`` and count ``N_t`` (for instance a bundled set judged by the offline judge); the true mean is
  ``sum S_t / sum N_t``; a sample draws ``n`` turns with replacement and passes ``min`` when the lower
  bound of :func:`~axon_eval.stats.gate_intervals.hall_bounds` is at least the truth (``max``: the
  upper bound at most).
* **threshold on a share** (``max share``, ``min share``): a population of turns with their counts of
  segments in the share, the same way, bounds by :func:`~axon_eval.stats.gate_intervals.share_bounds`.
* **non-inferiority** (``non-inferiority mean``, ``non-inferiority share``): for the mean, a population
  of paired differences ``B - A`` moved so that their mean is exactly the margin on the worse side; for
  a share where lower is better (the share poor), pairs moved into the band with probability
  ``q + margin`` and out of it with ``q``; a sample passes when its bound on the better side clears the
  margin (the intervals of :func:`~axon_eval.stats.gate_intervals.paired_gate_table`).

The error of a cell is ``passes / replicates``, with its Monte Carlo standard error
``sqrt(e (1 - e) / replicates)`` (0.16 percentage points at 2.5% and 10,000 replicates). Every cell is
SIMULATED and says so. Seeded (one ``numpy.random.default_rng(seed)`` stream per cell, from
``(seed, cell index)``). Pure: arrays in, a DataFrame out.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .gate_intervals import (MAX_GATE_ERROR, MIN_GATE_TURNS, MIN_MEAN_GATE_TURNS, MIN_PAIRED_TURNS, hall_bounds,
                             paired_share_bounds, share_bounds)
from .intervals import CONFIDENCE

#: The sample sizes (turns) of the table, from below the gate's minimum to a large run.
GATE_ERROR_NS: tuple[int, ...] = (5, 10, 15, 20, 30, 50, 100, 200, 300)
#: Replicates per cell (Monte Carlo standard error about 0.16 percentage points at a 2.5% error).
GATE_ERROR_REPLICATES = 10_000
#: The rules of the table.
RULES: tuple[str, ...] = ("min mean", "max mean", "max share", "min share", "non-inferiority mean",
                          "non-inferiority share")


@dataclass(frozen=True)
class TurnPopulation:
    """A population to draw turns from: each turn's ``sums`` (of the figure over its segments) and
    ``sizes`` (segments with a value); for a share, ``sums`` counts the segments in the share."""

    name: str
    sums: np.ndarray
    sizes: np.ndarray
    moved_out: np.ndarray | None = None

    @property
    def truth(self) -> float:
        moved_out = 0.0 if self.moved_out is None else float(self.moved_out.sum())
        return float((self.sums.sum() - moved_out) / self.sizes.sum())

    @classmethod
    def from_segments(cls, name: str, values: Sequence[float], clusters: Sequence[object]) -> TurnPopulation:
        """Build from one value per segment and its turn id (``NaN`` values left out)."""
        x = np.asarray(values, dtype=np.float64)
        c = pd.Series(np.asarray(clusters, dtype=object))[np.isfinite(x)]
        x = x[np.isfinite(x)]
        codes, uniques = pd.factorize(c, sort=False)
        return cls(name, np.bincount(codes, weights=x, minlength=len(uniques)),
                   np.bincount(codes, minlength=len(uniques)).astype(np.float64))

    @classmethod
    def bernoulli(cls, p: float, size: int = 10_000) -> TurnPopulation:
        """Independent segments with share exactly ``p`` (``round(p * size)`` of ``size`` turns)."""
        k = int(round(p * size))
        return cls(f"independent, p = {k / size:g}", np.r_[np.ones(k), np.zeros(size - k)], np.ones(size))


def paired_population(name: str, differences: Sequence[float], clusters: Sequence[object], margin: float,
                      worse: str = "lower") -> TurnPopulation:
    """Paired differences ``B - A`` (one per pair, clustered by A's turn) moved by a constant so that
    their mean is exactly one ``margin`` on the worse side: ``-margin`` when lower is worse (the mean
    score, the share good), ``+margin`` when higher is worse (the share poor)."""
    d = np.asarray(differences, dtype=np.float64)
    target = -margin if worse == "lower" else margin
    d = d - d[np.isfinite(d)].mean() + target
    return TurnPopulation.from_segments(name, d, clusters)


def discrete_difference_population(p_worse: float, p_better: float, size: int = 10_000) -> TurnPopulation:
    """Independent pairs of a share where lower is better (the share poor): a pair moved into the band
    (+1) with probability ``p_worse``, out of it (-1) with ``p_better``, else 0 (exact shares of ``size``
    pairs). ``sums`` counts the pairs moved in, ``moved_out`` those moved out; the truth is
    ``p_worse - p_better``."""
    up, down = int(round(p_worse * size)), int(round(p_better * size))
    moved_in = np.r_[np.ones(up), np.zeros(size - up)]
    moved_out = np.r_[np.zeros(up), np.ones(down), np.zeros(size - up - down)]
    return TurnPopulation(f"pairs +1 {up / size:g} / -1 {down / size:g}", moved_in, np.ones(size), moved_out)


def cell_error(rule: str, pop: TurnPopulation, n: int, *, replicates: int = GATE_ERROR_REPLICATES,
               seed: int = 0, confidence: float = CONFIDENCE, margin: float = 0.0) -> float:
    """The SIMULATED share of ``replicates`` samples of ``n`` turns of ``pop`` that pass ``rule``
    (:data:`RULES`) when the truth is exactly at the threshold (module docstring)."""
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(pop.sums), size=(replicates, n))
    sums, sizes = pop.sums[idx], pop.sizes[idx]
    truth = pop.truth
    if rule in ("min mean", "max mean"):
        _, lo, hi = hall_bounds(sums, sizes, confidence)
        passed = lo >= truth if rule == "min mean" else hi <= truth
    elif rule in ("max share", "min share"):
        _, lo, hi = share_bounds(sums, sizes, confidence)
        passed = hi <= truth if rule == "max share" else lo >= truth
    elif rule == "non-inferiority share":
        if pop.moved_out is None:
            raise ValueError(f"population {pop.name!r} has no pairs moved out; build it with "
                             "discrete_difference_population")
        _, lo, hi = paired_share_bounds(sums, pop.moved_out[idx], sizes, confidence)
        passed = hi <= margin  # the share poor: B exactly one margin worse
    elif rule == "non-inferiority mean":
        _, lo, hi = hall_bounds(sums, sizes, confidence)
        # the population's mean is one margin on the worse side: lower worse -> -margin, else +margin
        passed = lo >= -margin if truth < 0 else hi <= margin
    else:
        raise ValueError(f"unknown rule {rule!r}; expected one of {list(RULES)}")
    return float(np.mean(np.nan_to_num(passed.astype(float), nan=0.0)))


def gate_error_table(cells: Mapping[str, Sequence[tuple[TurnPopulation, float]]], *,
                     ns: Sequence[int] = GATE_ERROR_NS, replicates: int = GATE_ERROR_REPLICATES, seed: int = 0,
                     confidence: float = CONFIDENCE, min_turns: int = MIN_GATE_TURNS,
                     min_paired: int = MIN_PAIRED_TURNS, min_mean: int = MIN_MEAN_GATE_TURNS) -> pd.DataFrame:
    """The SIMULATED error of each rule at each n: ``cells`` maps a rule of :data:`RULES` to its
    populations, each with its margin (0 for a threshold). One row per (rule, population, n):
    ``rule``, ``population``, ``n``, ``accepted`` (``n`` at least ``min_mean`` for a rule on a mean,
    ``min_paired`` for non-inferiority of a share, ``min_turns`` for a threshold on a share: below it the
    gate refuses),
    ``error`` (fraction), ``mc_se``, ``within_goal`` (``error <= MAX_GATE_ERROR``), ``simulated``
    (always True), ``replicates``, ``seed``."""
    rows = []
    index = 0
    for rule, pops in cells.items():
        for pop, margin in pops:
            if rule in ("min share", "max share", "min mean", "max mean") and pop.truth in (0.0, 1.0):
                continue  # a share of exactly 0 or 1 at the threshold is not a test: no sample is beyond it
            for n in ns:
                e = cell_error(rule, pop, int(n), replicates=replicates, seed=seed * 1_000_003 + index,
                               confidence=confidence, margin=margin)
                index += 1
                least = (min_mean if rule.endswith(" mean") else
                         min_paired if rule.startswith("non-inferiority") else min_turns)
                rows.append({"rule": rule, "population": pop.name, "n": int(n), "accepted": int(n) >= least,
                             "error": e, "mc_se": math.sqrt(e * (1 - e) / replicates),
                             "within_goal": e <= MAX_GATE_ERROR, "simulated": True, "replicates": replicates,
                             "seed": seed})
    return pd.DataFrame(rows)


def worst_by_n(table: pd.DataFrame) -> pd.DataFrame:
    """The largest SIMULATED error of each rule at each n over its populations (one row per rule and
    n: ``rule``, ``n``, ``accepted``, ``worst_error``, ``population`` where it was largest)."""
    idx = table.groupby(["rule", "n"], sort=False)["error"].idxmax()
    worst = table.loc[idx, ["rule", "n", "accepted", "error", "population"]].rename(columns={"error": "worst_error"})
    return worst.reset_index(drop=True)


#: The non-inferiority margins of the table, in points for the mean score and a fraction for the share poor.
MEAN_MARGIN = 2.0
SHARE_MARGIN = 0.03
#: Independent shares at the threshold (each a population of its own).
BERNOULLI_SHARES: tuple[float, ...] = (0.02, 0.05, 0.10, 0.20, 0.50, 0.80)
#: Pairs moved out of the share poor (``q``); ``q + SHARE_MARGIN`` moved in.
PAIRED_SHARE_BACKGROUND: tuple[float, ...] = (0.0, 0.01, 0.03, 0.10, 0.20)
#: Share of pairs whose score collapses in the "collapse" regression model.
COLLAPSE_SHARE = 0.10


def gate_error_cells(results: Mapping[str, pd.DataFrame], *, seed: int = 0
                     ) -> dict[str, list[tuple[TurnPopulation, float]]]:
    """The populations of the SIMULATED gate error table from judged runs (``results``: a name ->
    a run's results frame, e.g. each bundled set judged by the offline judge):

    * ``min mean`` / ``max mean``: each run's turns with their segments' scores;
    * ``max share`` / ``min share``: each run's turns with their counts of poor and of good segments,
      and independent segments at each share of :data:`BERNOULLI_SHARES`;
    * ``non-inferiority mean``: per run, B - A as the score of a random other segment minus the
      segment's own (a reshuffled run; seeded), and a regression where :data:`COLLAPSE_SHARE` of the
      segments fall to 20 points (the rest unchanged), each moved to a mean of ``-MEAN_MARGIN``;
    * ``non-inferiority share``: independent pairs moved into the share poor with probability
      ``q + SHARE_MARGIN`` and out with ``q``, for ``q`` in :data:`PAIRED_SHARE_BACKGROUND`.
    """
    from .intervals import figure_values, headline_segments

    cells: dict[str, list[tuple[TurnPopulation, float]]] = {rule: [] for rule in RULES}
    rng = np.random.default_rng(seed)
    for name, frame in results.items():
        seg = headline_segments(frame)
        clusters = seg["cluster"].to_numpy(dtype=object)
        score = figure_values(seg, "mean score")
        for rule in ("min mean", "max mean"):
            cells[rule].append((TurnPopulation.from_segments(name, score, clusters), 0.0))
        for band in ("poor", "good"):
            pop = TurnPopulation.from_segments(f"{name}, share {band}", figure_values(seg, f"share {band}"), clusters)
            for rule in ("max share", "min share"):
                cells[rule].append((pop, 0.0))
        keep = np.isfinite(score)
        shuffled = rng.permutation(score[keep]) - score[keep]
        cells["non-inferiority mean"].append(
            (paired_population(f"{name}, reshuffled", shuffled, clusters[keep], MEAN_MARGIN), MEAN_MARGIN))
        collapse = np.where(rng.random(int(keep.sum())) < COLLAPSE_SHARE, 20.0 - score[keep], 0.0)
        cells["non-inferiority mean"].append(
            (paired_population(f"{name}, {COLLAPSE_SHARE:.0%} collapse", collapse, clusters[keep], MEAN_MARGIN),
             MEAN_MARGIN))
    for p in BERNOULLI_SHARES:
        for rule in ("max share", "min share"):
            cells[rule].append((TurnPopulation.bernoulli(p), 0.0))
    for q in PAIRED_SHARE_BACKGROUND:
        cells["non-inferiority share"].append((discrete_difference_population(q + SHARE_MARGIN, q), SHARE_MARGIN))
    return cells
