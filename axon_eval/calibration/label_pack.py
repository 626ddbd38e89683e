"""The labelling pack a rater works from: one sheet to fill, one static page per segment, blind by construction.

:func:`write_labelling_pack` writes, into a new folder:

* ``sheet.csv`` -- :data:`~axon_eval.calibration.label_samples.SHEET_COLUMNS` (``segment_id``, the four
  dimensions, ``verdict``, ``rater``, ``comment``), every cell but the id blank;
* ``segments/<id>.html`` -- one page per segment with the evidence only: the question, every step with its
  SQL, the rows the assistant saw with the full row count, and the answer (:func:`render_segment_page`);
* ``index.html`` -- the guide and the list of pages;
* ``design.json`` and, under an explicit design, ``probabilities.csv`` -- how each segment was drawn
  (strata, weights, inclusion probabilities, batches, seed, source run) for the studies, not for raters.

**Blind by construction.** A rater's sheet and pages carry nothing of the judge or of the design: no
score, subscore, band, verdict, explanation, judge id, model, run id, inclusion probability, design
weight or stratum. The evidence is read from the run's audit by :func:`segment_evidence`, which copies
named evidence fields only (never the judgement stored beside them), so no judge output can reach a page
by accident; the sheet's columns are fixed. Everything about the draw stays in ``design.json``.

**Bundled questions.** A message holding several questions is judged as one segment per question
(:func:`axon_eval.evidence.split_segments`). The page of part ``k`` shows that part as the question to
grade, the whole message with the part marked (from the run's recorded evidence file when it is still
there with its SHA-256, else the parts as the run split them), and the part of the answer that serves
it (the offline judge's deterministic rule, ``axon_eval.judges.heuristic.answer_for_segment``)
above the whole answer, so rater and judge grade the same thing.

:func:`append_batch` adds the next batch of a batch-sequential design to a pack (``sheet-<batch>.csv``
listing its new segments, pages, index and ``design.json`` rewritten).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pandas as pd

from .label_samples import (
    DESIGN_FILE,
    INDEX_FILE,
    PAGES_DIR,
    PROBABILITIES_FILE,
    SHEET_COLUMNS,
    SHEET_FILE,
    LabellingSample,
    page_name,
)

#: The evidence fields of an audit entry a page may show (nothing the judge produced is among them).
EVIDENCE_FIELDS: tuple[str, ...] = ("segment_id", "turn_id", "segment_index", "n_segments", "captured_at", "surface",
                                    "client", "question", "steps", "answer")

_CSS = """body{font-family:system-ui,sans-serif;max-width:1100px;margin:1.5em auto;padding:0 1em;line-height:1.45}
pre{background:#f7f7f7;border:1px solid #ddd;padding:.5em;white-space:pre-wrap}
table{border-collapse:collapse;font-size:.92em;margin:.4em 0}th,td{border:1px solid #ccc;padding:.15em .45em;text-align:left}
th{background:#f3f3f3}.muted{color:#666;font-size:.9em}.note{background:#eef4ff;border:1px solid #9ab;padding:.5em}
mark{background:#ffe58a;padding:0 .1em}li.this{font-weight:bold}
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
<p>A message that asked several questions is labelled once per question: each page names its part, marks
it in the whole message and shows the part of the answer for it first. Grade that part only.</p>
<p class="muted">Grade from the evidence on the page alone. The rows are what the assistant saw; when fewer
rows are shown than the statement returned, the full count is given.</p>"""


def _page(title: str, body: str) -> str:
    from ..reporting.report import esc

    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{esc(title)}</title>"
            f"<style>{_CSS}</style></head><body>{body}</body></html>")


# =============================================================================================
# Evidence of the sampled segments
# =============================================================================================
def answer_part(entry: Mapping[str, Any], full_question: str | None = None,
                parts: Sequence[str] | None = None) -> str | None:
    """The part of a bundled segment's answer that serves its question, by the offline judge's rule.

    The rule is ``axon_eval.judges.heuristic.answer_for_segment`` over the segment's evidence, with
    ``full_question`` the whole message (else the ``parts``, numbered as a list). The whole answer for a
    single question; ``None`` when no answer was captured."""
    from ..judges.heuristic import answer_for_segment

    answer = entry.get("answer")
    n = int(entry.get("n_segments") or 1)
    if answer is None or n <= 1:
        return answer
    if full_question is None:
        full_question = " ".join(f"{i}. {q}" for i, q in enumerate(parts or [], start=1)) or str(entry["question"])
    view = SimpleNamespace(answer=answer, bundled=True, n_segments=n, segment_index=int(entry["segment_index"]),
                           question=str(entry["question"]), full_question=full_question)
    return answer_for_segment(view)


def _recorded_messages(run: Any, turn_ids: set[str]) -> dict[str, str]:
    """The whole message (``question``) of each of ``turn_ids`` from the run's evidence file, when it is
    still there with the SHA-256 the run recorded; empty when it is not."""
    from ..evidence import Turn, iter_turns
    from ..runs.derive import InputChangedError, recorded_evidence

    if not turn_ids:
        return {}
    try:
        path = recorded_evidence(run.run_dir, run.manifest)
    except (InputChangedError, OSError, ValueError):
        return {}
    found: dict[str, str] = {}
    for turn in iter_turns(path):
        if isinstance(turn, Turn) and turn.turn_id in turn_ids:
            found[turn.turn_id] = turn.question
            if len(found) == len(turn_ids):
                break
    return found


def segment_evidence(run: Any, wanted: set[str]) -> dict[str, dict[str, Any]]:
    """The evidence of the ``wanted`` segments of ``run`` (a Run) from its audit, streamed: the
    :data:`EVIDENCE_FIELDS` of each, never the judgement stored beside them.

    A bundled segment (``n_segments > 1``) also gets ``parts`` (its turn's questions in order, from the
    audit), ``full_question`` (the whole message from the run's evidence file, ``None`` when that file is
    gone or changed) and ``answer_part`` (:func:`answer_part`). A ``ValueError`` names sampled segments the
    audit has no evidence for."""
    entries: dict[str, dict[str, Any]] = {}
    turns = {str(sid).partition("#")[0] for sid in wanted}
    parts: dict[str, dict[int, str]] = {}
    for entry in run.iter_audit():
        sid = entry.get("segment_id")
        if entry.get("turn_id") in turns and int(entry.get("n_segments") or 1) > 1:
            parts.setdefault(entry["turn_id"], {}).setdefault(int(entry["segment_index"]), str(entry.get("question")))
        if sid in wanted and sid not in entries:
            entries[sid] = {k: entry.get(k) for k in EVIDENCE_FIELDS}
    missing = sorted(wanted - set(entries))
    if missing:
        raise ValueError(f"the run's audit has no evidence for sampled segment(s) {missing[:5]}")
    bundled = {e["turn_id"] for e in entries.values() if int(e.get("n_segments") or 1) > 1}
    messages = _recorded_messages(run, bundled)
    for e in entries.values():
        if e["turn_id"] in bundled:
            e["parts"] = [q for _, q in sorted(parts.get(e["turn_id"], {}).items())]
            e["full_question"] = messages.get(e["turn_id"])
            e["answer_part"] = answer_part(e, e["full_question"], e["parts"])
    return entries


#: The private name :func:`segment_evidence` had.
_audit_entries = segment_evidence


# =============================================================================================
# Pages
# =============================================================================================
def _marked(text: str, part: str | None) -> str | None:
    """``text`` escaped with the first occurrence of ``part`` (exact, else ignoring case) in ``<mark>``;
    ``None`` when ``part`` is not in it."""
    from ..reporting.report import esc

    if not part:
        return None
    at = text.find(part)
    if at < 0:
        at = text.lower().find(part.lower())
    if at < 0:
        return None
    return f"{esc(text[:at])}<mark>{esc(text[at:at + len(part)])}</mark>{esc(text[at + len(part):])}"


def _question_html(entry: Mapping[str, Any]) -> list[str]:
    from ..reporting.report import esc

    question = str(entry.get("question") or "")
    n, k = int(entry.get("n_segments") or 1), int(entry.get("segment_index") or 1)
    if n <= 1:
        return [f"<h2>Question</h2><pre>{esc(question)}</pre>"]
    out = [f"<h2>Question: part {k} of {n} (grade this part only)</h2><pre>{esc(question)}</pre>"]
    message = entry.get("full_question")
    marked = _marked(message, question) if message else None
    if marked is not None:
        out.append(f"<h2>The whole message, this part marked</h2><pre>{marked}</pre>")
        return out
    out.append("<h2>The whole message</h2>")
    if message:
        out.append(f"<pre>{esc(message)}</pre>")
    parts = list(entry.get("parts") or [])
    if parts:
        items = "".join(f"<li class='this'><mark>{esc(q)}</mark> (this part)</li>" if i == k else f"<li>{esc(q)}</li>"
                        for i, q in enumerate(parts, start=1))
        how = ("its questions as they were split, this part marked" if message else
               "the message itself is not at hand (the run's evidence file is gone or changed); its questions "
               "as they were split, this part marked")
        out.append(f"<p class='muted'>{how}:</p><ol>{items}</ol>")
    return out


def _answer_html(entry: Mapping[str, Any]) -> list[str]:
    from ..reporting.report import esc

    answer = entry.get("answer")
    if answer is None:
        return ["<h2>Answer</h2>",
                "<p class='note'>No answer was captured (the client's own AI composed it): leave "
                "<code>answer_faithfulness</code> blank for this segment.</p>"]
    n = int(entry.get("n_segments") or 1)
    part = entry.get("answer_part") if "answer_part" in entry else answer_part(entry, None, entry.get("parts"))
    if n <= 1 or part is None or part.strip() == str(answer).strip():
        return ["<h2>Answer</h2>", f"<pre>{esc(answer)}</pre>"]
    marked = _marked(str(answer), part)
    return [f"<h2>Answer: the part for this question</h2><pre>{esc(part)}</pre>",
            "<h2>The whole answer" + (", this part marked" if marked is not None else "") + "</h2>",
            f"<pre>{marked if marked is not None else esc(answer)}</pre>",
            "<p class='muted'>The part above is the answer's sentences or items that address this question "
            "(a fixed rule over the text); the whole answer covers every part of the message.</p>"]


def render_segment_page(entry: Mapping[str, Any], *, prev_page: str | None = None,
                        next_page: str | None = None) -> str:
    """One segment's labelling page from its evidence (:func:`segment_evidence`): question (for a bundled
    segment its part, and the whole message with the part marked), context, steps (SQL, rows with the full
    count), answer (for a bundled segment its part first). Only :data:`EVIDENCE_FIELDS` and the bundled
    keys are read: no verdict, score, band or explanation."""
    from ..reporting.report import esc, render_steps

    sid = str(entry["segment_id"])
    nav = ["<a href='../index.html'>index</a>"]
    if prev_page:
        nav.append(f"<a href='{esc(prev_page)}'>&larr; previous</a>")
    if next_page:
        nav.append(f"<a href='{esc(next_page)}'>next &rarr;</a>")
    parts = [
        f"<nav>{' | '.join(nav)}</nav>",
        f"<h1>Segment {esc(sid)}</h1>",
        f"<p class='muted'>turn {esc(entry.get('turn_id'))}, part {esc(entry.get('segment_index'))} of "
        f"{esc(entry.get('n_segments'))}; {esc(entry.get('surface'))} / {esc(entry.get('client'))}, captured "
        f"{esc(entry.get('captured_at'))}</p>",
        *_question_html(entry),
        "<h2>What the assistant did</h2>", render_steps(entry.get("steps") or []),
        *_answer_html(entry),
        f"<p class='muted'>Label this segment in the row <code>{esc(sid)}</code> of <code>sheet.csv</code>.</p>",
        f"<nav>{' | '.join(nav)}</nav>",
    ]
    return _page(f"segment {sid}", "\n".join(parts))


# =============================================================================================
# Writing the pack
# =============================================================================================
def _write_pages(out: Path, ids: Sequence[str], entries: Mapping[str, Mapping[str, Any]]) -> None:
    from ..runs import atomic_write_text

    (out / PAGES_DIR).mkdir(parents=True, exist_ok=True)
    for i, sid in enumerate(ids):
        page = render_segment_page(entries[sid], prev_page=page_name(ids[i - 1]) if i else None,
                                   next_page=page_name(ids[i + 1]) if i + 1 < len(ids) else None)
        atomic_write_text(out / PAGES_DIR / page_name(sid), page)


def _write_index(out: Path, sample: LabellingSample, ids: Sequence[str], questions: Mapping[str, Any],
                 answered: Mapping[str, bool], sheets: Mapping[str, str] | None = None) -> None:
    """``index.html``: the guide and the pages, in segment-id order; the run, the design and each
    segment's stratum, weight and probability are left out (they stay in ``design.json``)."""
    from ..reporting.report import esc
    from ..runs import atomic_write_text

    rows = "".join(
        f"<tr><td>{k}</td><td><a href='{PAGES_DIR}/{esc(page_name(sid))}'>{esc(sid)}</a></td>"
        f"<td>{esc(' '.join(str(questions.get(sid) or '').split())[:140])}</td>"
        f"<td>{'yes' if answered.get(sid) else 'no: leave faithfulness blank'}</td>"
        + (f"<td>{esc(sheets.get(sid, ''))}</td>" if sheets else "") + "</tr>"
        for k, sid in enumerate(ids, start=1))
    index = (f"<h1>Labelling pack: {len(ids)} segments</h1>"
             f"<p class='muted'>A seeded sample (seed {sample.seed}). Fill in "
             f"<code>{SHEET_FILE}</code>{' (and each later batch sheet)' if sheets else ''}, one row per segment; "
             "several raters each fill their own copy.</p>"
             + _GUIDE + "<h2>Segments</h2><table><thead><tr><th>#</th><th>segment</th><th>question</th>"
             "<th>answer captured</th>" + ("<th>sheet</th>" if sheets else "") + f"</tr></thead><tbody>{rows}</tbody></table>")
    atomic_write_text(out / INDEX_FILE, _page("labelling pack", index))


def _write_sheet(path: Path, ids: Sequence[str]) -> None:
    """A blank sheet: the :data:`SHEET_COLUMNS` header and one row per segment id, nothing else."""
    from ..runs import atomic_write_text

    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(SHEET_COLUMNS)
    for sid in ids:
        writer.writerow([sid, *([""] * (len(SHEET_COLUMNS) - 1))])
    atomic_write_text(path, buf.getvalue())


def _write_probabilities(out: Path, frame: pd.DataFrame | None, *, append: bool = False) -> None:
    """``probabilities.csv``: ``segment_id``, ``batch``, ``inclusion_probability`` of every judged segment."""
    from ..runs import atomic_write_text

    if frame is None:
        return
    path = out / PROBABILITIES_FILE
    if append and path.is_file():
        frame = pd.concat([pd.read_csv(path), frame], ignore_index=True)
    atomic_write_text(path, frame.to_csv(index=False))


def write_labelling_pack(sample: LabellingSample, run: Any, out_dir: str | Path) -> Path:
    """Write the labelling pack of ``sample`` into ``out_dir`` (created; refused when it already holds a
    sheet, so a pack being filled is never overwritten). ``run`` (a Run or run folder) supplies the
    evidence from its audit, streamed (:func:`segment_evidence`). The sheet has the rater's columns only;
    ``design.json`` keeps the design, and a sample of an explicit design
    (:func:`~axon_eval.calibration.label_samples.draw_design_sample`) also gets ``probabilities.csv``.
    Returns ``out_dir``."""
    from ..runs import Run, load_run, write_json

    out = Path(out_dir)
    if (out / SHEET_FILE).exists() or (out / DESIGN_FILE).exists():
        raise FileExistsError(f"{out} already holds a labelling pack; choose a new --out folder")
    run = run if isinstance(run, Run) else load_run(run)
    ids = list(sample.segments["segment_id"])
    entries = segment_evidence(run, set(ids))
    _write_pages(out, ids, entries)
    _write_index(out, sample, ids, {k: v.get("question") for k, v in entries.items()},
                 {k: v.get("answer") is not None for k, v in entries.items()})
    _write_sheet(out / SHEET_FILE, ids)
    _write_probabilities(out, sample.extra.get("probabilities"))
    write_json(out / DESIGN_FILE, sample.design())
    return out


def append_batch(sample: LabellingSample, run: Any, pack_dir: str | Path) -> Path:
    """Add the next batch of a batch-sequential design
    (:func:`~axon_eval.calibration.label_samples.draw_design_sample` with ``previous``) to the pack in
    ``pack_dir``: pages for its new segments, ``sheet-<batch>.csv`` listing them (segments drawn again keep
    their earlier labels and are not listed), ``index.html`` over every batch, ``design.json`` rewritten
    (every segment's weight now counts every batch) and the batch's probabilities appended to
    ``probabilities.csv``. Returns the new sheet's path."""
    from ..runs import Run, load_run, write_json

    out = Path(pack_dir)
    design = sample.design()
    batch = design["batches"][-1]
    sheet = out / batch["sheet"]
    if sheet.exists():
        raise FileExistsError(f"{sheet} already exists: this batch was drawn already")
    if not (out / DESIGN_FILE).is_file():
        raise FileNotFoundError(f"{out} holds no {DESIGN_FILE}: draw the first batch with write_labelling_pack")
    run = run if isinstance(run, Run) else load_run(run)
    new_ids = list(batch["new_segments"])
    all_ids = [seg["segment_id"] for seg in design["segments"]]
    entries = segment_evidence(run, set(all_ids))
    _write_pages(out, all_ids, entries)
    sheets = {seg["segment_id"]: seg.get("sheet", SHEET_FILE) for seg in design["segments"]}
    _write_index(out, sample, all_ids, {k: v.get("question") for k, v in entries.items()},
                 {k: v.get("answer") is not None for k, v in entries.items()}, sheets)
    _write_sheet(sheet, new_ids)
    _write_probabilities(out, sample.extra.get("probabilities"), append=True)
    write_json(out / DESIGN_FILE, design)
    return sheet
