"""Verdict cache: SQLite file of judged records, keyed by everything that determines a verdict.

Key (see :func:`axon_eval.judges.base.cache_key`)::

    sha256(json([judge_id, prompt_version, view_sha256, sample_index, evidence_schema_version]))

A stored record is reused only when all five parts match; the row also stores the parts in clear and
:meth:`VerdictCache.get` re-checks them against the key. Only judged records are stored: an error
record is never cached, so a failed judgement is retried on the next run.

Concurrency: WAL journal mode and ``busy_timeout`` make concurrent writers safe across threads (one
connection per thread) and across processes (each process opens its own connections). A write is a
single ``INSERT OR REPLACE`` statement in its own transaction.

Corruption: an entry whose stored JSON cannot be read back into a :class:`JudgeRecord` is reported
with ``warnings.warn``, counted in ``stats.corrupt`` and treated as a miss; the re-judged record then
overwrites it.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import warnings
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from .records import JudgeRecord

_SCHEMA = """
CREATE TABLE IF NOT EXISTS verdicts (
    key            TEXT PRIMARY KEY,
    judge_id       TEXT NOT NULL,
    prompt_version TEXT NOT NULL,
    view_sha256    TEXT,
    sample_index   INTEGER NOT NULL,
    segment_id     TEXT NOT NULL,
    record_json    TEXT NOT NULL,
    stored_at      TEXT NOT NULL
)
"""


class CacheCorruptionWarning(UserWarning):
    """A cache entry could not be read; it is ignored and will be re-judged and overwritten."""


@dataclass
class CacheStats:
    """Counters since the cache object was opened: lookups that hit / missed, writes, corrupt entries."""

    hits: int = 0
    misses: int = 0
    writes: int = 0
    corrupt: int = 0

    @property
    def lookups(self) -> int:
        return self.hits + self.misses

    def as_dict(self) -> dict[str, int]:
        return {"hits": self.hits, "misses": self.misses, "writes": self.writes, "corrupt": self.corrupt}


class VerdictCache:
    """SQLite verdict cache at ``path`` (created with its parent folder when missing).

    ``busy_timeout_ms`` is how long a writer waits for a lock held by another connection/process.
    Usable as a context manager; :meth:`close` closes this thread's connection.
    """

    def __init__(self, path: str | Path, *, busy_timeout_ms: int = 30_000) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.busy_timeout_ms = int(busy_timeout_ms)
        self._local = threading.local()
        self._lock = threading.Lock()
        self._connections: list[sqlite3.Connection] = []
        self.stats = CacheStats()
        conn = self._conn()
        with conn:
            conn.execute(_SCHEMA)

    # -- connections -------------------------------------------------------------------------------
    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=self.busy_timeout_ms / 1000.0,
                                   isolation_level=None, check_same_thread=False)
            conn.execute(f"PRAGMA busy_timeout = {self.busy_timeout_ms}")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            self._local.conn = conn
            with self._lock:
                self._connections.append(conn)
        return conn

    def close(self) -> None:
        """Close every connection this object opened."""
        with self._lock:
            for conn in self._connections:
                conn.close()
            self._connections.clear()
        self._local = threading.local()

    def __enter__(self) -> VerdictCache:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- access ------------------------------------------------------------------------------------
    def get(self, key: str) -> JudgeRecord | None:
        """The stored record for ``key``, or ``None`` (miss, or a corrupt entry with a warning)."""
        row = self._conn().execute(
            "SELECT record_json, judge_id, prompt_version, sample_index FROM verdicts WHERE key = ?",
            (key,)).fetchone()
        if row is None:
            self._count("misses")
            return None
        record_json, *parts = row
        return self._read_back(key, record_json, JudgeRecord, ("judge_id", "prompt_version", "sample_index"),
                               tuple(parts), usable="judged", what="verdict", redo="re-judged")

    def _read_back(self, key: str, record_json: str, model: type[Any], fields: tuple[str, ...],
                   row_parts: tuple[Any, ...], *, usable: str, what: str, redo: str) -> Any:
        """Parse a stored ``model`` record and check it against its row: the record's ``fields`` must
        equal the row's ``row_parts`` and its ``usable`` flag must be set (errors are never cached).
        Otherwise the entry is corrupt: counted (``corrupt`` and ``misses``), warned about with
        :class:`CacheCorruptionWarning` naming the key, and ``None`` is returned so it is redone and
        overwritten. A good entry counts as a hit."""
        try:
            record = model.model_validate_json(record_json)
            stored = tuple(getattr(record, f) for f in fields)
            if stored != tuple(row_parts):
                raise ValueError(f"stored record identifies as {stored} but the row says {tuple(row_parts)}")
            if not getattr(record, usable):
                raise ValueError("stored record is an error record (errors are never cached)")
        except (ValidationError, ValueError, json.JSONDecodeError) as exc:
            self._count("corrupt")
            self._count("misses")
            warnings.warn(f"{what} cache {self.path}: ignoring corrupt entry {key[:16]}... "
                          f"({str(exc).splitlines()[0]}); it will be {redo} and overwritten",
                          CacheCorruptionWarning, stacklevel=3)
            return None
        self._count("hits")
        return record

    def put(self, key: str, record: JudgeRecord, *, view_sha256: str | None = None) -> None:
        """Store a judged record under ``key`` (replacing any entry). Error records raise ``ValueError``."""
        if not record.judged:
            raise ValueError(f"refusing to cache an error record for segment {record.segment_id!r}: "
                             f"{record.error}")
        stored = record.model_copy(update={"cached": False, "cache_key": key})
        self._conn().execute(
            "INSERT OR REPLACE INTO verdicts (key, judge_id, prompt_version, view_sha256, sample_index, "
            "segment_id, record_json, stored_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (key, record.judge_id, record.prompt_version, view_sha256, record.sample_index,
             record.segment_id, stored.to_json_line(),
             datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")))
        self._count("writes")

    def __contains__(self, key: object) -> bool:
        return self._conn().execute("SELECT 1 FROM verdicts WHERE key = ?", (key,)).fetchone() is not None

    def __len__(self) -> int:
        return int(self._conn().execute("SELECT COUNT(*) FROM verdicts").fetchone()[0])

    def _count(self, name: str) -> None:
        with self._lock:
            setattr(self.stats, name, getattr(self.stats, name) + 1)

    def __repr__(self) -> str:
        return f"VerdictCache({str(self.path)!r}, entries={len(self)}, stats={self.stats.as_dict()})"
