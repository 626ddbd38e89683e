"""The label journal: one append-only JSON Lines file per rater, ``labels/<rater>.jsonl`` in the pack.

Every saved label is one line, written with a single ``write`` to a file opened for appending, flushed and
``os.fsync``-ed before :meth:`Journal.append` returns, so a label the browser was told is saved survives a
crash or a power cut. Each record carries an ``id`` made by the browser: a retried save (the answer was
lost, the page re-sent it from its outbox) finds its id already in the journal and is acknowledged without
a second line. A correction is a new record for the same segment (``amends`` names the record it
replaces); the newest line wins, nothing is overwritten.

On open, a half-written last line (a crash in the middle of a write: no final newline) is cut off and
kept in ``<rater>.jsonl.torn`` with the time of the repair, and the repair is reported
(:attr:`Journal.repairs`); every complete line is kept. When a write fails (``ENOSPC``: the disk is full;
any other ``OSError``), whatever part of the line reached the file is truncated away again, so the file
holds exactly the lines it held before, and :class:`JournalWriteError` says in one sentence what happened.

The file object is the only boundary with the operating system: :class:`Journal` takes an ``opener``
(default: ``open(path, "ab", buffering=0)``) so a test can hand it a file that fails like a full disk.
"""

from __future__ import annotations

import errno
import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

#: Most bytes one journal line may take (a label with a long comment stays far below).
MAX_LINE_BYTES = 256 * 1024


class JournalWriteError(OSError):
    """A label that could not be written; nothing already saved was changed. ``str()`` is the sentence
    the page shows."""


@dataclass(frozen=True)
class Repair:
    """A torn last line cut from a journal on open: the file, the bytes cut, where they were kept."""

    path: str
    offset: int
    n_bytes: int
    kept_in: str

    def __str__(self) -> str:
        return (f"{self.path}: a half-written last line ({self.n_bytes} bytes at offset {self.offset}) was cut off "
                f"and kept in {self.kept_in}; every complete line is kept")


@dataclass(frozen=True)
class Appended:
    """The result of :meth:`Journal.append`: the stored ``record``, its 1-based ``line`` in the file, and
    whether the id was already there (``duplicate``: nothing was written)."""

    record: dict[str, Any]
    line: int
    duplicate: bool


def _default_opener(path: Path) -> BinaryIO:
    return open(path, "ab", buffering=0)  # noqa: SIM115 - the journal keeps it open


