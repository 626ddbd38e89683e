"""Human labelling of a run's segments: a stratified sample, a labelling pack, and validated import.

The technical reference asks for a stratified sample (by band, surface and client) double-scored by
people before any comparative claim. This module is the edge where people act:

* :func:`sample_for_labelling` -- a proportional stratified sample of a run's judged segments with a
  minimum per stratum; each sampled segment carries its design weight ``N_h / n_h`` (segments of its
  stratum in the run / sampled from it). Pure: a :class:`LabellingSample`.
* :func:`write_labelling_pack` -- the pack a rater works from: ``sheet.csv`` (``segment_id``, the four
  dimensions, ``verdict``, ``rater``, ``comment``, all but the id blank), one static HTML page per
  segment (question, steps, SQL, the rows the judge saw with the full row count, the answer) and
  ``index.html``. The pages show **no** judge output of any kind -- no score, subscore, band, verdict
  or explanation -- so raters are not anchored. ``design.json`` keeps the strata, weights, seed and
  source run beside the sheet.
* :func:`import_labels` -- reads filled sheets, validating every row; every bad row is reported with
  its line number and what was expected, none is dropped silently. Several raters per segment are
  allowed (one row per segment and rater).
* :func:`labels_from_constructed` -- the offline stand-in: the bundled sample's CONSTRUCTED labels
  (``data/turns/labels.csv``, derived from seeded defects) turned into per-segment, per-rater labels of
  the same shape as imported human labels. They are not human judgements and every page says so.

CLI: ``python -m axon_eval sample-for-labelling`` and ``import-labels`` (:mod:`axon_eval.cli.labelling`).
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..labels import LABELS_NOTE, load_labels
from ..rubric import BANDS, DIMENSIONS
from ..stats.agreement import DEFAULT_STRATA, HUMAN_LABEL_COLUMNS, one_row_per_segment

#: Columns of the labelling sheet, in order.
SHEET_COLUMNS: tuple[str, ...] = ("segment_id", *DIMENSIONS, "verdict", "rater", "comment")
SHEET_FILE = "sheet.csv"
DESIGN_FILE = "design.json"
INDEX_FILE = "index.html"
PAGES_DIR = "segments"
#: What a labels frame built from the constructed labels says about itself (shown on every page).
CONSTRUCTED_NOTE = ("CONSTRUCTED labels, not human: derived from the fixture generator's seeded defects "
                    "(data/turns/labels.csv); they stand in for people so the study runs offline")

_INTEGER = re.compile(r"^\s*\d+\s*$")


# =============================================================================================
# Sampling
# =============================================================================================
@dataclass
class LabellingSample:
    """A stratified sample of a run's segments.

    ``segments``: one row per sampled segment (``segment_id``, the stratifier columns, ``stratum``,
    ``weight`` = N_h / n_h, ``answer_captured``). ``strata``: one row per stratum (``population`` N_h,
    ``allocated`` n_h, ``weight``). ``n`` is the size drawn (it can differ from ``n_requested`` by
    rounding and by the minimum per stratum).
    """

    segments: pd.DataFrame
    strata: pd.DataFrame
    stratify: tuple[str, ...]
    seed: int
    n_requested: int
    min_per_stratum: int
    population: int
    source_run: str | None = None
    judge_id: str | None = None
    rubric_id: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def n(self) -> int:
        return len(self.segments)

    def design(self) -> dict[str, Any]:
        """The content of ``design.json``."""
        return {
            "method": ("proportional stratified random sample without replacement: n_h = min(N_h, "
                       "max(min_per_stratum, round(n * N_h / N))); within a stratum a seeded shuffle "
                       "(pandas DataFrameGroupBy.sample) keeps the first n_h; design weight = N_h / n_h"),
            "source_run": self.source_run, "judge_id": self.judge_id, "rubric_id": self.rubric_id,
            "stratify": list(self.stratify), "seed": self.seed, "n_requested": self.n_requested,
            "n": self.n, "population": self.population, "min_per_stratum": self.min_per_stratum,
            "strata": [{"stratum": s, **{k: (int(v) if k != "weight" else float(v)) for k, v in row.items()}}
                       for s, row in self.strata[["population", "allocated", "weight"]].iterrows()],
            "segments": [{"segment_id": r.segment_id, "stratum": r.stratum, "weight": float(r.weight),
                          "answer_captured": bool(r.answer_captured), "page": page_name(r.segment_id)}
                         for r in self.segments.itertuples()],
        }


def _results_of(run: Any) -> tuple[pd.DataFrame, str | None, str | None, str | None]:
    """(results, source run folder, judge id, rubric id) of a Run, a run folder or a results frame."""
    if isinstance(run, pd.DataFrame):
        return run, None, None, None
    if isinstance(run, str | Path):
        from ..runs import load_run

        run = load_run(run)
    m = run.manifest
    return run.results, str(run.run_dir), m.judge_id, m.rubric_id


def sample_for_labelling(run: Any, n: int = 60, stratify: Sequence[str] = DEFAULT_STRATA, seed: int = 0,
                         min_per_stratum: int = 1) -> LabellingSample:
    """A proportional stratified sample of ``n`` judged segments of ``run`` (a Run, a run folder or a
    results frame), with at least ``min_per_stratum`` from every stratum that has that many.

    Strata are the combinations of ``stratify`` columns of the results (``band`` is the scorer's band
    under the run's judge). Allocation ``n_h = min(N_h, max(min_per_stratum, round(n * N_h / N)))``;
    within each stratum a seeded ``DataFrameGroupBy.sample(frac=1)`` shuffle keeps the first ``n_h``.
    The same run, ``n``, strata and ``seed`` give the same sample.
    """
    results, source, judge_id, rubric_id = _results_of(run)
    stratify = tuple(stratify)
    if n < 1 or min_per_stratum < 0:
        raise ValueError(f"need n >= 1 and min_per_stratum >= 0 (got n={n}, min_per_stratum={min_per_stratum})")
    res = one_row_per_segment(results)
    missing = [s for s in stratify if s not in res.columns]
    if missing:
        raise ValueError(f"cannot stratify by {missing}: the results have no such column "
                         f"(e.g. band, surface, client, region)")
    if res.empty:
        raise ValueError("the run has no judged segment to sample")
    res = res.copy()
    res["answer_captured"] = (res["answer_captured"].astype(bool) if "answer_captured" in res.columns
                              else res["answer_faithfulness"].notna())
    res["stratum"] = res[list(stratify)].astype(str).agg("/".join, axis=1) if stratify else "all"
    population = res.groupby("stratum").size().rename("population")
    allocated = (population * n / len(res)).round().astype(int).clip(lower=min_per_stratum)
    allocated = np.minimum(allocated, population).rename("allocated")
    shuffled = res.sort_values("segment_id").groupby("stratum", group_keys=False).sample(frac=1.0, random_state=seed)
    keep = shuffled.groupby("stratum").cumcount() < shuffled["stratum"].map(allocated)
    picked = shuffled[keep].copy()
    strata = pd.concat([population, allocated], axis=1)
    strata = strata[strata["allocated"] > 0]
    strata["weight"] = strata["population"] / strata["allocated"]
    picked["weight"] = picked["stratum"].map(strata["weight"])
    cols = ["segment_id", *stratify, "stratum", "weight", "answer_captured"]
    picked = picked[cols].sort_values("segment_id").reset_index(drop=True)
    if judge_id is None and "judge_id" in res.columns and res["judge_id"].nunique() == 1:
        judge_id = str(res["judge_id"].iloc[0])
    return LabellingSample(segments=picked, strata=strata.rename_axis("stratum"), stratify=stratify, seed=int(seed),
                           n_requested=int(n), min_per_stratum=int(min_per_stratum), population=len(res),
                           source_run=source, judge_id=judge_id, rubric_id=rubric_id)


def design_frame(design: Mapping[str, Any] | str | Path) -> pd.DataFrame:
    """``segment_id``, ``stratum``, ``weight``, ``answer_captured`` from a ``design.json`` (dict or path)."""
    if not isinstance(design, Mapping):
        design = json.loads(Path(design).read_text(encoding="utf-8"))
    return pd.DataFrame(design["segments"], columns=["segment_id", "stratum", "weight", "answer_captured", "page"])


# =============================================================================================
# The labelling pack
# =============================================================================================
def page_name(segment_id: str) -> str:
    """File name of a segment's page (``eu-0003#2`` -> ``eu-0003_2.html``)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", segment_id) + ".html"


_CSS = """body{font-family:system-ui,sans-serif;max-width:1100px;margin:1.5em auto;padding:0 1em;line-height:1.45}
pre{background:#f7f7f7;border:1px solid #ddd;padding:.5em;white-space:pre-wrap}
table{border-collapse:collapse;font-size:.92em;margin:.4em 0}th,td{border:1px solid #ccc;padding:.15em .45em;text-align:left}
th{background:#f3f3f3}.muted{color:#666;font-size:.9em}.note{background:#eef4ff;border:1px solid #9ab;padding:.5em}
nav{margin:.6em 0}"""

_GUIDE = """<h2>How to label</h2>
<p>Give each of the four dimensions an integer from 0 to 10 in <code>sheet.csv</code>, then a verdict
(<code>good</code>, <code>partial</code> or <code>poor</code>), your rater id and, if useful, a comment.</p>
<ul>
<li><b>intent_understood</b>: did the assistant work on the question that was asked (entity, period, measure)?</li>
<li><b>sql_quality</b>: is the SQL a sound way to get that answer from these tables?</li>
<li><b>result_relevance</b>: do the rows it got contain what the answer needs?</li>
<li><b>answer_faithfulness</b>: does the answer state only what those rows support? Leave it <b>blank</b>
when no answer was captured (the page says so); otherwise it is required.</li>
</ul>
<p class="muted">Judge from the evidence on the page alone. The rows are what the assistant saw; when fewer
rows are shown than the statement returned, the full count is given.</p>"""


def _page(title: str, body: str) -> str:
    from ..reporting.report import esc

    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{esc(title)}</title>"
            f"<style>{_CSS}</style></head><body>{body}</body></html>")


