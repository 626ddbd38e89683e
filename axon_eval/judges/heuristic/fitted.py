"""The fitted offline judge (spec ``heuristic-fitted``): named signals mapped to grades by a small model.

An OPT-IN candidate beside the rule judge ``heuristic`` (which stays the default). Its inputs are the
named signals of :mod:`axon_eval.judges.heuristic.signals`; its parameters are fitted on the
repository's labelled sets (:mod:`axon_eval.calibration.training`) and live in one versioned JSON
file inside the package (:data:`DEFAULT_COEFFICIENTS`) that records the SHA-256 of the data it was
fitted on. The judge id carries the first ten hex digits of that file's SHA-256
(``heuristic-fitted[<hash10>]``): a refit is a new judge, so no verdict cached under other
coefficients is ever served.

The model
---------
* Signals are standardised with the training means and standard deviations (a signal constant in
  the training data gets scale 1 and so contributes nothing).
* Per dimension, a ridge regression (closed form, intercept unpenalised, penalty :data:`RIDGE_ALPHA`)
  of the label range's midpoint on the signals that inform that dimension
  (:func:`~axon_eval.judges.heuristic.signals.signals_for`); the prediction is clipped to [0, 10] and
  rounded. ``answer_faithfulness`` is null when no answer was captured, as for every judge.
* One proportional-odds (ordinal logistic) model of the verdict good < partial < poor on every
  signal, L2 penalty :data:`LOGIT_L2`, fitted by L-BFGS (scipy): ``P(not good) = s(eta - c1)`` and
  ``P(poor) = s(eta - c2)`` with ``c1 < c2``, ``s`` the logistic function.
* The verdict comes from the probabilities, not from a decision list: ``poor`` when
  ``P(poor) >= 0.5``, else ``partial`` when ``P(not good) >= 0.5``, else ``good``. When
  ``P(not good)`` lies inside :data:`UNSURE_BAND` the explanation starts with ``unsure:`` and names
  the signals that pushed the probability most.

Tens of parameters in all: about 35 for the verdict model and 8 to 16 per dimension.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy.optimize import minimize

from ...evidence import facts_from_statuses
from ...rubric import CAP_FACTS, DIMENSIONS, Rubric
from ...scoring import score_frame
from ..base import Judge, JudgeRecord, Verdict
from .signals import SIGNAL_NAMES, extract_signals, signals_for

#: Version of the model's form (signals, model kinds, file layout); bump on any change of meaning.
FITTED_VERSION = "1"
#: The packaged coefficient file (fitted by ``python -m axon_eval fit-heuristic``).
DEFAULT_COEFFICIENTS = Path(__file__).resolve().parent / "coefficients" / "fitted-v1.json"
#: Ridge penalty of the subscore models (on standardised signals).
RIDGE_ALPHA = 10.0
#: L2 penalty of the ordinal verdict model (on standardised signals).
LOGIT_L2 = 2.0
#: P(not good) inside this open interval makes the judgement say it is unsure.
UNSURE_BAND = (0.3, 0.7)
#: Verdict codes of the ordinal model (the order matters).
VERDICT_ORDER = ("good", "partial", "poor")


# =============================================================================================
# The model
# =============================================================================================
@dataclass(frozen=True)
class FittedModel:
    """Coefficients of the fitted judge (see the module docstring); :meth:`to_json` is its file text."""

    signals: tuple[str, ...]
    mean: dict[str, float]
    scale: dict[str, float]
    subscores: dict[str, dict[str, Any]]
    verdict: dict[str, Any]
    training: dict[str, Any] = field(default_factory=dict)
    version: str = FITTED_VERSION

    # -- persistence ------------------------------------------------------------------------
    def as_dict(self) -> dict[str, Any]:
        """The JSON-ready content of the coefficient file."""
        return {"format": f"axon-heuristic-fitted/{self.version}", "signals": list(self.signals),
                "mean": self.mean, "scale": self.scale, "subscores": self.subscores, "verdict": self.verdict,
                "training": self.training}

    def to_json(self) -> str:
        """The canonical file text (sorted keys, two-space indent, trailing newline)."""
        return json.dumps(_rounded(self.as_dict()), indent=2, sort_keys=True) + "\n"

    @property
    def sha256(self) -> str:
        """SHA-256 of :meth:`to_json` (equal to the file's hash for a file written by :func:`save_model`)."""
        return hashlib.sha256(self.to_json().encode()).hexdigest()

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FittedModel:
        """The model of a coefficient file's content; ``ValueError`` for another format or a missing part."""
        fmt = data.get("format", "")
        if not str(fmt).startswith("axon-heuristic-fitted/"):
            raise ValueError(f"not a fitted heuristic coefficient file (format {fmt!r})")
        try:
            return cls(signals=tuple(data["signals"]), mean=dict(data["mean"]), scale=dict(data["scale"]),
                       subscores=dict(data["subscores"]), verdict=dict(data["verdict"]),
                       training=dict(data.get("training", {})), version=str(fmt).split("/", 1)[1])
        except KeyError as exc:
            raise ValueError(f"coefficient file lacks {exc.args[0]!r}") from None

    # -- prediction ---------------------------------------------------------------------------
    def standardised(self, frame: pd.DataFrame, names: tuple[str, ...] | list[str]) -> np.ndarray:
        """The columns ``names`` of ``frame`` minus the training mean, over the training scale."""
        x = frame.loc[:, list(names)].to_numpy(dtype=float)
        mu = np.array([self.mean[n] for n in names])
        sd = np.array([self.scale[n] for n in names])
        return (x - mu) / sd

    def predict(self, frame: pd.DataFrame) -> pd.DataFrame:
        """Subscores, ``p_not_good``, ``p_poor`` and ``verdict`` for every row of a signal frame.

        ``frame`` holds the model's signal columns and ``answer_missing``; a row with
        ``answer_missing == 1`` gets a null ``answer_faithfulness``.
        """
        out = pd.DataFrame(index=frame.index)
        for dim in DIMENSIONS:
            part = self.subscores[dim]
            names = list(part["coef"])
            raw = part["intercept"] + (self.standardised(frame, names) @ np.array([part["coef"][n] for n in names])
                                       if names else 0.0)
            values = np.clip(np.rint(np.asarray(raw, dtype=float) * np.ones(len(frame))), 0, 10)
            col = pd.Series(values, index=frame.index, dtype="float64")
            if dim == "answer_faithfulness":
                col[frame["answer_missing"].to_numpy(dtype=float) > 0.5] = np.nan
            out[dim] = col
        eta = self.linear_predictor(frame)
        c1, c2 = self.verdict["cutpoints"]
        out["p_not_good"] = _sigmoid(eta - c1)
        out["p_poor"] = _sigmoid(eta - c2)
        out["p_good"] = 1.0 - out["p_not_good"]
        out["verdict"] = np.where(out["p_poor"] >= 0.5, "poor", np.where(out["p_not_good"] >= 0.5, "partial", "good"))
        return out

    def linear_predictor(self, frame: pd.DataFrame) -> np.ndarray:
        """``eta`` of the ordinal verdict model for every row."""
        names = list(self.verdict["coef"])
        return self.standardised(frame, names) @ np.array([self.verdict["coef"][n] for n in names])

    @property
    def n_parameters(self) -> int:
        """Number of fitted parameters (intercepts, coefficients and cut points)."""
        return (sum(1 + len(p["coef"]) for p in self.subscores.values()) + len(self.verdict["coef"])
                + len(self.verdict["cutpoints"]))


def _rounded(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 8) if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_rounded(v) for v in value]
    return value


