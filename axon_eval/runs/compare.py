"""Two runs side by side: which segments moved, by how much, across which band edges, and whether by chance.

The statistics are :mod:`axon_eval.stats.paired`'s (the one paired comparison of the workbench): the
runs are paired on a key (``segment_id`` by default; ``pair_by="question"`` for two agent versions that
answered the same questions), a repeated run's samples averaged per segment, and

* the mean score difference B - A with its turn-clustered bootstrap percentile interval (seeded);
* the signed-rank test of the score differences (zeros dropped, exact p-value; ``None`` when every
  difference is zero);
* the band transition matrix (rows: band in A, columns: band in B, all three bands always shown) and its
  marginal-homogeneity test, and each dimension's signed-rank test with Holm-adjusted p-values.

This module adds what needs the run folders: matching rows on ``(key, sample_index)`` (rows unjudged on
either side and rows present in one run only are listed, never dropped), the per-row deltas, largest
``|delta|`` first, each with the arithmetic of both sides (``10 * sum(w_d s_d) / sum(w_d)``, then the
caps that applied) so a reader can retrace both scores, and the judges' disclosure (SIMULATED, or a local
server rather than the provider).

``identical`` is true when nothing is unmatched, every status agrees and every matched row has the same
four subscores, score and band. Runs over different evidence files (SHA-256 of the recorded
``turns_file``) are refused unless ``allow_different_evidence=True`` or they are paired by another key.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..display import fmt_estimate, fmt_number, fmt_share
from ..rubric import BANDS, DIMENSIONS, Rubric
from ..stats.intervals import CONFIDENCE, N_BOOT, SEED
from ..stats.paired import PAIR_BY, PairedComparison
from .disclosure import judge_disclosure
from .io import to_jsonable
from .load import Run, load_run
from .manifest import RunManifest
from .provenance import relative_to_root, repository_root

KEY = ["segment_id", "sample_index"]


def _rel(path: str | Path) -> str:
    """A run folder as recorded: relative to the repository root when inside it."""
    return relative_to_root(path, repository_root())


def _rubric_of(run: Run) -> Rubric | None:
    return Rubric.model_validate(run.manifest.rubric) if run.manifest.rubric else None


def score_arithmetic(row: pd.Series | dict[str, Any], rubric: Rubric | None, side: str = "") -> str:
    """``"10*(0.3*9 + 0.25*8 + 0.25*7 + 0.2*6)/1 = 77.5 -> 77.5 (good)"`` for one results row; caps that
    applied are named. ``side`` is a column suffix (``"_a"``) when the row holds both runs."""
    get = (lambda k: row[f"{k}{side}"]) if side else (lambda k: row[k])
    if rubric is None:
        return f"score {get('score')} ({get('band')})"
    weights = rubric.weights.as_dict()
    terms, total = [], 0.0
    for d in DIMENSIONS:
        value = get(d)
        if value is None or (isinstance(value, float) and math.isnan(value)):
            continue
        terms.append(f"{weights[d]:g}*{value:g}")
        total += weights[d]
    caps = get("caps_applied") or ""
    capped = f" capped by {caps.replace(';', ', ')}" if caps else ""
    return (f"10*({' + '.join(terms)})/{total:g} = {get('raw_score'):.2f}{capped} -> "
            f"{get('score'):.1f} ({get('band')})")


@dataclass
class RunComparison:
    """Result of :func:`compare_runs` (see the module docstring for definitions)."""

    run_a: str
    run_b: str
    judge_a: str | None
    judge_b: str | None
    rubric_a: str | None
    rubric_b: str | None
    same_evidence: bool
    n_matched: int
    n_compared: int
    deltas: pd.DataFrame
    transitions: pd.DataFrame
    unmatched_a: list[str]
    unmatched_b: list[str]
    unjudged: pd.DataFrame
    mean_delta: float | None
    mean_delta_ci: tuple[float, float] | None
    max_abs_delta: float | None
    n_band_changes: int
    wilcoxon_statistic: float | None
    wilcoxon_p: float | None
    identical: bool
    seed: int
    n_boot: int
    confidence: float = 0.95
    notes: list[str] = field(default_factory=list)
    paired: PairedComparison | None = None
    pair_by: str = PAIR_BY
    disclosure_a: str = ""
    disclosure_b: str = ""
    corrected: pd.DataFrame | None = None

    @property
    def simulated(self) -> bool:
        """Whether a side's judge is simulated (then every output says SIMULATED)."""
        return "SIMULATED" in self.disclosure_a or "SIMULATED" in self.disclosure_b

    def disclosure_lines(self) -> list[str]:
        """One loud line per side whose judge is simulated or ran against a local server (else none)."""
        return [f"{side}: {text.upper() if text == 'SIMULATED' else text} -- judge "
                f"{judge or 'not recorded'}" + (" (its differences are simulated, not measured)" if "SIMULATED" in text
                                                else "")
                for side, text, judge in (("A", self.disclosure_a, self.judge_a), ("B", self.disclosure_b, self.judge_b))
                if text]

    def to_json(self) -> dict[str, Any]:
        """The headline figures (JSON-safe)."""
        return to_jsonable({
            "run_a": _rel(self.run_a), "run_b": _rel(self.run_b), "judge_a": self.judge_a, "judge_b": self.judge_b,
            "rubric_a": self.rubric_a, "rubric_b": self.rubric_b, "same_evidence": self.same_evidence,
            "n_matched": self.n_matched, "n_compared": self.n_compared, "mean_delta": self.mean_delta,
            "mean_delta_ci95": list(self.mean_delta_ci) if self.mean_delta_ci else None,
            "max_abs_delta": self.max_abs_delta, "n_band_changes": self.n_band_changes,
            "transitions": {a: {b: int(self.transitions.loc[a, b]) for b in BANDS} for a in BANDS},
            "wilcoxon_statistic": self.wilcoxon_statistic, "wilcoxon_p": self.wilcoxon_p,
            "unmatched_a": self.unmatched_a, "unmatched_b": self.unmatched_b,
            "unjudged": self.unjudged[KEY].to_dict(orient="records") if len(self.unjudged) else [],
            "identical": self.identical, "seed": self.seed, "n_boot": self.n_boot, "confidence": self.confidence,
            "notes": self.notes, "pair_by": self.pair_by, "simulated": self.simulated,
            "disclosure_a": self.disclosure_a or None, "disclosure_b": self.disclosure_b or None,
            "paired": paired_json(self.paired) if self.paired is not None else None,
            "corrected": self.corrected.to_dict(orient="records") if self.corrected is not None else None,
        })

    def format(self, top: int = 10) -> str:
        """A plain-text summary for the terminal: numbers for people (``axon_eval.display``: 2-3
        significant digits, shares as percentages, a p-value below 0.001 as ``< 0.001``), each changed
        row named by its segment and, when the runs judged a segment more than once, its sample."""
        def judge_rubric(judge: str | None, rubric: str | None) -> str:
            return f"[judge {judge or 'not recorded'} | rubric {rubric or 'not recorded'}]"

        lines = [*self.disclosure_lines(),
                 f"A: {self.run_a}  {judge_rubric(self.judge_a, self.rubric_a)}",
                 f"B: {self.run_b}  {judge_rubric(self.judge_b, self.rubric_b)}",
                 f"matched rows: {self.n_matched}; compared (judged in both): {self.n_compared}; "
                 f"only in A: {len(self.unmatched_a)}; only in B: {len(self.unmatched_b)}; "
                 f"unjudged in either: {len(self.unjudged)}"]
        if self.mean_delta is not None:
            delta = (fmt_estimate(self.mean_delta, *self.mean_delta_ci, signed=True) if self.mean_delta_ci
                     else signed(self.mean_delta))
            p = "not defined (every delta is 0)" if self.wilcoxon_p is None else p_value(self.wilcoxon_p)
            unit = f" ({fmt_share(self.confidence)} CI, turns resampled)" if self.mean_delta_ci else ""
            lines.append(f"mean delta B-A: {delta} points{unit}; largest |delta| "
                         f"{fmt_number(self.max_abs_delta, 3, max_decimals=2)}; signed-rank p {p}")
        n_units = self.paired.n_pairs if self.paired is not None else self.n_compared
        share = f" ({fmt_share(self.n_band_changes / n_units)})" if n_units else ""
        lines.append(f"band changes: {self.n_band_changes} of {n_units} segments{share}")
        lines.append("band transitions (rows A, columns B):")
        lines.extend("  " + line for line in self.transitions.to_string().splitlines())
        moved = self.deltas[self.deltas["delta"] != 0].head(top)
        if len(moved):
            several = bool((self.deltas["sample_index"] != 0).any())
            lines.append(f"largest |delta| (top {len(moved)}):")
            for _, r in moved.iterrows():
                name = row_name(r["segment_id"], r["sample_index"], several)
                lines.append(f"  {name}: {signed(r['delta'])}")
                lines.append(f"    A: {r['arithmetic_a']}")
                lines.append(f"    B: {r['arithmetic_b']}")
        lines.extend(f"note: {n}" for n in self.notes)
        lines.append("IDENTICAL" if self.identical else "NOT identical")
        return "\n".join(lines)


