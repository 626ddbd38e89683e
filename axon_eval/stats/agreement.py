"""Agreement of a judge with the constructed labels of the bundled sample.

The labels are CONSTRUCTED FROM SEEDED DEFECTS, NOT HUMAN JUDGEMENTS (see :mod:`axon_eval.labels`);
every result here carries that note. Pure functions over DataFrames; nothing calls a model.

``results_df`` (one row per judged segment) has the columns ``segment_id``, the four dimension
names (``answer_faithfulness`` may be NaN/None = null), ``judge_verdict`` and, optionally,
``judge_id``, ``band`` (the scorer's band) and ``explanation``. Explanations may instead be passed as
``explanations: Mapping[segment_id, str]`` (e.g. joined from ``verdicts.jsonl`` records); the mapping
wins over the column. Rows of several ``judge_id`` values are refused unless ``allow_mixed=True``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..labels import LABELS_NOTE, load_labels
from ..rubric import BANDS, CAP_FACTS, DIMENSIONS


# =============================================================================================
# Cohen's kappa
# =============================================================================================
def confusion_table(a: Sequence[str], b: Sequence[str], labels: Sequence[str] = BANDS) -> pd.DataFrame:
    """Counts ``n_ij`` of (a = labels[i], b = labels[j]); rows are ``a``, columns ``b``.

    Raises ``ValueError`` for unequal lengths or a value outside ``labels``.
    """
    a, b = list(a), list(b)
    if len(a) != len(b):
        raise ValueError(f"rating sequences differ in length: {len(a)} vs {len(b)}")
    index = {lab: i for i, lab in enumerate(labels)}
    table = np.zeros((len(labels), len(labels)), dtype=np.int64)
    for x, y in zip(a, b):
        if x not in index or y not in index:
            bad = x if x not in index else y
            raise ValueError(f"rating {bad!r} is not one of {list(labels)}")
        table[index[x], index[y]] += 1
    return pd.DataFrame(table, index=pd.Index(list(labels), name="a"), columns=pd.Index(list(labels), name="b"))


def cohens_kappa(a: Sequence[str], b: Sequence[str], labels: Sequence[str] = BANDS,
                 weights: str | None = None) -> float:
    """Cohen's kappa of two raters over the ordered categories ``labels``.

    With ``p_ij`` the confusion proportions (rows ``a``, columns ``b``), ``e_ij = p_i. * p_.j`` the
    proportions expected by chance, and disagreement weights ``w_ij``::

        unweighted  w_ij = 0 if i == j else 1          kappa = (p_o - p_e) / (1 - p_e)
        linear      w_ij = |i - j| / (k - 1)
        quadratic   w_ij = (i - j)^2 / (k - 1)^2
        kappa_w = 1 - sum_ij w_ij p_ij / sum_ij w_ij e_ij

    (``p_o = sum_i p_ii``, ``p_e = sum_i p_i. p_.i``; the unweighted formula is the weighted one
    with 0/1 weights.) Range [-1, 1]: 1 perfect agreement, 0 chance level. Returns ``nan`` when the
    chance disagreement is 0 (both raters used one and the same single category), where kappa is
    undefined. Matches ``statsmodels.stats.inter_rater.cohens_kappa`` (``wt='linear'``/``'quadratic'``).

    Worked example (Wikipedia, "Cohen's kappa"): 50 items, yes/yes 20, yes/no 5, no/yes 10,
    no/no 15 -> p_o = 0.70, p_e = 0.50, kappa = 0.40.
    """
    if weights not in (None, "linear", "quadratic"):
        raise ValueError(f"weights must be None, 'linear' or 'quadratic', got {weights!r}")
    table = confusion_table(a, b, labels).to_numpy(dtype=np.float64)
    n = table.sum()
    if n == 0:
        raise ValueError("no ratings to compare")
    p = table / n
    e = np.outer(p.sum(axis=1), p.sum(axis=0))
    k = len(labels)
    i, j = np.indices((k, k))
    if weights is None:
        w = (i != j).astype(np.float64)
    elif weights == "linear":
        w = np.abs(i - j) / (k - 1)
    else:
        w = (i - j) ** 2 / (k - 1) ** 2
    expected = float((w * e).sum())
    if expected == 0.0:
        return float("nan")
    return float(1.0 - (w * p).sum() / expected)


# =============================================================================================
# Inputs
# =============================================================================================
def _prepare(results_df: pd.DataFrame, labels_df: pd.DataFrame, allow_mixed: bool = False,
             explanations: Mapping[str, str] | None = None) -> pd.DataFrame:
    need = ["segment_id", *DIMENSIONS, "judge_verdict"]
    missing = [c for c in need if c not in results_df.columns]
    if missing:
        raise ValueError(f"results_df lacks column(s) {missing}; expected at least {need}")
    if "judge_id" in results_df.columns and not allow_mixed:
        ids = sorted(results_df["judge_id"].dropna().unique())
        if len(ids) > 1:
            raise ValueError(f"results_df mixes judge ids {ids}; compare one judge at a time "
                             "(or pass allow_mixed=True)")
    res = results_df.copy()
    if explanations is not None:
        res["explanation"] = res["segment_id"].map(dict(explanations))
    if "explanation" not in res.columns:
        res["explanation"] = None
    dup = res["segment_id"].duplicated()
    if dup.any():
        raise ValueError(f"results_df repeats segment ids {res.loc[dup, 'segment_id'].head().tolist()}; "
                         "pass one judgement per segment (e.g. sample_index 0)")
    merged = res.merge(labels_df, on="segment_id", how="inner", suffixes=("", "_label"))
    if merged.empty:
        raise ValueError("no segment of results_df has a label")
    return merged


def share_in_range(results_df: pd.DataFrame, labels_df: pd.DataFrame, *, allow_mixed: bool = False) -> pd.DataFrame:
    """Per segment and dimension: is the subscore inside the labelled ``[min, max]``?

    Returns a DataFrame indexed by ``segment_id`` with one bool column per dimension. Null
    faithfulness: a null label range and a null subscore agree; null vs a number disagrees.
    ``.mean()`` of the result gives the share per dimension; ``.to_numpy().mean()`` the overall share.
    """
    m = _prepare(results_df, labels_df, allow_mixed)
    out = {}
    for d in DIMENSIONS:
        val = pd.to_numeric(m[d], errors="coerce")
        lo, hi = m[f"{d}_min"].astype("Float64"), m[f"{d}_max"].astype("Float64")
        label_null = lo.isna().to_numpy()
        val_null = val.isna().to_numpy()
        inside = ((val.to_numpy() >= lo.fillna(np.inf).to_numpy()) & (val.to_numpy() <= hi.fillna(-np.inf).to_numpy()))
        out[d] = np.where(label_null, val_null, ~val_null & inside)
    return pd.DataFrame(out, index=pd.Index(m["segment_id"], name="segment_id")).astype(bool)


def claim_catch_rate(results_df: pd.DataFrame, labels_df: pd.DataFrame, *,
                     explanations: Mapping[str, str] | None = None,
                     allow_mixed: bool = False) -> tuple[float, pd.DataFrame]:
    """Share of labelled ``unsupported_claims`` tokens that appear verbatim in the judge's explanation.

    Returns ``(rate, table)``; ``table`` has one row per (segment, claim) with ``caught``. ``rate``
    is ``nan`` when no claim is labelled. (Substring test: an explanation quoting the sentence that
    contains the claim counts as naming it.)
    """
    m = _prepare(results_df, labels_df, allow_mixed, explanations)
    rows = []
    for _, r in m.iterrows():
        text = r["explanation"] if isinstance(r["explanation"], str) else ""
        for claim in r["claims"]:
            rows.append({"segment_id": r["segment_id"], "defect": r["defect"], "claim": claim,
                         "caught": claim in text})
    table = pd.DataFrame(rows, columns=["segment_id", "defect", "claim", "caught"])
    rate = float(table["caught"].mean()) if len(table) else float("nan")
    return rate, table


def band_agreement(results_df: pd.DataFrame, labels_df: pd.DataFrame, column: str = "band", *,
                   allow_mixed: bool = False) -> dict[str, float]:
    """Agreement of a categorical column of ``results_df`` (default the scorer's ``band``) with the
    labelled verdict: ``{"n", "accuracy", "kappa", "kappa_linear"}``."""
    m = _prepare(results_df, labels_df, allow_mixed)
    if column not in m.columns:
        raise ValueError(f"results_df has no column {column!r}")
    a, b = m[column].astype(str).tolist(), m["verdict"].tolist()
    return {"n": len(a), "accuracy": float(np.mean([x == y for x, y in zip(a, b)])),
            "kappa": cohens_kappa(a, b), "kappa_linear": cohens_kappa(a, b, weights="linear")}


# =============================================================================================
# The summary
# =============================================================================================
@dataclass
class LabelAgreement:
    """Agreement of one judge with the constructed labels.

    ``kappa``: Cohen's kappa (unweighted) of ``judge_verdict`` vs the labelled verdict;
    ``kappa_linear``: linearly weighted; ``confusion``: rows = judge verdict, columns = label;
    ``accuracy``: share of equal verdicts; ``in_range``: share of subscores inside the labelled
    ranges over all segment x dimension cells; ``in_range_by_dimension``; ``claim_catch_rate``:
    share of labelled unsupported claims named in the explanation (``n_claims`` of them);
    ``per_defect``: one row per seeded defect; ``disagreements``: segments whose verdict differs or
    whose subscores leave a range; ``note``: the labels are constructed, not human.
    """

    n: int
    judge_id: str | None
    kappa: float
    kappa_linear: float
    confusion: pd.DataFrame
    accuracy: float
    in_range: float
    in_range_by_dimension: dict[str, float]
    claim_catch_rate: float
    n_claims: int
    claims: pd.DataFrame
    per_defect: pd.DataFrame
    disagreements: pd.DataFrame
    band_agreement: dict[str, float] | None = None
    note: str = LABELS_NOTE
    extra: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        """The headline figures as a flat dict (for tables and benchmarks)."""
        return {"n": self.n, "judge_id": self.judge_id, "kappa": self.kappa, "kappa_linear": self.kappa_linear,
                "accuracy": self.accuracy, "in_range": self.in_range,
                **{f"in_range_{d}": v for d, v in self.in_range_by_dimension.items()},
                "claim_catch_rate": self.claim_catch_rate, "n_claims": self.n_claims, "note": self.note}


def label_agreement(results_df: pd.DataFrame, labels_df: pd.DataFrame, *,
                    explanations: Mapping[str, str] | None = None,
                    allow_mixed: bool = False) -> LabelAgreement:
    """All agreement figures of ``results_df`` against ``labels_df`` (see :class:`LabelAgreement`).

    Only segments present in both are compared (``n``). Refuses mixed ``judge_id`` values unless
    ``allow_mixed``.
    """
    m = _prepare(results_df, labels_df, allow_mixed, explanations)
    judge_id = None
    if "judge_id" in m.columns and m["judge_id"].nunique() == 1:
        judge_id = str(m["judge_id"].iloc[0])
    jv, lv = m["judge_verdict"].astype(str).tolist(), m["verdict"].tolist()
    inr = share_in_range(results_df, labels_df, allow_mixed=allow_mixed)
    rate, claims = claim_catch_rate(results_df, labels_df, explanations=explanations, allow_mixed=allow_mixed)
    confusion = confusion_table(jv, lv).rename_axis(index="judge", columns="label")

    m = m.assign(verdict_agrees=[x == y for x, y in zip(jv, lv)],
                 in_range_share=inr.mean(axis=1).to_numpy())
    per_defect = []
    for defect, g in m.groupby("defect", sort=True):
        c = claims[claims["defect"] == defect]
        per_defect.append({"defect": defect, "n": len(g), "verdict_accuracy": float(g["verdict_agrees"].mean()),
                           "in_range": float(g["in_range_share"].mean()),
                           "claims": len(c), "claims_caught": int(c["caught"].sum()) if len(c) else 0})
    per_defect_df = pd.DataFrame(per_defect).set_index("defect")
    out_of_range = inr.apply(lambda r: ", ".join(d for d in DIMENSIONS if not r[d]), axis=1)
    dis = m.assign(out_of_range=out_of_range.to_numpy())
    dis = dis.loc[(~dis["verdict_agrees"]) | (dis["out_of_range"] != ""),
                  ["segment_id", "defect", "judge_verdict", "verdict", *DIMENSIONS, "out_of_range"]]
    bands = band_agreement(results_df, labels_df, allow_mixed=allow_mixed) if "band" in results_df.columns else None
    return LabelAgreement(
        n=len(m), judge_id=judge_id, kappa=cohens_kappa(jv, lv), kappa_linear=cohens_kappa(jv, lv, weights="linear"),
        confusion=confusion, accuracy=float(np.mean(m["verdict_agrees"])), in_range=float(inr.to_numpy().mean()),
        in_range_by_dimension={d: float(inr[d].mean()) for d in DIMENSIONS},
        claim_catch_rate=rate, n_claims=len(claims), claims=claims, per_defect=per_defect_df,
        disagreements=dis.reset_index(drop=True), band_agreement=bands)


def results_from_records(records: Sequence[Any], bands: Mapping[str, str] | None = None) -> pd.DataFrame:
    """``results_df`` from :class:`~axon_eval.judges.records.JudgeRecord` objects (judged ones only).

    Columns: segment_id, judge_id, the four dimensions (None -> NaN), judge_verdict, explanation and,
    when ``bands`` (segment_id -> band) is given, ``band``.
    """
    rows = []
    for r in records:
        if r.verdict is None:
            continue
        v = r.verdict
        row = {"segment_id": r.segment_id, "judge_id": r.judge_id,
               **{d: (np.nan if getattr(v, d) is None else getattr(v, d)) for d in DIMENSIONS},
               "judge_verdict": v.verdict, "explanation": v.explanation}
        if bands is not None:
            row["band"] = bands.get(r.segment_id)
        rows.append(row)
    return pd.DataFrame(rows, columns=["segment_id", "judge_id", *DIMENSIONS, "judge_verdict", "explanation",
                                       *(["band"] if bands is not None else [])])


def measure_heuristic(turns_path: str | Path = "data/turns/sample_turns.jsonl",
                      labels_path: str | Path = "data/turns/labels.csv", rubric: Any = None) -> LabelAgreement:
    """Judge every segment of ``turns_path`` with ``HeuristicJudge``
    and compare with ``labels_path`` (the figures quoted in the README).

    The judge sees only the rendered views; the labels are read here, after judging. ``extra``
    holds ``invalid_lines`` (unusable evidence lines) and ``unjudged`` (error records).
    """
    from ..evidence import load_turns
    from ..judges.heuristic import HeuristicJudge
    from ..rubric import Rubric
    from ..view import build_views

    rubric = Rubric.resolve(rubric) if rubric is not None else Rubric.default()
    turns, invalid = load_turns(turns_path)
    views = build_views(turns, rubric)
    judge = HeuristicJudge(rubric)
    records = [judge.judge(v) for v in views]
    bands = {r.segment_id: r.extra["heuristic"]["band"] for r in records if r.verdict is not None}
    results = results_from_records(records, bands)
    agreement = label_agreement(results, load_labels(labels_path))
    agreement.extra.update(invalid_lines=len(invalid), unjudged=[r.segment_id for r in records if r.verdict is None])
    return agreement


# =============================================================================================
# Judge-to-human calibration: rho, kappa with CIs, strata, rater ceiling, gate, plan
# =============================================================================================
#: The publication gate of the technical reference -- agreement must reach 0.7 -- here its CI's lower bound.
GATE_THRESHOLD = 0.7
#: Integer codes of the ordered bands (good < partial < poor) -- what quadratic kappa and alpha read.
BAND_CODES: dict[str, int] = {b: i for i, b in enumerate(BANDS)}
#: Columns of a tidy human-labels frame (one row per segment and rater), as ``labelling.import_labels`` returns.
HUMAN_LABEL_COLUMNS: tuple[str, ...] = ("segment_id", "rater", *DIMENSIONS, "verdict", "comment")
#: Default stratifiers of the labelling design (the technical reference's -- band, surface, client).
DEFAULT_STRATA: tuple[str, ...] = ("band", "surface", "client")
_GATE_METRICS = ("kappa", "kappa_quadratic", "rho")


def _z(confidence: float) -> float:
    from scipy.stats import norm

    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    return float(norm.ppf(0.5 + confidence / 2))


def band_codes(values: Sequence[str]) -> np.ndarray:
    """Bands/verdicts as integer codes 0 (good), 1 (partial), 2 (poor); ``ValueError`` names a bad value."""
    out = np.empty(len(values), dtype=np.int64)
    for i, v in enumerate(values):
        if v not in BAND_CODES:
            raise ValueError(f"band {v!r} is not one of {list(BANDS)}")
        out[i] = BAND_CODES[v]
    return out


def kappa_from_codes(a: np.ndarray, b: np.ndarray, k: int = len(BANDS), weights: str | None = None,
                     sample_weight: np.ndarray | None = None) -> float:
    """:func:`cohens_kappa` on integer codes ``0..k-1`` (fast: one ``bincount``), optionally with
    per-item ``sample_weight`` (the confusion proportions become weighted shares: the design-weighted
    estimate of the population kappa). ``nan`` when the chance disagreement is 0."""
    a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
    w_items = None if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    table = np.bincount(a * k + b, weights=w_items, minlength=k * k).reshape(k, k).astype(np.float64)
    total = table.sum()
    if total == 0:
        return float("nan")
    p = table / total
    e = np.outer(p.sum(axis=1), p.sum(axis=0))
    i, j = np.indices((k, k))
    if weights is None:
        w = (i != j).astype(np.float64)
    elif weights == "linear":
        w = np.abs(i - j) / (k - 1)
    elif weights == "quadratic":
        w = (i - j) ** 2 / (k - 1) ** 2
    else:
        raise ValueError(f"weights must be None, 'linear' or 'quadratic', got {weights!r}")
    expected = float((w * e).sum())
    if expected == 0.0:
        return float("nan")
    return float(1.0 - (w * p).sum() / expected)


def spearman_rho(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's rank correlation (ties get mid-ranks; ``scipy.stats.spearmanr``); ``nan`` when either
    side is constant."""
    from scipy.stats import spearmanr

    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if len(x) < 2 or np.all(x == x[0]) or np.all(y == y[0]):
        return float("nan")
    return float(spearmanr(x, y).statistic)


@dataclass
class Estimate:
    """One agreement statistic with its confidence interval.

    ``ci`` is the seeded bootstrap interval (``scipy.stats.bootstrap``, paired resampling of segments;
    ``method`` says BCa or percentile: BCa is tried first, percentile is used when BCa is undefined,
    e.g. for a degenerate jackknife). ``asymptotic_se`` / ``asymptotic_ci`` (kappa only): the
    large-sample standard error of ``statsmodels.stats.inter_rater.cohens_kappa`` (Fleiss, Cohen and
    Everitt 1969) and ``value +- z * se``.
    """

    name: str
    value: float
    ci: tuple[float, float]
    n: int
    method: str
    confidence: float
    n_boot: int
    seed: int | None
    asymptotic_se: float | None = None
    asymptotic_ci: tuple[float, float] | None = None

    @property
    def lower(self) -> float:
        return self.ci[0]

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "value": _f(self.value), "ci": [_f(self.ci[0]), _f(self.ci[1])], "n": self.n,
                "ci_method": self.method, "confidence": self.confidence, "n_boot": self.n_boot, "seed": self.seed,
                "asymptotic_se": _f(self.asymptotic_se),
                "asymptotic_ci": None if self.asymptotic_ci is None else [_f(x) for x in self.asymptotic_ci]}


