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
from ..rubric import BANDS, DIMENSIONS


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
    """``results_df`` from :class:`~axon_eval.judges.base.JudgeRecord` objects (judged ones only).

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
    """Judge every segment of ``turns_path`` with :class:`~axon_eval.judges.heuristic.HeuristicJudge`
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
