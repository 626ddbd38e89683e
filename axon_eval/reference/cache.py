"""Grade cache: reference grades stored in the verdict cache's SQLite file, in a sibling table.

:class:`GradeCache` is a :class:`axon_eval.judges.cache.VerdictCache` (same file, same connection
handling: WAL journal, ``busy_timeout``, one connection per thread, a single ``INSERT OR REPLACE`` per
write; same counters ``stats.hits`` / ``misses`` / ``writes`` / ``corrupt``) whose entries live in the
table ``reference_grades``::

    key               grade key (:func:`.records.grade_cache_key`, 64 hex characters)
    question_id, question_sha256, evidence_sha256, response_sha256, judge_id, prompt_version
                      the key's parts in clear; :meth:`GradeCache.get_grade` re-checks them
    response_id, record_json, stored_at

Rules, as for verdicts: only graded records (pass / fail / review_required) are stored; an ``error``
record is never cached, so a failed grading is retried on the next run. An entry that cannot be read
back (bad JSON, parts that disagree with its row) is reported with ``warnings.warn``
(:class:`~axon_eval.judges.cache.CacheCorruptionWarning`), counted as ``corrupt`` and treated as a miss;
the re-graded record then overwrites it.
"""

from __future__ import annotations

from datetime import UTC, datetime

from ..judges.cache import VerdictCache
from .records import GradeRecord

TABLE = "reference_grades"
_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS {TABLE} (
    key             TEXT PRIMARY KEY,
    question_id     TEXT NOT NULL,
    question_sha256 TEXT NOT NULL,
    evidence_sha256 TEXT NOT NULL,
    response_sha256 TEXT NOT NULL,
    judge_id        TEXT NOT NULL,
    prompt_version  TEXT NOT NULL,
    response_id     TEXT NOT NULL,
    record_json     TEXT NOT NULL,
    stored_at       TEXT NOT NULL
)
"""
_PARTS = ("question_id", "question_sha256", "evidence_sha256", "response_sha256", "judge_id", "prompt_version")


class GradeCache(VerdictCache):
    """The grade cache at ``path`` (usually the run's verdict cache file); see the module docstring.
    The verdict methods (``get`` / ``put``) keep working on the verdicts table of the same file."""

    def __init__(self, path: str, *, busy_timeout_ms: int = 30_000) -> None:
        super().__init__(path, busy_timeout_ms=busy_timeout_ms)
        conn = self._conn()
        with conn:
            conn.execute(_SCHEMA)

    def get_grade(self, key: str) -> GradeRecord | None:
        """The stored record for ``key`` marked ``cached=True``, or ``None`` (a miss, or a corrupt entry)."""
        row = self._conn().execute(
            f"SELECT record_json, {', '.join(_PARTS)} FROM {TABLE} WHERE key = ?", (key,)).fetchone()
        if row is None:
            self._count("misses")
            return None
        record_json, *parts = row
        record = self._read_back(key, record_json, GradeRecord, _PARTS, tuple(parts), usable="graded",
                                 what="grade", redo="re-graded")
        return None if record is None else record.model_copy(update={"cached": True, "cache_key": key})

    def put_grade(self, key: str, record: GradeRecord) -> None:
        """Store a graded record under ``key`` (replacing any entry); an error record raises ``ValueError``."""
        if not record.graded:
            raise ValueError(f"refusing to cache an error grade for response {record.response_id!r}: {record.error}")
        if record.evidence_sha256 is None:  # pragma: no cover - a graded record always has evidence
            raise ValueError(f"response {record.response_id!r}: a graded record without an evidence hash")
        stored = record.model_copy(update={"cached": False, "cache_key": key})
        self._conn().execute(
            f"INSERT OR REPLACE INTO {TABLE} (key, {', '.join(_PARTS)}, response_id, record_json, stored_at) "
            f"VALUES (?, {', '.join('?' for _ in _PARTS)}, ?, ?, ?)",
            (key, *(getattr(record, p) for p in _PARTS), record.response_id, stored.to_json_line(),
             datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")))
        self._count("writes")

    def n_grades(self) -> int:
        """Entries in the grade table."""
        return int(self._conn().execute(f"SELECT COUNT(*) FROM {TABLE}").fetchone()[0])

    def __repr__(self) -> str:
        return f"GradeCache({str(self.path)!r}, grades={self.n_grades()}, stats={self.stats.as_dict()})"
