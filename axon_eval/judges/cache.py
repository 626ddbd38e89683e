"""Verdict cache: SQLite file of judged records, keyed by everything that determines a verdict.

Key (see :func:`axon_eval.judges.base.cache_key`)::

    sha256(json([judge_id, prompt_version, view_sha256, sample_index, evidence_schema_version]))

A stored record is reused only when all five parts match. Only judged records are stored: an error
record is never cached, so a failed judgement is retried on the next run.

A hit is checked, never trusted
-------------------------------
Each row stores, beside the record, ``record_sha256``: the hex SHA-256 of the row's identifying columns
and the stored record text as one canonical JSON array (:func:`row_checksum`)::

    sha256(json([key, judge_id, prompt_version, view_sha256, sample_index, segment_id, record_json]))

(compact separators, UTF-8). On every hit :meth:`VerdictCache.get` requires, in this order:

1. the stored JSON reads back into a judged :class:`~axon_eval.judges.records.JudgeRecord` whose
   ``judge_id``, ``prompt_version`` and ``sample_index`` equal the row's;
2. the checksum recomputed from the row equals ``record_sha256`` (an edited record or column fails);
3. the record's own ``cache_key`` equals the key asked for (values swapped between two rows fail), and
   the row's ``view_sha256`` equals the caller's when both are known.

An entry that fails is a **miss**: it is warned about (:class:`CacheCorruptionWarning`, naming the key),
counted in ``stats.corrupt`` (and, for a failed step 2 or 3, in ``stats.damaged``) and ``stats.misses``,
the segment is judged again and the new record overwrites the entry. A wrong verdict is never served.

Rows written before checksums existed (``record_sha256`` null) are served after steps 1 and 3 only and
counted in ``stats.unchecked``: a swapped row is still refused, but a verdict edited inside such a row,
with its key left intact, cannot be told from a genuine one. A file with such rows gains the column when
opened; its old rows keep a null checksum until they are written again. To rebuild a cache from scratch,
delete the file (or run with ``--no-cache``).

A file that is not a cache
--------------------------
When opening finds that the file is not an SQLite database, or is damaged (a truncated or overwritten
file: SQLite reports ``file is not a database`` or ``database disk image is malformed``), the constructor
raises :class:`CacheUnreadable` (a ``ValueError``), whose one-line message names the file and the ways
out: move or delete the file, or run with ``--no-cache``. Nothing is moved or deleted automatically.
Damage that only a later lookup or write meets (pages lost from the middle of a truncated file) is
treated like an unreachable cache, below.

Concurrency, locks and full disks
---------------------------------
WAL journal mode and ``busy_timeout`` make concurrent writers safe across threads (one connection per
thread) and across processes (each process opens its own connections). A write is a single
``INSERT OR REPLACE`` statement in its own transaction. Switching a new file to WAL needs an exclusive
lock, and SQLite refuses it at once (``database is locked``) instead of waiting when another process
opens the same new file at that moment; the switch is therefore retried, with short randomised sleeps,
for up to ``busy_timeout_ms``. So two processes may create the same cache at once.

A lookup or write that still fails with a storage error (locked beyond ``busy_timeout_ms``, disk I/O
error, disk full, read-only or unreachable file, damage found late) never raises:

* :meth:`VerdictCache.get` returns ``None``, counted in ``stats.unavailable`` and ``stats.misses``;
* :meth:`VerdictCache.put` returns ``False`` (``True`` when stored), counted in ``stats.failed_writes``;
  the caller keeps its verdict, the cache does not have it.

The first failure of each kind is warned about once per cache object (:class:`CacheUnavailableWarning`,
naming the file and SQLite's message); later ones are counted silently. After a lookup (or write) that
waited the whole busy timeout for a lock, lookups (or writes) fail at once without touching the file for
``cooldown_s`` seconds (default: the busy timeout, at least one second), so a cache locked for a long
time costs one wait per period, not one per segment; other failures are retried on the next operation.
Opening a locked or unreachable file warns and counts the same way instead of raising; the cache is
then set up by the first operation that reaches it.
"""

from __future__ import annotations

import hashlib
import json
import random
import sqlite3
import threading
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, fields
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError

from .records import JudgeRecord

