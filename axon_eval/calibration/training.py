"""The labelled sets as training data for the fitted offline judge: one builder, the sets are data files.

The judges never read labels; this module (above them) does, for fitting and validation only.

A labelled set is a pair of files in one folder (default the repository's ``data/turns``):
``<domain>_turns.jsonl`` with ``<domain>_labels.csv``, and the bundled sample
``sample_turns.jsonl`` with ``labels.csv`` (domain ``sample``). :func:`labelled_sets` finds them,
:func:`training_frame` reads them into one frame: one row per labelled segment with its domain,
every signal of :mod:`~axon_eval.judges.heuristic.signals`, the label ranges and verdict
(``good`` = verdict good), the cap facts the rubric's score needs, and the rule judge's own score and
verdict (the ``heuristic`` figures shown beside the fitted judge's).

The labels are CONSTRUCTED from seeded defects, not human judgements (see :mod:`axon_eval.labels`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ..evidence import load_turns
from ..judges.heuristic import HeuristicJudge
from ..judges.heuristic.signals import SIGNAL_NAMES, extract_signals
from ..labels import load_labels
from ..rubric import DIMENSIONS, Rubric
from ..view import build_views

#: The repository's folder of labelled sets.
DATA_DIR = Path(__file__).resolve().parents[2] / "data" / "turns"
#: Further folders read with the default one -- the sets on real public sample databases (TPC-H, nycflights13).
EXTRA_DIRS = (DATA_DIR.parent / "realdb",)


@dataclass(frozen=True)
class LabelledSet:
    """One labelled set: its domain name, evidence file and labels file."""

    domain: str
    turns: Path
    labels: Path


def labelled_sets(data_dir: str | Path | None = None) -> list[LabelledSet]:
    """Every labelled set in ``data_dir`` (default :data:`DATA_DIR`), sorted by domain."""
    root = Path(data_dir) if data_dir is not None else DATA_DIR
    if not root.is_dir() and data_dir is None:
        root = Path("data/turns")
    found = []
    roots = [root, *(d for d in EXTRA_DIRS if d.is_dir())] if data_dir is None else [root]
    for turns in sorted(t for r in roots for t in r.glob("*_turns.jsonl")):
        domain = turns.name[: -len("_turns.jsonl")]
        labels = turns.parent / ("labels.csv" if domain == "sample" else f"{domain}_labels.csv")
        if labels.exists():
            found.append(LabelledSet(domain, turns, labels))
    return sorted(found, key=lambda s: s.domain)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def training_frame(sets: list[LabelledSet] | None = None, data_dir: str | Path | None = None) -> pd.DataFrame:
    """One row per labelled segment of ``sets`` (default :func:`labelled_sets` of ``data_dir``).

    Columns: ``domain``, ``segment_id``, ``defect``, every signal, the label ranges
    (``<dimension>_min``/``_max``), ``verdict`` and ``good`` (label), ``all_sql_failed``,
    ``ended_on_failure``, ``no_tools``, and the rule judge's ``rule_score``, ``rule_band`` and
    ``rule_verdict``. ``attrs["sources"]`` lists each file with its SHA-256. A labelled segment with no
    view (its turn is invalid) is left out and counted in ``attrs["unmatched"]``.
    """
    sets = labelled_sets(data_dir) if sets is None else sets
    judge = HeuristicJudge()
    rows = []
    unmatched = 0
    sources = []
    for s in sets:
        sources += [{"file": s.turns.name, "sha256": _sha256(s.turns)}, {"file": s.labels.name, "sha256": _sha256(s.labels)}]
        turns, _invalid = load_turns(s.turns)
        views = {v.segment_id: v for v in build_views(turns, Rubric.default())}
        labels = load_labels(s.labels)
        for rec in labels.to_dict("records"):
            view = views.get(rec["segment_id"])
            if view is None:
                unmatched += 1
                continue
            verdict, details = judge.assess(view)
            row = {"domain": s.domain, "segment_id": rec["segment_id"], "defect": rec["defect"]}
            row.update(extract_signals(view, (verdict, details)))
            for d in DIMENSIONS:
                for side in ("min", "max"):
                    v = rec[f"{d}_{side}"]
                    row[f"{d}_{side}"] = float("nan") if pd.isna(v) else float(v)
            facts = view.facts
            row.update({"verdict": rec["verdict"], "good": rec["verdict"] == "good",
                        "all_sql_failed": facts.all_sql_failed, "ended_on_failure": facts.ended_on_failure,
                        "no_tools": facts.no_tools, "rule_score": details["score"], "rule_band": details["band"],
                        "rule_verdict": verdict.verdict})
            rows.append(row)
    frame = pd.DataFrame(rows, columns=None if rows else ["domain", "segment_id", *SIGNAL_NAMES])
    frame.attrs["sources"] = sources
    frame.attrs["unmatched"] = unmatched
    return frame
