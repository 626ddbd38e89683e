"""Run-folder I/O: folder names, atomic writes, JSON/JSON Lines/Parquet, file hashes.

Every file of a run folder is written atomically (a temporary file in the same folder, ``fsync``, then
``os.replace``), so a reader never sees half a file. Streams that grow while a run judges
(``verdicts.jsonl``, ``audit.jsonl``, ``results.parquet``) are written to a hidden ``.<name>.partial``
file by :class:`JsonlAppender` / :class:`ParquetAppender` and moved into place when complete; a file
that could not be closed whole (a full disk) never gets its final name.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import json
import math
import os
import re
import tempfile
from collections.abc import Iterable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from pydantic import BaseModel

#: Environment variable naming the default parent folder of run folders (default ``runs``).
RUNS_DIR_ENV = "AXON_EVAL_RUNS_DIR"
#: Environment variable naming the verdict cache file (default ``<runs dir>/.cache/verdicts.sqlite``).
CACHE_ENV = "AXON_EVAL_CACHE"
#: Permissions of written files (``mkstemp`` would leave them owner-only).
_FILE_MODE = 0o644


def utc_now() -> datetime:
    """The current time, timezone-aware, in UTC."""
    return datetime.now(timezone.utc)


def iso(ts: datetime) -> str:
    """UTC ISO-8601 with a ``Z`` suffix, to the second."""
    return ts.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def package_checkout() -> Path | None:
    """The repository checkout this package runs from (the folder above it holding ``pyproject.toml``, as
    in an editable install), or ``None`` for an installed package."""
    here = Path(__file__).resolve().parents[2]
    return here if (here / "pyproject.toml").is_file() and (here / "axon_eval").is_dir() else None


def default_runs_dir(root: str | Path | None = None) -> Path:
    """Where runs go when no folder is named: ``$AXON_EVAL_RUNS_DIR`` when set, else ``<root>/runs`` when a
    ``root`` is given, else the repository's ``runs/`` when the working directory lies inside the checkout
    this package runs from (:func:`package_checkout`; ``runs`` from its top, an absolute path from a
    subfolder), else ``./runs``. One root, so ``index`` finds what ``evaluate`` wrote from a subfolder."""
    return runs_dir_origin(root)[0]


def runs_dir_origin(root: str | Path | None = None) -> tuple[Path, str]:
    """:func:`default_runs_dir` and why it is that folder, in words (for a command's output)."""
    env = os.environ.get(RUNS_DIR_ENV)
    if env:
        return Path(env), f"${RUNS_DIR_ENV}"
    if root is not None:
        return Path(root) / "runs", f"runs/ under {root}"
    checkout = package_checkout()
    cwd = Path.cwd().resolve()
    if checkout is not None and (cwd == checkout or checkout in cwd.parents):
        return (Path("runs") if cwd == checkout else checkout / "runs"), "the repository's runs/"
    return Path("runs"), (f"./runs: the working directory is outside the repository; set {RUNS_DIR_ENV} or pass "
                          "--out to keep every run under one root")


def require_file(path: str | Path, what: str = "input file", expected: str = "a file") -> Path:
    """``path`` when it is a file; else ``FileNotFoundError`` saying whether it is a directory (``<what> X
    is a directory; expected <expected>``) or missing (``<what> X does not exist``)."""
    p = Path(path)
    if p.is_file():
        return p
    if p.is_dir():
        raise FileNotFoundError(f"{what} {p} is a directory; expected {expected}")
    raise FileNotFoundError(f"{what} {p} does not exist")


def default_cache_path(out_dir: str | Path | None = None) -> Path:
    """``$AXON_EVAL_CACHE`` when set, else ``<out_dir>/.cache/verdicts.sqlite``."""
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env)
    return Path(out_dir if out_dir is not None else default_runs_dir()) / ".cache" / "verdicts.sqlite"


def slugify(text: str, max_len: int = 48) -> str:
    """Lower-case ``[a-z0-9.-]`` slug of ``text`` (``anthropic:claude-x`` -> ``anthropic-claude-x``)."""
    slug = re.sub(r"[^a-z0-9.]+", "-", str(text).lower()).strip("-.")
    slug = re.sub(r"-{2,}", "-", slug)[:max_len].strip("-.")
    return slug or "x"


def new_run_dir(out_dir: str | Path, name: str, judge: str | None = None, *,
                now: datetime | None = None) -> Path:
    """Create and return a fresh run folder ``<out_dir>/<YYYY-MM-DD>T<HHMMSS>Z_<name>[_<judge>]``.

    The folder is created with ``mkdir(exist_ok=False)``, so an existing folder is never reused: a clash
    (two runs in the same second) gets ``-2``, ``-3``, ... appended.
    """
    ts = (now or utc_now()).astimezone(timezone.utc).strftime("%Y-%m-%dT%H%M%SZ")
    base = f"{ts}_{slugify(name)}" + (f"_{slugify(judge)}" if judge else "")
    parent = Path(out_dir)
    parent.mkdir(parents=True, exist_ok=True)
    for k in range(1, 10_000):
        candidate = parent / (base if k == 1 else f"{base}-{k}")
        try:
            candidate.mkdir()
        except FileExistsError:
            continue
        return candidate
    raise RuntimeError(f"could not create a fresh run folder for {base!r} under {parent}")  # pragma: no cover


