"""The calibration record: what study 05 measured, about which judge and rubric,
and when a later run may lean on it.

A record names the judge exactly (``judge_id``, ``judge_model``, the ``judge_endpoint`` it called and
the ``prompt_version``), the rubric id, the SHA-256 of the evidence and of the labels it was measured
on, n, Cohen's kappa on bands with its interval, and the gate's verdict. The gate passes when the
**lower** bound of kappa's interval is at least :data:`GATE_THRESHOLD` (0.7, the target of the
governance plan); the point value is never enough (a kappa of 0.72 from 20 labels has a lower bound
far below 0.7).

:func:`staleness` compares a record with a run's manifest (any mapping with the manifest's keys, or a
:class:`~axon_eval.runs.manifest.RunManifest`): a run whose judge (id, model, endpoint, prompt) or
rubric differs from the record's is outside what was calibrated, and every difference is returned as
``"calibration stale: <what> differs (record ..., run ...)"``. The evidence may differ (a weekly run
reads new turns); that is what a calibration is for, so it is not staleness. :func:`claims_verdict`
says whether comparative claims are allowed for a run: only with a record that is not stale, whose
gate passed, and whose labels were people's (a gate passed on the constructed labels allows nothing).

:func:`calibration_status` is the one question a caller asks before making corrected or comparative
claims about a run: is this record current for this run's manifest, and may claims be made? It returns
``(allowed, reasons)``. A record that cannot be checked -- no record, or no manifest to check it
against -- allows nothing, and the reasons say so; staleness, a gate that did not pass and constructed
labels each add a reason. ``allowed`` is true only when ``reasons`` is empty.

Pure: mappings in, frozen dataclasses and strings out; the file ``calibration.json`` is read and
written by :mod:`axon_eval.runs.calibration`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from .agreement import GATE_THRESHOLD

#: Version of the record's layout (bump when a key changes meaning).
RECORD_VERSION = 1
#: The manifest keys that identify what was calibrated; a difference in any of them makes a record stale.
IDENTITY_FIELDS: tuple[tuple[str, str], ...] = (
    ("judge_id", "judge id"),
    ("judge_model", "judge model"),
    ("judge_endpoint", "judge endpoint"),
    ("prompt_version", "judge prompt"),
    ("rubric_id", "rubric id"),
)
STALE_PREFIX = "calibration stale"
#: The reason given when a record has no manifest to be checked against.
UNCHECKED_REASON = ("calibration record not checked: no run manifest was given, so whether the record's judge "
                    "and rubric are this run's is unknown")
#: The reason given when there is no record at all.
NO_RECORD_REASON = "no calibration record (run study 05 on this judge and rubric)"
#: The first words of every refusal sentence of :func:`claims_verdict`.
NOT_ALLOWED = "comparative claims NOT allowed"


def _as_mapping(manifest_like: Any) -> Mapping[str, Any]:
    if isinstance(manifest_like, Mapping):
        return manifest_like
    if hasattr(manifest_like, "model_dump"):
        return manifest_like.model_dump()
    raise TypeError(f"expected a manifest mapping or RunManifest, got {type(manifest_like).__name__}")


def _finite(x: Any) -> float | None:
    return None if x is None or not math.isfinite(float(x)) else float(x)


@dataclass(frozen=True)
class CalibrationRecord:
    """One calibration of one judge under one rubric (see the module docstring).

    ``kappa``/``kappa_lo``/``kappa_hi``: Cohen's kappa (unweighted) of the judge's band against the human
    verdict and its ``confidence`` interval (``None`` when undefined); ``gate_passed`` is
    ``kappa_lo >= threshold``. ``evidence`` and ``labels``: path -> SHA-256. ``labels_constructed``:
    the labels were the constructed stand-in, not people (a gate passed on them proves nothing about
    people, and :func:`claims_verdict` says so).
    """

    judge_id: str | None
    judge_model: str | None
    judge_endpoint: str | None
    prompt_version: str | None
    rubric_id: str | None
    evidence: dict[str, str]
    labels: dict[str, str]
    labels_constructed: bool
    n: int
    kappa: float | None
    kappa_lo: float | None
    kappa_hi: float | None
    confidence: float
    threshold: float
    gate_passed: bool
    gate_message: str
    source_run: str | None = None
    method: str = ""
    version: int = RECORD_VERSION
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["kappa_ci"] = [self.kappa_lo, self.kappa_hi]
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CalibrationRecord:
        """The record from its JSON form; a missing key is a ValueError naming it."""
        names = [f for f in cls.__dataclass_fields__ if f not in ("source_run", "method", "version", "extra")]
        missing = [k for k in names if k not in data]
        if missing:
            raise ValueError(f"calibration record lacks key(s) {missing}; has {sorted(data)}")
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        known["evidence"], known["labels"] = dict(known["evidence"]), dict(known["labels"])
        return cls(**known)

    def identity(self) -> dict[str, str | None]:
        return {key: getattr(self, key) for key, _ in IDENTITY_FIELDS}


def gate_passes(kappa_lo: float | None, threshold: float = GATE_THRESHOLD) -> bool:
    """The gate: the interval's lower bound ``kappa_lo`` is defined and at least ``threshold``."""
    return kappa_lo is not None and math.isfinite(kappa_lo) and kappa_lo >= threshold


