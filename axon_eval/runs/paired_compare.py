"""The paired tests of two runs for ``compare`` (issue 21 section 4): the band transition test
(Stuart-Maxwell for three bands, McNemar for two, Bowker's symmetry), each dimension's paired Wilcoxon
test with Holm-Bonferroni adjusted p-values, and a paired cluster-bootstrap interval on each band share
difference, from :func:`axon_eval.stats.paired.compare_runs`, as plain lines for the CLI."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..stats.intervals import ALPHA, N_BOOT, SEED
from ..stats.paired import PairedComparison, compare_runs
from .load import Run, load_run


def paired_comparison(a: str | Path | Run, b: str | Path | Run, *, alpha: float = ALPHA, n_boot: int = N_BOOT,
                      seed: int | None = SEED) -> PairedComparison:
    """Run ``b`` against run ``a`` (folders or loaded runs), paired on the segments judged in both."""
    run_a = a if isinstance(a, Run) else load_run(a)
    run_b = b if isinstance(b, Run) else load_run(b)
    return compare_runs(run_a.results, run_b.results, label_a="A", label_b="B", alpha=alpha,
                        n_boot=n_boot, seed=seed)


def paired_lines(a: Any, b: Any, **kwargs: Any) -> list[str]:
    """The heading and :meth:`PairedComparison.lines` (verdict first, then the band test, Holm-adjusted
    p-values and share differences); a comparison that cannot be made is one line saying why."""
    try:
        comparison = paired_comparison(a, b, **kwargs)
    except ValueError as exc:
        return [f"paired tests: not computed ({exc})"]
    return ["paired tests (segments judged in both runs; seed "
            f"{comparison.seed}, {comparison.n_boot} resamples):", *comparison.lines()]
