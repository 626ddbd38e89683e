"""One display rule: every verb that prints figures writes each share and each estimate the same way.

The rule (:mod:`axon_eval.display`): a share reads as a whole percentage from 10% to 99% and with one
decimal below 10% and above 99% (``0.093 -> "9.3%"``, ``0.64 -> "64%"``; a trailing ``.0`` dropped); an
estimate with its interval reads ``"77.5 (72.0 to 82.4)"``: the three numbers with the same decimals,
three significant digits on the largest, the trailing zeros all three share dropped.

Every verb that prints figures is run here, in process, on the bundled data, offline, and its output is
read back with regular expressions written from the rule (not with the package's formatters): every
``X (L to H)`` estimate, every ``P%`` share, and every share printed beside the counts it is a share of
(``partial 9 (9.3%)`` with ``judged: 97``, ``6 of 97 segments (6.2%)``), so a share rounded one way in
one line and another way in the next is caught. A confidence level (``95% interval``, ``97.5% bound``)
is a level, not a share, and is left out.
"""

from __future__ import annotations

import contextlib
import io
import math
import os
import re
from pathlib import Path

import pandas as pd
import pytest

from axon_eval.cli.main import main

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "data" / "turns" / "sample_turns.jsonl"
LABELS = ROOT / "data" / "turns" / "labels.csv"

NUM = r"[+-]?\d[\d,]*(?:\.\d+)?"
#: ``77.5 (72.0 to 82.4)``; the estimate may carry a unit before the bracket is opened only if it is a
#: share (``64% (54% to 73%)`` is read by :data:`SHARE`).
ESTIMATE = re.compile(rf"(?<![\w.%/])({NUM}) \(({NUM}) to ({NUM})\)")
#: A percentage that is not a confidence level.
SHARE = re.compile(r"(?<![\w.<>/+-])(\d+(?:\.\d+)?)%(?! (?:one-sided |two-sided )?(?:interval|intervals|CI|bound|bounds|"
                   r"test|confidence|level|power|pointwise))")
#: ``6 of 97 segments (6.2%)``, ``25 of 97 judged segments flagged (26%)``
OF_SHARE = re.compile(r"\b(\d+) of (\d+)\b[^()\n%]{0,60}\((\d+(?:\.\d+)?%)\)")
#: ``bands: good 62 (64%), partial 15 (15%), poor 20 (21%)`` after ``judged: 97``
BAND_COUNT = re.compile(r"\b(good|partial|poor) (\d+) \((\d+(?:\.\d+)?%)\)")
JUDGED = re.compile(r"\bjudged: (\d+)\b")


def rule_share(p: float) -> str:
    """The rule's text of the share ``p``, written from the rule's words."""
    pct = 100 * p
    if pct == 0 or pct == 100:
        return f"{pct:.0f}%"
    if pct < 0.1:
        return "<0.1%"
    if pct > 99.9:
        return ">99.9%"
    if pct < 10 or pct > 99:
        text = f"{pct:.1f}"
        return (text[:-2] if text.endswith(".0") else text) + "%"
    return f"{pct:.0f}%"


def _decimals(text: str) -> int:
    return len(text.split(".")[1]) if "." in text else 0


def problems(text: str) -> list[str]:
    """Every share and estimate of ``text`` that does not read by the rule, as a sentence naming it."""
    found = []
    for m in ESTIMATE.finditer(text):
        parts = m.groups()
        decimals = {_decimals(p) for p in parts}
        if len(decimals) > 1:
            found.append(f"{m.group()!r}: the estimate and its bounds have different decimals")
            continue
        d = decimals.pop()
        largest = max(abs(float(p.replace(",", ""))) for p in parts)
        if d and largest:
            allowed = min(max(2 - math.floor(math.log10(largest)), 0), 3)
            if d > allowed:
                found.append(f"{m.group()!r}: {d} decimals where three significant digits need {allowed}")
            if all(p.endswith("0") for p in parts):
                found.append(f"{m.group()!r}: a trailing zero all three share")
    for m in SHARE.finditer(text):
        t = m.group(1)
        v = float(t)
        if "." in t and (_decimals(t) != 1 or t.endswith(".0") or 10 <= v <= 99):
            line = text[text.rfind("\n", 0, m.start()) + 1:text.find("\n", m.end())].strip()
            found.append(f"share {t}% in {line[:200]!r}: whole percents from 10% to 99%, one decimal outside")
    for m in OF_SHARE.finditer(text):
        k, n, shown = int(m.group(1)), int(m.group(2)), m.group(3)
        if 0 < n and k <= n and shown != rule_share(k / n):
            found.append(f"{m.group()!r}: {k} of {n} reads {rule_share(k / n)}, not {shown}")
    for m in re.finditer(r"^bands: .*$", text, re.M):
        before = list(JUDGED.finditer(text, 0, m.start()))
        if not before:
            continue
        total = int(before[-1].group(1))
        for b in BAND_COUNT.finditer(m.group()):
            if total and b.group(3) != rule_share(int(b.group(2)) / total):
                found.append(f"{m.group()!r}: {b.group(2)} of {total} reads {rule_share(int(b.group(2)) / total)}, "
                             f"not {b.group(3)}")
    return found