def render_segment_page(entry: Mapping[str, Any], *, prev_page: str | None = None,
                        next_page: str | None = None) -> str:
    """One segment's labelling page from its audit entry: question, context, steps (SQL, rows with the
    full count), answer. Nothing the judge produced is read: no verdict, score, band or explanation."""
    from ..reporting.report import esc, render_steps

    sid = str(entry["segment_id"])
    nav = ["<a href='../index.html'>index</a>"]
    if prev_page:
        nav.append(f"<a href='{esc(prev_page)}'>&larr; previous</a>")
    if next_page:
        nav.append(f"<a href='{esc(next_page)}'>next &rarr;</a>")
    answer = entry.get("answer")
    parts = [
        f"<nav>{' | '.join(nav)}</nav>",
        f"<h1>Segment {esc(sid)}</h1>",
        f"<p class='muted'>turn {esc(entry.get('turn_id'))}, part {esc(entry.get('segment_index'))} of "
        f"{esc(entry.get('n_segments'))}; {esc(entry.get('surface'))} / {esc(entry.get('client'))}, captured "
        f"{esc(entry.get('captured_at'))}</p>",
        f"<h2>Question</h2><pre>{esc(entry.get('question'))}</pre>",
        "<h2>What the assistant did</h2>", render_steps(entry.get("steps") or []),
        "<h2>Answer</h2>",
        (f"<pre>{esc(answer)}</pre>" if answer is not None else
         "<p class='note'>No answer was captured (the client's own AI composed it): leave "
         "<code>answer_faithfulness</code> blank for this segment.</p>"),
        f"<p class='muted'>Label this segment in the row <code>{esc(sid)}</code> of <code>sheet.csv</code>.</p>",
        f"<nav>{' | '.join(nav)}</nav>",
    ]
    return _page(f"segment {sid}", "\n".join(parts))


