"""Judge drift against a frozen anchor: how far a candidate judge moves the anchor's scores (study 06).

Pure functions of the matched rows of the anchor run (A) and the candidate's re-judgement of the same
evidence (B); :func:`axon_eval.calibration.drift.judge_drift` builds the :class:`JudgeDrift` record from a
:class:`~axon_eval.runs.compare.RunComparison` (statistics know no run). The matching of segments,
the mean paired difference with its seeded bootstrap CI, the Wilcoxon signed-rank test and the band
transition matrix are :func:`~axon_eval.runs.compare.compare_runs`'s (read there); this module adds what
change control needs on top of them. For matched judged rows ``a_i`` (anchor) and ``b_i`` (candidate),
``d_i = b_i - a_i`` (points):

Bland-Altman (Bland & Altman 1986, *Lancet* i: 307-310)
    ``bias = mean(d)``; ``s = SD(d)`` (``n - 1`` denominator); limits of agreement
    ``bias -+ 1.96 s`` -- the range that about 95% of single-segment differences fall into. Their
    approximate standard errors (same paper): ``SE(bias) = s / sqrt(n)``, ``SE(limit) = sqrt(3) s / sqrt(n)``,
    and the confidence intervals ``value -+ t_{1-a/2, n-1} SE``. Drawn against ``(a_i + b_i) / 2``; a
    *proportional* drift (the candidate differs more at one end of the scale) shows as a slope of ``d`` on
    the pair mean, reported with its p-value (``scipy.stats.linregress``).

Per-dimension drift
    Per dimension, over rows where both subscores are observed (a null faithfulness leaves the row out
    of that dimension only): the mean subscore difference (subscore points, 0-10 scale) with the same
    seeded percentile bootstrap as the score, and a two-sided Wilcoxon signed-rank p (zero differences
    dropped; ``None`` when every difference is 0).

Decision (:func:`decide`)
    ``adopt`` when every threshold of a declared thresholds file holds, else ``hold``. There are no
    default thresholds in code: :func:`load_thresholds` reads a YAML file (the packaged
    ``axon_eval/drift/thresholds.yaml``, :func:`packaged_thresholds_path`, or the user's own) in which
    every known threshold must appear; ``null`` switches a check off, and the decision table says so.
    A check whose figure cannot be measured (e.g. nothing compared) fails. Every row of the table names
    the threshold, its limit, the measured figure and whether it held.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from ..rubric import BANDS, DIMENSIONS

#: The Bland & Altman (1986) reference, carried into reports and figures.
BLAND_ALTMAN_REFERENCE = ("Bland JM, Altman DG. Statistical methods for assessing agreement between two methods "
                          "of clinical measurement. Lancet 1986; i(8476): 307-310.")
#: Multiplier of the SD for the limits of agreement (Bland & Altman 1986).
LOA_Z = 1.96

Decision = Literal["adopt", "hold"]

#: Every threshold a thresholds file must declare -- name -> (direction, what is measured, unit).
#: ``max``: the measured figure must be <= the limit; ``min``: >= the limit.
THRESHOLDS: dict[str, tuple[str, str, str]] = {
    "min_n_compared": ("min", "segments judged by both anchor and candidate", "segments"),
    "max_unjudged_share": ("max", "share of the anchor's segments the candidate left unjudged or unmatched",
                           "share"),
    "max_abs_mean_delta": ("max", "|mean score difference| (candidate - anchor)", "points"),
    "max_abs_mean_delta_ci": ("max", "largest |bound| of the mean difference's bootstrap CI (equivalence margin)",
                              "points"),
    "min_wilcoxon_p": ("min", "Wilcoxon signed-rank p of the score differences (no detectable systematic shift)",
                       "p"),
    "max_band_change_share": ("max", "share of compared segments whose band changes", "share"),
    "max_abs_dimension_delta": ("max", "largest |mean subscore difference| over the four dimensions",
                                "subscore points"),
    "max_abs_limit_of_agreement": ("max", "largest |Bland-Altman limit of agreement| (bias -+ 1.96 SD)",
                                   "points"),
}


# -- thresholds ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class DriftThresholds:
    """A thresholds file, read by :func:`load_thresholds`: ``limits`` maps every name of
    :data:`THRESHOLDS` to a number or ``None`` (check switched off); ``confidence`` is the CI level the
    CI threshold is read at."""

    name: str
    path: str
    sha256: str
    confidence: float
    limits: dict[str, float | None]
    description: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "path": self.path, "sha256": self.sha256, "confidence": self.confidence,
                "limits": dict(self.limits), "description": self.description}


def packaged_thresholds_path() -> Path:
    """The packaged default thresholds file (``axon_eval/drift/thresholds.yaml``)."""
    return Path(str(resources.files("axon_eval") / "drift" / "thresholds.yaml"))


def parse_thresholds(data: Mapping[str, Any], *, path: str = "<mapping>", sha256: str = "") -> DriftThresholds:
    """Validate a thresholds mapping (the YAML's content): ``name``, ``confidence`` in (0, 1) and
    ``thresholds`` holding exactly the names of :data:`THRESHOLDS` (numbers >= 0, or null). Anything
    missing, unknown or out of range is a ``ValueError`` naming it."""
    if not isinstance(data, Mapping):
        raise ValueError(f"thresholds file {path}: expected a mapping, got {type(data).__name__}")  # noqa: TRY004
    unknown_top = set(data) - {"name", "description", "confidence", "thresholds"}
    if unknown_top:
        raise ValueError(f"thresholds file {path}: unknown key(s) {sorted(unknown_top)}")
    for key in ("name", "confidence", "thresholds"):
        if key not in data:
            raise ValueError(f"thresholds file {path}: missing {key!r} (no defaults are assumed)")
    confidence = data["confidence"]
    if isinstance(confidence, bool) or not isinstance(confidence, int | float) or not 0 < confidence < 1:
        raise ValueError(f"thresholds file {path}: confidence must be a number in (0, 1), got {confidence!r}")
    limits = data["thresholds"]
    if not isinstance(limits, Mapping):
        raise ValueError(f"thresholds file {path}: 'thresholds' must be a mapping of name -> limit")  # noqa: TRY004
    missing = [k for k in THRESHOLDS if k not in limits]
    unknown = sorted(set(limits) - set(THRESHOLDS))
    if missing or unknown:
        raise ValueError(f"thresholds file {path}: " + "; ".join(
            ([f"missing threshold(s) {missing} (write null to switch a check off)"] if missing else [])
            + ([f"unknown threshold(s) {unknown}; known: {list(THRESHOLDS)}"] if unknown else [])))
    clean: dict[str, float | None] = {}
    for key in THRESHOLDS:
        value = limits[key]
        if value is None:
            clean[key] = None
            continue
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
            raise ValueError(f"thresholds file {path}: {key} must be a number >= 0 or null, got {value!r}")
        if key.endswith("_share") and value > 1:
            raise ValueError(f"thresholds file {path}: {key} is a share in [0, 1], got {value!r}")
        if key == "min_wilcoxon_p" and value > 1:
            raise ValueError(f"thresholds file {path}: min_wilcoxon_p is a probability in [0, 1], got {value!r}")
        clean[key] = float(value)
    return DriftThresholds(name=str(data["name"]), path=path, sha256=sha256, confidence=float(confidence),
                           limits=clean, description=str(data.get("description") or "").strip())


def load_thresholds(path: str | Path) -> DriftThresholds:
    """Read and validate a thresholds YAML file (see :func:`parse_thresholds`); the record keeps the path
    and the file's SHA-256 so a decision names exactly what it was decided against."""
    import yaml

    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"thresholds file {p} does not exist")
    raw = p.read_bytes()
    return parse_thresholds(yaml.safe_load(raw.decode("utf-8")) or {}, path=str(p),
                            sha256=hashlib.sha256(raw).hexdigest())