def test_the_checks_catch_both_ways_of_writing_a_figure():
    assert problems("gate: mean score: 77.50 (72.00 to 82.45), n = 97")
    assert not problems("mean score 77.5 (72.0 to 82.4), n = 97 segments")
    assert problems("share poor: 20.6% (13.0% to 30.1%)") and not problems("share poor: 21% (13% to 30%)")
    assert not problems("share partial: 9.3% (4% to 15%); lower 97.5% bound; 95% interval")
    assert problems("segments: 97  judged: 97\nbands: good 62 (64%), partial 9 (9%), poor 26 (27%)")
    assert not problems("segments: 97  judged: 97\nbands: good 62 (64%), partial 9 (9.3%), poor 26 (27%)")
    assert problems("band changes: 6 of 97 segments (6%)") and not problems("band changes: 6 of 97 segments (6.2%)")
    assert problems("mean delta: -1.7 (-2.61 to -0.8) points") and not problems("-1.70 (-2.61 to -0.80)")
    assert [rule_share(x) for x in (0.0928, 0.64, 0.0496, 0.999, 0.0004, 0.995)] == \
        ["9.3%", "64%", "5%", "99.9%", "<0.1%", "99.5%"]


def _run(argv: list[str]) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue() + err.getvalue()


@pytest.fixture(scope="module")
def outputs(tmp_path_factory) -> dict[str, str]:
    """The output of every verb that prints figures, each run once on the bundled data, offline."""
    work = tmp_path_factory.mktemp("display")
    saved = {k: os.environ.get(k) for k in ("AXON_EVAL_RUNS_DIR", "AXON_EVAL_CACHE", "ANTHROPIC_API_KEY",
                                             "OPENAI_API_KEY")}
    os.environ["AXON_EVAL_RUNS_DIR"] = str(work / "runs")
    os.environ["AXON_EVAL_CACHE"] = str(work / "verdicts.sqlite")
    os.environ.pop("ANTHROPIC_API_KEY", None)
    os.environ.pop("OPENAI_API_KEY", None)
    runs = work / "runs"
    got: dict[str, str] = {}

    def run(name: str, argv: list[str], ok: tuple[int, ...] = (0,)) -> str:
        code, text = _run(argv)
        assert code in ok, f"{name}: exit {code}\n{text[-3000:]}"
        got[name] = text
        return text

    def newest(part: str) -> str:
        return str(sorted(p for p in runs.iterdir() if part in p.name)[-1])

    try:
        run("validate", ["validate", str(SAMPLE)])
        run("evaluate", ["evaluate", "--turns", str(SAMPLE), "--judge", "heuristic", "--name", "a"])
        a = newest("_a_")
        run("evaluate noise", ["evaluate", "--turns", str(SAMPLE), "--judge", "noise(heuristic, sd=1, seed=1)",
                               "--name", "b"])
        b = newest("_b_")
        run("rescore", ["rescore", a, "--rubric", "axon-v1-faithcap"])
        run("rejudge", ["rejudge", a, "--judge", "noise(heuristic, sd=1, seed=3)", "--name", "c"])
        run("gate", ["gate", a, "--min-mean-score", "50", "--max-share-poor", "0.6"])
        run("gate corrected", ["gate", a, "--min-mean-score", "60", "--corrected", "--labels", str(LABELS),
                               "--allow-uncalibrated"])
        run("gate markdown", ["gate", a, "--min-mean-score", "50", "--max-share-poor", "0.6", "--format", "markdown"])
        run("compare", ["compare", a, b])
        run("compare labels", ["compare", a, b, "--labels", str(LABELS)])
        run("compare non-inferiority", ["compare", a, b, "--fail-on-regression", "--margin", "3",
                                        "--margin-share-poor", "0.05", "--allow-simulated"], ok=(0, 8))
        run("trend", ["trend", a, b, "--allow-mixed"])
        run("plan-labels", ["plan-labels", a, "--half-width", "5", "--labels", str(LABELS)])
        pack = work / "pack"
        run("sample-for-labelling", ["sample-for-labelling", a, "--n", "40", "--out", str(pack)])
        sheet = pd.read_csv(pack / "sheet.csv")
        from axon_eval.calibration.labelling import labels_from_constructed

        labels = labels_from_constructed(str(LABELS), raters=["rehearsal"]).set_index("segment_id")
        columns = ["intent_understood", "sql_quality", "result_relevance", "answer_faithfulness", "verdict"]
        sheet[columns] = labels.loc[sheet["segment_id"], columns].to_numpy()
        sheet["rater"] = "rehearsal"
        sheet.to_csv(pack / "sheet.csv", index=False)
        run("import-labels", ["import-labels", str(pack / "sheet.csv")])
        run("index", ["index"])
        run("anchor", ["anchor", a, "--note", "display rule"])
        run("drift", ["drift", a, "--judge", "noise(heuristic, sd=1, seed=2)"])
        run("rerun", ["rerun", a])
        run("grade-reference", ["grade-reference"])
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return got


