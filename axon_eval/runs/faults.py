"""What a run does when the machine fails it: a full disk and a verdict cache that cannot be written.

**A full disk.** Every growing file of a run is written aside (a hidden ``.<name>.partial``) and moved into
place only when complete (:mod:`.io`). A run folder holds a small :class:`SpaceReserve` (``.space-reserve``,
:data:`RESERVE_BYTES`) from its start, so that when the disk fills (``OSError`` ``ENOSPC``, or SQLite's
"database or disk is full") the run can still mark itself ``failed``: the reserve is deleted and the
manifest written in its place. :class:`DiskFullError` then names the folder, the space it needs to finish
(:func:`space_needed`) and the command that finishes it once space is freed (``evaluate --resume``).

**The verdict cache.** :class:`GuardedCache` is the cache as a run uses it: a read that fails is a miss
and a write that fails (a full disk, a locked file) is counted, never raised into the judging, so a
verdict that was paid for is never turned into an unjudged row. The run's own journal
(:mod:`~axon_eval.runs.journal`) keeps the verdict; the manifest counts the failed writes
(``cache_write_failures``) and says so once.
:func:`open_verdict_cache` opens the cache at a path; a cache that cannot be opened because its disk is
full or its file is locked is one warning and the run judges without it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import sqlite3
import warnings
from pathlib import Path
from typing import Any

#: Bytes a run folder keeps in reserve (``.space-reserve``) so it can mark itself failed on a full disk.
RESERVE_BYTES = 256 * 1024
RESERVE_NAME = ".space-reserve"
#: Bytes per segment a run folder takes when it has written none yet to measure (verdicts, audit and
#: results of the bundled sample take about 5.5 KiB a segment).
DEFAULT_SEGMENT_BYTES = 8 * 1024

_SQLITE_FULL = "database or disk is full"
_SQLITE_LOCKED = ("database is locked", "database is busy", "database table is locked")


def _chain(exc: BaseException | None) -> list[BaseException]:
    seen: list[BaseException] = []
    while exc is not None and exc not in seen:
        seen.append(exc)
        exc = exc.__cause__ or exc.__context__
    return seen


def is_disk_full(exc: BaseException) -> bool:
    """Whether ``exc`` (or an exception it was raised from) says the disk is full: ``OSError`` with
    ``errno == ENOSPC`` (or ``EDQUOT``), pyarrow's ``[Errno 28]`` message, or SQLite's ``SQLITE_FULL``."""
    for e in _chain(exc):
        if isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        text = str(e).lower()
        if isinstance(e, OSError) and ("no space left on device" in text or "[errno 28]" in text):
            return True
        if isinstance(e, sqlite3.Error) and (getattr(e, "sqlite_errorcode", None) == getattr(sqlite3, "SQLITE_FULL", 13)
                                             or _SQLITE_FULL in text):
            return True
    return False


def is_locked(exc: BaseException) -> bool:
    """Whether ``exc`` is SQLite saying another connection holds the lock (``database is locked``)."""
    return isinstance(exc, sqlite3.OperationalError) and any(m in str(exc).lower() for m in _SQLITE_LOCKED)


def format_bytes(n: float) -> str:
    """``n`` bytes as ``512 B``, ``3.0 KiB``, ``12.5 MiB`` or ``1.20 GiB``."""
    if n < 1024:
        return f"{int(n)} B"
    if n < 1024 ** 2:
        return f"{n / 1024:.1f} KiB"
    if n < 1024 ** 3:
        return f"{n / 1024 ** 2:.1f} MiB"
    return f"{n / 1024 ** 3:.2f} GiB"


def folder_bytes(folder: str | Path) -> int:
    """The bytes of every file under ``folder`` (0 when it is missing)."""
    total = 0
    for root, _dirs, files in os.walk(folder):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.stat(os.path.join(root, name)).st_size
    return total


def free_bytes(folder: str | Path) -> int | None:
    """Free bytes on the file system holding ``folder`` (its nearest existing parent), ``None`` if unknown."""
    import shutil

    p = Path(folder)
    while not p.exists() and p != p.parent:
        p = p.parent
    try:
        return int(shutil.disk_usage(p).free)
    except OSError:
        return None


def space_needed(written_bytes: int, written_segments: int, planned_segments: int | None) -> int:
    """Free bytes a run needs to finish: ``2 x`` the bytes per segment it wrote so far (else
    :data:`DEFAULT_SEGMENT_BYTES`) ``x`` its planned segments (a resume writes the partition's files and
    merges them into the folder's), plus the reserve and 1 MiB for the manifest, figures and report."""
    per = written_bytes / written_segments if written_segments > 0 else DEFAULT_SEGMENT_BYTES
    planned = max(planned_segments or 0, written_segments, 1)
    return int(2 * per * planned) + RESERVE_BYTES + 1024 * 1024


class DiskFullError(OSError):
    """No space left on the disk holding a run folder (``errno`` ``ENOSPC``). ``folder`` is the run folder
    (``None`` when none was made), ``free`` the free bytes now, ``needed`` the free bytes the run needs to
    finish (:func:`space_needed`), ``marked`` whether its manifest says ``failed``. :attr:`line` is the one
    line the command line prints."""

    def __init__(self, folder: str | Path | None, *, free: int | None, needed: int | None, marked: bool = True,
                 resumable: bool = True, where: str | Path | None = None) -> None:
        self.folder = Path(folder) if folder is not None else None
        self.free, self.needed, self.marked = free, needed, marked
        place = self.folder if self.folder is not None else Path(where or ".")
        have = f"{format_bytes(free)} free" if free is not None else "free space unknown"
        need = f"; about {format_bytes(needed)} free is needed to finish" if needed is not None else ""
        if self.folder is None:
            self.line = f"no space left on the disk holding {place} ({have}){need}; free space and run it again"
        else:
            kept = ("the folder is kept, marked failed" if marked else
                    "the folder is kept, but its manifest could not be marked failed")
            again = (f"; free space, then `python -m axon_eval evaluate --resume {self.folder}` finishes it"
                     if resumable else "; free space and run it again")
            self.line = f"no space left on the disk holding {self.folder} ({have}){need} ({kept}){again}"
        super().__init__(errno.ENOSPC, self.line)

    def __str__(self) -> str:
        return self.line


class SpaceReserve:
    """:data:`RESERVE_BYTES` of zeros in ``<folder>/.space-reserve``, held while a run writes, so a full disk
    still leaves room to mark the run failed (:meth:`release` deletes it). Creating it on a disk that is
    already full raises the ``OSError``."""

    def __init__(self, folder: str | Path, size: int = RESERVE_BYTES) -> None:
        self.path = Path(folder) / RESERVE_NAME
        block = b"\0" * 65536
        try:
            with self.path.open("wb") as fh:
                left = size
                while left > 0:
                    fh.write(block[:min(left, len(block))])
                    left -= len(block)
                fh.flush()
                os.fsync(fh.fileno())
        except BaseException:
            self.release()
            raise

    def release(self) -> None:
        """Delete the reserve (no error when it is gone)."""
        with contextlib.suppress(OSError):
            self.path.unlink()


# -- the verdict cache ------------------------------------------------------------------------------
#: The errors a failing cache raises, SQLite's and the operating system's (a full disk, a lost mount).
CACHE_ERRORS: tuple[type[BaseException], ...] = (sqlite3.Error, OSError)


def _reason(exc: BaseException | None) -> str:
    if exc is None:
        return "it could not store them"
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _unavailable_warning() -> type[Warning] | None:
    from ..judges import cache

    return getattr(cache, "CacheUnavailableWarning", None)


def _said(message: str) -> str:
    """What a cache's own warning says went wrong: its first parenthesis (SQLite's message), else all of it."""
    match = re.search(r"\(([^()]*)\)", message)
    return match.group(1) if match else message


def quietly(cache: GuardedCache | None, operation: Any, *args: Any, **kwargs: Any) -> Any:
    """``operation(*args, **kwargs)`` with the verdict cache's own "cannot be reached" warning
    (``CacheUnavailableWarning``) kept for the run's one warning (in ``cache.first_error``) instead of
    printed; every other warning is passed on as it was raised."""
    category = _unavailable_warning()
    if category is None:
        return operation(*args, **kwargs)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", category)
        result = operation(*args, **kwargs)
    for w in caught:
        if issubclass(w.category, category):
            if cache is not None and cache.first_error is None:
                cache.first_error = _said(str(w.message))
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return result


class GuardedCache:
    """A verdict cache whose failures never reach the judging: ``get`` that raises is a miss (counted in
    ``read_failures``); ``put`` that raises, or returns without its ``stats.writes`` growing (a cache that
    counts its failed writes instead of raising), is counted in ``write_failures``. ``first_error`` says
    what the first failure was; the cache's own warning about it is kept for the run's one warning
    (:meth:`warning`, which the manifest records) instead of printed. Everything else is the wrapped
    cache's (``path``, ``stats``, ``close``)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.write_failures = 0
        self.read_failures = 0
        self.first_error: str | None = None
        self._unavailable = int(getattr(getattr(inner, "stats", None), "unavailable", 0) or 0)

    def __getattr__(self, name: str) -> Any:
        if name == "inner":  # not yet set (a copy being built): no recursion
            raise AttributeError(name)
        return getattr(self.inner, name)

    @property
    def path(self) -> Any:
        return getattr(self.inner, "path", None)

    @property
    def stats(self) -> Any:
        return getattr(self.inner, "stats", None)

    def _failed(self, kind: str, exc: BaseException | None) -> None:
        if kind == "write":
            self.write_failures += 1
        else:
            self.read_failures += 1
        if self.first_error is None:
            self.first_error = _reason(exc)

    def get(self, key: str) -> Any:
        try:
            return quietly(self, self.inner.get, key)
        except CACHE_ERRORS as exc:
            self._failed("read", exc)
            return None

    def put(self, key: str, record: Any, *, view_sha256: str | None = None) -> None:
        stats = self.stats
        before = getattr(stats, "writes", None)
        try:
            quietly(self, self.inner.put, key, record, view_sha256=view_sha256)
        except CACHE_ERRORS as exc:
            self._failed("write", exc)
            return
        if before is not None and getattr(stats, "writes", before) == before:
            self._failed("write", None)

    def __contains__(self, key: object) -> bool:
        try:
            return bool(quietly(self, self.inner.__contains__, key))
        except CACHE_ERRORS as exc:
            self._failed("read", exc)
            return False

    def __len__(self) -> int:
        return len(self.inner)

    def close(self) -> None:
        with contextlib.suppress(*CACHE_ERRORS):
            self.inner.close()

    @property
    def lookup_failures(self) -> int:
        """The lookups that failed, raised here or counted by the cache itself (``stats.unavailable``)."""
        counted = int(getattr(self.stats, "unavailable", 0) or 0) - self._unavailable
        return self.read_failures + max(0, counted)

    def warning(self) -> str | None:
        """The manifest's one warning about the failures, ``None`` when there were none."""
        return failure_warning(self.path, self.write_failures, self.lookup_failures, self.first_error)


def failure_warning(path: Any, writes: int, reads: int, first_error: str | None) -> str | None:
    """One warning for ``writes`` failed cache writes and ``reads`` failed lookups of the cache at ``path``."""
    if not writes and not reads:
        return None
    parts = []
    if writes:
        parts.append(f"{writes} verdict(s) could not be stored in it; they are kept in this run's verdicts and "
                     "journal (a resume pays for none of them), but other runs will not find them there")
    if reads:
        parts.append(f"{reads} lookup(s) failed and were judged as misses")
    return f"the verdict cache {path} failed ({first_error or 'unknown error'}): {'; '.join(parts)}"


def open_verdict_cache(path: str | Path) -> tuple[GuardedCache | None, str | None]:
    """The SQLite verdict cache at ``path`` as a :class:`GuardedCache` and ``None``; or, when it cannot
    be opened because its disk is full or another process holds its lock, ``None`` and a warning (the run
    judges without it: its journal keeps what it pays for). Any other error is raised."""
    from ..judges.cache import VerdictCache

    pending = GuardedCache(None)  # holds what the cache's own warning at opening says
    try:
        guarded = GuardedCache(quietly(pending, VerdictCache, path))
        guarded.first_error = pending.first_error
        return guarded, None
    except CACHE_ERRORS as exc:
        if not (is_disk_full(exc) or is_locked(exc)):
            raise
        why = "its disk is full" if is_disk_full(exc) else "another process holds its lock"
        return None, (f"the verdict cache {path} could not be opened ({why}: {_reason(exc)}); judged without it "
                      "(this run's journal keeps what it pays for; --no-cache skips the cache)")


def note_cache_failures(manifest: Any, cache: Any) -> None:
    """Record a :class:`GuardedCache`'s failed writes (``cache_write_failures``) and its one warning in
    ``manifest`` (a :class:`~.manifest.RunManifest`); nothing for no cache or another kind of cache."""
    if cache is None or not hasattr(cache, "write_failures"):
        return
    manifest.cache_write_failures = int(cache.write_failures) or None
    warning = cache.warning()
    if warning and warning not in manifest.warnings:
        manifest.warnings.append(warning)
