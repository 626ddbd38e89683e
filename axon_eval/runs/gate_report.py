"""A gate's decision for people and for CI: plain text, Markdown (a job summary or pull-request comment)
and JUnit XML (one test case per gated figure, read by CI test reporters).

The decision itself is :mod:`axon_eval.stats.gate`'s; this module only writes it down. Every form names
the statistic gated, the confidence of the bound, each figure's estimate, interval, bound used and
verdict, and says SIMULATED (or "local server, not the provider") when a run's judge was one.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from xml.etree import ElementTree as ET

from ..display import fmt_estimate
from ..stats.gate import GateCheck, GateDecision, fmt_figure
from .io import atomic_write_text

def _value(figure: str, x: float, *, signed: bool = False) -> str:
    return fmt_figure(figure, x, signed=signed)


def _estimate(c: GateCheck, difference: bool) -> str:
    """``77.5 (71.9 to 82.8)``, ``21% (13% to 30%)``, ``+2.1 (-3.1 to +7.4) pp``: one display rule
    (:func:`axon_eval.display.fmt_estimate`)."""
    share = c.figure.startswith("share ")
    text = fmt_estimate(c.estimate, c.lo, c.hi, share=share, signed=difference)
    return text + (" pp" if share and difference else "")


def _threshold(c: GateCheck, difference: bool) -> str:
    if c.rule == "non-inferiority":
        return f"margin {_value(c.figure, c.threshold if c.bound == 'upper' else -c.threshold, signed=True)}"
    return f"{'>=' if c.rule == 'min' else '<='} {_value(c.figure, c.threshold)}"


def check_line(c: GateCheck, *, difference: bool = False) -> str:
    """``PASS mean score: 78.1 (76.0 to 80.1), n = 97; lower bound vs >= 75: lower 97.5% bound 76.0 >= 75``-style line."""
    line = (f"{'PASS' if c.passed else 'FAIL'}  {c.figure}{' (B - A)' if difference else ''}: {_estimate(c, difference)}, n = {c.n}; "
            f"{c.bound} bound vs {_threshold(c, difference)}: {c.reason}")
    if c.method:
        line += f" [{c.method}]"
    return line + (f" -- {c.note}" if c.note else "")


def headline(decision: GateDecision, subject: str) -> str:
    """``gate PASSED: <subject> (k of n checks passed)`` (``FAILED``; ``NOTHING GATED`` without checks)."""
    verdict = "PASSED" if decision.passed else ("FAILED" if decision.checks else "NOTHING GATED")
    return (f"gate {verdict}: {subject} ({len(decision.checks) - len(decision.failed)} of {len(decision.checks)} "
            f"checks passed)")


def text_report(decision: GateDecision, subject: str, *, disclosures: Sequence[str] = (), difference: bool = False,
                notes: Sequence[str] = ()) -> str:
    """The decision as plain text for a terminal or a CI log."""
    lines = [*disclosures, headline(decision, subject),
             f"statistic: {decision.statistic}; each bound is one end of the two-sided {decision.confidence:.0%} "
             f"interval, a one-sided {decision.one_sided:.1%} test"
             + ("; human-corrected (PPI++)" if decision.corrected else ""),
             "several figures gated together: the gate passes only when every check passes (an intersection-"
             "union test), so no multiplicity correction is needed"]
    lines.extend("  " + check_line(c, difference=difference) for c in decision.checks)
    lines.extend(f"note: {n}" for n in [*decision.notes, *notes])
    return "\n".join(lines)


def markdown_report(decision: GateDecision, subject: str, *, disclosures: Sequence[str] = (),
                    difference: bool = False, notes: Sequence[str] = ()) -> str:
    """The decision as GitHub-flavoured Markdown (a job summary or a pull-request comment)."""
    icon = ":white_check_mark:" if decision.passed else ":x:"
    out = [f"### {icon} {headline(decision, subject)}", ""]
    out.extend(f"> **{d}**" for d in disclosures)
    if disclosures:
        out.append("")
    out += [f"Statistic: {decision.statistic}. Each bound is one end of the two-sided {decision.confidence:.0%} "
            f"interval (a one-sided {decision.one_sided:.1%} test)"
            + (", human-corrected (PPI++)" if decision.corrected else "")
            + ". The gate passes only when every check passes, so no multiplicity correction is needed.", "",
            "| figure | estimate (interval) | n | bound used | rule | result | interval method |",
            "|---|---|---|---|---|---|---|"]
    for c in decision.checks:
        name = f"{c.figure} (B - A)" if difference else c.figure
        out.append(f"| {name} | {_estimate(c, difference)} | {c.n} | {c.bound} {_value(c.figure, c.bound_value, signed=difference)}"
                   f" | {_threshold(c, difference)} | {'pass' if c.passed else '**FAIL**'} | {c.method} |")
    extra = [*(f"{c.figure}: {c.note}" for c in decision.checks if c.note), *decision.notes, *notes]
    if extra:
        out += ["", *[f"- {n}" for n in extra]]
    return "\n".join(out) + "\n"


def write_junit(decision: GateDecision, path: str | Path, *, suite: str = "axon_eval gate",
                disclosures: Sequence[str] = (), difference: bool = False) -> Path:
    """JUnit XML: one ``testcase`` per gated figure (a failed check is a ``failure`` with its reason),
    the disclosures and the statistic as suite properties. Returns the path written."""
    failures = len(decision.failed)
    root = ET.Element("testsuites", name=suite, tests=str(len(decision.checks)), failures=str(failures))
    ts = ET.SubElement(root, "testsuite", name=suite, tests=str(len(decision.checks)), failures=str(failures),
                       errors="0", skipped="0")
    props = ET.SubElement(ts, "properties")
    for name, value in (("statistic", decision.statistic), ("confidence", f"{decision.confidence:g}"),
                        ("one_sided_level", f"{decision.one_sided:g}"), ("corrected", str(decision.corrected).lower()),
                        *(("disclosure", d) for d in disclosures)):
        ET.SubElement(props, "property", name=name, value=value)
    for c in decision.checks:
        case = ET.SubElement(ts, "testcase", classname=suite.replace(" ", "."), name=f"{c.rule} {c.figure}")
        body = check_line(c, difference=difference)
        if not c.passed:
            ET.SubElement(case, "failure", message=c.reason, type="GateFailed").text = body
        ET.SubElement(case, "system-out").text = body
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out, ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n")
    return out