def _sigmoid(x: Any) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.asarray(x, dtype=float)))


# =============================================================================================
# Fitting
# =============================================================================================
def label_midpoints(frame: pd.DataFrame, dim: str) -> np.ndarray:
    """The midpoint of each row's labelled range of ``dim`` (NaN where the range is null)."""
    lo = pd.to_numeric(frame[f"{dim}_min"], errors="coerce").to_numpy(dtype=float)
    hi = pd.to_numeric(frame[f"{dim}_max"], errors="coerce").to_numpy(dtype=float)
    return (lo + hi) / 2.0


def _ridge(x: np.ndarray, y: np.ndarray, alpha: float) -> tuple[float, np.ndarray]:
    if x.shape[1] == 0:
        return float(y.mean()), np.zeros(0)
    xm, ym = x.mean(axis=0), y.mean()
    xc, yc = x - xm, y - ym
    beta = np.linalg.solve(xc.T @ xc + alpha * np.eye(x.shape[1]), xc.T @ yc)
    return float(ym - xm @ beta), beta


def _ordinal_fit(x: np.ndarray, y: np.ndarray, l2: float) -> tuple[np.ndarray, tuple[float, float]]:
    """Proportional-odds logistic fit of ``y`` in {0, 1, 2}; returns (coefficients, (c1, c2))."""
    k = x.shape[1]
    counts = np.bincount(y, minlength=3) + 0.5
    cum = np.cumsum(counts) / counts.sum()
    start = np.concatenate([np.zeros(k), [math.log(cum[0] / (1 - cum[0])),
                                          math.log(max(1e-3, math.log(cum[1] / (1 - cum[1])) - math.log(cum[0] / (1 - cum[0]))))]])

    def nll(theta: np.ndarray) -> tuple[float, np.ndarray]:
        beta, c1, d = theta[:k], theta[k], theta[k + 1]
        c2 = c1 + math.exp(d)
        eta = x @ beta
        s1, s2 = _sigmoid(eta - c1), _sigmoid(eta - c2)
        p = np.where(y == 0, 1 - s1, np.where(y == 1, s1 - s2, s2))
        p = np.clip(p, 1e-12, None)
        # d p / d eta for each class; ds/dz = s(1-s)
        g1, g2 = s1 * (1 - s1), s2 * (1 - s2)
        dp_deta = np.where(y == 0, -g1, np.where(y == 1, g1 - g2, g2))
        dp_dc1 = np.where(y == 0, g1, np.where(y == 1, -g1 + g2, -g2))
        dp_dc2 = np.where(y == 0, 0.0, np.where(y == 1, g2, -g2))
        w = -1.0 / p
        value = -np.log(p).sum() + l2 * (beta @ beta)
        grad_beta = x.T @ (w * dp_deta) + 2 * l2 * beta
        grad_c1 = (w * (dp_dc1 + dp_dc2)).sum()
        grad_d = (w * dp_dc2).sum() * math.exp(d)
        return float(value), np.concatenate([grad_beta, [grad_c1, grad_d]])

    res = minimize(nll, start, jac=True, method="L-BFGS-B")
    theta = res.x
    return theta[:k], (float(theta[k]), float(theta[k] + math.exp(theta[k + 1])))