def paired_json(p: PairedComparison) -> dict[str, Any]:
    """The paired tests as plain JSON types (the verdict, band test, score test, dimensions, shares)."""
    from dataclasses import asdict

    return to_jsonable({
        "verdict": p.verdict, "reasons": list(p.reasons), "n_pairs": p.n_pairs, "pair_by": p.pair_by,
        "band_test": asdict(p.band_test), "bowker": asdict(p.bowker) if p.bowker is not None else None,
        "score_test": asdict(p.score_test), "dimensions": p.dimensions.to_dict(orient="records"),
        "differences": p.shares.to_dict(orient="records"), "alpha": p.alpha, "confidence": p.confidence,
    })


def row_name(segment_id: Any, sample_index: Any, several_samples: bool) -> str:
    """``segment eu-0012#2`` (its sample named only when the runs judged segments more than once:
    ``segment eu-0012#2, sample 1``); segment ids carry their own ``#n`` for bundled questions."""
    return f"segment {segment_id}" + (f", sample {int(sample_index)}" if several_samples else "")


def signed(value: float) -> str:
    """A change in points with its sign: 3 significant digits, at most 2 decimals (``+1.6``, ``-0.58``,
    ``+12.5``, ``0``)."""
    text = fmt_number(value, 3, max_decimals=2)
    return text if text == "0" or text.startswith("-") else f"+{text}"


