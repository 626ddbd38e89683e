"""The studio's files inside a labelling pack, and the evidence store the server reads from.

A pack written by ``sample-for-labelling`` holds ``design.json`` (the segments, their strata, weights and
inclusion probabilities, the batches, the source run). The studio adds:

``assignment.json``
    the seeded assignment (:mod:`axon_eval.studio.assignment`), written by ``label init``;
``studio/evidence.jsonl``
    one line per segment: the blind evidence (:func:`axon_eval.studio.blind.blind_item`) copied from the
    source run's audit at ``init``, so the server needs neither the run nor its judge output;
``studio/guide.json``
    the rubric's dimension descriptions and anchors (:func:`axon_eval.studio.blind.rubric_guide`);
``labels/<rater>.jsonl``, ``labels/adjudicated.jsonl``
    the journals (:mod:`axon_eval.studio.ledger`).

Design figures are read here (:func:`design_info`) for the server's bookkeeping; they never enter the
evidence file.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .assignment import Assignment, extend_assignment, plan_assignment
from .blind import blind_item, rubric_guide

DESIGN_FILE = "design.json"
ASSIGNMENT_FILE = "assignment.json"
STUDIO_DIR = "studio"
EVIDENCE_FILE = "evidence.jsonl"
GUIDE_FILE = "guide.json"
LABELS_DIR = "labels"
ADJUDICATED = "adjudicated"


@dataclass(frozen=True)
class SegmentDesign:
    """One segment's design figures (server-side only): inclusion probability, weight, batch, stratum."""

    segment_id: str
    inclusion_probability: float | None
    weight: float | None
    batch: int
    stratum: str | None
    answer_captured: bool


def read_design(pack: str | Path) -> dict[str, Any]:
    """The pack's ``design.json``; ``FileNotFoundError`` naming the folder when it is not a pack."""
    path = Path(pack) / DESIGN_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{pack} is not a labelling pack: it has no {DESIGN_FILE} (write one with "
                                "python -m axon_eval sample-for-labelling RUN --out PACK)")
    return json.loads(path.read_text(encoding="utf-8"))


def _float(value: Any) -> float | None:
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return out if out == out else None


def design_info(design: Mapping[str, Any]) -> dict[str, SegmentDesign]:
    """Each segment's :class:`SegmentDesign`, in the pack's order. The batch is the first batch whose
    ``new_segments`` lists the segment (1 for a pack of one batch); the inclusion probability is the
    segment's ``inclusion_probability`` in ``design.json``, else ``1 / weight``."""
    first_batch: dict[str, int] = {}
    for batch in design.get("batches") or []:
        for sid in batch.get("new_segments") or []:
            first_batch.setdefault(str(sid), int(batch.get("batch", 1)))
    out: dict[str, SegmentDesign] = {}
    for seg in design.get("segments") or []:
        sid = str(seg["segment_id"])
        weight = _float(seg.get("weight"))
        pi = _float(seg.get("inclusion_probability"))
        if pi is None and weight:
            pi = 1.0 / weight
        out[sid] = SegmentDesign(sid, pi, weight, first_batch.get(sid, 1), seg.get("stratum"),
                                 bool(seg.get("answer_captured", True)))
    return out


def read_assignment(pack: str | Path) -> Assignment:
    """The pack's ``assignment.json``; ``FileNotFoundError`` saying to run ``label init`` when missing."""
    path = Path(pack) / ASSIGNMENT_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{pack} has no {ASSIGNMENT_FILE}: run python -m axon_eval label init {pack} "
                                "--raters r1,r2 --overlap 20 first")
    return Assignment.from_json(json.loads(path.read_text(encoding="utf-8")))


def _whole_messages(run: Any, turn_ids: set[str]) -> dict[str, str]:
    """The relayed message of each bundled turn in ``turn_ids``, from the run's evidence file when it can
    still be read (else empty: the page then lists the turn's parts)."""
    from ..evidence import iter_turns

    name = getattr(run.manifest, "turns_file", None)
    if not name or not turn_ids:
        return {}
    candidates = [Path(name)] if Path(name).is_absolute() else [Path.cwd() / name, Path(run.run_dir).parent / name]
    for path in candidates:
        if path.is_file():
            out: dict[str, str] = {}
            try:
                for turn in iter_turns(path):
                    tid, question = getattr(turn, "turn_id", None), getattr(turn, "question", None)
                    if tid in turn_ids and isinstance(question, str):
                        out[tid] = question
            except ValueError:
                return {}
            return out
    return {}