def write_labelling_pack(sample: LabellingSample, run: Any, out_dir: str | Path) -> Path:
    """Write the labelling pack of ``sample`` into ``out_dir`` (created; refused when it already holds a
    sheet, so a pack being filled is never overwritten). ``run`` (a Run or run folder) supplies the
    evidence from its audit, streamed. Returns ``out_dir``."""
    from ..reporting.report import esc
    from ..runs import Run, atomic_write_text, load_run, write_json

    out = Path(out_dir)
    if (out / SHEET_FILE).exists() or (out / DESIGN_FILE).exists():
        raise FileExistsError(f"{out} already holds a labelling pack; choose a new --out folder")
    run = run if isinstance(run, Run) else load_run(run)
    wanted = set(sample.segments["segment_id"])
    entries: dict[str, dict[str, Any]] = {}
    for entry in run.iter_audit():
        sid = entry.get("segment_id")
        if sid in wanted and sid not in entries:
            entries[sid] = {k: entry.get(k) for k in ("segment_id", "turn_id", "segment_index", "n_segments",
                                                        "captured_at", "surface", "client", "question", "steps",
                                                        "answer")}
    missing = sorted(wanted - set(entries))
    if missing:
        raise ValueError(f"the run's audit has no evidence for sampled segment(s) {missing[:5]}")
    (out / PAGES_DIR).mkdir(parents=True, exist_ok=True)
    ids = list(sample.segments["segment_id"])
    for i, sid in enumerate(ids):
        page = render_segment_page(entries[sid], prev_page=page_name(ids[i - 1]) if i else None,
                                   next_page=page_name(ids[i + 1]) if i + 1 < len(ids) else None)
        atomic_write_text(out / PAGES_DIR / page_name(sid), page)
    rows = "".join(
        f"<tr><td>{k}</td><td><a href='{PAGES_DIR}/{esc(page_name(sid))}'>{esc(sid)}</a></td>"
        f"<td>{esc(' '.join(str(entries[sid].get('question') or '').split())[:140])}</td>"
        f"<td>{'yes' if entries[sid].get('answer') is not None else 'no: leave faithfulness blank'}</td></tr>"
        for k, sid in enumerate(ids, start=1))
    index = (f"<h1>Labelling pack: {len(ids)} segments</h1>"
             f"<p class='muted'>Stratified sample (seed {sample.seed}) of run "
             f"<code>{esc(Path(sample.source_run).name if sample.source_run else '?')}</code>. Fill in "
             f"<code>{SHEET_FILE}</code>, one row per segment; several raters each fill their own copy.</p>"
             + _GUIDE + "<h2>Segments</h2><table><thead><tr><th>#</th><th>segment</th><th>question</th>"
             f"<th>answer captured</th></tr></thead><tbody>{rows}</tbody></table>")
    atomic_write_text(out / INDEX_FILE, _page("labelling pack", index))
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(SHEET_COLUMNS)
    for sid in ids:
        writer.writerow([sid, *([""] * (len(SHEET_COLUMNS) - 1))])
    atomic_write_text(out / SHEET_FILE, buf.getvalue())
    write_json(out / DESIGN_FILE, sample.design())
    return out


