"""Weight sensitivity: the study summary (:func:`weight_sensitivity_summary`).

One call computes everything above for a list of sizes ``d`` and returns a
:class:`WeightSensitivitySummary` whose :meth:`~WeightSensitivitySummary.to_json` gives exactly the
study keys ``worst_case_abs_delta``, ``oat_max_abs_delta``, ``band_flip_rate`` (per ``d``),
``good_below_poor`` (per ``d``: pair count and one example) and ``sobol`` (per weight: S1, ST).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ...rubric import Rubric
from .common import DEFAULT_CONCENTRATION, DEFAULT_DELTAS, Segments, _check_delta, _json_float, segments_from_results
from .designs import _check_count, box_simplex_sample, dirichlet_sample, one_at_a_time
from .pairs import GoodBelowPoor, good_below_poor
from .sobol import WeightSobol, weight_sobol
from .sweep import WeightSweep, sweep_weights
from .worst_case import WorstCase, worst_case


# =====================================================================================================
# the study summary
# =====================================================================================================
def _d_key(d: float) -> str:
    return f"{d:g}"


@dataclass(frozen=True, eq=False)
class WeightSensitivitySummary:
    """Everything study 02 reports, computed by :func:`weight_sensitivity_summary`.

    Tables for the notebook: ``oat`` (one row per one-at-a-time vector: ``perturbed``, ``step``,
    ``size``, weights, ``max_abs_delta``, ``n_band_flips``, ``kendall_tau``, ...), ``box`` (per d, the
    :class:`WeightSweep` of ``n_samples`` uniform draws), ``dirichlet`` (a :class:`WeightSweep`),
    ``worst`` (per d, :class:`WorstCase`), ``pairs`` (per d, :class:`GoodBelowPoor`), ``sobol``.
    :meth:`to_json` returns the study keys only.
    """

    rubric_id: str
    rubric_name: str
    n_segments: int
    n_excluded: int
    excluded: pd.DataFrame
    aggregate: str | None
    deltas: tuple[float, ...]
    n_samples: int
    seed: int
    oat: pd.DataFrame
    box: dict[float, WeightSweep]
    dirichlet: WeightSweep
    concentration: float
    worst: dict[float, WorstCase]
    pairs: dict[float, GoodBelowPoor]
    sobol: WeightSobol

    @property
    def worst_case_abs_delta(self) -> dict[float, float]:
        return {d: self.worst[d].max_abs_delta for d in self.deltas}

    @property
    def oat_max_abs_delta(self) -> dict[float, float]:
        return {d: float(self.oat.loc[np.isclose(self.oat["size"], d), "max_abs_delta"].max()) for d in self.deltas}

    @property
    def band_flip_rate(self) -> dict[float, float]:
        return {d: self.box[d].band_flip_rate for d in self.deltas}

    def to_json(self) -> dict[str, Any]:
        """``worst_case_abs_delta``, ``oat_max_abs_delta``, ``band_flip_rate`` (per d, keys like
        ``"0.05"``; points of score or shares), ``good_below_poor`` (per d: ``n_pairs``, ``example`` and
        context) and ``sobol`` (per weight, per output: ``S1``, ``ST``). JSON-safe (NaN -> null)."""
        return {
            "worst_case_abs_delta": {_d_key(d): _json_float(v) for d, v in self.worst_case_abs_delta.items()},
            "oat_max_abs_delta": {_d_key(d): _json_float(v) for d, v in self.oat_max_abs_delta.items()},
            "band_flip_rate": {_d_key(d): _json_float(v) for d, v in self.band_flip_rate.items()},
            "good_below_poor": {_d_key(d): self.pairs[d].to_json() for d in self.deltas},
            "sobol": self.sobol.to_json(),
        }


def weight_sensitivity_summary(results: pd.DataFrame | Segments, rubric: Rubric | None = None,
                               deltas: Sequence[float] = DEFAULT_DELTAS, n_samples: int = 1000, seed: int = 0, *,
                               aggregate: str | None = None, concentration: float = DEFAULT_CONCENTRATION,
                               sobol_base: int | None = None, sobol_delta: float | None = None,
                               **sweep_options: Any) -> WeightSensitivitySummary:
    """Study 02 in one call: one-at-a-time, box sampling, Dirichlet, exact worst cases, pair test, Sobol.

    Parameters
    ----------
    results : pandas.DataFrame or Segments
        A run's results (or :class:`Segments`); rows not ``judged`` are excluded and counted; repeated
        samples need ``aggregate`` (see :func:`segments_from_results`).
    rubric : Rubric, optional
        Nominal weights, caps and bands (default ``axon-v1``).
    deltas : sequence of float
        Perturbation sizes ``d`` (weight units): one-at-a-time steps +-d, box ``P_d``.
    n_samples : int
        Uniform draws from each ``P_d``, and Dirichlet draws.
    seed : int
        Base seed; the box draws for ``deltas[i]`` use ``[seed, i]``, the Dirichlet draws
        ``[seed, len(deltas)]``, Sobol's scrambling ``seed``.
    sobol_base : int, optional
        Saltelli base sample (power of two; default the largest power of two <= n_samples, at least 64).
    sobol_delta : float, optional
        Box half-width for Sobol (default ``max(deltas)``).
    """
    rubric = Rubric.default() if rubric is None else rubric
    segs = results if isinstance(results, Segments) else segments_from_results(results, aggregate=aggregate)
    ds = tuple(sorted({_check_delta(d) for d in deltas}))
    if not ds:
        raise ValueError("deltas must hold at least one perturbation size")
    n_samples = _check_count(n_samples, "n_samples")
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise ValueError(f"seed must be an integer, got {seed!r}")
    oat_design = one_at_a_time(rubric, ds)
    oat_sweep = sweep_weights(segs, oat_design, rubric, **sweep_options)
    box = {d: sweep_weights(segs, box_simplex_sample(rubric, d, n_samples, [int(seed), i]), rubric, **sweep_options)
           for i, d in enumerate(ds)}
    dirichlet = sweep_weights(segs, dirichlet_sample(rubric, concentration, n_samples, [int(seed), len(ds)]), rubric,
                              **sweep_options)
    worst = {d: worst_case(segs, rubric, d) for d in ds}
    pairs = {d: good_below_poor(segs, rubric, d, worst=worst[d]) for d in ds}
    base = sobol_base if sobol_base is not None else max(64, 1 << int(math.floor(math.log2(n_samples))))
    sobol = weight_sobol(segs, rubric, max(ds) if sobol_delta is None else sobol_delta, base, int(seed),
                         **sweep_options)
    return WeightSensitivitySummary(
        rubric_id=rubric.id, rubric_name=rubric.name, n_segments=segs.n_segments, n_excluded=segs.n_excluded,
        excluded=segs.excluded, aggregate=segs.aggregate, deltas=ds, n_samples=n_samples, seed=int(seed),
        oat=oat_sweep.per_vector, box=box, dirichlet=dirichlet, concentration=float(concentration), worst=worst,
        pairs=pairs, sobol=sobol)
