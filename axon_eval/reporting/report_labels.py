"""The audit report's comparison with labels: the score band's agreement first, the judge verdict's beside it.

Both are Cohen's kappa, ``kappa = (p_o - p_e) / (1 - p_e)`` with ``p_o`` the share of equal verdicts and
``p_e`` the share expected by chance from the two marginal distributions (Cohen 1960), each with a
seeded bootstrap interval over segments and its n (:func:`axon_eval.stats.agreement.kappa_estimate`);
the linearly weighted kappa and the share of equal verdicts stand beside them. The band's figure is the
rubric's, the one published. :func:`recorded_labels_file` finds the labels file a run recorded among its
inputs, used only while its SHA-256 is unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ..display import fmt_interval, fmt_number, fmt_share, is_missing, people_table
from ..rubric import BANDS
from ..summaries import JUDGED
from .report_html import _table, esc
from .report_provenance import manifest_fields


#: Bootstrap resamples and seed of the kappa intervals of the comparison with labels (recorded in the table).
LABELS_N_BOOT = 1000
LABELS_SEED = 0
#: The two named figures of the comparison, in the order shown (DESIGN section 4, the rubric decision):
#: the band's agreement is the rubric's figure, the one published; the verdict's stands beside it.
BAND_KAPPA_NAME = "score band vs labels (Cohen's kappa)"
VERDICT_KAPPA_NAME = "judge verdict vs labels (Cohen's kappa)"
BAND_COLUMN = "score band vs labels (the rubric's figure)"
VERDICT_COLUMN = "judge verdict vs labels"


@dataclass
class LabelsComparison:
    """A run's segments against labels: the score band's agreement first, the judge verdict's beside it.

    ``band_kappa`` / ``verdict_kappa``: Cohen's kappa (unweighted) of the band / the judge's own verdict
    against the labelled verdict, each an :class:`axon_eval.stats.agreement.Estimate` with its seeded
    bootstrap interval and n; ``*_kappa_linear``: linearly weighted kappa; ``*_accuracy``: share of
    equal verdicts; ``band_confusion`` / ``verdict_confusion``: rows = band / judge verdict, columns =
    label; ``agreement``: every other figure (:class:`axon_eval.stats.agreement.LabelAgreement`).
    """

    n: int
    band_kappa: Any
    verdict_kappa: Any
    band_kappa_linear: float
    verdict_kappa_linear: float
    band_accuracy: float
    verdict_accuracy: float
    band_confusion: pd.DataFrame
    verdict_confusion: pd.DataFrame
    agreement: Any
    gate: float

    def headline(self) -> str:
        """One sentence, band first: ``score band vs labels (Cohen's kappa) 0.62 (95% CI ..., n 97) ...``."""
        def fig(name: str, e: Any) -> str:
            return (f"{name} {fmt_number(e.value, 2)} (95% CI {fmt_interval(*e.ci, digits=2)}, n {e.n})")
        if is_missing(self.band_kappa.value):
            gate = (f"it is undefined (the band or the labels use one category only), so the gate of kappa >= "
                    f"{fmt_number(self.gate)} cannot be checked")
        else:
            gate = (f"it {'meets' if self.band_kappa.value >= self.gate else 'does not meet'} the gate of "
                    f"kappa >= {fmt_number(self.gate)} before comparative claims")
        return (f"{fig(BAND_KAPPA_NAME, self.band_kappa)}: the rubric's figure, the one to publish; {gate}. Beside it, "
                f"{fig(VERDICT_KAPPA_NAME, self.verdict_kappa)}: what the judge itself concludes.")

    def table(self) -> pd.DataFrame:
        """The two figures side by side as text (band column first): kappa, its interval, the linearly
        weighted kappa, the share of equal verdicts and the segments compared."""
        rows = {
            "Cohen's kappa": (fmt_number(self.band_kappa.value, 2), fmt_number(self.verdict_kappa.value, 2)),
            f"95% CI (seeded bootstrap, {self.band_kappa.n_boot} resamples, seed {self.band_kappa.seed})":
                (fmt_interval(*self.band_kappa.ci, digits=2), fmt_interval(*self.verdict_kappa.ci, digits=2)),
            "Cohen's kappa, linearly weighted": (fmt_number(self.band_kappa_linear, 2),
                                                 fmt_number(self.verdict_kappa_linear, 2)),
            "share equal to the label": (fmt_share(self.band_accuracy), fmt_share(self.verdict_accuracy)),
            "segments compared": (fmt_number(self.n), fmt_number(self.n)),
        }
        return pd.DataFrame(list(rows.values()), index=list(rows), columns=[BAND_COLUMN, VERDICT_COLUMN])

    def judge_table(self, *, claims: bool = True) -> pd.DataFrame:
        """What the judge controls, as text: subscores inside the labelled ranges (overall and per
        dimension) and, with ``claims``, the labelled unsupported claims its explanation names (needs the
        explanations in the compared rows)."""
        a = self.agreement
        values = {"subscores inside the labelled ranges": fmt_share(a.in_range),
                  **{f"{d} inside its range": fmt_share(v) for d, v in a.in_range_by_dimension.items()}}
        if claims:
            values["labelled unsupported claims named in the explanation"] = (
                f"{fmt_share(a.claim_catch_rate)} of {a.n_claims}" if a.n_claims else "no labelled claims")
        return pd.DataFrame({"value": list(values.values())}, index=list(values))


def compare_with_labels(segments: pd.DataFrame, labels: pd.DataFrame, *, n_boot: int = LABELS_N_BOOT,
                        seed: int = LABELS_SEED, allow_mixed: bool = False) -> LabelsComparison:
    """:class:`LabelsComparison` of the judged segments of ``segments`` (one row per segment: a single-sample
    run's judged results, or :func:`axon_eval.summaries.segment_table`'s judged rows) with ``labels``
    (:func:`axon_eval.labels.load_labels`). Only segments in both are compared; raises ``ValueError`` when
    none is."""
    from ..stats.agreement import GATE_THRESHOLD, confusion_table, kappa_estimate, label_agreement

    rows = segments[(segments["status"] == JUDGED) & segments["band"].isin(BANDS)
                    & segments["judge_verdict"].isin(BANDS)]
    agreement = label_agreement(rows, labels, allow_mixed=allow_mixed)
    m = rows.merge(labels[["segment_id", "verdict"]], on="segment_id", how="inner")
    band, verdict, label = (m[c].astype(str).tolist() for c in ("band", "judge_verdict", "verdict"))
    bands = agreement.band_agreement or {}
    return LabelsComparison(
        n=len(m), band_kappa=kappa_estimate(band, label, n_boot=n_boot, seed=seed),
        verdict_kappa=kappa_estimate(verdict, label, n_boot=n_boot, seed=seed),
        band_kappa_linear=bands.get("kappa_linear", float("nan")), verdict_kappa_linear=agreement.kappa_linear,
        band_accuracy=bands.get("accuracy", float("nan")), verdict_accuracy=agreement.accuracy,
        band_confusion=confusion_table(band, label).rename_axis(index="score band", columns="label"),
        verdict_confusion=confusion_table(verdict, label).rename_axis(index="judge verdict", columns="label"),
        agreement=agreement, gate=GATE_THRESHOLD)


def _frame_html(frame: pd.DataFrame) -> str:
    """A small frame of text (index as the first column) as an HTML table, every cell escaped."""
    headers = [frame.index.name or "", *[str(c) for c in frame.columns]]
    return _table(headers, ([esc(i), *(esc(v) for v in row)] for i, row in zip(frame.index, frame.to_numpy())))


def recorded_labels_file(manifest: Any, root: str | Path | None = None) -> tuple[Path | None, str | None]:
    """The labels file a run recorded among its ``input_files`` (a ``.csv`` other than the evidence whose
    name holds ``labels``), if it is still the same file, and a sentence when it cannot be used.

    Relative paths are read from ``root`` (default: the repository root). ``(None, None)`` when the run
    recorded no labels file; ``(None, problem)`` when it is missing or its SHA-256 no longer matches.
    """
    from ..runs.io import file_sha256
    from ..runs.provenance import repository_root

    m = manifest_fields(manifest)
    files = {str(k): v for k, v in (m.get("input_files") or {}).items()}
    names = [p for p in files if p != m.get("turns_file") and p.endswith(".csv") and "labels" in Path(p).name]
    if not names:
        return None, None
    name = names[0]
    base = Path(root) if root is not None else Path(repository_root() or Path.cwd())
    path = Path(name) if Path(name).is_absolute() else base / name
    if not path.is_file():
        return None, f"The run recorded the labels file {name}, which is not at {path}: the comparison with labels is left out."
    if files[name] and file_sha256(path) != files[name]:
        return None, (f"The labels file {name} has changed since the run (its SHA-256 differs from the one "
                      "recorded): the comparison with labels is left out.")
    return path, None


def _labels_section(segments: pd.DataFrame, labels: pd.DataFrame | None, source: str | None,
                    problem: str | None) -> str:
    if labels is None and problem is None:
        return ""
    out = ["<h2>Comparison with labels</h2>"]
    if problem is not None:
        out.append(f'<p class="warn">{esc(problem)}</p>')
        return "\n".join(out)
    assert labels is not None
    try:
        comparison = compare_with_labels(segments, labels, allow_mixed=True)
    except ValueError as exc:
        out.append(f'<p class="warn">The comparison with labels could not be made: {esc(exc)}</p>')
        return "\n".join(out)
    note = labels.attrs.get("note") or comparison.agreement.note
    out.append(f"<p class='muted'>Labels: {esc(source or 'given')}. {esc(note)}. The judged segments of this run "
               f"that have a label are compared ({comparison.n}); unjudged segments have no band and are left "
               "out.</p>")
    out.append(f"<p><b>{esc(comparison.headline())}</b></p>")
    out.append(_frame_html(comparison.table()))
    out.append("<p>Score band (rows) against the label (columns), then the judge's verdict against the label:</p>")
    out.append(_frame_html(people_table(comparison.band_confusion)))
    out.append(_frame_html(people_table(comparison.verdict_confusion)))
    out.append("<p>What the judge controls:</p>" + _frame_html(comparison.judge_table(claims=False)))
    return "\n".join(out)


def _labels_of(m: Mapping[str, Any], labels: str | Path | pd.DataFrame | None
               ) -> tuple[pd.DataFrame | None, str | None, str | None]:
    """``(labels, source, problem)``: the given labels (a frame or a file), else the labels file the run
    recorded (:func:`recorded_labels_file`); a file that does not read is a problem sentence, not a crash."""
    from ..labels import LabelError, load_labels

    if isinstance(labels, pd.DataFrame):
        return labels, "given", None
    path, problem = (Path(labels), None) if labels is not None else recorded_labels_file(m)
    if path is None:
        return None, None, problem
    try:
        return load_labels(path), str(labels) if labels is not None else _recorded_name(m, path), None
    except (LabelError, OSError, ValueError) as exc:
        return None, None, f"The labels file {path} could not be read ({exc}): the comparison with labels is left out."


def _recorded_name(m: Mapping[str, Any], path: Path) -> str:
    for name, digest in (m.get("input_files") or {}).items():
        if Path(name).name == path.name:
            return f"{name} (sha256 {str(digest)[:12]}, as recorded by the run)"
    return str(path)