# -- Bland-Altman ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BlandAltman:
    """Bland-Altman statistics of paired measurements (module docstring); ``None`` where undefined
    (``n < 2`` for the SD, limits and CIs; no spread of pair means for the slope)."""

    n: int
    bias: float | None
    sd: float | None
    lower: float | None
    upper: float | None
    bias_ci: tuple[float, float] | None
    lower_ci: tuple[float, float] | None
    upper_ci: tuple[float, float] | None
    slope: float | None
    slope_p: float | None
    confidence: float
    points: pd.DataFrame  # columns: mean, difference
    reference: str = BLAND_ALTMAN_REFERENCE

    @property
    def max_abs_limit(self) -> float | None:
        if self.lower is None or self.upper is None:
            return None
        return max(abs(self.lower), abs(self.upper))

    def to_json(self) -> dict[str, Any]:
        return {"n": self.n, "bias": self.bias, "sd": self.sd, "lower_limit": self.lower, "upper_limit": self.upper,
                "bias_ci": list(self.bias_ci) if self.bias_ci else None,
                "lower_limit_ci": list(self.lower_ci) if self.lower_ci else None,
                "upper_limit_ci": list(self.upper_ci) if self.upper_ci else None,
                "proportional_slope": self.slope, "proportional_slope_p": self.slope_p,
                "confidence": self.confidence, "z": LOA_Z, "reference": self.reference}


