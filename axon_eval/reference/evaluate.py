"""Grading a response set against its questions, and the judge's agreement with constructed labels."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pandas as pd

from .evidence import Evidence, prepare_evidence
from .grading import Grade, grade_response
from .heuristic import HeuristicReferenceJudge
from .numeric import check_value
from .spec import Question, load_questions

JUDGES = {"heuristic": HeuristicReferenceJudge}


def load_responses(path: str | Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]


def load_labels(path: str | Path) -> pd.DataFrame:
    with Path(path).open(newline="", encoding="utf-8") as fh:
        return pd.DataFrame(list(csv.DictReader(fh)))


def make_judge(name: str) -> Any:
    """``heuristic`` (offline), or ``claude:<model>`` (the structured-output Claude reference judge; its
    key and base URL come from ``ANTHROPIC_API_KEY`` / ``ANTHROPIC_BASE_URL`` when set)."""
    if name.startswith("claude:"):
        import os

        from .claude import ClaudeReferenceJudge
        return ClaudeReferenceJudge(name.split(":", 1)[1], api_key=os.environ.get("ANTHROPIC_API_KEY"),
                                    base_url=os.environ.get("ANTHROPIC_BASE_URL"))
    if name not in JUDGES:
        raise ValueError(f"unknown reference judge {name!r} (known: {sorted(JUDGES)} or claude:<model>)")
    return JUDGES[name]()


def grade_set(questions: list[Question], responses: list[dict[str, Any]], db_path: str | Path,
              judge: Any, *, reuse: dict[str, Grade] | None = None) -> list[Grade]:
    """Grade every response. Evidence is prepared once per question; a grade whose key (question,
    evidence, response, judge configuration) is in ``reuse`` is taken from there, not recomputed."""
    by_id = {q.id: q for q in questions}
    evidence: dict[str, Evidence] = {}
    out: list[Grade] = []
    for r in responses:
        q = by_id[r["question_id"]]
        if q.id not in evidence:
            evidence[q.id] = prepare_evidence(q, db_path)
        ev = evidence[q.id]
        try:
            output = judge.assess(q, ev, r["response"]) if ev.ok else None
        except Exception as exc:  # a judge failure stays visible as an error grade, never a guess
            out.append(Grade(q.id, r["response_id"], judge.judge_id, "error",
                             [f"judge error: {type(exc).__name__}: {exc}"], [], []))
            continue
        g = grade_response(q, ev, r["response_id"], r["response"], output, judge_config=judge.config())
        if reuse is not None:
            g = reuse.setdefault(g.key, g)
        if not g.judge_id:
            g.judge_id = judge.judge_id
        out.append(g)
    return out


def grade_table(grades: list[Grade], labels: pd.DataFrame | None = None) -> pd.DataFrame:
    rows = [{"response_id": g.response_id, "question_id": g.question_id, "grade": g.grade,
             "reasons": "; ".join(g.reasons), "n_numeric": len(g.numeric),
             "n_numeric_failed": len(g.numeric_failures)} for g in grades]
    df = pd.DataFrame(rows)
    if labels is not None:
        df = df.merge(labels[["response_id", "layer", "split", "defect", "expected_grade"]], on="response_id",
                      how="left")
        df["outcome"] = [outcome(g, e) for g, e in zip(df["grade"], df["expected_grade"], strict=True)]
    return df


def outcome(grade: str, expected: str) -> str:
    """agree | false_pass | false_fail | review_required | error (an error never counts as agreement
    unless the label expects one)."""
    if grade == expected:
        return "agree"
    if grade == "pass":
        return "false_pass"
    if grade == "review_required":
        return "review_required"
    if grade == "error":
        return "error"
    return "false_fail" if expected == "pass" else "other_disagreement"


def agreement(table: pd.DataFrame) -> dict[str, dict[str, int]]:
    """Counts overall and on the held-out split: false passes, false fails and review-required
    separately (review_required counts every response graded so, expected or not)."""
    out = {}
    for name, part in (("overall", table), ("heldout", table[table["split"] == "heldout"])):
        out[name] = {
            "n_responses": int(len(part)), "n_questions": int(part["question_id"].nunique()),
            "agree": int((part["outcome"] == "agree").sum()),
            "false_pass": int((part["outcome"] == "false_pass").sum()),
            "false_fail": int((part["outcome"] == "false_fail").sum()),
            "review_required": int((part["grade"] == "review_required").sum()),
            "error": int((part["grade"] == "error").sum()),
            "other_disagreement": int(part["outcome"].isin(["other_disagreement", "error"]).sum()
                                      - ((part["outcome"] == "error") & (part["expected_grade"] == "error")).sum()),
        }
    return out


#: The source's worked numeric examples: (reference, claim, unit, explicit tolerance, within as the source says)
SEED_EXAMPLES = (
    ("refund rate", 7.0989, "7.10%", "percent", None, True),
    ("on-time rate", 93.6043, "93.6%", "percent", 0.01, True),
    ("on-time rate", 93.6043, "93.74%", "percent", 0.01, False),
    ("Tanks & Kits refunds", 490636.33, "465,797", "currency", None, False),
    ("sign example", 42.0, "-42", "count", None, False),
    ("scale example", 420.0, "42", "count", None, False),
)


def seed_examples() -> list[dict[str, Any]]:
    rows = []
    for name, ref, claim, unit, tol, expected in SEED_EXAMPLES:
        c = check_value(claim, ref, unit, tolerance=tol)
        rows.append({"example": name, "reference": ref, "claim": claim, "tolerance_rule": c.rule,
                     "tolerance": c.tolerance, "difference": c.difference, "within_tolerance": c.within_tolerance,
                     "error": c.error, "source_says_within": expected})
    return rows


def numeric_failures(grades: list[Grade]) -> pd.DataFrame:
    rows = [{"response_id": g.response_id, **c.to_dict()} for g in grades for c in g.numeric_failures]
    return pd.DataFrame(rows, columns=["response_id", "reference_id", "token", "declared_unit", "reference",
                                       "reported", "converted", "rule", "tolerance", "difference",
                                       "within_tolerance", "error"])


__all__ = ["SEED_EXAMPLES", "agreement", "grade_set", "grade_table", "load_labels", "load_questions",
           "load_responses", "make_judge", "numeric_failures", "outcome", "seed_examples"]
