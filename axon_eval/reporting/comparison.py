"""The folder of a run comparison: ``comparison.json``, deltas, transitions, two figures and ``compare.html``.

:func:`write_comparison` writes a :class:`~axon_eval.runs.compare.RunComparison` (``compare_runs``) as a new
run folder of kind ``compare``; the comparison itself is computed in :mod:`axon_eval.runs.compare`.
"""

from __future__ import annotations

import html
from pathlib import Path

from ..runs.compare import RunComparison
from ..runs.io import atomic_write_text, iso, new_run_dir, utc_now, write_json, write_parquet
from ..runs.manifest import RunCounts, RunManifest
from ..runs.provenance import package_versions, relative_to_root, repository_root


def _rel(path: str | Path) -> str:
    """A run folder as recorded: relative to the repository root when inside it."""
    return relative_to_root(path, repository_root())


def _figures(c: RunComparison, folder: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder.mkdir(parents=True, exist_ok=True)
    out = []
    fig, ax = plt.subplots(figsize=(5.5, 3.5))
    ax.hist(c.deltas["delta"], bins=41, color="#546e7a")
    ax.axvline(0, color="black", lw=0.8)
    ax.set_xlabel("score delta B - A (points)")
    ax.set_ylabel("segments")
    ax.set_title("Per-segment score change")
    fig.tight_layout()
    out.append(folder / "delta_histogram.png")
    fig.savefig(out[-1], dpi=110)
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(4.5, 4.5))
    ax.scatter(c.deltas["score_a"], c.deltas["score_b"], s=10, alpha=0.6, color="#37474f")
    ax.plot([0, 100], [0, 100], color="black", lw=0.8)
    for edge in (50, 80):
        ax.axvline(edge, color="#b0bec5", lw=0.8, ls="--")
        ax.axhline(edge, color="#b0bec5", lw=0.8, ls="--")
    ax.set_xlabel("score in A")
    ax.set_ylabel("score in B")
    ax.set_title("Scores, A against B (band edges dashed)")
    fig.tight_layout()
    out.append(folder / "score_scatter.png")
    fig.savefig(out[-1], dpi=110)
    plt.close(fig)
    return out


def _html(c: RunComparison, figures: list[Path], top: int) -> str:
    import base64

    esc = html.escape
    imgs = "".join(f'<img alt="{esc(p.stem)}" src="data:image/png;base64,{base64.b64encode(p.read_bytes()).decode()}">'
                   for p in figures)
    moved = c.deltas[c.deltas["delta"] != 0].head(top)
    rows = "".join(f"<tr><td>{esc(str(r.segment_id))}</td><td>{r.sample_index}</td><td>{r.delta:+.1f}</td>"
                   f"<td>{esc(r.arithmetic_a)}</td><td>{esc(r.arithmetic_b)}</td></tr>" for r in moved.itertuples())
    parts = [c.format(top=0)]
    if c.paired is not None:
        parts.append("paired tests (turns resampled for the intervals):\n" + "\n".join(c.paired.lines()))
    if c.corrected is not None:
        from ..stats.difference import format_differences

        parts.append("human-corrected differences (PPI++):\n" + "\n".join(format_differences(c.corrected)))
    summary = esc("\n\n".join(parts))
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>compare</title><style>"
            f"body{{font-family:sans-serif;max-width:1100px;margin:2em auto}}td,th{{border:1px solid #ccc;"
            f"padding:2px 6px;font-size:13px}}table{{border-collapse:collapse}}img{{max-width:48%}}</style></head>"
            f"<body><h1>Run comparison</h1><pre>{summary}</pre>{imgs}<h2>Largest changes</h2><table><tr><th>segment"
            f"</th><th>sample</th><th>delta</th><th>A</th><th>B</th></tr>{rows}</table></body></html>")


def write_comparison(c: RunComparison, out_dir: str | Path | None = None, *, name: str = "compare",
                     top: int = 50) -> Path:
    """Write a comparison as a new run folder (kind ``compare``): ``comparison.json``, ``deltas.parquet``,
    ``transitions.csv``, ``unjudged.csv``, ``figures/`` and ``compare.html``; returns the folder."""
    started = utc_now()
    out = Path(out_dir) if out_dir is not None else Path(c.run_b).parent
    folder = new_run_dir(out, name, None, now=started)
    write_json(folder / "comparison.json", c.to_json())
    write_parquet(folder / "deltas.parquet", c.deltas)
    atomic_write_text(folder / "transitions.csv", c.transitions.to_csv())
    atomic_write_text(folder / "unjudged.csv", c.unjudged.to_csv(index=False))
    figures = _figures(c, folder / "figures")
    atomic_write_text(folder / "compare.html", _html(c, figures, top))
    manifest = RunManifest(run_id=folder.name, status="complete", kind="compare", name=name,
                           rubric_id=c.rubric_b, judge_id=c.judge_b, packages=package_versions(),
                           params={"run_a": _rel(c.run_a), "run_b": _rel(c.run_b), "seed": c.seed, "n_boot": c.n_boot,
                                   "pair_by": c.pair_by, "simulated": c.simulated},
                           seed=c.seed, started_at=iso(started), ended_at=iso(utc_now()), source_run=_rel(c.run_a),
                           counts=RunCounts(segments=c.n_matched, judged=c.n_compared,
                                            unjudged=c.n_matched - c.n_compared, samples=c.n_matched))
    if c.simulated:
        manifest.warnings.append("SIMULATED: a judge of this comparison is simulated; its differences are not measured")
    manifest.write(folder)
    return folder