def fit_model(frame: pd.DataFrame, signals: tuple[str, ...] | list[str] | None = None, *,
              ridge_alpha: float = RIDGE_ALPHA, logit_l2: float = LOGIT_L2,
              training: dict[str, Any] | None = None, hash_data: bool = True) -> FittedModel:
    """Fit the judge's model on a labelled signal frame.

    Parameters
    ----------
    frame : DataFrame
        One row per labelled segment: the signal columns, the label ranges
        (``<dimension>_min`` / ``<dimension>_max``, faithfulness may be null) and ``verdict``
        (good/partial/poor), as :func:`axon_eval.calibration.training.training_frame` builds it.
    signals : sequence of str, optional
        The signals the model may use (default every signal of
        ``SIGNAL_NAMES`` of :mod:`~axon_eval.judges.heuristic.signals`); dropping a family is an ablation.
    ridge_alpha, logit_l2 : float
        Penalties of the subscore and verdict models.
    training : dict, optional
        What to record about the data (sources, counts); ``data_sha256`` is computed from ``frame``
        itself.
    hash_data : bool
        Record ``data_sha256`` (default); a validation fold's model, never saved, may skip it (hashing
        the frame costs more than fitting it).

    Returns
    -------
    FittedModel
    """
    names = tuple(signals) if signals is not None else SIGNAL_NAMES
    if len(frame) < 2:
        raise ValueError(f"fit_model needs at least 2 labelled rows, got {len(frame)}")
    x_all = frame.loc[:, list(names)].to_numpy(dtype=float)
    mean = x_all.mean(axis=0)
    sd = x_all.std(axis=0)
    sd = np.where(sd > 1e-9, sd, 1.0)
    means = {n: float(m) for n, m in zip(names, mean)}
    scales = {n: float(s) for n, s in zip(names, sd)}
    z = (x_all - mean) / sd
    index = {n: i for i, n in enumerate(names)}
    subscores: dict[str, dict[str, Any]] = {}
    for dim in DIMENSIONS:
        use = [n for n in signals_for(dim) if n in index]
        y = label_midpoints(frame, dim)
        keep = ~np.isnan(y)
        if keep.sum() == 0:
            subscores[dim] = {"intercept": 10.0, "coef": {}}
            continue
        intercept, beta = _ridge(z[keep][:, [index[n] for n in use]], y[keep], ridge_alpha)
        subscores[dim] = {"intercept": intercept, "coef": {n: float(b) for n, b in zip(use, beta)}}
    codes = frame["verdict"].map({v: i for i, v in enumerate(VERDICT_ORDER)})
    if codes.isna().any():
        raise ValueError("verdict must be good, partial or poor on every row")
    beta, cuts = _ordinal_fit(z, codes.to_numpy(dtype=int), logit_l2)
    info = dict(training or {})
    info.update({"data_sha256": frame_sha256(frame, names) if hash_data else None, "n": int(len(frame)),
                 "ridge_alpha": ridge_alpha, "logit_l2": logit_l2,
                 "verdicts": {v: int((frame["verdict"] == v).sum()) for v in VERDICT_ORDER}})
    if "domain" in frame.columns:
        info["domains"] = {str(k): int(v) for k, v in frame["domain"].value_counts().sort_index().items()}
    return FittedModel(signals=names, mean=means, scale=scales, subscores=subscores,
                       verdict={"coef": {n: float(b) for n, b in zip(names, beta)}, "cutpoints": list(cuts)},
                       training=info)