def bland_altman(a: Any, b: Any, *, confidence: float = 0.95) -> BlandAltman:
    """Bland-Altman statistics of ``b`` against ``a`` (differences ``b - a``; pairs with a NaN dropped)."""
    from scipy import stats

    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.shape != y.shape:
        raise ValueError(f"bland_altman needs paired values, got {x.shape} and {y.shape}")
    keep = ~(np.isnan(x) | np.isnan(y))
    x, y = x[keep], y[keep]
    d, m = y - x, (x + y) / 2
    n = len(d)
    points = pd.DataFrame({"mean": m, "difference": d})
    if n == 0:
        return BlandAltman(0, None, None, None, None, None, None, None, None, None, confidence, points)
    bias = float(d.mean())
    if n < 2:
        return BlandAltman(n, bias, None, None, None, None, None, None, None, None, confidence, points)
    sd = float(d.std(ddof=1))
    lower, upper = bias - LOA_Z * sd, bias + LOA_Z * sd
    t = float(stats.t.ppf(1 - (1 - confidence) / 2, n - 1))
    se_bias, se_limit = sd / math.sqrt(n), math.sqrt(3.0) * sd / math.sqrt(n)
    slope = slope_p = None
    if np.ptp(m) > 0:
        fit = stats.linregress(m, d)
        slope = float(fit.slope)
        slope_p = None if math.isnan(fit.pvalue) else float(fit.pvalue)
    return BlandAltman(
        n=n, bias=bias, sd=sd, lower=lower, upper=upper,
        bias_ci=(bias - t * se_bias, bias + t * se_bias),
        lower_ci=(lower - t * se_limit, lower + t * se_limit),
        upper_ci=(upper - t * se_limit, upper + t * se_limit),
        slope=slope, slope_p=slope_p, confidence=confidence, points=points)


# -- per-dimension drift ---------------------------------------------------------------------------------
DIMENSION_COLUMNS = ("dimension", "n", "mean_delta", "ci_low", "ci_high", "wilcoxon_p", "n_changed")


def dimension_drift(pairs: pd.DataFrame, *, n_boot: int = 2000, seed: int = 0,
                    confidence: float = 0.95) -> pd.DataFrame:
    """Per dimension: mean subscore difference (B - A) over rows where both are observed, a seeded
    percentile bootstrap CI, the Wilcoxon signed-rank p and how many rows changed. ``pairs`` holds
    ``<dimension>_a`` and ``<dimension>_b`` columns (the layout of ``RunComparison.deltas``)."""
    from scipy import stats

    rows = []
    for k, dim in enumerate(DIMENSIONS):
        a = pd.to_numeric(pairs[f"{dim}_a"], errors="coerce").to_numpy(dtype=float)
        b = pd.to_numeric(pairs[f"{dim}_b"], errors="coerce").to_numpy(dtype=float)
        keep = ~(np.isnan(a) | np.isnan(b))
        d = b[keep] - a[keep]
        mean = lo = hi = p = None
        if len(d):
            mean = float(d.mean())
            if len(d) >= 2 and np.ptp(d) > 0:
                # one generator per dimension, derived from the seed, so adding a dimension moves no other CI
                res = stats.bootstrap((d,), np.mean, n_resamples=n_boot, confidence_level=confidence,
                                      method="percentile", random_state=np.random.default_rng([seed, k]))
                lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
            else:
                lo = hi = mean
            nonzero = d[d != 0]
            if len(nonzero):
                p = float(stats.wilcoxon(nonzero, alternative="two-sided").pvalue)
        rows.append({"dimension": dim, "n": len(d), "mean_delta": mean, "ci_low": lo, "ci_high": hi,
                     "wilcoxon_p": p, "n_changed": int((d != 0).sum())})
    return pd.DataFrame(rows, columns=list(DIMENSION_COLUMNS))