def _f(x: Any) -> float | None:
    """JSON-safe float (``nan`` -> ``None``), rounded to 6 places."""
    if x is None:
        return None
    x = float(x)
    return None if x != x else round(x, 6)


def _bootstrap(data: tuple[np.ndarray, ...], statistic: Any, *, n_boot: int, seed: int | None,
               confidence: float) -> tuple[tuple[float, float], str]:
    """Paired, seeded ``scipy.stats.bootstrap``: BCa first, percentile when BCa gives no finite interval."""
    import warnings

    from scipy.stats import bootstrap

    if len(data[0]) < 3:
        return (float("nan"), float("nan")), "none (n < 3)"
    for method in ("BCa", "percentile"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # degenerate resamples: reported as a non-finite interval
            res = bootstrap(data, statistic, paired=True, vectorized=False, n_resamples=n_boot,
                            confidence_level=confidence, method=method, rng=np.random.default_rng(seed))
        lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
        if np.isfinite(lo) and np.isfinite(hi):
            return (lo, hi), method
    return (float("nan"), float("nan")), "undefined (degenerate resamples)"


def rho_estimate(judge_scores: Sequence[float], human_scores: Sequence[float], *, n_boot: int = 2000,
                 seed: int | None = 0, confidence: float = 0.95) -> Estimate:
    """Spearman's rho of judge vs human scores with a seeded paired bootstrap CI."""
    x, y = np.asarray(judge_scores, dtype=np.float64), np.asarray(human_scores, dtype=np.float64)
    if len(x) != len(y):
        raise ValueError(f"score sequences differ in length: {len(x)} vs {len(y)}")
    ci, method = _bootstrap((x, y), spearman_rho, n_boot=n_boot, seed=seed, confidence=confidence)
    return Estimate("rho", spearman_rho(x, y), ci, len(x), method, confidence, n_boot, seed)


def kappa_estimate(judge_bands: Sequence[str], human_bands: Sequence[str], *, weights: str | None = None,
                   n_boot: int = 2000, seed: int | None = 0, confidence: float = 0.95) -> Estimate:
    """Cohen's kappa of judge vs human bands (``weights`` None or ``"quadratic"``/``"linear"``) with a
    seeded paired bootstrap CI, and statsmodels' asymptotic SE and ``kappa +- z * SE`` beside it."""
    from statsmodels.stats.inter_rater import cohens_kappa as sm_kappa

    a, b = band_codes(list(judge_bands)), band_codes(list(human_bands))
    if len(a) != len(b):
        raise ValueError(f"rating sequences differ in length: {len(a)} vs {len(b)}")
    value = kappa_from_codes(a, b, weights=weights)
    ci, method = _bootstrap((a, b), lambda x, y: kappa_from_codes(x, y, weights=weights), n_boot=n_boot,
                            seed=seed, confidence=confidence)
    se = asym = None
    if np.isfinite(value):
        table = np.bincount(a * len(BANDS) + b, minlength=len(BANDS) ** 2).reshape(len(BANDS), len(BANDS))
        res = sm_kappa(table, wt=weights, return_results=True)
        se = float(res["std_kappa"])
        z = _z(confidence)
        asym = (value - z * se, value + z * se)
    name = "kappa" if weights is None else f"kappa_{weights}"
    return Estimate(name, value, ci, len(a), method, confidence, n_boot, seed, se, asym)


# -- human labels -> per-segment pairs ---------------------------------------------------------------
def one_row_per_segment(results_df: pd.DataFrame, *, allow_mixed: bool = False) -> pd.DataFrame:
    """The judged rows of a run's results, one per segment (sample 0 of a repeated run); refuses mixed
    judge ids unless ``allow_mixed``."""
    need = ["segment_id", "score", "band", *CAP_FACTS]
    missing = [c for c in need if c not in results_df.columns]
    if missing:
        raise ValueError(f"results lack column(s) {missing}")
    res = results_df
    if "status" in res.columns:
        res = res[res["status"] == "judged"]
    if "judge_id" in res.columns and not allow_mixed:
        ids = sorted(res["judge_id"].dropna().astype(str).unique())
        if len(ids) > 1:
            raise ValueError(f"results mix judge ids {ids}; calibrate one judge at a time")
    if "sample_index" in res.columns:
        res = res.sort_values(["segment_id", "sample_index"], kind="stable")
    res = res.drop_duplicates("segment_id", keep="first")
    return res.dropna(subset=["score"]).reset_index(drop=True)


def score_human_labels(labels: pd.DataFrame, results_df: pd.DataFrame, rubric: Any = None) -> pd.DataFrame:
    """Each human label row scored by the rubric exactly as the judge's subscores are (the same caps,
    from the segment's trajectory facts in ``results_df``): adds ``human_score`` and ``human_score_band``.

    Label rows of segments absent from ``results_df`` (not judged) are dropped here; the caller counts them.
    A label the rubric cannot score (e.g. all the weight on a null faithfulness) gets NaN ``human_score``,
    ``human_score_band`` ``None`` and the scorer's reason in ``human_unscorable_reason`` (``None`` otherwise).
    """
    from ..rubric import Rubric
    from ..scoring import score_frame

    rubric = Rubric.default() if rubric is None else Rubric.resolve(rubric) if isinstance(rubric, str) else rubric
    res = one_row_per_segment(results_df, allow_mixed=True)
    facts = res.set_index("segment_id")[list(CAP_FACTS)].astype(bool)
    lab = labels[labels["segment_id"].isin(facts.index)].copy()
    if lab.empty:
        return lab.assign(human_score=pd.Series(dtype=float), human_score_band=pd.Series(dtype=str))
    frame = lab[list(DIMENSIONS)].apply(pd.to_numeric, errors="coerce").astype(np.float64)
    for f in CAP_FACTS:
        frame[f] = facts.loc[lab["segment_id"], f].to_numpy()
    scored = score_frame(frame.reset_index(drop=True), rubric)
    lab["human_score"] = scored["score"].to_numpy()
    # a label the rubric cannot score has no band (None, never "nan" and never poor) and the scorer's reason
    lab["human_score_band"] = scored["band"].astype(object).where(scored["band"].notna(), None).to_numpy()
    lab["human_unscorable_reason"] = scored["unscorable_reason"].to_numpy()
    return lab.reset_index(drop=True)


def _median_band(bands: list[str]) -> str | None:
    """The ordinal median of some bands, a tie toward the worse one; ``None`` without any (unscorable)."""
    return BANDS[int(np.ceil(np.median(band_codes(bands))))] if bands else None


def consensus(scored_labels: pd.DataFrame) -> pd.DataFrame:
    """One row per segment from several raters: ``human_score`` = mean of the raters' scores,
    ``human_score_sd``; ``human_verdict`` = the ordinal median of the raters' verdicts, a tie between two
    bands resolved toward the worse one (conservative); ``n_raters``. Raters whose label the rubric cannot
    score are left out of ``human_score`` and ``human_score_band``; a segment none of whose labels can be
    scored has NaN ``human_score`` and ``human_score_band`` ``None`` (never poor)."""
    g = scored_labels.assign(_code=band_codes(scored_labels["verdict"].tolist())).groupby("segment_id", sort=True)
    out = pd.DataFrame({
        "human_score": g["human_score"].mean(),
        "human_score_sd": g["human_score"].std(ddof=1),
        "human_verdict": [BANDS[int(np.ceil(np.median(v)))] for _, v in g["_code"]],
        "human_score_band": [_median_band([b for b in v.tolist() if isinstance(b, str)]) for _, v in g["human_score_band"]],
        "n_raters": g["rater"].nunique(),
    })
    return out.reset_index()


def rater_alpha(labels: pd.DataFrame, value: str = "verdict", level: str = "ordinal") -> dict[str, Any]:
    """Krippendorff's alpha between raters (the ``krippendorff`` package): the agreement people reach with
    each other, the ceiling a judge can be held to. ``value`` is ``"verdict"`` (coded 0/1/2), a dimension
    name, or ``"human_score"``. Returns ``{"alpha", "level", "value", "n_units", "n_raters"}`` with ``alpha``
    ``None`` unless some segment has two or more raters."""
    import krippendorff

    raters = sorted(labels["rater"].astype(str).unique())
    units = labels.groupby("segment_id")["rater"].nunique()
    pairable = units[units >= 2].index
    out = {"alpha": None, "level": level, "value": value, "n_units": int(len(pairable)), "n_raters": len(raters)}
    if len(pairable) == 0:
        return out
    lab = labels[labels["segment_id"].isin(pairable)]
    vals = band_codes(lab["verdict"].tolist()).astype(float) if value == "verdict" else \
        pd.to_numeric(lab[value], errors="coerce").to_numpy(dtype=float)
    grid = (pd.DataFrame({"rater": lab["rater"].astype(str).to_numpy(), "segment_id": lab["segment_id"].to_numpy(),
                          "v": vals})
            .pivot_table(index="rater", columns="segment_id", values="v", aggfunc="first"))
    data = grid.to_numpy(dtype=float)
    if np.unique(data[~np.isnan(data)]).size < 2:
        out["alpha"] = float("nan")  # one value throughout: alpha is undefined
        return out
    out["alpha"] = float(krippendorff.alpha(reliability_data=data, level_of_measurement=level))
    return out


def calibration_pairs(results_df: pd.DataFrame, human_labels: pd.DataFrame, *, rubric: Any = None,
                      design: pd.DataFrame | None = None, strata: Sequence[str] = DEFAULT_STRATA,
                      allow_mixed: bool = False) -> pd.DataFrame:
    """One row per labelled, judged segment: the judge's ``judge_score``/``judge_band``/``judge_verdict``,
    the human consensus (:func:`consensus`), the stratum columns and the design ``weight``.

    ``design`` (segment_id, weight[, stratum]) comes from the labelling pack's ``design.json``; without it
    every segment weighs 1 (a census: e.g. the constructed labels cover every segment). Segments whose
    human labels the rubric cannot score have no human score to pair: they are left out of the rows and
    listed in ``attrs["unscorable_labels"]`` (segment_id -> the scorer's reason).
    """
    res = one_row_per_segment(results_df, allow_mixed=allow_mixed)
    missing = [c for c in HUMAN_LABEL_COLUMNS[:-1] if c not in human_labels.columns]
    if missing:
        raise ValueError(f"human labels lack column(s) {missing}; expected {list(HUMAN_LABEL_COLUMNS)}")
    scored = score_human_labels(human_labels, res, rubric)
    if scored.empty:
        raise ValueError("no labelled segment was judged in the results")
    cons = consensus(scored)
    # a segment whose labels the rubric cannot score has no human score to compare: listed, not paired
    no_human = cons["human_score"].isna().to_numpy()
    reasons = scored.groupby("segment_id", sort=True)["human_unscorable_reason"].first()
    unscorable = {str(sid): reasons.get(sid) for sid in cons.loc[no_human, "segment_id"]}
    cons = cons.loc[~no_human]
    if cons.empty:
        raise ValueError(f"no labelled, judged segment can be scored under the rubric ({len(unscorable)} unscorable, "
                         f"e.g. {next(iter(unscorable.items()), None)})")
    keep = ["segment_id", "score", "band", *(c for c in ("judge_verdict", "judge_id") if c in res.columns),
            *(s for s in strata if s != "band" and s in res.columns)]
    pairs = res[keep].rename(columns={"score": "judge_score", "band": "judge_band"}).merge(cons, on="segment_id")
    pairs["judge_band"] = pairs["judge_band"].astype(str)
    if "band" in strata:
        pairs["band"] = pairs["judge_band"]
    present = [s for s in strata if s in pairs.columns]
    pairs["stratum"] = pairs[present].astype(str).agg("/".join, axis=1) if present else "all"
    if design is not None and len(design):
        w = design.set_index("segment_id")["weight"]
        pairs["weight"] = pairs["segment_id"].map(w).astype(float)
        if pairs["weight"].isna().any():
            raise ValueError(f"segments {pairs.loc[pairs['weight'].isna(), 'segment_id'].head().tolist()} are "
                             "labelled but not in the sampling design")
        if "stratum" in design.columns:
            pairs["stratum"] = pairs["segment_id"].map(design.set_index("segment_id")["stratum"])
    else:
        pairs["weight"] = 1.0
    pairs["agree"] = pairs["judge_band"] == pairs["human_verdict"]
    pairs["delta"] = pairs["judge_score"] - pairs["human_score"]
    pairs.attrs["unscorable_labels"] = unscorable
    return pairs


def stratum_agreement(pairs: pd.DataFrame, by: str | Sequence[str] = "stratum") -> pd.DataFrame:
    """Agreement per group of :func:`calibration_pairs` rows, weighted by the sampling design.

    Per group: ``n`` labelled, ``population`` (sum of design weights = segments the group stands for),
    ``agreement`` (design-weighted share of equal bands), ``mean_delta`` (design-weighted judge minus human
    score), ``kappa`` (unweighted, design-weighted confusion; ``nan`` when undefined, e.g. one judge band in
    the group) and ``rho`` (unweighted, ``nan`` below 3 pairs). A last row ``all`` holds the design-weighted
    totals: the estimate for the whole run, not just the sample.
    """
    keys = [by] if isinstance(by, str) else list(by)
    rows = []
    for key, g in [*pairs.groupby(keys, sort=True), (("all",) * len(keys), pairs)]:
        key = key if isinstance(key, tuple) else (key,)
        w = g["weight"].to_numpy(dtype=float)
        a, b = band_codes(g["judge_band"].tolist()), band_codes(g["human_verdict"].tolist())
        rows.append({**dict(zip(keys, key)), "n": len(g), "population": float(w.sum()),
                     "agreement": float(np.average(g["agree"], weights=w)),
                     "mean_delta": float(np.average(g["delta"], weights=w)),
                     "kappa": kappa_from_codes(a, b, sample_weight=w),
                     "rho": spearman_rho(g["judge_score"], g["human_score"]) if len(g) >= 3 else float("nan")})
    return pd.DataFrame(rows).set_index(keys)


# -- the gate ------------------------------------------------------------------------------------------
@dataclass
class GateVerdict:
    """The publication gate: passes only when the lower CI bound of ``metric`` clears ``threshold``."""

    passed: bool
    metric: str
    value: float
    lower: float
    upper: float
    n: int
    threshold: float
    confidence: float
    message: str

    def to_json(self) -> dict[str, Any]:
        return {"passed": self.passed, "metric": self.metric, "value": _f(self.value), "lower": _f(self.lower),
                "upper": _f(self.upper), "n": self.n, "threshold": self.threshold, "confidence": self.confidence,
                "message": self.message}


def calibration_gate(estimate: Estimate, *, threshold: float = GATE_THRESHOLD) -> GateVerdict:
    """Pass only when ``estimate.ci``'s lower bound is at least ``threshold`` (a point value above it is
    not enough; an undefined interval fails). The message states the statistic, its CI and n."""
    lo, hi = estimate.ci
    passed = bool(np.isfinite(lo) and lo >= threshold)
    pct = f"{estimate.confidence:.0%}"
    from ..display import fmt_interval

    val = "undefined" if not np.isfinite(estimate.value) else f"{estimate.value:.3f}"
    ci = "undefined" if not np.isfinite(lo) else fmt_interval(lo, hi)
    if passed:
        why = f"its lower bound {lo:.3f} clears {threshold:g}"
    elif not np.isfinite(lo):
        why = "the interval is undefined"
    elif np.isfinite(estimate.value) and estimate.value >= threshold:
        why = f"the point value reaches {threshold:g} but the lower bound {lo:.3f} does not: more labels needed"
    else:
        why = f"the lower bound {lo:.3f} is below {threshold:g}"
    msg = (f"gate {'PASSED' if passed else 'NOT passed'}: {estimate.name} = {val}, {pct} CI {ci} "
           f"({estimate.method}), n = {estimate.n} segments; {why}")
    return GateVerdict(passed, estimate.name, estimate.value, lo, hi, estimate.n, threshold, estimate.confidence, msg)


# -- sample-size planning --------------------------------------------------------------------------
def kappa_half_width(kappa: float, n: int, p_e: float, confidence: float = 0.95) -> float:
    """Half-width ``z * SE`` of a CI on unweighted kappa with Cohen's (1960) large-sample variance.

    The formula::

        p_o = kappa + (1 - kappa) * p_e        (the agreement that kappa implies)
        Var(kappa) ~= p_o (1 - p_o) / (n (1 - p_e)^2)
    """
    p_o = kappa + (1 - kappa) * p_e
    return _z(confidence) * float(np.sqrt(p_o * (1 - p_o) / (n * (1 - p_e) ** 2)))


def kappa_sample_size(kappa: float, half_width: float, *, p_e: float = 1 / 3, confidence: float = 0.95) -> int:
    """Labels needed so that the CI on kappa has at most ``half_width``, at an expected ``kappa`` and
    chance agreement ``p_e`` (``sum_k pi_k^2`` for band shares ``pi``; 1/3 for three equal bands)::

        n = ceil( z^2 p_o (1 - p_o) / (h^2 (1 - p_e)^2) ),   p_o = kappa + (1 - kappa) p_e
    """
    if not 0 < half_width < 1 or not 0 <= p_e < 1 or not -1 <= kappa <= 1:
        raise ValueError("need 0 < half_width < 1, 0 <= p_e < 1, -1 <= kappa <= 1")
    p_o = kappa + (1 - kappa) * p_e
    n = _z(confidence) ** 2 * p_o * (1 - p_o) / (half_width ** 2 * (1 - p_e) ** 2)
    return max(2, int(np.ceil(n - 1e-9)))


def rho_half_width(rho: float, n: int, confidence: float = 0.95) -> float:
    """Half-width (on the rho scale) of the Fisher-z CI on Spearman's rho.

    The formula::

        z = atanh(rho),  SE(z) = sqrt((1 + rho^2 / 2) / (n - 3))     (Bonett and Wright 2000)
        CI = tanh(z -+ z_c SE),  half-width = (upper - lower) / 2
    """
    if n <= 3:
        return float("inf")
    z, se = np.arctanh(rho), np.sqrt((1 + rho ** 2 / 2) / (n - 3))
    zc = _z(confidence)
    return float((np.tanh(z + zc * se) - np.tanh(z - zc * se)) / 2)


def rho_sample_size(rho: float, half_width: float, *, confidence: float = 0.95, n_max: int = 1_000_000) -> int:
    """Smallest n whose Fisher-z CI on rho (:func:`rho_half_width`) has at most ``half_width``."""
    if not 0 < half_width < 1 or not -1 < rho < 1:
        raise ValueError("need 0 < half_width < 1 and -1 < rho < 1")
    lo, hi = 4, 8
    while rho_half_width(rho, hi, confidence) > half_width:
        lo, hi = hi, hi * 2
        if hi > n_max:
            raise ValueError(f"more than {n_max} labels needed")
    while lo < hi:  # half-width falls with n: bisect for the first n that meets it
        mid = (lo + hi) // 2
        if rho_half_width(rho, mid, confidence) <= half_width:
            hi = mid
        else:
            lo = mid + 1
    return lo


def sample_size_plan(expected: Sequence[float] = (0.75, 0.8, 0.85, 0.9),
                     half_widths: Sequence[float] = (0.05, 0.1, 0.15), *, p_e: float = 1 / 3,
                     confidence: float = 0.95, threshold: float = GATE_THRESHOLD) -> pd.DataFrame:
    """The planning table: for each expected value and CI half-width, the labels needed for kappa and for
    rho; plus ``*_to_pass``: the labels for which an expected value above ``threshold`` would have its
    lower bound clear it (half-width = expected - threshold)."""
    rows = []
    for v in expected:
        row: dict[str, Any] = {"expected": v}
        for h in half_widths:
            row[f"kappa_n_hw{h:g}"] = kappa_sample_size(v, h, p_e=p_e, confidence=confidence)
            row[f"rho_n_hw{h:g}"] = rho_sample_size(v, h, confidence=confidence)
        gap = v - threshold
        row["kappa_n_to_pass"] = kappa_sample_size(v, gap, p_e=p_e, confidence=confidence) if gap > 0 else None
        row["rho_n_to_pass"] = rho_sample_size(v, gap, confidence=confidence) if gap > 0 else None
        rows.append(row)
    return pd.DataFrame(rows).set_index("expected")


# -- the summary -----------------------------------------------------------------------------------
@dataclass
class CalibrationAgreement:
    """Judge-to-human agreement on one labelled sample (study 05).

    ``rho``: Spearman's rho of the judge's scores vs the human scores (the raters' subscores scored by
    the same rubric and caps, mean over raters); ``kappa`` / ``kappa_quadratic``: Cohen's kappa of the
    judge's band vs the human verdict (ordinal median over raters); ``confusion``: rows judge band,
    columns human verdict; ``per_stratum`` and ``by_margin``: design-weighted agreement
    (:func:`stratum_agreement`); ``alpha``: Krippendorff's alpha (ordinal) between raters, on verdicts and
    on scores (``None`` with one rater per segment); ``gate``: :func:`calibration_gate` on ``gate_metric``.
    ``constructed``: the "human" labels were derived from the constructed labels, not people.
    """

    n: int
    judge_id: str | None
    rho: Estimate
    kappa: Estimate
    kappa_quadratic: Estimate
    confusion: pd.DataFrame
    per_stratum: pd.DataFrame
    by_margin: dict[str, pd.DataFrame]
    alpha: dict[str, dict[str, Any]]
    gate: GateVerdict
    pairs: pd.DataFrame
    n_labels: int
    n_raters: int
    unmatched: list[str]
    constructed: bool
    note: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def table(self) -> pd.DataFrame:
        """The agreement table: one row per statistic with value, CI and how the CI was made."""
        rows = []
        for e in (self.rho, self.kappa, self.kappa_quadratic):
            rows.append({"statistic": e.name, "value": e.value, "ci_low": e.ci[0], "ci_high": e.ci[1],
                         "ci_method": f"bootstrap {e.method}, {e.n_boot} resamples, seed {e.seed}",
                         "asymptotic_ci": (None if e.asymptotic_ci is None else
                                           f"[{e.asymptotic_ci[0]:.3f}, {e.asymptotic_ci[1]:.3f}] (SE {e.asymptotic_se:.3f})"),
                         "n": e.n})
        for key, a in self.alpha.items():
            rows.append({"statistic": f"alpha between raters ({key}, {a['level']})", "value": a["alpha"],
                         "ci_low": None, "ci_high": None, "ci_method": "point value (the ceiling)",
                         "asymptotic_ci": None, "n": a["n_units"]})
        return pd.DataFrame(rows).set_index("statistic")

    def to_json(self) -> dict[str, Any]:
        """The study.json payload (stable keys ``judge_id``, ``n``, ``kappa``, ``kappa_ci``, ``rho``,
        ``rho_ci``, ``gate_passed``, then details)."""
        total = self.per_stratum.loc[("all",) * self.per_stratum.index.nlevels] \
            if isinstance(self.per_stratum.index, pd.MultiIndex) else self.per_stratum.loc["all"]
        return {
            "judge_id": self.judge_id, "n": self.n,
            "kappa": _f(self.kappa.value), "kappa_ci": [_f(x) for x in self.kappa.ci],
            "rho": _f(self.rho.value), "rho_ci": [_f(x) for x in self.rho.ci],
            "gate_passed": self.gate.passed,
            "gate": self.gate.to_json(),
            "kappa_quadratic": _f(self.kappa_quadratic.value),
            "kappa_quadratic_ci": [_f(x) for x in self.kappa_quadratic.ci],
            "kappa_asymptotic_ci": None if self.kappa.asymptotic_ci is None else [_f(x) for x in self.kappa.asymptotic_ci],
            "ci_method": {"rho": f"bootstrap {self.rho.method}", "kappa": f"bootstrap {self.kappa.method}",
                          "kappa_quadratic": f"bootstrap {self.kappa_quadratic.method}",
                          "kappa_asymptotic": "statsmodels cohens_kappa std_kappa (large-sample)"},
            "confidence": self.kappa.confidence, "n_boot": self.kappa.n_boot, "seed": self.kappa.seed,
            "confusion": {str(r): {str(c): int(v) for c, v in row.items()} for r, row in self.confusion.iterrows()},
            "design_weighted": {"agreement": _f(total["agreement"]), "kappa": _f(total["kappa"]),
                                "mean_delta": _f(total["mean_delta"]), "population": _f(total["population"])},
            "alpha_raters": {k: {**v, "alpha": _f(v["alpha"])} for k, v in self.alpha.items()},
            "n_labels": self.n_labels, "n_raters": self.n_raters, "unmatched_labelled_segments": self.unmatched,
            "labels_constructed": self.constructed, "labels_note": self.note,
            "other_kappas": {k: _f(v) for k, v in self.extra.items() if k.startswith("kappa_")},
        }


def calibration_agreement(results_df: pd.DataFrame, human_labels: pd.DataFrame, *, rubric: Any = None,
                          design: pd.DataFrame | None = None, strata: Sequence[str] = DEFAULT_STRATA,
                          n_boot: int = 2000, seed: int | None = 0, confidence: float = 0.95,
                          gate_metric: str = "kappa", threshold: float = GATE_THRESHOLD,
                          constructed: bool = False, note: str | None = None,
                          allow_mixed: bool = False) -> CalibrationAgreement:
    """Everything study 05 reports, from a run's results and tidy human labels (see
    :class:`CalibrationAgreement`). ``gate_metric`` is ``"kappa"`` (the reference's target; default),
    ``"kappa_quadratic"`` or ``"rho"``."""
    if gate_metric not in _GATE_METRICS:
        raise ValueError(f"gate_metric must be one of {_GATE_METRICS}, got {gate_metric!r}")
    pairs = calibration_pairs(results_df, human_labels, rubric=rubric, design=design, strata=strata,
                              allow_mixed=allow_mixed)
    judge_id = None
    if "judge_id" in pairs.columns and pairs["judge_id"].nunique() == 1:
        judge_id = str(pairs["judge_id"].iloc[0])
    kw = {"n_boot": n_boot, "seed": seed, "confidence": confidence}
    rho = rho_estimate(pairs["judge_score"], pairs["human_score"], **kw)
    kappa = kappa_estimate(pairs["judge_band"], pairs["human_verdict"], **kw)
    kq = kappa_estimate(pairs["judge_band"], pairs["human_verdict"], weights="quadratic", **kw)
    confusion = confusion_table(pairs["judge_band"], pairs["human_verdict"]).rename_axis(index="judge band",
                                                                                        columns="human verdict")
    per_stratum = stratum_agreement(pairs)
    by_margin = {s: stratum_agreement(pairs, s) for s in strata if s in pairs.columns}
    scored = score_human_labels(human_labels, results_df if not allow_mixed else results_df, rubric)
    alpha = {"verdict": rater_alpha(scored, "verdict"), "score": rater_alpha(scored, "human_score")}
    estimates = {"kappa": kappa, "kappa_quadratic": kq, "rho": rho}
    judged = set(pairs["segment_id"])
    unmatched = sorted(set(human_labels["segment_id"]) - judged)
    return CalibrationAgreement(
        n=len(pairs), judge_id=judge_id, rho=rho, kappa=kappa, kappa_quadratic=kq, confusion=confusion,
        per_stratum=per_stratum, by_margin=by_margin, alpha=alpha,
        gate=calibration_gate(estimates[gate_metric], threshold=threshold), pairs=pairs,
        n_labels=len(human_labels), n_raters=int(human_labels["rater"].nunique()), unmatched=unmatched,
        constructed=constructed, note=note if note is not None else (LABELS_NOTE if constructed else None),
        extra={"kappa_band_vs_human_score_band": kappa_from_codes(band_codes(pairs["judge_band"].tolist()),
                                                                   band_codes(pairs["human_score_band"].tolist())),
               "kappa_judge_verdict": (kappa_from_codes(band_codes(pairs["judge_verdict"].astype(str).tolist()),
                                                        band_codes(pairs["human_verdict"].tolist()))
                                       if "judge_verdict" in pairs.columns else None)})
