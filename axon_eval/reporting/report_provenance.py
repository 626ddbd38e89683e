"""The first page's provenance of a run's audit report: banners, the claims sentence, the provenance table.

* :func:`provenance_banners`: a judge run against a **local server** (its URL without credentials), a
  **simulated** judge, a failed, interrupted or unfinished run, a dirty working tree;
* :func:`calibration_claim`: whether comparative claims are allowed, read from the study-05 calibration
  record on the lower bound of the band kappa's 95% interval against
  :data:`~axon_eval.stats.agreement.GATE_THRESHOLD` (Landis and Koch's "substantial agreement", 0.7 in
  this project's governance), or why not (no record, a stale record, constructed labels);
* the provenance table: judge, endpoint, rubric and its weights, caps and bands, git commit, inputs and
  their SHA-256, counts, cache, tokens and cost, each missing figure reading ``not reported``;
* :func:`rubric_of_manifest`: the run's rubric from its manifest record, or the sentence why not.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..display import fmt_number, is_missing
from ..rubric import Rubric
from ..runs.calibration import CALIBRATION_STUDY, latest_calibration, read_calibration
from ..stats.agreement import GATE_THRESHOLD
from ..stats.calibration_record import CalibrationRecord, claims_verdict, staleness
from ..summaries import is_simulated_judge
from ..urls import InvalidEndpoint, is_loopback_url, mask_url, sanitize_url
from .report_html import _kv, esc


#: A URL inside a judge id or spec: ends at a separator of the id (``,`` ``;`` ``]`` ``)``), an IPv6
#: host in brackets included.
_URL = re.compile(r"https?://(?:\[[0-9A-Fa-f:.]+\])?[^\s,;\[\]()\"'<>]*")


def manifest_fields(manifest: Any) -> dict[str, Any]:
    """A run manifest (the pydantic ``RunManifest``, its JSON dict, or any object) as a plain dict.

    The report reads every field with a default, so a manifest written by an older or newer version of
    the run code (fields missing or added, e.g. ``judge_endpoint`` / ``judge_local``) still renders.
    """
    if isinstance(manifest, Mapping):
        return dict(manifest)
    if hasattr(manifest, "model_dump"):
        return manifest.model_dump(mode="json")
    return dict(vars(manifest))


def strip_credentials(url: str) -> str:
    """An endpoint as shown in a banner: its identity without credentials, query or fragment
    (:func:`axon_eval.urls.sanitize_url`), or, for a malformed URL, with its credentials masked."""
    try:
        return sanitize_url(url)
    except InvalidEndpoint:
        return mask_url(url)


def is_local_url(url: str | None) -> bool:
    """True when ``url`` (with or without a scheme) points at this machine (:func:`axon_eval.urls.is_loopback_url`)."""
    if not url:
        return False
    return is_loopback_url(url if "//" in url else f"//{url}")


def local_judge_endpoint(manifest: Any, judge_ids: Iterable[str] = ()) -> str | None:
    """The local-server URL a run was judged against, or ``None`` for a run against a real endpoint.

    Read from the manifest's ``judge_provenance`` entries (``endpoint``, ``local``), ``judge_endpoint``
    and ``judge_local`` fields when the manifest has them, else found as a loopback URL
    (``base=http://127.0.0.1:...``, ``@http://localhost...``) inside the manifest's ``judge_id`` /
    ``judge_spec`` or the results' judge ids. Credentials are stripped.
    """
    m = manifest_fields(manifest)
    for judge in m.get("judge_provenance") or ():
        if isinstance(judge, Mapping) and judge.get("endpoint") and \
                (judge.get("local") or is_local_url(str(judge["endpoint"]))):
            return strip_credentials(str(judge["endpoint"]))
    endpoint = m.get("judge_endpoint")
    endpoint = str(endpoint) if endpoint else None
    if endpoint and is_local_url(endpoint):
        return strip_credentials(endpoint)
    texts = [str(m.get("judge_id") or ""), str(m.get("judge_spec") or ""), *map(str, judge_ids)]
    local_urls = [u for text in texts for u in _URL.findall(text) if is_local_url(u)]
    if local_urls:
        return strip_credentials(local_urls[0])
    if m.get("judge_local"):
        return strip_credentials(endpoint) if endpoint else "an unrecorded local URL"
    return None


def provenance_banners(manifest: Any, judge_ids: Iterable[str] = ()) -> list[str]:
    """The banner sentences of the first page (plain text): local server, simulated judge, failed run,
    dirty working tree. Empty for a clean, complete run judged by a real model."""
    m = manifest_fields(manifest)
    ids = list(judge_ids)
    banners = []
    local = local_judge_endpoint(m, ids)
    if local is not None:
        banners.append(f"judged against a local server at {local}: not a real model's verdicts")
    if is_simulated_judge([str(m.get("judge_id") or ""), str(m.get("judge_spec") or ""), *ids]):
        banners.append("SIMULATED judge: these verdicts are generated noise around another judge's, not a real "
                       "model's grading")
    if m.get("status") == "failed":
        banners.append(f"This run FAILED: {m.get('error')}")
    elif m.get("status") == "interrupted":
        banners.append(f"This run was INTERRUPTED (Ctrl-C): {m.get('error')}; its results hold only what was judged "
                       "before the interrupt")
    elif m.get("status") == "running":
        banners.append("This run never finished (status running): its results may be incomplete")
    if m.get("git_dirty") is True:
        banners.append(f"Run from a DIRTY working tree at commit {m.get('git_commit')}: the code that produced "
                       "these numbers is not exactly that commit")
    return banners


#: Judge-spec prefixes of judges that call a provider's API (the others run offline, in this process).
API_JUDGE_PREFIXES: tuple[str, ...] = ("anthropic:", "openai:")
#: What a figure the run did not record reads as.
NOT_REPORTED = "not reported"


def calls_a_provider(manifest: Any) -> bool:
    """True when the run's judge (or a member of it) called a provider's API: a ``judge_provenance`` entry
    names a provider or an endpoint, or the judge id / spec holds an API judge (:data:`API_JUDGE_PREFIXES`)."""
    m = manifest_fields(manifest)
    if any(isinstance(j, Mapping) and (j.get("provider") or j.get("endpoint")) for j in m.get("judge_provenance") or ()):
        return True
    text = f"{m.get('judge_id') or ''} {m.get('judge_spec') or ''}"
    return any(prefix in text for prefix in API_JUDGE_PREFIXES)


def judge_endpoint_text(manifest: Any) -> str:
    """The endpoint line of the provenance table (plain text): the recorded endpoint without credentials;
    ``not recorded (provider default)`` for an API judge that recorded none; ``offline (no endpoint)`` for
    a judge that calls no API (the heuristic, a replay of stored verdicts)."""
    m = manifest_fields(manifest)
    endpoint = m.get("judge_endpoint")
    if endpoint:
        return strip_credentials(str(endpoint))
    return "not recorded (provider default)" if calls_a_provider(m) else "offline (no endpoint)"


def counts_text(counts: Mapping[str, Any]) -> str:
    """A manifest's ``counts`` as a sentence (``90 turns, 97 segments: 97 judged, 0 unjudged; ...``)."""
    if not counts:
        return "none recorded"
    def n(key: str) -> str:
        return fmt_number(counts.get(key), missing=NOT_REPORTED)
    text = f"{n('turns')} turns, {n('segments')} segments: {n('judged')} judged, {n('unjudged')} unjudged"
    if counts.get("samples") is not None and counts.get("samples") != counts.get("segments"):
        text += f"; {n('samples')} judge samples ({n('unjudged_samples')} unjudged)"
    return text + f"; {n('invalid')} invalid input line record(s)"


def tokens_text(m: Mapping[str, Any]) -> str:
    """Token counts of the run (``not reported`` when the judge reported none, e.g. an offline judge)."""
    parts = [("input", "input_tokens"), ("output", "output_tokens"), ("cache read", "cache_read_tokens"),
             ("cache write", "cache_creation_tokens")]
    if all(is_missing(m.get(key)) for _, key in parts):
        return NOT_REPORTED + (" (offline judge)" if not calls_a_provider(m) else "")
    return ", ".join(f"{name} {fmt_number(m.get(key), missing=NOT_REPORTED)}" for name, key in parts)


def cost_text(m: Mapping[str, Any]) -> str:
    """The run's cost in US dollars (and the estimate when that is all there is)."""
    cost, estimate = m.get("cost_usd"), m.get("estimated_cost_usd")
    if not is_missing(cost):
        text = f"{fmt_number(cost)} USD"
        return text + (" (offline judge)" if not calls_a_provider(m) and not cost else "")
    if not is_missing(estimate):
        return f"{NOT_REPORTED}; estimated {fmt_number(estimate)} USD"
    return NOT_REPORTED


def _cache_text(m: Mapping[str, Any]) -> str:
    hits, misses = m.get("cache_hits"), m.get("cache_misses")
    if is_missing(hits) and is_missing(misses):
        return "no verdict cache used" if not m.get("cache_path") else NOT_REPORTED
    return f"{fmt_number(hits, missing=NOT_REPORTED)} hits, {fmt_number(misses, missing=NOT_REPORTED)} misses"


def _provenance_section(m: Mapping[str, Any], banners: Sequence[str] = ()) -> str:
    rubric = m.get("rubric") or {}
    counts = m.get("counts") or {}
    files = m.get("input_files") or {}
    pairs = [
        ("run", esc(m.get("run_id"))), ("status", esc(m.get("status"))), ("kind", esc(m.get("kind"))),
        ("name", esc(m.get("name"))),
        ("judge id", f"<code>{esc(m.get('judge_id'))}</code>"),
        ("judge", f"model {esc(m.get('judge_model'))}, prompt {esc(m.get('prompt_version'))}"
                  + (f", spec <code>{esc(m.get('judge_spec'))}</code>" if m.get("judge_spec") else "")),
        ("judge endpoint", esc(judge_endpoint_text(m))),
        ("rubric id", f"{esc(m.get('rubric_name'))}@<code>{esc(m.get('rubric_id'))}</code>"),
        ("weights", esc(json.dumps(rubric.get("weights")))), ("caps", esc(json.dumps(rubric.get("caps")))),
        ("bands", esc(json.dumps(rubric.get("bands")))), ("row horizon", esc(rubric.get("row_horizon"))),
        ("git commit", f"<code>{esc(m.get('git_commit'))}</code> (dirty: {esc(m.get('git_dirty'))})"),
        ("started / ended (UTC)", f"{esc(m.get('started_at'))} / {esc(m.get('ended_at'))}"),
        ("input files", "<br>".join(f"{esc(p)}<br><span class='muted'>sha256 {esc(h)}</span>"
                                    for p, h in files.items()) or "none recorded"),
        ("counts", esc(counts_text(counts))),
        ("verdict cache", esc(_cache_text(m))),
        ("tokens", esc(tokens_text(m))),
        ("cost", esc(cost_text(m))),
    ]
    if m.get("source_run"):
        pairs.append(("source run", esc(m.get("source_run"))))
    out = ["<h2>Provenance</h2>", _kv(pairs)]
    for w in m.get("warnings") or ():
        if not any(str(w)[:30] == b[:30] for b in banners):  # already said in a banner above
            out.append(f'<p class="warn">{esc(w)}</p>')
    return "\n".join(out)


# -- comparative claims: the calibration record --------------------------------------------------------
def calibration_claim(manifest: Any, record: CalibrationRecord | None, source: str | None = None, *,
                      problem: str | None = None, searched: str | None = None) -> tuple[bool, str]:
    """Whether this run may make comparative claims, and the first page's sentence saying why (plain text).

    * ``problem`` (a record that could not be read): not allowed, the problem said;
    * no ``record``: ``"no calibration record: comparative claims are not allowed until study 05 passes"``
      (the seed's governance: kappa >= :data:`~axon_eval.stats.agreement.GATE_THRESHOLD` first);
    * a record whose judge (id, model, endpoint, prompt) or rubric differs from the run's manifest:
      ``"calibration stale: <what> differs (record X, run Y)"`` for each difference
      (:func:`~axon_eval.stats.calibration_record.staleness`), not allowed, and no corrected figures;
    * a matching record: ``"comparative claims allowed|not allowed: band kappa lower bound X vs 0.7
      (kappa K, 95% interval, n = N segments, record FILE)"``. The gate reads the **lower bound**, never
      the point value (:func:`~axon_eval.stats.calibration_record.claims_verdict`, which also refuses a
      gate passed on constructed labels).
    """
    m = manifest_fields(manifest)
    if problem is not None:
        return False, f"{problem}: comparative claims are not allowed"
    if record is None:
        where = f"; none found in a {CALIBRATION_STUDY} run folder under {searched}" if searched else ""
        return False, (f"no calibration record: comparative claims are not allowed until study 05 passes (the lower "
                       f"bound of the band kappa's 95% interval at least {GATE_THRESHOLD:g} for this judge and "
                       f"rubric{where})")
    stale = staleness(record, m)
    named = f"record {source}" if source else "the record given"
    if stale:
        return False, ("; ".join(stale) + f": comparative claims are not allowed and no corrected figures are given "
                       f"for this run ({named}, measured on judge {record.judge_id or 'none'}, rubric "
                       f"{record.rubric_id or 'none'})")
    allowed, _ = claims_verdict(record, stale)
    lo = "undefined" if record.kappa_lo is None else f"{record.kappa_lo:.2f}"
    kappa = "undefined" if record.kappa is None else f"{record.kappa:.2f}"
    text = (f"comparative claims {'allowed' if allowed else 'not allowed'}: band kappa lower bound {lo} vs "
            f"{record.threshold:g} (kappa {kappa}, {record.confidence:.0%} interval, n = {record.n} segments, {named})")
    if record.labels_constructed:
        text += "; the record's labels are constructed, not people's, so its gate allows no claim"
    return allowed, text


def _calibration_of(calibration: str | Path | CalibrationRecord | None, runs_root: Path
                    ) -> tuple[CalibrationRecord | None, str | None, str | None, str | None]:
    """``(record, source, problem, searched)``: the given record (or file / run folder holding one), else
    the newest study-05 record under ``runs_root`` (:func:`axon_eval.runs.calibration.latest_calibration`);
    a record that does not read is a problem sentence, not a crash."""
    if isinstance(calibration, CalibrationRecord):
        return calibration, "given", None, None
    path = Path(calibration) if calibration is not None else latest_calibration(runs_root)
    if path is None:
        return None, None, None, str(runs_root)
    try:
        return read_calibration(path), str(path), None, None
    except (OSError, ValueError) as exc:
        return None, str(path), f"the calibration record {path} could not be read ({exc})", None


def _claims_paragraph(allowed: bool, text: str) -> str:
    return f'<p class="{"ok" if allowed else "warn"}" id="claims"><b>{esc(text)}</b></p>'


def rubric_of_manifest(manifest: Any) -> tuple[Rubric | None, str | None]:
    """The run's rubric from its manifest's ``rubric`` record, and a sentence when it could not be used.

    ``(rubric, None)`` when the record reads; ``(None, None)`` when the manifest has none (the default
    rubric's band edges are used, as for any run without one); ``(None, problem)`` when the record does
    not validate: the problem names the rubric and the first error, and says the band edges of a
    repeated run's mean scores fall back to the default rubric's. The report shows that sentence.
    """
    m = manifest_fields(manifest)
    record = m.get("rubric")
    if not record:
        return None, None
    try:
        return Rubric.model_validate(record), None
    except Exception as exc:  # pydantic ValidationError, or a record that is not a mapping at all
        first = str(exc).strip().splitlines()
        detail = "; ".join(line.strip() for line in first[:3]) if first else type(exc).__name__
        name = record.get("name") if isinstance(record, Mapping) else None
        return None, (f"The run's rubric record ({name or 'unnamed'}, id {m.get('rubric_id')}) could not be read "
                      f"({detail}): band edges for segments' mean scores use the default rubric "
                      f"({Rubric.default().label}) instead.")


def _rubric_of(m: Mapping[str, Any]) -> Rubric | None:
    return rubric_of_manifest(m)[0]