# -- decision --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class DriftDecision:
    """``decision`` (adopt / hold) and the table of checks: one row per threshold with ``threshold``,
    ``rule``, ``limit``, ``measured``, ``passed`` (``None`` when switched off) and ``note``."""

    decision: Decision
    checks: pd.DataFrame
    thresholds: DriftThresholds

    @property
    def failed(self) -> list[str]:
        return [str(t) for t, ok in zip(self.checks["threshold"], self.checks["passed"], strict=True) if ok is False]

    def to_json(self) -> dict[str, Any]:
        checks = []
        for row in self.checks.to_dict(orient="records"):
            checks.append({k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in row.items()})
        return {"decision": self.decision, "failed": self.failed, "checks": checks,
                "thresholds": self.thresholds.to_json()}

    def format(self) -> str:
        lines = [f"decision: {self.decision.upper()} (thresholds {self.thresholds.name}: {self.thresholds.path})"]
        for r in self.checks.itertuples():
            state = "off " if r.passed is None else ("ok  " if r.passed else "FAIL")
            measured = "n/a" if r.measured is None or (isinstance(r.measured, float) and math.isnan(r.measured)) \
                else f"{r.measured:.4g}"
            limit = "-" if r.limit is None or (isinstance(r.limit, float) and math.isnan(r.limit)) else f"{r.limit:g}"
            lines.append(f"  [{state}] {r.threshold}: measured {measured} vs limit {limit}  ({r.rule})"
                         + (f"; {r.note}" if r.note else ""))
        return "\n".join(lines)


def decide(measured: Mapping[str, float | None], thresholds: DriftThresholds,
           vacuous: Mapping[str, str] | None = None) -> DriftDecision:
    """Check every threshold of ``thresholds`` against ``measured`` (name -> figure, ``None`` when it
    could not be measured). ``adopt`` when every switched-on check holds; an unmeasured figure fails its
    check unless ``vacuous`` names it with the reason it holds anyway (the one case, set by
    :func:`judge_drift`: a Wilcoxon p is undefined when no score changed at all)."""
    if not isinstance(thresholds, DriftThresholds):
        raise TypeError("decide needs a DriftThresholds from load_thresholds(<file>): there are no default "
                        "thresholds in code")
    vacuous = dict(vacuous or {})
    rows = []
    for name, (direction, what, unit) in THRESHOLDS.items():
        limit = thresholds.limits[name]
        value = measured.get(name)
        value = None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)
        rule = f"{what} {'<=' if direction == 'max' else '>='} limit ({unit})"
        note = ""
        if limit is None:
            passed, note = None, "check switched off (null in the thresholds file)"
        elif value is None:
            passed = name in vacuous
            note = f"holds: {vacuous[name]}" if passed else "not measurable: fails"
        else:
            passed = value <= limit if direction == "max" else value >= limit
        rows.append({"threshold": name, "rule": rule, "limit": limit, "measured": value, "passed": passed,
                     "note": note})
    checks = pd.DataFrame(rows, columns=["threshold", "rule", "limit", "measured", "passed", "note"])
    checks["passed"] = checks["passed"].astype(object)
    decision: Decision = "adopt" if all(p is not False for p in checks["passed"]) else "hold"
    return DriftDecision(decision=decision, checks=checks, thresholds=thresholds)


