"""Labels in: filled sheets read and validated, the constructed stand-in, and the readers of study 05 and 10.

:func:`import_labels` reads filled sheets and checks every row; each bad row is reported with its file,
line (the header is line 1), column, value and what was expected (:class:`LabelProblem`), and none is
dropped silently. The rules: a known non-empty ``segment_id``; the three required dimensions integers
0-10; ``answer_faithfulness`` an integer 0-10, or blank exactly where no answer was captured;
``verdict`` good/partial/poor (case and spaces ignored); a non-empty ``rater``; one row per (segment,
rater). A file that cannot be used at all (empty, binary, other columns, a semicolon-separated save, no
usable row, duplicate rows) is refused with one :class:`LabelsFileError` naming it
(:func:`sheet_text`, :func:`labels_header`, :func:`refuse_unusable`).

**Inclusion probabilities come from the pack's design.** A sheet carries the rater's columns only; how
each segment was drawn is in ``design.json``. ``import_labels(..., design=...)`` (and ``import-labels``,
which finds the ``design.json`` beside the sheet) puts each segment's inclusion probability ``pi`` and
design weight ``w`` beside its labels (:func:`~axon_eval.calibration.label_samples.with_inclusion`), so
the imported file still says how each segment was drawn and the corrected figures weigh by ``w``
(``1 / pi`` for one batch; Horvitz & Thompson 1952). A sheet written before the probabilities moved to
``design.json`` may still carry an ``inclusion_probability`` column: it is read, and replaced by the
design's value whenever the design is known. Labels whose probabilities are unknown are read as a
simple random sample, and the readers say so.

:func:`merge_pack_labels` keeps one labels file per pack over its batches and raters.
:func:`labels_from_constructed` turns the bundled sample's CONSTRUCTED labels (``data/turns/labels.csv``,
derived from seeded defects) into per-segment, per-rater labels of the same shape: each subscore drawn
uniformly among the integers of the labelled ``[min, max]`` range, the verdict the labelled one. They are
not human judgements, and every frame built from them says so (:data:`CONSTRUCTED_NOTE`).
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..labels import LABEL_COLUMNS, LABELS_NOTE, LabelError, load_labels
from ..rubric import BANDS, DIMENSIONS
from ..stats.agreement import HUMAN_LABEL_COLUMNS, one_row_per_segment
from .label_samples import INCLUSION_COLUMN, SHEET_COLUMNS, with_inclusion

#: What a labels frame built from the constructed labels says about itself (shown on every page).
CONSTRUCTED_NOTE = ("CONSTRUCTED labels, not human: derived from the fixture generator's seeded defects "
                    "(data/turns/labels.csv); they stand in for people so the study runs offline")

_INTEGER = re.compile(r"^\s*\d+\s*$")


@dataclass(frozen=True)
class LabelProblem:
    """One bad sheet row: file, line (1-based; the header is line 1), column, the value and what was expected."""

    file: str
    line: int
    column: str
    value: str
    expected: str
    segment_id: str = ""
    #: Where the row this one repeats is, as ``file:line``, when the problem is a duplicate segment and rater.
    duplicate_of: str = ""

    def __str__(self) -> str:
        sid = f" (segment {self.segment_id})" if self.segment_id else ""
        return f"{self.file}:{self.line}: {self.column}: expected {self.expected}, got {self.value!r}{sid}"


def _known(known_segment_ids: Mapping[str, bool] | Iterable[str] | None) -> tuple[set[str] | None, set[str] | None]:
    """(known ids, ids whose answer was captured) -- ``None`` where not known."""
    if known_segment_ids is None:
        return None, None
    if isinstance(known_segment_ids, Mapping):
        return set(known_segment_ids), {k for k, v in known_segment_ids.items() if v}
    return set(known_segment_ids), None


class LabelsFileError(LabelError):
    """A labels file that cannot be used at all: empty, not UTF-8 text, not a CSV with a labels sheet's
    columns, without a usable row, or with duplicate (segment, rater) rows. The message is one line naming
    the file and what was expected."""


def _sheet_expected() -> str:
    return f"a filled labelling sheet: a UTF-8 CSV file with the columns {list(SHEET_COLUMNS)}"


def sheet_text(path: str | Path) -> str:
    """The text of a filled sheet; :class:`LabelsFileError` naming the file when it is empty (or only blank
    lines) or not a text file (a NUL byte, or bytes that are not UTF-8: "not a UTF-8 CSV labels sheet"), so
    nothing is imported from it."""
    p = Path(path)
    data = p.read_bytes()
    if not data.strip():
        raise LabelsFileError(f"{p} is empty; expected {_sheet_expected()}")
    where = data.find(b"\x00")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        where = exc.start if where < 0 else min(where, exc.start)
    if where >= 0:
        raise LabelsFileError(f"{p}: not a UTF-8 CSV labels sheet (it is not a text file: byte 0x{data[where]:02x} "
                              f"at offset {where}); expected {_sheet_expected()}")
    return text


#: Separators a spreadsheet may save a "CSV" with instead of commas (a locale's list separator).
_OTHER_SEPARATORS: tuple[tuple[str, str], ...] = ((";", "semicolon"), ("\t", "tab"), ("|", "pipe"))


def labels_header(path: str | Path, *, constructed: bool = True) -> str:
    """What kind of labels file ``path`` is, from its header: ``"sheet"`` (a labelling sheet or imported
    labels: every column of :data:`SHEET_COLUMNS`) or, when ``constructed``, ``"constructed"`` (the
    ``<dimension>_min`` / ``_max`` ranges of ``axon_eval.labels.LABEL_COLUMNS``). Anything else is a
    :class:`LabelsFileError` naming the file, its header, the missing columns and the expected ones (a
    semicolon- or tab-separated save is said to be one); an empty or binary file is refused by
    :func:`sheet_text`."""
    p = Path(path)
    text = sheet_text(p)
    header = [h.strip() for h in next(csv.reader(io.StringIO(text)), [])]
    if all(c in header for c in SHEET_COLUMNS):
        return "sheet"
    if constructed and f"{DIMENSIONS[0]}_min" in header:
        return "constructed"
    first = text.lstrip().splitlines()[0] if text.strip() else ""
    hint = ""
    for sep, name in _OTHER_SEPARATORS:
        if "segment_id" in [c.strip().strip('"') for c in first.split(sep)]:
            hint = f" (the file is {name}-separated: save it as comma-separated CSV)"
            break
    shown = ",".join(header)
    shown = shown if len(shown) <= 80 else shown[:77] + "..."
    missing = [c for c in SHEET_COLUMNS if c not in header]
    expected = f"a labelling sheet or imported labels with the columns {list(SHEET_COLUMNS)}"
    if constructed:
        expected += f", or constructed labels with the columns {list(LABEL_COLUMNS)}"
    lacks = f"its header {shown!r} lacks {missing}" if len(missing) < len(SHEET_COLUMNS) else f"its header is {shown!r}"
    raise LabelsFileError(f"{p}: not a labels file{hint}: {lacks}; expected {expected}")


def refuse_unusable(path: str | Path, labels: pd.DataFrame, problems: Sequence[LabelProblem]) -> None:
    """Refuse, with :class:`LabelsFileError`, labels a reader must not decide on: duplicate (segment, rater)
    rows (which one is right is not known: the count and the first), or no usable row at all (the count of
    bad rows and the first reason; a file with only a header says so). Labels with some bad rows and some
    good ones pass: the bad rows are the reader's notes."""
    dups = [p for p in problems if p.duplicate_of]
    if dups:
        raise LabelsFileError(f"{path}: {len(dups)} duplicate (segment, rater) row(s), the first: {dups[0]}; a labels "
                              "file holds one row per segment and rater: import the sheets again with import-labels "
                              "(--replace lets the later file's row replace the earlier one)")
    if len(labels):
        return
    if problems:
        n = len({(p.file, p.line) for p in problems})
        raise LabelsFileError(f"{path}: no usable label row: {n} bad row(s), the first: {problems[0]}")
    raise LabelsFileError(f"{path}: no label rows (only a header); expected one row per segment and rater with the "
                          f"columns {list(SHEET_COLUMNS)}")


