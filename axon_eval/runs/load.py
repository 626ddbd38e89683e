"""Reading run folders back: :class:`Run` and :func:`load_run`.

The manifest is read eagerly and the results dataset (``results/part-*.parquet``, every part) when
first asked for; ``verdicts.jsonl`` and ``audit.jsonl`` (the large files: the audit holds the rows each
judge saw) likewise, and :meth:`Run.iter_audit` streams the audit without holding it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from ..summaries import summarise
from .io import iter_jsonl, read_jsonl, read_results
from .manifest import RunManifest
from .rows import empty_results

if TYPE_CHECKING:  # pragma: no cover
    from ..judges.base import JudgeRecord

AUDIT_FILES = ("audit.jsonl", "audit.jsonl.gz")


def audit_path(folder: str | Path) -> Path:
    """The audit file of a run folder (plain or gzip), or the plain name when neither exists."""
    for name in AUDIT_FILES:
        p = Path(folder) / name
        if p.exists():
            return p
    return Path(folder) / AUDIT_FILES[0]


def iter_verdicts(folder: str | Path) -> Iterator[JudgeRecord]:
    """Stream the :class:`~axon_eval.judges.records.JudgeRecord` lines of a run's ``verdicts.jsonl``."""
    from ..judges.base import JudgeRecord

    path = Path(folder) / "verdicts.jsonl"
    if not path.exists():
        return
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield JudgeRecord.model_validate_json(line)


class Run:
    """A run folder's contents: what :func:`~axon_eval.runs.evaluate`, ``rejudge`` and ``rescore`` return
    and what :func:`load_run` reads back. ``verdicts`` and ``audit`` load lazily from the folder unless
    given."""

    def __init__(self, run_dir: str | Path, manifest: RunManifest, params: dict[str, Any],
                 results: pd.DataFrame | None = None, verdicts: list[JudgeRecord] | None = None,
                 audit: list[dict[str, Any]] | None = None, invalid: list[dict[str, Any]] | None = None) -> None:
        self.run_dir = Path(run_dir)
        self.manifest = manifest
        self.params = params
        self._results = results
        self._verdicts = verdicts
        self._audit = audit
        self._invalid = invalid

    def __repr__(self) -> str:
        return (f"Run({str(self.run_dir)!r}, status={self.manifest.status!r}, "
                f"segments={self.manifest.counts.segments}, judge={self.manifest.judge_id!r})")

    @property
    def results(self) -> pd.DataFrame:
        """The results dataset, every part in partition order (read on first use; an empty frame when the
        run wrote none, e.g. a failed run)."""
        if self._results is None:
            loaded = read_results(self.run_dir)
            self._results = loaded if loaded is not None else empty_results()
        return self._results

    @results.setter
    def results(self, frame: pd.DataFrame) -> None:
        self._results = frame

    @property
    def verdicts(self) -> list[JudgeRecord]:
        if self._verdicts is None:
            self._verdicts = list(iter_verdicts(self.run_dir))
        return self._verdicts

    @property
    def audit(self) -> list[dict[str, Any]]:
        if self._audit is None:
            self._audit = read_jsonl(audit_path(self.run_dir))
        return self._audit

    def iter_audit(self) -> Iterator[dict[str, Any]]:
        """Stream the audit entries (one per results row) without holding them all."""
        if self._audit is not None:
            yield from self._audit
        else:
            yield from iter_jsonl(audit_path(self.run_dir))

    @property
    def invalid(self) -> list[dict[str, Any]]:
        if self._invalid is None:
            self._invalid = read_jsonl(self.run_dir / "invalid.jsonl")
        return self._invalid

    @property
    def members(self) -> pd.DataFrame | None:
        """An ensemble run's ``members.parquet`` (one row per segment, sample and member), else ``None``."""
        path = self.run_dir / "members.parquet"
        return pd.read_parquet(path) if path.exists() else None

    @property
    def figures_dir(self) -> Path:
        return self.run_dir / "figures"

    def summary(self, *, allow_mixed: bool = False) -> dict[str, Any]:
        """:func:`~axon_eval.summaries.summarise` of this run's results under the run's own rubric (its
        band edges classify per-segment means of repeated runs), with its invalid lines."""
        from ..rubric import Rubric

        rubric = Rubric.model_validate(self.manifest.rubric) if self.manifest.rubric else None
        return summarise(self.results, invalid=self.invalid, rubric=rubric, allow_mixed=allow_mixed)


def load_run(folder: str | Path) -> Run:
    """Read a run folder: manifest and params now; the results dataset (an empty frame when absent,
    e.g. a failed run), verdict records, audit entries and invalid lines when first used."""
    folder = Path(folder)
    manifest = RunManifest.read(folder)
    params_path = folder / "params.json"
    params = json.loads(params_path.read_text(encoding="utf-8")) if params_path.exists() else {}
    return Run(run_dir=folder, manifest=manifest, params=params)