# -- the whole drift record ------------------------------------------------------------------------------
@dataclass(frozen=True)
class JudgeDrift:
    """Drift of a candidate judge against an anchor run (module docstring). Score figures are in points,
    per-dimension figures in subscore points; ``transitions`` rows are the anchor's bands, columns the
    candidate's."""

    anchor_run: str
    candidate_run: str
    anchor_judge_id: str | None
    candidate_judge_id: str | None
    rubric_id: str | None
    n_anchor: int
    n_compared: int
    n_unjudged: int
    n_unmatched: int
    unjudged_share: float | None
    mean_delta: float | None
    mean_delta_ci: tuple[float, float] | None
    wilcoxon_statistic: float | None
    wilcoxon_p: float | None
    n_band_changes: int
    band_change_share: float | None
    transitions: pd.DataFrame
    bland_altman: BlandAltman
    dimensions: pd.DataFrame
    deltas: pd.DataFrame
    decision: DriftDecision
    simulated: bool
    confidence: float
    n_boot: int
    seed: int
    notes: list[str] = field(default_factory=list)

    @property
    def measured(self) -> dict[str, float | None]:
        """The figures the thresholds are checked against."""
        return measured_figures(self)

    def format(self) -> str:
        """A plain-text summary for the terminal."""
        from ..display import fmt_estimate, fmt_interval, fmt_number

        sim = "SIMULATED candidate judge. " if self.simulated else ""
        p = "n/a (no score changed)" if self.wilcoxon_p is None else f"{self.wilcoxon_p:.3g}"
        ba = self.bland_altman
        lines = [f"{sim}anchor:    {self.anchor_run}  [{self.anchor_judge_id}]",
                 f"{sim}candidate: {self.candidate_run}  [{self.candidate_judge_id}]",
                 (f"compared: {self.n_compared} of {self.n_anchor} anchor segments; unjudged {self.n_unjudged}, "
                  f"unmatched {self.n_unmatched}")]
        if self.mean_delta is not None:
            shown = fmt_estimate(self.mean_delta, *(self.mean_delta_ci or (None, None)))
            level = f" ({self.confidence:.0%} interval)" if self.mean_delta_ci else ""
            lines.append(f"mean delta candidate - anchor: {shown} points{level}; Wilcoxon p = {p}")
        if ba.lower is not None:
            lines.append(f"Bland-Altman: bias {fmt_number(ba.bias)}, limits of agreement {fmt_interval(ba.lower, ba.upper)} "
                         f"points (bias -+ 1.96 SD, SD {fmt_number(ba.sd)})")
        lines.append(f"band changes: {self.n_band_changes} of {self.n_compared}")
        lines.append("band transitions (rows anchor, columns candidate):")
        lines.extend("  " + line for line in self.transitions.to_string().splitlines())
        lines.append("per-dimension mean delta (subscore points):")
        for r in self.dimensions.itertuples():
            if r.mean_delta is None or (isinstance(r.mean_delta, float) and math.isnan(r.mean_delta)):
                lines.append(f"  {r.dimension}: n/a")
            else:
                lines.append(f"  {r.dimension}: {fmt_estimate(r.mean_delta, r.ci_low, r.ci_high)}, n = {r.n}")
        lines.extend(f"note: {n}" for n in self.notes)
        lines.append(self.decision.format())
        return "\n".join(lines)


def measured_figures(drift: JudgeDrift) -> dict[str, float | None]:
    """The figure each threshold of :data:`THRESHOLDS` is checked against, from a drift record."""
    dims = pd.to_numeric(drift.dimensions["mean_delta"], errors="coerce").abs().dropna()
    ci = drift.mean_delta_ci
    return {
        "min_n_compared": float(drift.n_compared),
        "max_unjudged_share": drift.unjudged_share,
        "max_abs_mean_delta": None if drift.mean_delta is None else abs(drift.mean_delta),
        "max_abs_mean_delta_ci": None if ci is None else max(abs(ci[0]), abs(ci[1])),
        "min_wilcoxon_p": drift.wilcoxon_p,
        "max_band_change_share": drift.band_change_share,
        "max_abs_dimension_delta": float(dims.max()) if len(dims) else None,
        "max_abs_limit_of_agreement": drift.bland_altman.max_abs_limit,
    }
