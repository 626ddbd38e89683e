"""``calibration.json``: the calibration record study 05 writes into its run folder and later studies,
reports and runs read (the record itself is pure: :mod:`axon_eval.stats.calibration_record`).

:func:`write_calibration` writes the record with the time it was written; :func:`read_calibration`
reads a ``calibration.json`` file or a run folder holding one; :func:`latest_calibration` finds the
newest one under a runs folder (run folders are named ``<UTC date>_<name>``, so the newest sorts last).
"""

from __future__ import annotations

import json
from pathlib import Path

from ..stats.calibration_record import CalibrationRecord
from .io import iso, utc_now, write_json

CALIBRATION_FILE = "calibration.json"
#: The study whose run folders hold calibration records.
CALIBRATION_STUDY = "05_calibration"


def write_calibration(run_dir: str | Path, record: CalibrationRecord) -> Path:
    """Write ``record`` as ``<run_dir>/calibration.json`` (plus ``written_at``, UTC) and return its path."""
    return write_json(Path(run_dir) / CALIBRATION_FILE, {**record.to_json(), "written_at": iso(utc_now())})


def read_calibration(path: str | Path) -> CalibrationRecord:
    """The record in ``path`` (a ``calibration.json`` or a run folder holding one). A missing file is a
    FileNotFoundError and a malformed one a ValueError, each naming the file."""
    p = Path(path)
    if p.is_dir():
        p = p / CALIBRATION_FILE
    if not p.is_file():
        raise FileNotFoundError(f"no calibration record at {p} (study 05 writes {CALIBRATION_FILE} into its run folder)")
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
        return CalibrationRecord.from_json(data)
    except (json.JSONDecodeError, ValueError, TypeError) as exc:
        raise ValueError(f"{p}: not a calibration record: {exc}") from exc


def latest_calibration(runs_root: str | Path, study: str = CALIBRATION_STUDY) -> Path | None:
    """The newest ``calibration.json`` in a run folder of ``study`` (``<date>_05-calibration``) directly under ``runs_root``
    (``None`` when there is none)."""
    root = Path(runs_root)
    if not root.is_dir():
        return None
    names = (study, study.replace("_", "-"))  # the runner names a study's folder <date>_05-calibration
    found = sorted(p for p in root.glob(f"*/{CALIBRATION_FILE}")
                   if p.is_file() and any(n in p.parent.name for n in names))
    return found[-1] if found else None
