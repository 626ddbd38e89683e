"""Grading a response set against its questions, and the judge's agreement with constructed labels."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pandas as pd

from .cache import GradeCache
from .numeric import check_value
from .records import GradeRecord
from .run import grade_responses, make_judge
from .spec import Question, load_questions


def load_responses(path: str | Path) -> list[dict[str, Any]]:
    """The recorded responses (JSON Lines: ``response_id``, ``question_id``, ``response``); a line that is
    not a JSON object raises ``ValueError`` naming the file and line."""
    out = []
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}, line {n}: not JSON: {exc.msg}") from None
        if not isinstance(obj, dict):
            raise ValueError(f"{path}, line {n}: expected a JSON object, got {type(obj).__name__}")
        out.append(obj)
    return out


def load_labels(path: str | Path) -> pd.DataFrame:
    with Path(path).open(newline="", encoding="utf-8") as fh:
        return pd.DataFrame(list(csv.DictReader(fh)))


def grade_set(questions: list[Question], responses: list[dict[str, Any]], db_path: str | Path,
              judge: Any, *, cache: GradeCache | None = None, max_cost_usd: float | None = None,
              concurrency: int = 4) -> list[GradeRecord]:
    """Grade every response (no run folder): :func:`.run.grade_responses`, records in input order."""
    return grade_responses(questions, responses, db_path, judge, cache=cache, max_cost_usd=max_cost_usd,
                           concurrency=concurrency).records


#: Columns of the grade table besides the label columns.
GRADE_COLUMNS = ("response_id", "question_id", "grade", "error_kind", "reasons", "n_criteria", "n_numeric",
                 "n_numeric_failed", "judge_id", "model", "prompt_version", "latency_ms", "input_tokens",
                 "output_tokens", "cache_read_tokens", "cache_creation_tokens", "cost_usd", "cached", "cache_key")


def grade_table(grades: list[GradeRecord], labels: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per record (:data:`GRADE_COLUMNS`; ``reasons`` joined by ``; ``); with ``labels`` also
    ``layer``, ``split``, ``defect``, ``expected_grade`` and the :func:`outcome`. Tokens and cost are
    NaN when unknown (never 0)."""
    rows = [{"response_id": g.response_id, "question_id": g.question_id, "grade": g.grade,
             "error_kind": g.error_kind, "reasons": "; ".join(g.reasons), "n_criteria": len(g.criteria),
             "n_numeric": len(g.numeric), "n_numeric_failed": len(g.numeric_failures), "judge_id": g.judge_id,
             "model": g.model, "prompt_version": g.prompt_version, "latency_ms": g.latency_ms,
             "input_tokens": g.input_tokens, "output_tokens": g.output_tokens,
             "cache_read_tokens": g.cache_read_tokens, "cache_creation_tokens": g.cache_creation_tokens,
             "cost_usd": g.cost_usd, "cached": g.cached, "cache_key": g.cache_key} for g in grades]
    df = pd.DataFrame(rows, columns=list(GRADE_COLUMNS))
    for col in ("latency_ms", "input_tokens", "output_tokens", "cache_read_tokens", "cache_creation_tokens",
                "cost_usd"):
        df[col] = pd.to_numeric(df[col], errors="coerce").astype("float64")
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


def numeric_failures(grades: list[GradeRecord]) -> pd.DataFrame:
    """Every numeric check outside tolerance, one row per check, with its response id."""
    rows = [{"response_id": g.response_id, **c} for g in grades for c in g.numeric_failures]
    return pd.DataFrame(rows, columns=["response_id", "reference_id", "token", "declared_unit", "reference",
                                       "reported", "converted", "rule", "tolerance", "difference",
                                       "within_tolerance", "error"])


__all__ = ["GRADE_COLUMNS", "SEED_EXAMPLES", "agreement", "grade_set", "grade_table", "load_labels", "load_questions",
           "load_responses", "make_judge", "numeric_failures", "outcome", "seed_examples"]
