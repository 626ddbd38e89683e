"""Import real traffic: traces from tracing tools become evidence turns.

``import_traces(path, fmt, ...)`` -> :class:`ImportResult` (turns + :class:`ImportReport`);
``write_import(result, out)`` writes the evidence JSON Lines and ``<out>.import.json``;
``export_otlp(turns)`` writes our evidence as OTLP JSON (GenAI + database conventions).

Layout: :mod:`.spans` (the neutral span), :mod:`.otlp` (OTLP JSON decoding), one reader per format
(:mod:`.otel`, :mod:`.openinference`, :mod:`.langfuse`, :mod:`.langsmith`), :mod:`.mapping` (the shared
rules: one trace -> one turn), :mod:`.export_otel`; the verbs live in ``axon_eval.cli.importers`` (``python -m axon_eval import-traces``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..evidence import Turn
from . import langfuse, langsmith, openinference, otel
from .export_otel import export_otlp, write_otlp
from .mapping import BlockedRule, ImportOptions, ImportReport, build_turns, parse_result
from .spans import ExportFormatError, SourceSpan, read_json_documents

Reader = Callable[[list[Any]], tuple[list[SourceSpan], dict[str, dict[str, Any]]]]
FORMATS: dict[str, Reader] = {
    "otel": otel.read,
    "openinference": openinference.read,
    "langfuse": langfuse.read,
    "langsmith": langsmith.read,
}


@dataclass
class ImportResult:
    turns: list[Turn]
    report: ImportReport


def import_documents(docs: list[Any], fmt: str, options: ImportOptions | None = None,
                     source: str = "<memory>") -> ImportResult:
    """Map already-decoded trace documents of format ``fmt`` to evidence turns and an import report."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown trace format {fmt!r}; expected one of {sorted(FORMATS)}")
    options = options or ImportOptions()
    spans, meta = FORMATS[fmt](docs)
    report = ImportReport(format=fmt, source=source, options={
        "sql_tools": list(options.sql_tools), "blocked_when": [str(r) for r in options.blocked_when],
        "client_attrs": list(options.client_attrs), "surface_attrs": list(options.surface_attrs),
        "region_attrs": list(options.region_attrs)})
    turns = build_turns(spans, options, report, meta)
    return ImportResult(turns, report)


def import_traces(path: str | Path, fmt: str, options: ImportOptions | None = None, *,
                  sql_tools: Iterable[str] = (), blocked_when: Iterable[str] = ()) -> ImportResult:
    """Read an export file of ``fmt`` and map it to turns (see :mod:`.mapping` for the rules).

    Raises ``FileNotFoundError`` / :class:`ExportFormatError` (a ``ValueError``) when the file cannot be
    read as that format at all (missing, a folder, binary or not UTF-8, not that format); the message
    is one line naming the file and what was expected. A trace that cannot become a turn is in
    ``report.not_turns``.
    """
    p = Path(path)
    if fmt not in FORMATS:
        raise ValueError(f"unknown trace format {fmt!r}; expected one of {sorted(FORMATS)}")
    if options is None:
        options = ImportOptions.make(sql_tools=sql_tools, blocked_when=blocked_when)
    text = read_export_text(p, fmt)
    try:
        docs, problems = read_json_documents(text)
        result = import_documents(docs, fmt, options, source=str(p))
    except ExportFormatError as exc:
        raise ExportFormatError(f"{p}: {exc}") from None
    result.report.unreadable.extend(problems)
    return result


def read_export_text(path: Path, fmt: str) -> str:
    """The text of an export file (UTF-8, an optional byte order mark dropped), or an error naming the
    file and what was expected: missing, a folder, unreadable, not UTF-8, or binary (a NUL byte, which
    JSON text never holds)."""
    expected = f"expected a --format {fmt} export: JSON or JSON Lines text"
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such export file")
    if path.is_dir():
        raise ExportFormatError(f"{path}: is a folder; {expected}")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ExportFormatError(f"{path}: cannot be read ({exc.strerror or exc}); {expected}") from None
    nul = data.find(b"\x00")
    if nul >= 0:
        raise ExportFormatError(f"{path}: a binary file (NUL byte at byte offset {nul}); {expected}")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ExportFormatError(f"{path}: binary or not UTF-8 (byte 0x{data[exc.start]:02x} at byte offset "
                                f"{exc.start} cannot be decoded); {expected}") from None


def report_path(out: str | Path) -> Path:
    """``TURNS.jsonl`` -> ``TURNS.import.json``."""
    p = Path(out)
    return p.with_name((p.name.removesuffix(".jsonl")) + ".import.json")


def write_import(result: ImportResult, out: str | Path) -> Path:
    """Write the turns as evidence JSON Lines to ``out`` and the report beside it; returns the report path."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8") as fh:
        for t in result.turns:
            fh.write(t.to_json_line() + "\n")
    result.report.out = str(out)
    rp = report_path(out)
    rp.write_text(json.dumps(result.report.to_dict(), indent=2, ensure_ascii=False, default=str) + "\n",
                  encoding="utf-8")
    return rp


__all__ = ["FORMATS", "BlockedRule", "ExportFormatError", "ImportOptions", "ImportReport", "ImportResult",
           "export_otlp", "import_documents", "import_traces", "parse_result", "report_path", "write_import",
           "write_otlp"]
