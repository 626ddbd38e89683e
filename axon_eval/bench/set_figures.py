"""Figures of the offline heuristic on one labelled set, for the judge code of any commit.

``python axon_eval/bench/set_figures.py TURNS LABELS [--judge-from CHECKOUT]`` prints one JSON record:

* ``verdict_kappa`` / ``band_kappa``: Cohen's kappa of the judge's categorical verdict, and of the
  scorer's band (the rubric's figure, DESIGN §4), against the labelled verdict (good/partial/poor),
  ``kappa = (p_o - p_e) / (1 - p_e)`` (Cohen 1960; :func:`statsmodels.stats.inter_rater.cohens_kappa`
  on the 3 x 3 table), each with a 95% percentile bootstrap interval over segments (``*_ci``; seed and
  resamples in ``bootstrap``); ``verdict_equal`` / ``band_equal``: how many segments agree;
* ``defects_verdict_good`` / ``defects_band_good``: defects (label not good) called good;
  ``correct_verdict_not_good`` / ``correct_band_not_good``: correct answers (label good) called
  partial or poor;
* ``in_range``: the share of observed subscores inside the labelled ranges (a null faithfulness
  range takes no part);
* ``auc_score`` and ``auc_dims``: ROC AUC of the score and of each subscore for correct against the
  rest (Mann-Whitney U / (n1 n0), ties half; missing values take no part);
* ``by_class``: per label ``note`` class, [band equal, verdict equal, n].

``--judge-from`` puts a checkout of another commit first on ``sys.path`` (``git worktree add /tmp/old
53ffe5b``), so the same figures come out for the judge code as it was there: the script reads only
what every version since the out-of-domain set has (``load_turns``, ``build_views``, ``HeuristicJudge``,
``Rubric.default``, the verdict's four subscores, ``extra["heuristic"]["band"/"score"]``) and
computes every statistic itself. The labels are CONSTRUCTED from seeded defects, not human judgements.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path
from typing import Any

VERDICTS = ("good", "partial", "poor")
DIMENSIONS = ("intent_understood", "sql_quality", "result_relevance", "answer_faithfulness")


def _kappa(a: list[str], b: list[str]) -> float:
    from statsmodels.stats.inter_rater import cohens_kappa

    table = [[sum(1 for x, y in zip(a, b) if x == r and y == c) for c in VERDICTS] for r in VERDICTS]
    return float(cohens_kappa(table, return_results=False))


#: seeded percentile bootstrap of the kappas (resampling segments); recorded in the output
BOOT_SEED, N_BOOT = 0, 2000


def _kappa_interval(a: list[str], b: list[str], seed: int = BOOT_SEED, n_boot: int = N_BOOT) -> list[float]:
    """95% percentile interval of Cohen's kappa over ``n_boot`` resamples of the segments (seeded);
    a resample whose kappa is undefined (one category only) is skipped."""
    import numpy as np

    codes = {v: i for i, v in enumerate(VERDICTS)}
    x = np.array([codes[v] for v in a])
    y = np.array([codes[v] for v in b])
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n_boot):
        idx = rng.integers(0, len(x), len(x))
        xs, ys = x[idx], y[idx]
        table = np.zeros((3, 3))
        np.add.at(table, (xs, ys), 1)
        n = table.sum()
        po = np.trace(table) / n
        pe = float((table.sum(0) * table.sum(1)).sum()) / n ** 2
        if pe < 1:
            out.append((po - pe) / (1 - pe))
    lo, hi = np.percentile(out, [2.5, 97.5])
    return [round(float(lo), 3), round(float(hi), 3)]


def _auc(values: list[float | None], positive: list[bool]) -> float:
    from scipy.stats import mannwhitneyu

    pairs = [(v, p) for v, p in zip(values, positive) if v is not None and v == v]
    pos = [v for v, p in pairs if p]
    neg = [v for v, p in pairs if not p]
    if not pos or not neg:
        return float("nan")
    return float(mannwhitneyu(pos, neg, alternative="two-sided").statistic) / (len(pos) * len(neg))


def set_figures(turns_path: str | Path, labels_path: str | Path) -> dict[str, Any]:
    """The record of the module docstring, for the ``axon_eval`` importable now."""
    from axon_eval.evidence import load_turns
    from axon_eval.judges.heuristic import HeuristicJudge
    from axon_eval.rubric import Rubric
    from axon_eval.view import build_views

    turns, _ = load_turns(turns_path)
    recs = {r.segment_id: r for r in (HeuristicJudge().judge(v) for v in build_views(turns, Rubric.default()))}
    with open(labels_path, encoding="utf-8") as fh:
        labels = list(csv.DictReader(fh))
    missing = [r["segment_id"] for r in labels if r["segment_id"] not in recs or recs[r["segment_id"]].verdict is None]
    if missing:
        raise SystemExit(f"{labels_path}: {len(missing)} labelled segment(s) unjudged or absent, e.g. {missing[0]}")
    lv = [r["verdict"] for r in labels]
    jv = [recs[r["segment_id"]].verdict.verdict for r in labels]
    bd = [recs[r["segment_id"]].extra["heuristic"]["band"] for r in labels]
    inside = total = 0
    for r in labels:
        v = recs[r["segment_id"]].verdict
        for d in DIMENSIONS:
            lo, hi, got = r[f"{d}_min"], r[f"{d}_max"], getattr(v, d)
            if lo == "" or got is None:
                continue
            total += 1
            inside += int(lo) <= got <= int(hi)
    by_class: dict[str, list[int]] = {}
    for r, b, v in zip(labels, bd, jv):
        c = by_class.setdefault(r["note"].split(":", 1)[0], [0, 0, 0])
        c[0] += b == r["verdict"]
        c[1] += v == r["verdict"]
        c[2] += 1
    good = [x == "good" for x in lv]
    return {
        "n": len(labels), "verdict_kappa": round(_kappa(lv, jv), 3), "verdict_kappa_ci": _kappa_interval(lv, jv),
        "verdict_equal": sum(map(str.__eq__, lv, jv)),
        "band_kappa": round(_kappa(lv, bd), 3), "band_kappa_ci": _kappa_interval(lv, bd),
        "band_equal": sum(map(str.__eq__, lv, bd)), "bootstrap": {"seed": BOOT_SEED, "resamples": N_BOOT},
        "defects": sum(not g for g in good), "correct": sum(good),
        "defects_verdict_good": sum(not g and v == "good" for g, v in zip(good, jv)),
        "defects_band_good": sum(not g and b == "good" for g, b in zip(good, bd)),
        "correct_verdict_not_good": sum(g and v != "good" for g, v in zip(good, jv)),
        "correct_band_not_good": sum(g and b != "good" for g, b in zip(good, bd)),
        "in_range": round(inside / total, 3) if total else float("nan"),
        "auc_score": round(_auc([recs[r["segment_id"]].extra["heuristic"]["score"] for r in labels], good), 3),
        "auc_dims": {d: round(_auc([getattr(recs[r["segment_id"]].verdict, d) for r in labels], good), 3)
                     for d in DIMENSIONS},
        "by_class": {k: by_class[k] for k in sorted(by_class)},
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Figures of the offline heuristic on one labelled set.")
    ap.add_argument("turns")
    ap.add_argument("labels")
    ap.add_argument("--judge-from", help="a checkout whose axon_eval is judged (default: the installed one)")
    args = ap.parse_args(argv)
    here = Path(__file__).resolve().parent
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != here]  # run as a file: no bench/ shadowing
    turns, labels = Path(args.turns).resolve(), Path(args.labels).resolve()
    if args.judge_from:
        root = Path(args.judge_from).resolve()
        if not (root / "axon_eval" / "__init__.py").exists():
            ap.error(f"--judge-from {args.judge_from}: no axon_eval package there (expected {root}/axon_eval)")
        sys.path.insert(0, str(root))
    print(json.dumps(set_figures(turns, labels)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