@dataclass
class Journal:
    """The journal at ``path`` (created with its folder when missing), repaired and read on open."""

    path: Path
    opener: Callable[[Path], BinaryIO] = _default_opener
    records: list[dict[str, Any]] = field(default_factory=list, init=False)
    repairs: list[Repair] = field(default_factory=list, init=False)
    #: Lines that are complete but not a JSON object (reported, skipped, kept in the file).
    bad_lines: list[int] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        self.path = Path(self.path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._repair_and_read()
        self._fh = self.opener(self.path)
        self._size = self.path.stat().st_size
        self._by_id = {str(r.get("id")): (r, i + 1) for i, r in enumerate(self.records)}

    # -- reading ---------------------------------------------------------------------------------------
    def _repair_and_read(self) -> None:
        data = self.path.read_bytes() if self.path.exists() else b""
        if data and not data.endswith(b"\n"):
            cut = data.rfind(b"\n") + 1
            torn = self.path.with_name(self.path.name + ".torn")
            stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            with open(torn, "ab") as fh:
                fh.write(f"# {stamp} cut from {self.path.name} at offset {cut}\n".encode() + data[cut:] + b"\n")
                fh.flush()
                os.fsync(fh.fileno())
            with open(self.path, "r+b") as fh:
                fh.truncate(cut)
                fh.flush()
                os.fsync(fh.fileno())
            self.repairs.append(Repair(str(self.path), cut, len(data) - cut, str(torn)))
            data = data[:cut]
        self.records = []
        lines = data.split(b"\n")[:-1] if data else []
        for number, raw in enumerate(lines, start=1):
            try:
                rec = json.loads(raw)
            except ValueError:
                rec = None
            if not isinstance(rec, dict):
                self.bad_lines.append(number)
                rec = {"id": f"<bad line {number}>", "bad": True}
            self.records.append(rec)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter([r for r in self.records if not r.get("bad")])

    def latest(self) -> dict[str, dict[str, Any]]:
        """The newest record per segment (``segment_id`` -> record): what an amendment leaves standing."""
        out: dict[str, dict[str, Any]] = {}
        for rec in self:
            out[str(rec.get("segment_id"))] = rec
        return out

    def line_of(self, record_id: str) -> int | None:
        """The 1-based line of the record ``record_id``, ``None`` when it is not in the journal."""
        hit = self._by_id.get(str(record_id))
        return hit[1] if hit else None

    # -- writing ---------------------------------------------------------------------------------------
    def append(self, record: dict[str, Any], *, before_ack: Callable[[], None] | None = None) -> Appended:
        """Append ``record`` (it must carry a string ``id``) as one line, flushed and fsynced; a record
        whose id is already in the journal is not written again (``duplicate``). ``before_ack`` runs
        after the fsync, inside the lock (a hook for tests of a crash between save and acknowledgement).
        :class:`JournalWriteError` when the write fails; the file is left as it was."""
        rid = record.get("id")
        if not isinstance(rid, str) or not rid:
            raise ValueError(f"a journal record needs a non-empty string id, got {rid!r}")
        data = (json.dumps(record, ensure_ascii=False, separators=(",", ":"), allow_nan=False) + "\n").encode()
        if len(data) > MAX_LINE_BYTES:
            raise ValueError(f"a label of {len(data)} bytes; at most {MAX_LINE_BYTES} (shorten the comment)")
        with self._lock:
            hit = self._by_id.get(rid)
            if hit is not None:
                return Appended(hit[0], hit[1], True)
            before = self._size
            try:
                self._write_all(data)
                self._fh.flush()
                os.fsync(self._fh.fileno())
            except OSError as exc:
                self._undo(before)
                raise JournalWriteError(exc.errno or errno.EIO, _failure(exc, self.path)) from exc
            self._size = before + len(data)
            self.records.append(record)
            line = len(self.records)
            self._by_id[rid] = (record, line)
            if before_ack is not None:
                before_ack()
            return Appended(record, line, False)

    def _write_all(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            n = self._fh.write(view)
            if n is None or n <= 0:
                raise OSError(errno.EIO, "the file accepted no bytes")
            view = view[n:]

    def _undo(self, size: int) -> None:
        """Cut the file back to ``size`` bytes (a failed write's partial line); best effort, fsynced."""
        try:
            os.truncate(self.path, size)
            fd = os.open(self.path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError:
            pass
        try:
            self._fh.close()
        except OSError:
            pass
        self._fh = self.opener(self.path)

    def close(self) -> None:
        with self._lock:
            self._fh.close()


def _failure(exc: OSError, path: Path) -> str:
    if exc.errno == errno.ENOSPC:
        what = "the disk is full"
    elif exc.errno == errno.EDQUOT:
        what = "the disk quota is exceeded"
    elif exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        what = "the labels folder cannot be written"
    else:
        what = f"the write failed ({exc.strerror or exc})"
    return (f"NOT SAVED: {what} ({path}). Labels saved earlier are untouched; this one stays in the page's "
            "outbox and is sent again when you retry. Free space, then press Ctrl+Enter again.")


def read_records(path: str | Path) -> list[tuple[int, dict[str, Any]]]:
    """The complete lines of the journal at ``path`` as ``(line, record)``, read only (a torn last line
    is left for the server to repair, lines that are not JSON objects are skipped); ``[]`` when the file
    does not exist."""
    p = Path(path)
    if not p.is_file():
        return []
    data = p.read_bytes()
    out = []
    for number, raw in enumerate(data.split(b"\n")[:-1], start=1):
        try:
            rec = json.loads(raw)
        except ValueError:
            continue
        if isinstance(rec, dict):
            out.append((number, rec))
    return out