def calibration_record(calibration: Any, manifest_like: Any, *, evidence: Mapping[str, str] | None = None,
                       labels: Mapping[str, str] | None = None, source_run: str | None = None,
                       threshold: float = GATE_THRESHOLD) -> CalibrationRecord:
    """The record of a study-05 calibration: ``calibration`` is a
    :class:`~axon_eval.stats.agreement.CalibrationAgreement` (its ``kappa`` estimate, ``n``, ``constructed``),
    ``manifest_like`` the judged run's manifest (judge and rubric identity; its ``input_files`` are the
    evidence hashes unless ``evidence`` is given), ``labels`` the labels file(s) -> SHA-256. The gate is
    decided here on the kappa's lower bound (:func:`gate_passes`)."""
    m = _as_mapping(manifest_like)
    k = calibration.kappa
    lo, hi = (_finite(x) for x in k.ci)
    passed = gate_passes(lo, threshold)
    judge_id = m.get("judge_id") or getattr(calibration, "judge_id", None)
    lo_text = "undefined" if lo is None else f"{lo:.3f}"
    message = (f"gate {'PASSED' if passed else 'NOT passed'}: kappa = "
               f"{'undefined' if _finite(k.value) is None else f'{k.value:.3f}'}, {k.confidence:.0%} lower bound "
               f"{lo_text} {'>=' if passed else 'not >='} {threshold:g}, n = {calibration.n} segments"
               + ("; CONSTRUCTED labels, not human" if calibration.constructed else ""))
    return CalibrationRecord(
        judge_id=judge_id, judge_model=m.get("judge_model"), judge_endpoint=m.get("judge_endpoint"),
        prompt_version=m.get("prompt_version"), rubric_id=m.get("rubric_id"),
        evidence=dict(evidence if evidence is not None else m.get("input_files") or {}),
        labels=dict(labels or {}), labels_constructed=bool(calibration.constructed), n=int(calibration.n),
        kappa=_finite(k.value), kappa_lo=lo, kappa_hi=hi, confidence=float(k.confidence), threshold=float(threshold),
        gate_passed=passed, gate_message=message, source_run=source_run,
        method=f"Cohen's kappa on bands, bootstrap {k.method}, {k.n_boot} resamples, seed {k.seed}")


def staleness(record: CalibrationRecord | Mapping[str, Any], manifest_like: Any) -> list[str]:
    """Every way ``manifest_like``'s judge or rubric differs from ``record``'s, one
    ``"calibration stale: <what> differs (record X, run Y)"`` each; empty when the record applies."""
    rec = record.to_json() if isinstance(record, CalibrationRecord) else record
    m = _as_mapping(manifest_like)
    out = []
    for key, what in IDENTITY_FIELDS:
        a, b = rec.get(key), m.get(key)
        if (a or None) != (b or None):
            out.append(f"{STALE_PREFIX}: {what} differs (record {a if a else 'none'}, run {b if b else 'none'})")
    return out


def _record_of(record: CalibrationRecord | Mapping[str, Any] | None) -> CalibrationRecord | None:
    if record is None or isinstance(record, CalibrationRecord):
        return record
    if isinstance(record, Mapping):
        return CalibrationRecord.from_json(record)
    raise TypeError(f"expected a CalibrationRecord, its JSON mapping or None, got {type(record).__name__}")


def _refusals(record: CalibrationRecord) -> list[str]:
    """What, besides staleness, stops ``record`` from allowing claims: a gate that did not pass, labels
    that were not people's."""
    if not record.gate_passed:
        return [record.gate_message]
    if record.labels_constructed:
        return [f"{record.gate_message}; a gate passed on labels that are not people's shows the machinery only"]
    return []


def calibration_status(record: CalibrationRecord | Mapping[str, Any] | None,
                       manifest_like: Any) -> tuple[bool, list[str]]:
    """``(allowed, reasons)``: may corrected or comparative claims be made about the run whose manifest is
    ``manifest_like``, on the strength of ``record``?

    ``record``: a :class:`CalibrationRecord`, its JSON mapping (``calibration.json``) or ``None``.
    ``manifest_like``: the run's manifest (a mapping with the manifest's keys or a
    :class:`~axon_eval.runs.manifest.RunManifest`) or ``None``. ``reasons`` lists every reason claims are
    refused, in this order: no record (:data:`NO_RECORD_REASON`); no manifest to check the record against
    (:data:`UNCHECKED_REASON`); each :func:`staleness` line; the gate's message when it did not pass; the
    constructed labels. ``allowed`` is true exactly when ``reasons`` is empty: a current record whose gate
    passed on people's labels. Pure: no file is read.
    """
    rec = _record_of(record)
    if rec is None:
        return False, [NO_RECORD_REASON]
    reasons = [UNCHECKED_REASON] if manifest_like is None else staleness(rec, manifest_like)
    reasons.extend(_refusals(rec))
    return not reasons, reasons


def claims_verdict(record: CalibrationRecord | None, stale: list[str]) -> tuple[bool, str]:
    """Whether comparative claims are allowed, and the sentence that says why (for a report's first page).
    ``stale``: the record's :func:`staleness` lines for the run (or :data:`UNCHECKED_REASON` when there was
    no manifest to check it against). :func:`calibration_status` decides the same from a manifest."""
    if record is None:
        return False, f"{NOT_ALLOWED}: {NO_RECORD_REASON}"
    if stale:
        return False, f"{NOT_ALLOWED}: " + "; ".join(stale)
    refusals = _refusals(record)
    if refusals:
        return False, f"{NOT_ALLOWED}: " + "; ".join(refusals)
    return True, f"comparative claims allowed: {record.gate_message}"