def build_evidence(run: Any, segment_ids: list[str]) -> list[dict[str, Any]]:
    """The blind evidence of ``segment_ids`` from ``run``'s audit (streamed), in that order; ``ValueError``
    naming segments the audit lacks."""
    wanted = set(segment_ids)
    entries: dict[str, dict[str, Any]] = {}
    parts: dict[str, dict[int, str]] = {}
    for entry in run.iter_audit():
        sid = entry.get("segment_id")
        if int(entry.get("n_segments") or 1) > 1:
            parts.setdefault(str(entry.get("turn_id")), {})[int(entry.get("segment_index") or 1)] = str(
                entry.get("question") or "")
        if sid in wanted and sid not in entries:
            entries[sid] = entry
    missing = sorted(wanted - set(entries))
    if missing:
        raise ValueError(f"the run's audit has no evidence for segment(s) {missing[:5]} of the pack")
    bundled = {str(e.get("turn_id")) for e in entries.values() if int(e.get("n_segments") or 1) > 1}
    messages = _whole_messages(run, bundled)
    out = []
    for sid in segment_ids:
        e = entries[sid]
        tid = str(e.get("turn_id"))
        out.append(blind_item(e, message=messages.get(tid),
                              parts=[q for _, q in sorted(parts.get(tid, {}).items())]))
    return out


def _write_atomic(path: Path, text: str) -> None:
    from ..runs import atomic_write_text

    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, text)


def init_pack(pack: str | Path, raters: list[str], overlap: int, seed: int, *, run: Any = None,
              extend: bool = False) -> Assignment:
    """``label init``: the assignment, the blind evidence and the rubric guide of the pack.

    ``run``: the run folder (default: the pack's ``source_run``). An existing assignment is refused
    unless ``extend`` (then segments a later batch added are dealt, :func:`extend_assignment`)."""
    from ..judges.prompt import load_prompt
    from ..runs import load_run

    out = Path(pack)
    design = read_design(out)
    info = design_info(design)
    ids = list(info)
    batches = {sid: d.batch for sid, d in info.items()}
    existing = out / ASSIGNMENT_FILE
    if existing.exists() and not extend:
        raise FileExistsError(f"{existing} exists: the pack is assigned already (label init --extend deals the "
                              "segments of a later batch)")
    if extend:
        assignment = extend_assignment(read_assignment(out), ids, batches)
    else:
        assignment = plan_assignment(ids, raters, overlap, seed, batches)
    source = run if run is not None else design.get("source_run")
    if source is None:
        raise ValueError(f"{out / DESIGN_FILE} names no source_run: give the run with --run RUN")
    loaded = source if hasattr(source, "iter_audit") else load_run(source)
    evidence = build_evidence(loaded, ids)
    version = loaded.manifest.prompt_version or "judge_v1"
    try:
        guide = rubric_guide(load_prompt(version.split("+")[0]).text)
    except ValueError:
        guide = rubric_guide(load_prompt("judge_v1").text)
    _write_atomic(out / STUDIO_DIR / EVIDENCE_FILE,
                  "".join(json.dumps(e, ensure_ascii=False, allow_nan=False) + "\n" for e in evidence))
    _write_atomic(out / STUDIO_DIR / GUIDE_FILE, json.dumps(guide, indent=1, ensure_ascii=False) + "\n")
    (out / LABELS_DIR).mkdir(exist_ok=True)
    _write_atomic(existing, json.dumps(assignment.to_json(), indent=1) + "\n")
    return assignment


class EvidenceStore:
    """Random access to ``studio/evidence.jsonl``: an index of byte offsets built on open (the lines
    themselves are read when asked for)."""

    def __init__(self, pack: str | Path) -> None:
        self.path = Path(pack) / STUDIO_DIR / EVIDENCE_FILE
        if not self.path.is_file():
            raise FileNotFoundError(f"{self.path} is missing: run python -m axon_eval label init {pack} first")
        self._offsets: dict[str, tuple[int, int]] = {}
        with open(self.path, "rb") as fh:
            offset = 0
            for line in fh:
                self._offsets[str(json.loads(line)["segment_id"])] = (offset, len(line))
                offset += len(line)
        self._fd = os.open(self.path, os.O_RDONLY)

    def __contains__(self, segment_id: str) -> bool:
        return segment_id in self._offsets

    def get(self, segment_id: str) -> dict[str, Any]:
        offset, size = self._offsets[segment_id]
        return json.loads(os.pread(self._fd, size, offset))

    def close(self) -> None:
        os.close(self._fd)