def import_labels(sheet: str | Path | Sequence[str | Path],
                  known_segment_ids: Mapping[str, bool] | Iterable[str] | None, *,
                  replace: bool = False, design: Mapping[str, Any] | str | Path | None = None
                  ) -> tuple[pd.DataFrame, list[LabelProblem]]:
    """Read and validate filled labelling sheet(s); returns ``(labels, problems)``.

    ``known_segment_ids``: a mapping ``segment_id -> answer captured`` (from ``design.json`` or a run's
    results: then a blank ``answer_faithfulness`` is accepted exactly where no answer was captured and
    required elsewhere), a plain collection of ids (faithfulness may then be blank anywhere), or
    ``None`` (ids not checked). Every row is checked: known non-empty ``segment_id``; the three required
    dimensions integers 0-10; ``answer_faithfulness`` an integer 0-10 or blank as above; ``verdict``
    good/partial/poor (case and spaces ignored); a non-empty ``rater``; one row per (segment, rater).
    A row left entirely blank is a problem too (fill it or delete it). Each problem names the file, the
    line and what was expected; rows with problems are left out of ``labels``, and nothing else is. An
    empty or binary file is refused before anything is read (:func:`sheet_text`: :class:`LabelsFileError`
    naming it).

    A (segment, rater) labelled twice is a problem of the later row naming the earlier one
    (``duplicate_of``); the earlier row is kept. With ``replace``, a row of a later sheet (later in
    ``sheet``) replaces the earlier sheet's row instead, and ``labels.attrs["replaced"]`` lists each
    replacement (``"earlier file:line -> later file:line"``); two rows of one sheet stay a problem.

    ``labels``: one row per segment and rater, columns
    :data:`~axon_eval.stats.agreement.HUMAN_LABEL_COLUMNS` (dimensions as pandas ``Int64``) plus
    ``source`` (``file:line``). With ``design`` (the pack's ``design.json``, a dict or its path), each row
    also gets its segment's ``inclusion_probability`` and design ``weight`` from it
    (:func:`~axon_eval.calibration.label_samples.with_inclusion`); without one, the
    ``inclusion_probability`` column an old sheet still carries is kept (valid values in (0, 1]).
    """
    sheets = [sheet] if isinstance(sheet, str | Path) else list(sheet)
    known, answered = _known(known_segment_ids)
    rows: list[dict[str, Any] | None] = []
    problems: list[LabelProblem] = []
    seen: dict[tuple[str, str], tuple[str, str, int]] = {}  # (segment, rater) -> (file, file:line, row index)
    replaced: list[str] = []
    for path in sheets:
        path = Path(path)
        name = str(path)
        text = sheet_text(path)
        reader = csv.reader(io.StringIO(text))
        try:
            header = [h.strip() for h in next(reader)]
        except StopIteration:
            problems.append(LabelProblem(name, 1, "header", "", f"the columns {list(SHEET_COLUMNS)}"))
            continue
        missing = [c for c in SHEET_COLUMNS if c not in header]
        if missing:
            problems.append(LabelProblem(name, 1, "header", ",".join(header),
                                         f"the columns {list(SHEET_COLUMNS)} (missing {missing})"))
            continue
        pos = {c: header.index(c) for c in SHEET_COLUMNS}
        for extra in ("source", INCLUSION_COLUMN):
            if extra in header:
                pos[extra] = header.index(extra)
        start = reader.line_num + 1
        for record in reader:
            line, start = start, reader.line_num + 1
            if not any(v.strip() for v in record):
                continue  # an empty line of the file (not a sheet row)
            cell = {c: (record[i].strip() if i < len(record) else "") for c, i in pos.items()}
            sid = cell["segment_id"]
            bad = []

            def problem(column: str, expected: str) -> None:
                bad.append(LabelProblem(name, line, column, cell.get(column, ""), expected, sid))  # noqa: B023

            if not any(cell[c] for c in (*DIMENSIONS, "verdict", "rater")):
                problem("*", "a labelled row (four subscores, verdict, rater) -- this row is blank; fill it or delete it")
                problems.extend(bad)
                continue
            if not sid:
                problem("segment_id", "a segment id of the sample")
            elif known is not None and sid not in known:
                problem("segment_id", "a segment id of the sample (this one is not in it)")
            values: dict[str, Any] = {}
            for d in DIMENSIONS:
                raw = cell[d]
                no_answer = answered is not None and sid in known and sid not in answered
                if d == "answer_faithfulness" and not raw and (answered is None or no_answer):
                    values[d] = pd.NA
                elif d == "answer_faithfulness" and no_answer:
                    problem(d, "blank: no answer was captured for this segment")
                elif not raw:
                    problem(d, "an integer 0-10 (required" + (": an answer was captured)" if d == "answer_faithfulness" else ")"))
                elif not _INTEGER.match(raw) or not 0 <= int(raw) <= 10:
                    problem(d, "an integer 0-10")
                else:
                    values[d] = int(raw)
            verdict = cell["verdict"].lower()
            if verdict not in BANDS:
                problem("verdict", f"one of {', '.join(BANDS)}")
            key = (sid, cell["rater"])
            earlier = seen.get(key) if sid else None
            if not cell["rater"]:
                problem("rater", "a non-empty rater id")
            elif earlier is not None and (not replace or earlier[0] == name):
                other = "" if earlier[0] == name else (
                    ", in another file; import-labels --replace lets the later file's row replace it")
                bad.append(LabelProblem(name, line, "rater", cell["rater"],
                                        f"one row per segment and rater (already labelled at {earlier[1]}{other})",
                                        sid, duplicate_of=earlier[1]))
            if bad:
                problems.extend(bad)
                continue
            if earlier is not None:  # replace: this later file's row replaces the earlier file's
                rows[earlier[2]] = None
                replaced.append(f"{earlier[1]} -> {name}:{line}")
            seen[key] = (name, f"{name}:{line}", len(rows))
            inclusion = pd.to_numeric(cell.get(INCLUSION_COLUMN) or np.nan, errors="coerce")
            rows.append({"segment_id": sid, "rater": cell["rater"], **values, "verdict": verdict,
                         "comment": cell["comment"], "source": cell.get("source") or f"{name}:{line}",
                         INCLUSION_COLUMN: float(inclusion) if 0 < inclusion <= 1 else np.nan})
    labels = pd.DataFrame([r for r in rows if r is not None], columns=[*HUMAN_LABEL_COLUMNS, "source", INCLUSION_COLUMN])
    if labels[INCLUSION_COLUMN].isna().all():
        labels = labels.drop(columns=[INCLUSION_COLUMN])
    for d in DIMENSIONS:
        labels[d] = pd.array(labels[d].tolist(), dtype="Int64")
    if design is not None:
        labels = with_inclusion(labels, design)
    labels.attrs["replaced"] = replaced
    return labels, problems


