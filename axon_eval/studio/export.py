"""``label export``: the studio's labels as the labels file ``import-labels`` writes and every study reads.

The file has the columns of a filled labelling sheet (``segment_id``, the four dimensions, ``verdict``,
``rater``, ``comment``) plus ``source`` (``labels/<rater>.jsonl:<line>``, the journal line it came from)
and each segment's ``inclusion_probability`` and design ``weight`` from the pack's ``design.json`` (the
figures ``gate --corrected``, ``compare --labels`` and the studies weight by). One row per (segment,
rater): the newest record; skipped segments ("cannot judge") are not labels and are left out, and
counted. Adjudicated labels go to a separate file (rater ``adjudicated``), never mixed with raw ones.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..rubric import DIMENSIONS
from .collect import adjudicated_labels, latest_labels
from .pack import design_info, read_design

#: The export's columns, in order (those of a labelling sheet, then ``source`` and the design figures).
EXPORT_COLUMNS: tuple[str, ...] = ("segment_id", *DIMENSIONS, "verdict", "rater", "comment", "source",
                                   "inclusion_probability", "weight")
RAW_FILE = "studio.imported.csv"
ADJUDICATED_FILE = "studio-adjudicated.csv"


def export_frame(pack: str | Path, *, adjudicated: bool = False) -> tuple[pd.DataFrame, int]:
    """(the labels to export, the number of skipped segments left out)."""
    lab = adjudicated_labels(pack) if adjudicated else latest_labels(pack)
    skipped = int((lab["kind"] == "skip").sum())
    lab = lab[lab["kind"] == "label"].copy()
    info = design_info(read_design(pack))
    lab["inclusion_probability"] = lab["segment_id"].map(lambda s: info[s].inclusion_probability if s in info else None)
    lab["weight"] = lab["segment_id"].map(lambda s: info[s].weight if s in info else None)
    lab["comment"] = lab["comment"].fillna("")
    return lab[list(EXPORT_COLUMNS)].sort_values(["segment_id", "rater"]).reset_index(drop=True), skipped


def export_labels(pack: str | Path, out: str | Path | None = None, *, adjudicated: bool = False) -> tuple[Path, int, int]:
    """Write the export (default ``studio.imported.csv`` in the pack, ``studio-adjudicated.csv`` with
    ``adjudicated``) atomically; returns (path, rows written, skipped left out). ``ValueError`` when no
    label is saved yet (an empty labels file would be refused by every reader)."""
    from ..runs import atomic_write_text

    frame, skipped = export_frame(pack, adjudicated=adjudicated)
    if frame.empty:
        which = "adjudicated label" if adjudicated else "label"
        raise ValueError(f"no {which} is saved in {Path(pack) / 'labels'} yet ({skipped} skipped): nothing to export")
    path = Path(out) if out else Path(pack) / (ADJUDICATED_FILE if adjudicated else RAW_FILE)
    atomic_write_text(path, frame.to_csv(index=False))
    return path, len(frame), skipped