def frame_sha256(frame: pd.DataFrame, signals: tuple[str, ...] | list[str] = SIGNAL_NAMES) -> str:
    """SHA-256 of the training data as the model sees it: segment ids, signals, label ranges and verdicts
    (CSV text, rows in segment order)."""
    label_cols = [f"{d}_{s}" for d in DIMENSIONS for s in ("min", "max")] + ["verdict"]
    cols = [c for c in ["domain", "segment_id"] if c in frame.columns] + list(signals) + label_cols
    data = frame.loc[:, cols].copy()
    if "segment_id" in data.columns:
        data = data.sort_values([c for c in ["domain", "segment_id"] if c in data.columns], kind="stable")
    text = data.to_csv(index=False, float_format="%.10g", lineterminator="\n")
    return hashlib.sha256(text.encode()).hexdigest()


def save_model(model: FittedModel, path: str | Path) -> str:
    """Write the coefficient file; returns its SHA-256."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    text = model.to_json()
    p.write_text(text, encoding="utf-8")
    return hashlib.sha256(text.encode()).hexdigest()


def load_model(path: str | Path | None = None) -> tuple[FittedModel, str]:
    """The model of a coefficient file (default :data:`DEFAULT_COEFFICIENTS`) and the file's SHA-256."""
    p = Path(path) if path is not None else DEFAULT_COEFFICIENTS
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise ValueError(f"cannot read the coefficient file {p}: {exc.strerror or exc}") from None
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{p}: not JSON: {exc}") from None
    return FittedModel.from_dict(data), hashlib.sha256(raw).hexdigest()