def atomic_write_bytes(path: str | Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` via a temporary file in the same folder and ``os.replace``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.chmod(tmp, _FILE_MODE)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return path


def atomic_write_text(path: str | Path, text: str) -> Path:
    """Write ``text`` as UTF-8 to ``path`` atomically (see :func:`atomic_write_bytes`); returns the path."""
    return atomic_write_bytes(path, text.encode("utf-8"))


def _json_default(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, datetime):
        return iso(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return None if math.isnan(value) else float(value)
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    return str(value)


def to_jsonable(value: Any) -> Any:
    """``value`` as plain JSON types (Paths and numpy scalars converted, NaN -> null)."""
    return _scrub_nan(json.loads(json.dumps(value, default=_json_default)))


def _scrub_nan(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: _scrub_nan(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub_nan(v) for v in value]
    return value


def write_json(path: str | Path, obj: Any) -> Path:
    """Write ``obj`` as indented JSON, atomically; returns the path."""
    return atomic_write_text(path, json.dumps(obj, indent=2, ensure_ascii=False, default=_json_default) + "\n")


def write_jsonl(path: str | Path, rows: Iterable[Any]) -> Path:
    """Write one JSON line per row (a string row is written as it is), atomically; returns the path."""
    lines = [r if isinstance(r, str) else json.dumps(r, ensure_ascii=False, default=_json_default) for r in rows]
    return atomic_write_text(path, "".join(line + "\n" for line in lines))


def _open_text(path: Path) -> Any:
    return gzip.open(path, "rt", encoding="utf-8") if path.suffix == ".gz" else path.open(encoding="utf-8")


def iter_jsonl(path: str | Path) -> Iterator[dict[str, Any]]:
    """Stream the objects of a JSON Lines file (``.gz`` is decompressed); nothing when it is absent."""
    p = Path(path)
    if not p.exists():
        return
    with _open_text(p) as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """All objects of a JSON Lines file (``[]`` when it is absent)."""
    return list(iter_jsonl(path))


class JsonlAppender:
    """Append JSON lines to ``<path>`` through a hidden partial file; :meth:`commit` moves it into place.

    ``compress=True`` writes gzip (the path should end in ``.gz``). Until :meth:`commit`, the final path
    does not exist, so a crashed run never leaves a truncated file under the real name.
    """

    def __init__(self, path: str | Path, *, compress: bool = False, flush: bool = False) -> None:
        self.path = Path(path)
        self.flush = flush and not compress
        self.partial = self.path.with_name(f".{self.path.name}.partial")
        raw = self.partial.open("wb")
        self._fh: Any = gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=6, mtime=0) if compress else raw
        self._raw = raw
        self.count = 0

    def write(self, rows: Iterable[Any]) -> None:
        chunk = "".join((r if isinstance(r, str) else json.dumps(r, ensure_ascii=False, default=_json_default))
                        + "\n" for r in rows)
        self._fh.write(chunk.encode("utf-8"))
        if self.flush:  # whole lines reach the file as they are written (a journal survives a crash)
            self._fh.flush()
        self.count += chunk.count("\n")

    def _close(self) -> None:
        if self._fh is not self._raw:
            self._fh.close()
        self._raw.flush()
        os.fsync(self._raw.fileno())
        self._raw.close()

    def commit(self) -> Path:
        self._close()
        os.chmod(self.partial, _FILE_MODE)
        os.replace(self.partial, self.path)
        return self.path

    def abort(self, *, keep: bool = True, keep_unclosed: bool = False) -> Path | None:
        """Close without committing; with ``keep`` the partial file is moved to the final name (a failed
        run keeps what it had), else deleted. A file that could not be closed whole (a full disk: its end
        may be torn) never gets the final name. With ``keep_unclosed`` a file not moved into place stays
        as the partial file (a journal, read back line by line on resume) instead of being deleted."""
        closed = True
        try:
            self._close()
        except Exception:
            closed = False
            with contextlib.suppress(Exception):
                self._raw.close()
        if closed and keep and self.partial.exists():
            try:
                os.replace(self.partial, self.path)
            except OSError:  # left as the partial file: never deleted for want of a rename
                return None
            return self.path
        if (not closed or not keep) and keep_unclosed:
            return None
        with contextlib.suppress(OSError):
            self.partial.unlink()
        return None


def use_system_memory_pool() -> None:
    """Make pyarrow allocate with the C library's malloc instead of its default pool (jemalloc or
    mimalloc), which keeps freed memory for reuse: reading a 40,000-row results table back costs half the
    resident memory this way (measured in ``make bench``, runs section). Called before any Parquet I/O
    here; it sets pyarrow's process-wide default."""
    import pyarrow as pa

    if pa.default_memory_pool().backend_name != "system":
        pa.set_memory_pool(pa.system_memory_pool())


def read_parquet(path: str | Path, columns: list[str] | None = None) -> pd.DataFrame:
    """A Parquet file as a DataFrame with bounded overhead (system allocator, single-threaded read, Arrow
    buffers released column by column while converting)."""
    import pyarrow.parquet as pq

    use_system_memory_pool()
    table = pq.read_table(str(path), columns=columns, use_threads=False, pre_buffer=False)
    return table.to_pandas(self_destruct=True, split_blocks=True)


#: The parts of a run's results dataset, ``results/part-<index>.parquet`` (``LEGACY_RESULTS`` is the one
#: file of a folder written before runs were partitioned, still read).
RESULTS_GLOB = "results/part-*.parquet"
LEGACY_RESULTS = "results.parquet"


def results_files(folder: str | Path) -> list[Path]:
    """The parts of a run's results dataset in partition order (a folder of the older layout: its one
    ``results.parquet``); empty when the run wrote none."""
    folder = Path(folder)
    parts = sorted(folder.glob(RESULTS_GLOB))
    if parts:
        return parts
    legacy = folder / LEGACY_RESULTS
    return [legacy] if legacy.is_file() else []


def has_results(folder: str | Path) -> bool:
    """True when the run folder holds a results dataset (at least one part)."""
    return bool(results_files(folder))


def read_results(folder: str | Path, columns: list[str] | None = None) -> pd.DataFrame | None:
    """A run's results dataset as one DataFrame (every part, in partition order), ``None`` when it has
    none. Parts are read one at a time (:func:`read_parquet`)."""
    files = results_files(folder)
    if not files:
        return None
    frames = [read_parquet(f, columns=columns) for f in files]
    rows = [f for f in frames if len(f)]  # an empty part (a partition with nothing to judge) adds no rows or dtypes
    if len(rows) <= 1:
        return rows[0] if rows else frames[0]
    return pd.concat(rows, ignore_index=True)


def results_sha256(folder: str | Path) -> str:
    """One SHA-256 for a results dataset: of the parts' names and SHA-256s, in order (a one-file dataset
    of the older layout: that file's SHA-256, so recorded hashes stay valid)."""
    files = results_files(folder)
    if not files:
        raise FileNotFoundError(f"{folder} holds no results dataset ({RESULTS_GLOB})")
    if len(files) == 1 and files[0].name == LEGACY_RESULTS:
        return file_sha256(files[0])
    h = hashlib.sha256()
    for f in files:
        h.update(f"{f.name}\t{file_sha256(f)}\n".encode())
    return h.hexdigest()


class ParquetAppender:
    """Write a Parquet file one row group per :meth:`write` (bounded memory); see :class:`JsonlAppender`."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.partial = self.path.with_name(f".{self.path.name}.partial")
        self._writer: Any = None
        self._schema: Any = None
        self.count = 0

    def write(self, frame: pd.DataFrame) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        use_system_memory_pool()
        table = pa.Table.from_pandas(frame, preserve_index=False, schema=self._schema)
        if self._writer is None:
            self._schema = table.schema
            self._writer = pq.ParquetWriter(str(self.partial), self._schema)
        self._writer.write_table(table)
        self.count += len(frame)

    def commit(self, empty: pd.DataFrame | None = None) -> Path:
        """Close and move into place; ``empty`` (a frame with the columns) is written when nothing was."""
        if self._writer is None:
            return write_parquet(self.path, empty if empty is not None else pd.DataFrame())
        self._writer.close()
        os.chmod(self.partial, _FILE_MODE)
        os.replace(self.partial, self.path)
        return self.path

    def abort(self, *, keep: bool = True) -> None:
        """Close without committing; with ``keep`` a file closed whole (its footer written) is moved to the
        final name. A file that could not be closed (a full disk) is deleted: a Parquet file without its
        footer cannot be read."""
        closed = True
        if self._writer is not None:
            try:
                self._writer.close()
            except Exception:
                closed = False
        if closed and keep and self.partial.exists():
            with contextlib.suppress(OSError):  # left as the partial file: never deleted for want of a rename
                os.replace(self.partial, self.path)
            return
        with contextlib.suppress(OSError):
            self.partial.unlink()


def write_parquet(path: str | Path, frame: pd.DataFrame) -> Path:
    """Write ``frame`` as Parquet atomically (serialised in memory, then :func:`atomic_write_bytes`)."""
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    return atomic_write_bytes(path, buffer.getvalue())


def file_sha256(path: str | Path) -> str:
    """Hex SHA-256 of a file's bytes."""
    h = hashlib.sha256()
    with Path(path).open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