T = TypeVar("T")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS verdicts (
    key            TEXT PRIMARY KEY,
    judge_id       TEXT NOT NULL,
    prompt_version TEXT NOT NULL,
    view_sha256    TEXT,
    sample_index   INTEGER NOT NULL,
    segment_id     TEXT NOT NULL,
    record_json    TEXT NOT NULL,
    stored_at      TEXT NOT NULL,
    record_sha256  TEXT
)
"""
_SELECT = ("SELECT record_json, judge_id, prompt_version, sample_index, view_sha256, segment_id, record_sha256 "
           "FROM verdicts WHERE key = ?")
_INSERT = ("INSERT OR REPLACE INTO verdicts (key, judge_id, prompt_version, view_sha256, sample_index, segment_id, "
           "record_json, record_sha256, stored_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)")

#: SQLite primary result codes (``sqlite3.Error.sqlite_errorcode & 0xFF``) meaning "the file is not an
#: intact SQLite database": the constructor raises :class:`CacheUnreadable` for these.
_DAMAGED_FILE_CODES = frozenset({sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB})
#: Result codes of a lock held by another connection: retried (WAL switch, set-up) until the busy timeout.
_BUSY_CODES = frozenset({sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED})


class CacheCorruptionWarning(UserWarning):
    """A cache entry could not be read or failed its checks; it is ignored and will be re-judged and overwritten."""


class CacheUnavailableWarning(UserWarning):
    """The cache file could not be read or written (locked, I/O error, full disk): lookups are misses and
    writes are dropped, counted in ``stats``; warned once per cache object and kind."""


class CacheUnreadable(ValueError):
    """The verdict cache file is not an intact SQLite database (garbage, truncated, overwritten).

    ``path`` is the file, ``reason`` SQLite's message. The text is one line naming both and the ways out.
    """

    def __init__(self, path: str | Path, reason: str) -> None:
        self.path = Path(path)
        self.reason = reason
        super().__init__(f"verdict cache {self.path} cannot be read ({reason}): move or delete the file to "
                         f"start a new cache, or run with --no-cache")

    def __reduce__(self) -> tuple[Any, ...]:  # picklable across worker processes
        return (type(self), (self.path, self.reason))


@dataclass
class CacheStats:
    """Counters since the cache object was opened.

    ``hits`` / ``misses``: lookups that served a record / did not (a refused entry or a failed lookup is a
    miss); ``writes``: records stored; ``corrupt``: entries refused (unreadable, failed checks); ``damaged``:
    of those, the ones whose checksum or own key disagreed with their row; ``unchecked``: hits on rows
    without a checksum (older files, key checked only); ``unavailable``: lookups that could not be made
    (locked, I/O error, damaged file); ``failed_writes``: records not stored for the same reasons.
    """

    hits: int = 0
    misses: int = 0
    writes: int = 0
    corrupt: int = 0
    damaged: int = 0
    unchecked: int = 0
    unavailable: int = 0
    failed_writes: int = 0

    @property
    def lookups(self) -> int:
        return self.hits + self.misses

    def as_dict(self) -> dict[str, int]:
        """The four basic counters (``hits``, ``misses``, ``writes``, ``corrupt``); see :meth:`faults`."""
        return {"hits": self.hits, "misses": self.misses, "writes": self.writes, "corrupt": self.corrupt}

    def faults(self) -> dict[str, int]:
        """The fault counters: ``damaged``, ``unchecked``, ``unavailable``, ``failed_writes``."""
        return {"damaged": self.damaged, "unchecked": self.unchecked, "unavailable": self.unavailable,
                "failed_writes": self.failed_writes}

    def all(self) -> dict[str, int]:
        """Every counter, by name."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def fault_summary(self) -> str:
        """One line listing the non-zero fault counters (``""`` when there is none), e.g.
        ``"2 corrupt entries refused (2 failing their checksum or key), 3 failed writes"``."""
        parts = []
        if self.corrupt:
            damaged = f" ({self.damaged} failing their checksum or key)" if self.damaged else ""
            parts.append(f"{self.corrupt} corrupt entr{'y' if self.corrupt == 1 else 'ies'} refused{damaged}")
        if self.unavailable:
            parts.append(f"{self.unavailable} lookup(s) failed (counted as misses)")
        if self.failed_writes:
            parts.append(f"{self.failed_writes} failed write(s)")
        if self.unchecked:
            parts.append(f"{self.unchecked} hit(s) on rows without a checksum (key checked only)")
        return ", ".join(parts)


