"""Reference evidence: every reference query run read-only, all rows kept. The only module here that
opens a database."""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .spec import Question

_READ_ONLY = re.compile(r"^\s*(?:--[^\n]*\n\s*)*(?:SELECT|WITH)\b", re.I)


class EvidenceError(RuntimeError):
    """A reference query could not be prepared: grading of the question stops (never a guess)."""


class ReadOnlyViolation(EvidenceError):
    """A reference statement that is not a read (refused before execution)."""


def run_readonly(db_path: str | Path, sql: str) -> tuple[list[str], list[tuple]]:
    """Columns and every row of ``sql`` against ``db_path`` opened ``mode=ro`` with ``query_only`` on.

    A statement that is not a single SELECT / WITH query is refused before it reaches SQLite.
    """
    if not _READ_ONLY.match(sql) or ";" in sql.strip().rstrip(";"):
        raise ReadOnlyViolation(f"refused: not a single read-only query: {sql.strip()[:80]!r}")
    path = Path(db_path)
    if not path.is_file():
        raise EvidenceError(f"reference database not found: {path}")
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        conn.execute("PRAGMA query_only = ON")
        try:
            cur = conn.execute(sql)
            rows = [tuple(r) for r in cur.fetchall()]
        except sqlite3.Error as exc:
            raise EvidenceError(f"reference query failed: {exc}") from exc
        return [d[0] for d in cur.description or ()], rows
    finally:
        conn.close()


@dataclass
class Evidence:
    """The evidence of one question: per reference value its SQL, columns, every row and the value."""

    question_id: str
    values: dict[str, float] = field(default_factory=dict)
    results: dict[str, dict[str, Any]] = field(default_factory=dict)
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    def sha256(self) -> str:
        """Hex SHA-256 of every value and row (and the error): part of the grade key."""
        text = json.dumps({"values": self.values, "results": self.results, "error": self.error}, sort_keys=True,
                          default=str)
        return hashlib.sha256(text.encode()).hexdigest()

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: question id, values, results (SQL, columns, every row), error, sha256."""
        return {"question_id": self.question_id, "values": self.values, "results": self.results,
                "error": self.error, "sha256": self.sha256()}


def prepare_evidence(question: Question, db_path: str | Path) -> Evidence:
    """Run every reference query of ``question``; on the first failure the evidence carries the error
    and no values (the grade is then ``error``)."""
    ev = Evidence(question.id)
    cache: dict[str, tuple[list[str], list[tuple]]] = {}
    for v in question.values:
        try:
            if v.sql not in cache:
                cache[v.sql] = run_readonly(db_path, v.sql)
            cols, rows = cache[v.sql]
            if v.row >= len(rows) or v.column >= len(cols):
                raise EvidenceError(f"reference value {v.id}: row {v.row} / column {v.column} not in the result "
                                    f"({len(rows)} rows)")
            raw = rows[v.row][v.column]
            if raw is None or isinstance(raw, str):
                raise EvidenceError(f"reference value {v.id}: not a number ({raw!r})")
        except EvidenceError as exc:
            return Evidence(question.id, error=f"{v.id}: {exc}")
        ev.values[v.id] = float(raw)
        ev.results[v.id] = {"sql": " ".join(v.sql.split()), "columns": cols, "rows": [list(r) for r in rows]}
    return ev