def write_labels(labels: pd.DataFrame, path: str | Path) -> Path:
    """Write validated labels as CSV (same columns as a sheet plus ``source``, and the
    ``inclusion_probability`` and design ``weight`` when known), atomically."""
    from ..runs import atomic_write_text

    extra = [c for c in (INCLUSION_COLUMN, "weight") if c in labels.columns and labels[c].notna().any()]
    return atomic_write_text(path, labels[[*HUMAN_LABEL_COLUMNS, "source", *extra]].to_csv(index=False))


@dataclass(frozen=True)
class PackMerge:
    """A pack's labels after an import (:func:`merge_pack_labels`): ``labels``, the rows ``kept`` from the
    pack's other sheets, the ``problems`` (new rows repeating a kept row's (segment, rater)) and the kept
    rows ``replaced`` by new ones (with ``replace``)."""

    labels: pd.DataFrame
    kept: int
    problems: tuple[LabelProblem, ...] = ()
    replaced: int = 0


def _file_line(source: str) -> tuple[str, int]:
    name, _, line = str(source).rpartition(":")
    return (name, int(line)) if name and line.isdigit() else (str(source), 0)


def merge_pack_labels(new: pd.DataFrame, existing: str | Path, sheets: Sequence[str | Path], *,
                      replace: bool = False) -> PackMerge:
    """A pack's labels after importing ``sheets``: the rows of ``existing`` (the pack's imported labels)
    that came from other sheets, then ``new``. Importing a sheet again replaces its own earlier rows, so
    the pack keeps one labels file over all its batches and raters. A new row whose (segment, rater) a
    kept row of another sheet already labels (a corrected copy of a sheet) is a problem naming both files,
    and left out; with ``replace`` it replaces the kept row instead (the sheet imported now is the newer)."""
    path = Path(existing)
    if not path.is_file():
        return PackMerge(new, 0)
    old = pd.read_csv(path, dtype={"segment_id": str, "rater": str, "comment": str, "source": str})
    names = {Path(s).name for s in sheets}
    from_sheet = old["source"].astype(str).map(lambda v: Path(v.rsplit(":", 1)[0]).name).isin(names)
    kept = old[~from_sheet]
    if kept.empty:
        return PackMerge(new, 0)
    kept = kept.copy()
    for d in DIMENSIONS:
        kept[d] = pd.array(pd.to_numeric(kept[d], errors="coerce").round().astype("Int64"), dtype="Int64")
    key_kept = pd.MultiIndex.from_frame(kept[["segment_id", "rater"]].astype(str))
    key_new = pd.MultiIndex.from_frame(new[["segment_id", "rater"]].astype(str))
    clash_kept, clash_new = key_kept.isin(key_new), key_new.isin(key_kept)
    problems: list[LabelProblem] = []
    replaced = 0
    if replace:
        replaced = int(clash_kept.sum())
        kept = kept[~clash_kept]
    elif clash_new.any():
        earlier = dict(zip(key_kept, kept["source"].astype(str), strict=True))
        for row in new[clash_new].itertuples(index=False):
            file, line = _file_line(row.source)
            first = earlier[(str(row.segment_id), str(row.rater))]
            problems.append(LabelProblem(file, line, "rater", str(row.rater),
                                         f"one row per segment and rater (already labelled at {first}, imported "
                                         f"earlier into {path}; import-labels --replace lets this file's row "
                                         "replace it)", str(row.segment_id), duplicate_of=first))
        new = new[~clash_new]
    merged = pd.concat([kept, new], ignore_index=True) if len(kept) else new
    return PackMerge(merged, len(kept), tuple(problems), replaced)