def row_checksum(key: str, judge_id: str, prompt_version: str, view_sha256: str | None, sample_index: int,
                 segment_id: str, record_json: str) -> str:
    """The ``record_sha256`` of a row: hex SHA-256 of
    ``json([key, judge_id, prompt_version, view_sha256, sample_index, segment_id, record_json])``
    (compact separators, non-ASCII kept, UTF-8)."""
    blob = json.dumps([key, judge_id, prompt_version, view_sha256, int(sample_index), segment_id, record_json],
                      ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _primary_code(exc: BaseException) -> int | None:
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF
    text = str(exc).lower()
    if "locked" in text or "busy" in text:
        return sqlite3.SQLITE_BUSY
    if "not a database" in text:
        return sqlite3.SQLITE_NOTADB
    if "malformed" in text:
        return sqlite3.SQLITE_CORRUPT
    return None


def _storage_error(exc: BaseException) -> bool:
    """A failure of the file, not of the program: locked, I/O, full, read-only, unopenable, damaged.
    (``IntegrityError``, ``ProgrammingError`` and the like are bugs and propagate.)"""
    return isinstance(exc, sqlite3.OperationalError) or type(exc) is sqlite3.DatabaseError


def _damaged_file(exc: BaseException) -> bool:
    return _primary_code(exc) in _DAMAGED_FILE_CODES


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class _Refused(ValueError):
    """An entry that reads back but fails its checksum or key check (``stats.damaged``)."""


class VerdictCache:
    """SQLite verdict cache at ``path`` (created with its parent folder when missing); see the module docstring.

    ``busy_timeout_ms`` is how long an operation waits for a lock held by another connection or process
    (milliseconds); ``cooldown_s`` how long lookups (or writes) fail at once after one timed out on a lock
    (seconds; default ``max(1, busy_timeout_ms / 1000)``). A file that is not an intact SQLite database raises
    :class:`CacheUnreadable`. Usable as a context manager; :meth:`close` closes every connection.
    """

    def __init__(self, path: str | Path, *, busy_timeout_ms: int = 30_000, cooldown_s: float | None = None) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.busy_timeout_ms = int(busy_timeout_ms)
        self.cooldown_s = max(1.0, self.busy_timeout_ms / 1000.0) if cooldown_s is None else float(cooldown_s)
        self._local = threading.local()
        self._lock = threading.Lock()
        self._connections: list[sqlite3.Connection] = []
        self._ready = False
        self._down_until = {"read": 0.0, "write": 0.0}
        self._warned: set[str] = set()
        self.stats = CacheStats()
        try:
            self._ensure_ready()
        except sqlite3.DatabaseError as exc:
            if _damaged_file(exc):
                self.close()
                raise CacheUnreadable(self.path, _first_line(exc)) from None
            if not _storage_error(exc):
                raise
            self._storage_failed("open", exc)

    # -- connections -------------------------------------------------------------------------------
    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._connect()
            self._local.conn = conn
            with self._lock:
                self._connections.append(conn)
        return conn

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, timeout=self.busy_timeout_ms / 1000.0,
                               isolation_level=None, check_same_thread=False)
        try:
            conn.execute(f"PRAGMA busy_timeout = {self.busy_timeout_ms}")
            self._retry_busy(lambda: self._to_wal(conn))
            conn.execute("PRAGMA synchronous = NORMAL")
        except BaseException:
            conn.close()
            raise
        return conn

    @staticmethod
    def _to_wal(conn: sqlite3.Connection) -> None:
        """Put the file in WAL mode (persistent in the file: a file already in WAL mode is left alone)."""
        if str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
            conn.execute("PRAGMA journal_mode = WAL").fetchone()

    def _retry_busy(self, operation: Callable[[], T]) -> T:
        """Run ``operation``, retrying while SQLite reports a lock (``SQLITE_BUSY`` / ``SQLITE_LOCKED``)
        for up to ``busy_timeout_ms``, with randomised sleeps of 2-100 ms; then the last error is raised."""
        deadline = time.monotonic() + self.busy_timeout_ms / 1000.0
        delay = 0.002
        while True:
            try:
                return operation()
            except sqlite3.OperationalError as exc:
                left = deadline - time.monotonic()
                if _primary_code(exc) not in _BUSY_CODES or left <= 0:
                    raise
                time.sleep(min(left, delay * (0.5 + random.random())))
                delay = min(delay * 2, 0.1)

    def _ensure_ready(self) -> None:
        """Create the table (or add the checksum column to an older one) and read the newest row once, so
        that a file that is not a database, or lost its end, is found when opened."""
        if self._ready:
            return
        conn = self._conn()
        self._retry_busy(lambda: conn.execute(_SCHEMA))
        columns = {row[1] for row in conn.execute("PRAGMA table_info(verdicts)")}
        if "record_sha256" not in columns:
            try:
                self._retry_busy(lambda: conn.execute("ALTER TABLE verdicts ADD COLUMN record_sha256 TEXT"))
            except sqlite3.OperationalError as exc:
                if "duplicate column" not in str(exc).lower():  # another process added it first
                    raise
        conn.execute("SELECT rowid, record_json FROM verdicts ORDER BY rowid DESC LIMIT 1").fetchone()
        self._ready = True

    def _discard_conn(self) -> None:
        """Close this thread's connection (after an I/O error the next operation opens a new one)."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            return
        self._local.conn = None
        with self._lock:
            if conn in self._connections:
                self._connections.remove(conn)
        try:
            conn.close()
        except sqlite3.Error:  # pragma: no cover - closing a broken connection
            pass

    def close(self) -> None:
        """Close every connection this object opened."""
        with self._lock:
            for conn in self._connections:
                try:
                    conn.close()
                except sqlite3.Error:  # pragma: no cover - closing a broken connection
                    pass
            self._connections.clear()
        self._local = threading.local()

    def __enter__(self) -> VerdictCache:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- failures ------------------------------------------------------------------------------------
    def _storage_failed(self, kind: str, exc: BaseException) -> None:
        """Count a failed ``read`` / ``write`` / ``open``, warn on the first of its kind, start the cooldown."""
        kinds = ("read", "write") if kind == "open" else (kind,)
        busy = _primary_code(exc) in _BUSY_CODES
        if busy:  # the operation waited the busy timeout: the next ones do not wait again for a while
            with self._lock:
                for k in kinds:
                    self._down_until[k] = time.monotonic() + self.cooldown_s
        if kind == "read":
            self._count("unavailable")
            self._count("misses")
        elif kind == "write":
            self._count("failed_writes")
        if not busy:
            self._discard_conn()
        if kind in self._warned:
            return
        self._warned.update(("open", *kinds))
        what = {"open": "cannot be opened now", "read": "cannot be read", "write": "cannot be written"}[kind]
        then = {"open": "lookups are misses and writes are dropped until it can be reached",
                "read": "the lookup counts as a miss and the segment is judged again",
                "write": "the verdict is not stored (put returned False); the caller keeps it"}[kind]
        warnings.warn(f"verdict cache {self.path} {what} ({_first_line(exc)}): {then}; further failures are "
                      f"counted in stats without a warning", CacheUnavailableWarning, stacklevel=3)

    def _cooling(self, kind: str) -> bool:
        return time.monotonic() < self._down_until[kind]

    # -- access ------------------------------------------------------------------------------------
    def _fetch(self, key: str) -> tuple[Any, ...] | None:
        self._ensure_ready()
        return self._conn().execute(_SELECT, (key,)).fetchone()

    def _check(self, key: str, row: tuple[Any, ...], view_sha256: str | None) -> JudgeRecord:
        """The record of ``row`` if it passes the checks of the module docstring; else ``ValueError``
        (:class:`_Refused` for a checksum or key mismatch)."""
        record_json, judge_id, prompt_version, sample_index, row_view, segment_id, checksum = row
        record = JudgeRecord.model_validate_json(record_json)
        stored = (record.judge_id, record.prompt_version, record.sample_index)
        if stored != (judge_id, prompt_version, sample_index):
            raise ValueError(f"stored record identifies as {stored} but the row says "
                             f"{(judge_id, prompt_version, sample_index)}")
        if not record.judged:
            raise ValueError("stored record is an error record (errors are never cached)")
        if checksum is not None and checksum != row_checksum(key, judge_id, prompt_version, row_view, sample_index,
                                                            segment_id, record_json):
            raise _Refused("the row does not match its checksum (edited after it was stored)")
        if record.cache_key != key:
            raise _Refused(f"the stored record belongs to key {str(record.cache_key)[:16]}..., not to this key "
                           f"(rows swapped or copied)")
        if view_sha256 is not None and row_view is not None and row_view != view_sha256:
            raise _Refused(f"the row's view hash {row_view[:16]}... is not the view's {view_sha256[:16]}...")
        return record

    def get(self, key: str, *, view_sha256: str | None = None) -> JudgeRecord | None:
        """The stored record for ``key`` after the checks of the module docstring, or ``None``: a miss, a
        refused entry (warned, counted in ``stats.corrupt``) or a failed lookup (``stats.unavailable``).
        ``view_sha256``, when given, must also equal the row's view hash. Never raises for a storage error."""
        if self._cooling("read"):
            self._count("unavailable")
            self._count("misses")
            return None
        try:
            row = self._fetch(key)
        except sqlite3.DatabaseError as exc:
            if not _storage_error(exc):
                raise
            self._storage_failed("read", exc)
            return None
        if row is None:
            self._count("misses")
            return None
        try:
            record = self._check(key, row, view_sha256)
        except (ValidationError, ValueError) as exc:
            self._count("corrupt")
            if isinstance(exc, _Refused):
                self._count("damaged")
            self._count("misses")
            warnings.warn(f"verdict cache {self.path}: ignoring corrupt entry {key[:16]}... "
                          f"({str(exc).splitlines()[0]}); it will be re-judged and overwritten",
                          CacheCorruptionWarning, stacklevel=2)
            return None
        self._count("hits")
        if row[-1] is None:
            self._count("unchecked")
        return record

    def _read_back(self, key: str, record_json: str, model: type[Any], fields: tuple[str, ...],
                   row_parts: tuple[Any, ...], *, usable: str, what: str, redo: str) -> Any:
        """Parse a stored ``model`` record and check it against its row: the record's ``fields`` must
        equal the row's ``row_parts`` and its ``usable`` flag must be set (errors are never cached).
        Otherwise the entry is corrupt: counted (``corrupt`` and ``misses``), warned about with
        :class:`CacheCorruptionWarning` naming the key, and ``None`` is returned so it is redone and
        overwritten. A good entry counts as a hit. (Used by tables that share the file, such as grades.)"""
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

    def put(self, key: str, record: JudgeRecord, *, view_sha256: str | None = None) -> bool:
        """Store a judged record under ``key`` with its checksum, replacing any entry.

        Returns ``True`` when stored, ``False`` when a storage error (locked beyond the busy timeout, I/O
        error, full disk, unreachable or damaged file) kept it out: counted in ``stats.failed_writes``,
        warned once, never raised. An error record raises ``ValueError`` (errors are never cached)."""
        if not record.judged:
            raise ValueError(f"refusing to cache an error record for segment {record.segment_id!r}: "
                             f"{record.error}")
        stored = record.model_copy(update={"cached": False, "cache_key": key})
        values = (key, record.judge_id, record.prompt_version, view_sha256, record.sample_index, record.segment_id,
                  stored.to_json_line())
        if self._cooling("write"):
            self._count("failed_writes")
            return False
        try:
            self._ensure_ready()
            self._conn().execute(_INSERT, (*values, row_checksum(*values),
                                           datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")))
        except sqlite3.DatabaseError as exc:
            if not _storage_error(exc):
                raise
            self._storage_failed("write", exc)
            return False
        self._count("writes")
        return True

    def __contains__(self, key: object) -> bool:
        """Whether ``key`` has an entry that passes the checks (not counted; ``False`` when unreachable)."""
        if not isinstance(key, str):
            return False
        try:
            row = self._fetch(key)
        except sqlite3.DatabaseError as exc:
            if not _storage_error(exc):
                raise
            return False
        if row is None:
            return False
        try:
            self._check(key, row, None)
        except (ValidationError, ValueError):
            return False
        return True

    def __len__(self) -> int:
        self._ensure_ready()
        return int(self._conn().execute("SELECT COUNT(*) FROM verdicts").fetchone()[0])

    def _count(self, name: str) -> None:
        with self._lock:
            setattr(self.stats, name, getattr(self.stats, name) + 1)

    def __repr__(self) -> str:
        try:
            entries: Any = len(self)
        except sqlite3.Error:
            entries = "?"
        return f"VerdictCache({str(self.path)!r}, entries={entries}, stats={self.stats.as_dict()})"