@cache
def _default_model() -> tuple[FittedModel, str]:
    return load_model(DEFAULT_COEFFICIENTS)


# =============================================================================================
# The judge
# =============================================================================================
class _Plan:
    """A model's coefficients as arrays, for one segment at a time without a DataFrame (the same
    arithmetic as :meth:`FittedModel.predict`)."""

    def __init__(self, model: FittedModel) -> None:
        self.dims = []
        for dim in DIMENSIONS:
            part = model.subscores[dim]
            names = list(part["coef"])
            self.dims.append((dim, names, np.array([model.mean[n] for n in names]),
                              np.array([model.scale[n] for n in names]),
                              np.array([part["coef"][n] for n in names]), float(part["intercept"])))
        self.names = list(model.verdict["coef"])
        self.mu = np.array([model.mean[n] for n in self.names])
        self.sd = np.array([model.scale[n] for n in self.names])
        self.beta = np.array([model.verdict["coef"][n] for n in self.names])
        self.c1, self.c2 = (float(c) for c in model.verdict["cutpoints"])

    def predict(self, signals: dict[str, float]) -> tuple[dict[str, int | None], float, float, list[tuple[str, float]]]:
        subs: dict[str, int | None] = {}
        for dim, names, mu, sd, beta, intercept in self.dims:
            x = np.array([signals[n] for n in names], dtype=float)
            raw = intercept + float(((x - mu) / sd) @ beta) if names else intercept
            subs[dim] = int(min(10.0, max(0.0, float(np.rint(raw)))))
        z = (np.array([signals[n] for n in self.names], dtype=float) - self.mu) / self.sd
        contributions = z * self.beta
        eta = float(contributions.sum())
        p_not_good = 1.0 / (1.0 + math.exp(-(eta - self.c1)))
        p_poor = 1.0 / (1.0 + math.exp(-(eta - self.c2)))
        return subs, p_not_good, p_poor, list(zip(self.names, (float(c) for c in contributions)))