# =============================================================================================
# The constructed stand-in
# =============================================================================================
def labels_from_constructed(constructed: pd.DataFrame | str | Path, *, raters: Sequence[str] = ("constructed-a", "constructed-b"),
                            seed: int = 0) -> pd.DataFrame:
    """Per-segment, per-rater labels shaped like :func:`import_labels` output, from the CONSTRUCTED labels.

    For each segment and each of ``raters``, every subscore is drawn uniformly (``numpy`` generator
    seeded by ``seed``) among the integers of the labelled ``[min, max]`` range, faithfulness blank where
    the range is null (no answer captured); the verdict is the labelled verdict. The raters therefore
    agree on verdicts by construction and differ on subscores within the ranges. These are NOT human
    judgements: the comment of every row and ``attrs["note"]`` say so.
    """
    lab = load_labels(constructed) if isinstance(constructed, str | Path) else constructed
    rng = np.random.default_rng(seed)
    rows = []
    for rater in raters:
        for r in lab.itertuples(index=False):
            row: dict[str, Any] = {"segment_id": r.segment_id, "rater": rater}
            for d in DIMENSIONS:
                lo, hi = getattr(r, f"{d}_min"), getattr(r, f"{d}_max")
                row[d] = pd.NA if pd.isna(lo) else int(rng.integers(int(lo), int(hi) + 1))
            row.update(verdict=r.verdict, comment=f"CONSTRUCTED (seeded defect {r.defect}), not human",
                       source="constructed")
            rows.append(row)
    out = pd.DataFrame(rows, columns=[*HUMAN_LABEL_COLUMNS, "source"])
    for d in DIMENSIONS:
        out[d] = pd.array(out[d].tolist(), dtype="Int64")
    out.attrs["note"] = f"{CONSTRUCTED_NOTE}; {LABELS_NOTE}"
    out.attrs["constructed"] = True
    return out