def p_value(p: float) -> str:
    """``= 0.88`` (two significant digits) or ``< 0.001``: never scientific notation."""
    return "< 0.001" if p < 0.001 else f"= {fmt_number(p, 2)}"


def _evidence_hash(m: RunManifest) -> str | None:
    return m.input_files.get(m.turns_file) if m.turns_file else None


def compare_runs(a: str | Path | Run, b: str | Path | Run, *, allow_different_evidence: bool = False,
                 n_boot: int = N_BOOT, seed: int = SEED, confidence: float = CONFIDENCE,
                 pair_by: str = PAIR_BY) -> RunComparison:
    """Compare run ``b`` against run ``a`` (folders or loaded runs); see the module docstring.

    Every statistic (mean difference and its turn-clustered interval, the signed-rank tests, the band
    transitions and their test) is :func:`axon_eval.stats.paired.compare_runs`'s, the one paired
    comparison of the workbench; this function adds the run folders' identity, the row listing and the
    evidence check. ``pair_by`` names the key that pairs the runs (``segment_id``: the same captured
    segment; ``question``: two agent versions answering the same questions, over different evidence).
    """
    from ..stats.paired import compare_runs as paired_compare

    run_a = a if isinstance(a, Run) else load_run(a)
    run_b = b if isinstance(b, Run) else load_run(b)
    ha, hb = _evidence_hash(run_a.manifest), _evidence_hash(run_b.manifest)
    same = ha is not None and ha == hb
    notes: list[str] = []
    if not same:
        message = (f"runs read different evidence (A: {run_a.manifest.turns_file} sha256 {str(ha)[:12]}, "
                   f"B: {run_b.manifest.turns_file} sha256 {str(hb)[:12]})")
        if not allow_different_evidence and pair_by == PAIR_BY:
            raise ValueError(message + "; pass allow_different_evidence=True (--allow-different-evidence) to "
                             "compare them anyway, or pair them by a shared key (--pair-by question)")
        notes.append(message)
    ra, rb = run_a.results, run_b.results
    key = [pair_by, "sample_index"]
    for label, frame in (("A", ra), ("B", rb)):
        if pair_by not in frame.columns:
            raise ValueError(f"run {label} has no column {pair_by!r} to pair by; it has {sorted(frame.columns)}")
    merged = ra.merge(rb, on=key, how="outer", suffixes=("_a", "_b"), indicator=True)
    if pair_by != "segment_id":
        merged["segment_id"] = merged["segment_id_a"].fillna(merged["segment_id_b"])
    only_a = merged.loc[merged["_merge"] == "left_only", "segment_id"].astype(str).tolist()
    only_b = merged.loc[merged["_merge"] == "right_only", "segment_id"].astype(str).tolist()
    both = merged[merged["_merge"] == "both"].copy()
    judged = (both["status_a"] == "judged") & (both["status_b"] == "judged")
    unjudged = both.loc[~judged, [*KEY, "status_a", "status_b", "error_a", "error_b"]].reset_index(drop=True)
    cmp = both[judged].copy()
    cmp["delta"] = cmp["score_b"] - cmp["score_a"]
    cmp["abs_delta"] = cmp["delta"].abs()
    rub_a, rub_b = _rubric_of(run_a), _rubric_of(run_b)
    cmp["arithmetic_a"] = [score_arithmetic(r, rub_a, "_a") for _, r in cmp.iterrows()]
    cmp["arithmetic_b"] = [score_arithmetic(r, rub_b, "_b") for _, r in cmp.iterrows()]
    cmp = cmp.sort_values(["abs_delta", "segment_id"], ascending=[False, True], ignore_index=True)
    columns = [*KEY, "delta", "score_a", "score_b", "band_a", "band_b",
               *[f"{d}_{s}" for d in DIMENSIONS for s in ("a", "b")], "arithmetic_a", "arithmetic_b"]
    if pair_by != "segment_id":
        columns = [*KEY, pair_by, "segment_id_b", *columns[len(KEY):]]
    deltas = cmp[columns].reset_index(drop=True)

    paired = None
    if len(cmp) >= 2:
        paired = paired_compare(ra, rb, rub_a, label_a="A", label_b="B", alpha=round(1 - confidence, 12),
                                n_boot=n_boot, seed=seed, pair_by=pair_by, rubric_b=rub_b)
        notes.extend(paired.notes)
    d = cmp["delta"].to_numpy(dtype=float)
    mean = ci = w_stat = w_p = max_abs = None
    if len(d):
        max_abs = float(np.abs(d).max())
    if paired is not None:
        md = paired.mean_difference
        mean, ci = md.estimate, (md.lo, md.hi)
        if paired.score_test.n_nonzero:
            w_stat, w_p = paired.score_test.statistic, paired.score_test.pvalue
        transitions = paired.transition.copy()
    else:
        if len(d):
            mean, ci = float(d.mean()), (float(d.mean()), float(d.mean()))
        transitions = pd.crosstab(pd.Categorical(cmp["band_a"], categories=list(BANDS)),
                                  pd.Categorical(cmp["band_b"], categories=list(BANDS)), dropna=False)
        transitions = transitions.reindex(index=list(BANDS), columns=list(BANDS), fill_value=0)
    transitions.index.name, transitions.columns.name = "A", "B"
    same_subscores = True
    for dim in DIMENSIONS:
        x, y = cmp[f"{dim}_a"].to_numpy(dtype=float), cmp[f"{dim}_b"].to_numpy(dtype=float)
        same_subscores &= bool(np.array_equal(x, y, equal_nan=True))
    band_changes = int(transitions.to_numpy().sum() - np.trace(transitions.to_numpy()))
    row_band_changes = int((cmp["band_a"].astype(str) != cmp["band_b"].astype(str)).sum())
    statuses_agree = bool((both["status_a"] == both["status_b"]).all())
    identical = (not only_a and not only_b and statuses_agree and same_subscores and row_band_changes == 0
                 and bool(np.all(d == 0)))
    return RunComparison(
        run_a=str(run_a.run_dir), run_b=str(run_b.run_dir), judge_a=run_a.manifest.judge_id,
        judge_b=run_b.manifest.judge_id, rubric_a=run_a.manifest.rubric_id, rubric_b=run_b.manifest.rubric_id,
        same_evidence=same, n_matched=len(both), n_compared=len(cmp), deltas=deltas, transitions=transitions,
        unmatched_a=only_a, unmatched_b=only_b, unjudged=unjudged, mean_delta=mean, mean_delta_ci=ci,
        max_abs_delta=max_abs, n_band_changes=band_changes, wilcoxon_statistic=w_stat, wilcoxon_p=w_p,
        identical=identical, seed=seed, n_boot=n_boot, confidence=confidence, notes=notes, paired=paired,
        pair_by=pair_by, disclosure_a=judge_disclosure(run_a.manifest).label,
        disclosure_b=judge_disclosure(run_b.manifest).label)