VERBS = ["validate", "evaluate", "evaluate noise", "rescore", "rejudge", "gate", "gate corrected",
         "gate markdown", "compare", "compare labels", "compare non-inferiority", "trend", "plan-labels",
         "sample-for-labelling", "import-labels", "index", "anchor", "drift", "rerun", "grade-reference"]


@pytest.mark.slow
@pytest.mark.parametrize("verb", VERBS)
def test_every_share_and_estimate_a_verb_prints_follows_the_one_rule(outputs, verb):
    text = outputs[verb]
    assert text.strip(), f"{verb} printed nothing"
    found = problems(text)
    assert not found, f"{verb}:\n" + "\n".join(found)


@pytest.mark.slow
def test_the_verbs_print_the_figures_the_rule_is_checked_on(outputs):
    """The check reads real figures: the evaluation's estimates and shares, the gate's, the comparison's."""
    assert ESTIMATE.search(outputs["evaluate"]) and BAND_COUNT.search(outputs["evaluate"])
    assert ESTIMATE.search(outputs["gate"]) and SHARE.search(outputs["gate"])
    assert ESTIMATE.search(outputs["compare"]) and OF_SHARE.search(outputs["compare"])
    assert ESTIMATE.search(outputs["drift"]) and ESTIMATE.search(outputs["trend"])


def test_an_estimate_in_its_own_column_takes_its_intervals_decimals():
    """A headline table puts the estimate and its interval in two columns: 69.0 beside 65.6 to 72.0 (as
    the one-line form ``69.0 (65.6 to 72.0)`` writes it), never 69."""
    from axon_eval.display import estimate_parts, fmt_estimate
    from axon_eval.stats.intervals import format_headline_table

    assert estimate_parts(68.9536, 65.6, 72.0) == ("69.0", "65.6", "72.0")
    assert fmt_estimate(68.9536, 65.6, 72.0) == "69.0 (65.6 to 72.0)"
    assert estimate_parts(0.2165, 0.13, 0.31, share=True) == ("22%", "13%", "31%")
    table = pd.DataFrame({"figure": ["mean score", "share good", "mean sql_quality"], "kind": ["mean", "share", "mean"],
                          "estimate": [68.9536, 0.2165, 6.0], "lo": [65.6, 0.13, math.nan],
                          "hi": [72.0, 0.31, math.nan], "n": [97, 97, 97], "n_clusters": [90, 90, 90],
                          "method": ["m"] * 3, "note": [None, None, "no interval: no variation"]})
    shown = format_headline_table(table).set_index("figure")
    assert shown.loc["mean score", "estimate"] == "69.0" and shown.loc["mean score", "95% interval"] == "65.6 to 72.0"
    assert shown.loc["share good", "estimate"] == "22%"
    assert shown.loc["mean sql_quality", "estimate"] == "6"  # no interval to share decimals with