def read_human_labels(path: str | Path, known_segment_ids: Mapping[str, bool] | Iterable[str] | None = None, *,
                      seed: int = 0) -> tuple[pd.DataFrame, list[LabelProblem], bool]:
    """Labels for study 05 from ``path``: a constructed labels file (``*_min``/``*_max`` columns:
    converted by :func:`labels_from_constructed`) or a sheet / imported labels file (validated by
    :func:`import_labels`). Returns ``(labels, problems, constructed)``.

    A file that is not labels at all (empty, binary, other columns, a semicolon-separated save), one
    without a usable row, and one with duplicate (segment, rater) rows are refused with one
    :class:`LabelsFileError` naming the file and what was expected (:func:`labels_header`,
    :func:`refuse_unusable`); some bad rows among good ones are returned as ``problems``."""
    if labels_header(path) == "constructed":
        try:
            return labels_from_constructed(path, seed=seed), [], True
        except LabelError as exc:
            raise LabelsFileError(str(exc)) from exc
    labels, problems = import_labels(path, known_segment_ids)
    refuse_unusable(path, labels, problems)
    return labels, problems, False


def known_from_results(results: pd.DataFrame) -> dict[str, bool]:
    """``segment_id -> answer captured`` for the judged segments of a run's results."""
    res = one_row_per_segment(results, allow_mixed=True)
    captured = (res["answer_captured"].astype(bool) if "answer_captured" in res.columns
                else res["answer_faithfulness"].notna())
    return dict(zip(res["segment_id"], captured, strict=True))


def load_panel_labels(path: str | Path, known_segment_ids: Iterable[str] | None = None
                      ) -> tuple[pd.DataFrame, list[Any], bool]:
    """Labels for study 10 from ``path``: constructed labels (``<dimension>_min``/``_max`` columns, read by
    :func:`axon_eval.labels.load_labels`) or a labelling sheet / imported labels file (validated by
    :func:`import_labels`). Returns ``(labels, problems, constructed)``: either frame
    is what :func:`axon_eval.stats.panels.panel_labels` takes; ``problems`` are the sheet's rejected lines.
    A file that is not labels, has no usable row or holds duplicate (segment, rater) rows is refused as
    by :func:`read_human_labels`."""
    path = Path(path)
    if labels_header(path) == "constructed":
        try:
            return load_labels(path), [], True
        except LabelError as exc:
            raise LabelsFileError(str(exc)) from exc
    labels, problems = import_labels(path, known_segment_ids)
    refuse_unusable(path, labels, problems)
    return labels, list(problems), False