class FittedHeuristicJudge(Judge):
    """The fitted offline judge (registry specs ``heuristic`` and ``heuristic-fitted``).

    ``judge_id`` is ``heuristic-fitted[<first 10 hex of the coefficient file's SHA-256>]`` (with
    ``lexicon=<name>`` and ``rubric=<id>`` when not the defaults: they change the signals and the
    score); ``prompt_version`` adds the heuristic package's code hash, so edited signal code never
    reuses cached verdicts either. ``coefficients`` is a :class:`FittedModel` or the path of a
    coefficient file (default: the packaged :data:`DEFAULT_COEFFICIENTS`); ``lexicon`` names the domain
    lexicon the rule checks under the signals read (default ``sports``).
    """

    def __init__(self, coefficients: FittedModel | str | Path | None = None, rubric: Rubric | None = None,
                 lexicon: str | None = None) -> None:
        from .judge import HEURISTIC_VERSION, HeuristicJudge, heuristic_code_hash

        if isinstance(coefficients, FittedModel):
            self.coefficients, digest = coefficients, coefficients.sha256
        elif coefficients is None:
            self.coefficients, digest = _default_model()
        else:
            self.coefficients, digest = load_model(coefficients)
        self.coefficients_sha256 = digest
        self._plan = _Plan(self.coefficients)
        self.rubric = rubric or Rubric.default()
        self.rules = HeuristicJudge(rubric=self.rubric, lexicon=lexicon)
        qualifiers = [digest[:10]] + [q for q in self.rules.judge_id.partition("[")[2].rstrip("]").split(",") if q]
        self.judge_id = f"heuristic-fitted[{','.join(qualifiers)}]"
        self.model = f"heuristic-fitted-v{FITTED_VERSION}"
        self.prompt_version = f"heuristic-fitted-v{FITTED_VERSION}+checks-v{HEURISTIC_VERSION}+{heuristic_code_hash()}"

    def assess(self, view: Any) -> tuple[Verdict, dict[str, Any]]:
        """Grade ``view``; returns the :class:`Verdict` and details (signals, probabilities, score, band)."""
        judged = self.rules.assess(view)
        signals = extract_signals(view, judged)
        subs, p_not_good, p_poor, contributions = self._plan.predict(signals)
        if view.answer is None:
            subs["answer_faithfulness"] = None
        verdict = "poor" if p_poor >= 0.5 else "partial" if p_not_good >= 0.5 else "good"
        facts = facts_from_statuses(len(view.steps), [s.status for s in view.sql_steps])
        from .judge import _score_and_band

        score, band = _score_and_band(tuple(subs[d] for d in DIMENSIONS), tuple(getattr(facts, f) for f in CAP_FACTS),
                                      self.rubric)
        pushes = sorted(((n, c) for n, c in contributions if abs(c) > 1e-6), key=lambda c: -abs(c[1]))
        unsure = UNSURE_BAND[0] < p_not_good < UNSURE_BAND[1]
        explanation = self._explain(verdict, p_not_good, p_poor, unsure, pushes, judged, score, band)
        details = {"signals": signals, "p_not_good": p_not_good, "p_poor": p_poor, "p_good": 1.0 - p_not_good,
                   "unsure": unsure, "score": score, "band": band, "coefficients_sha256": self.coefficients_sha256,
                   "rule_verdict": judged[0].verdict, "rule_reason": judged[1].get("verdict_rule")}
        return Verdict(**subs, verdict=verdict, explanation=explanation), details

    @staticmethod
    def _explain(verdict: str, p_not_good: float, p_poor: float, unsure: bool, pushes: list[tuple[str, float]],
                 judged: tuple[Any, dict[str, Any]], score: float | None, band: str | None) -> str:
        against = [f"{n} ({c:+.2f})" for n, c in pushes if c > 0][:3]
        towards = [f"{n} ({c:+.2f})" for n, c in pushes if c < 0][:3]
        parts = []
        if unsure:
            parts.append(f"unsure: P(not good) is {p_not_good:.2f}, close to the 0.5 threshold; "
                         + (f"pushed towards not good by {', '.join(against)}" if against else "no signal stands out")
                         + (f", towards good by {', '.join(towards)}" if towards else "") + ".")
        parts.append(f"Fitted model: P(not good) {p_not_good:.2f}, P(poor) {p_poor:.2f} -> {verdict}.")
        if not unsure and against and verdict != "good":
            parts.append("Signals against: " + ", ".join(against) + ".")
        rule_verdict, rule_details = judged[0], judged[1]
        parts.append(f"Rule checks: verdict {rule_verdict.verdict} ({rule_details.get('verdict_rule', '')}).")
        if rule_details.get("unsupported_claims"):
            parts.append("Unsupported claims: " + ", ".join(f'"{c}"' for c in rule_details["unsupported_claims"]) + ".")
        parts.append(f"Score {score:g} ({band})." if band is not None else "Not scored: the rubric cannot score it.")
        return " ".join(parts)

    async def ajudge(self, view: Any, sample_index: int = 0) -> JudgeRecord:
        return self.judge(view, sample_index)

    def judge(self, view: Any, sample_index: int = 0) -> JudgeRecord:
        """Synchronous judgement (plain code, no event loop needed)."""
        from .judge import assessed_record

        return assessed_record(self, view, sample_index, "heuristic_fitted")


def predict_scores(model: FittedModel, frame: pd.DataFrame, rubric: Rubric | None = None) -> pd.DataFrame:
    """:meth:`FittedModel.predict` plus the rubric's ``score`` and ``band`` (``frame`` needs the cap facts
    ``all_sql_failed``, ``ended_on_failure``, ``no_tools``)."""
    pred = model.predict(frame)
    scored = score_frame(pd.concat([pred[list(DIMENSIONS)], frame[list(CAP_FACTS)].astype(bool)], axis=1), rubric)
    pred["score"] = scored["score"].to_numpy(dtype=float)
    pred["band"] = scored["band"].astype(object).to_numpy()
    return pred