# =============================================================================================
# Import
# =============================================================================================
@dataclass(frozen=True)
class LabelProblem:
    """One bad sheet row: file, line (1-based; the header is line 1), column, the value and what was expected."""

    file: str
    line: int
    column: str
    value: str
    expected: str
    segment_id: str = ""

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


def sheet_text(path: str | Path) -> str:
    """The text of a filled sheet; ``ValueError`` naming the file when it is empty (or only blank lines) or
    not a text file (a NUL byte, or bytes that are not UTF-8), so nothing is imported from it."""
    p = Path(path)
    data = p.read_bytes()
    expected = f"a filled labelling sheet: a UTF-8 CSV file with the columns {list(SHEET_COLUMNS)}"
    if not data.strip():
        raise ValueError(f"{p} is empty; expected {expected}")
    where = data.find(b"\x00")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        where = exc.start if where < 0 else min(where, exc.start)
    if where >= 0:
        raise ValueError(f"{p} is not a text file (byte 0x{data[where]:02x} at offset {where}); expected {expected}")
    return text


def import_labels(sheet: str | Path | Sequence[str | Path],
                  known_segment_ids: Mapping[str, bool] | Iterable[str] | None) -> tuple[pd.DataFrame, list[LabelProblem]]:
    """Read and validate filled labelling sheet(s); returns ``(labels, problems)``.

    ``known_segment_ids``: a mapping ``segment_id -> answer captured`` (from ``design.json`` or a run's
    results: then a blank ``answer_faithfulness`` is accepted exactly where no answer was captured and
    required elsewhere), a plain collection of ids (faithfulness may then be blank anywhere), or
    ``None`` (ids not checked). Every row is checked: known non-empty ``segment_id``; the three required
    dimensions integers 0-10; ``answer_faithfulness`` an integer 0-10 or blank as above; ``verdict``
    good/partial/poor (case and spaces ignored); a non-empty ``rater``; one row per (segment, rater).
    A row left entirely blank is a problem too (fill it or delete it). Each problem names the file, the
    line and what was expected; rows with problems are left out of ``labels``, and nothing else is. An
    empty or binary file is refused before anything is read (:func:`sheet_text`: ``ValueError`` naming it).

    ``labels``: one row per segment and rater, columns :data:`HUMAN_LABEL_COLUMNS` (dimensions as pandas
    ``Int64``) plus ``source`` (``file:line``).
    """
    sheets = [sheet] if isinstance(sheet, str | Path) else list(sheet)
    known, answered = _known(known_segment_ids)
    rows: list[dict[str, Any]] = []
    problems: list[LabelProblem] = []
    seen: dict[tuple[str, str], str] = {}
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
        if "source" in header:
            pos["source"] = header.index("source")
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
            if not cell["rater"]:
                problem("rater", "a non-empty rater id")
            elif sid and (sid, cell["rater"]) in seen:
                problem("rater", f"one row per segment and rater (already labelled at {seen[(sid, cell['rater'])]})")
            if bad:
                problems.extend(bad)
                continue
            seen[(sid, cell["rater"])] = f"{name}:{line}"
            rows.append({"segment_id": sid, "rater": cell["rater"], **values, "verdict": verdict,
                         "comment": cell["comment"], "source": cell.get("source") or f"{name}:{line}"})
    labels = pd.DataFrame(rows, columns=[*HUMAN_LABEL_COLUMNS, "source"])
    for d in DIMENSIONS:
        labels[d] = pd.array(labels[d].tolist(), dtype="Int64")
    return labels, problems


def write_labels(labels: pd.DataFrame, path: str | Path) -> Path:
    """Write validated labels as CSV (same columns as a sheet plus ``source``), atomically."""
    from ..runs import atomic_write_text

    return atomic_write_text(path, labels[[*HUMAN_LABEL_COLUMNS, "source"]].to_csv(index=False))


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
    :func:`import_labels`). Returns ``(labels, problems, constructed)``."""
    with Path(path).open(encoding="utf-8-sig") as fh:
        header = next(csv.reader(fh), [])
    if "intent_understood_min" in header:
        return labels_from_constructed(path, seed=seed), [], True
    labels, problems = import_labels(path, known_segment_ids)
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
    is what :func:`axon_eval.stats.panels.panel_labels` takes; ``problems`` are the sheet's rejected lines."""
    from ..labels import load_labels

    path = Path(path)
    with path.open(encoding="utf-8-sig") as fh:
        header = next(csv.reader(fh), [])
    if f"{DIMENSIONS[0]}_min" in header:
        return load_labels(path), [], True
    labels, problems = import_labels(path, known_segment_ids)
    return labels, list(problems), False
