"""``python -m axon_eval import-traces FILE --format FMT --out TURNS.jsonl [...]`` and ``export-otlp``.

Exit status: 0 turns were written (traces that could not become a turn are listed in the report and
the summary); 2 usage error, one line naming the file (missing, a folder, binary or not UTF-8, not an
export of that format) or the bad option, nothing written; 5 no trace became a turn (the evidence file
and report are still written).
"""

from __future__ import annotations

import argparse
import sys

EXIT_USAGE = 2
EXIT_NO_TURNS = 5


def _cmd_import(args: argparse.Namespace) -> int:
    from ..importers import ImportOptions, import_traces, write_import

    try:
        options = ImportOptions.make(
            sql_tools=args.sql_tool or (), blocked_when=args.blocked_when or (),
            client_attrs=args.client_attr or (), surface_attrs=args.surface_attr or (),
            region_attrs=args.region_attr or (), client_default=args.client_default,
            surface_default=args.surface_default, region_default=args.region_default)
        result = import_traces(args.file, args.format, options)
    except (ValueError, FileNotFoundError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    report_file = write_import(result, args.out)
    for line in result.report.summary_lines():
        print(line)
    print(f"wrote {len(result.turns)} turn(s) to {args.out}; report: {report_file}")
    if not result.turns:
        print(f"error: no trace of {args.file} became a turn", file=sys.stderr)
        return EXIT_NO_TURNS
    return 0


def _cmd_export(args: argparse.Namespace) -> int:
    from ..evidence import EvidenceFileError, invalid_lines, load_turns
    from ..importers import write_otlp

    try:
        turns, invalid = load_turns(args.turns)
    except EvidenceFileError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    write_otlp(turns, args.out)
    print(f"wrote {len(turns)} turn(s) as OTLP JSON to {args.out} ({len(invalid_lines(invalid))} invalid line(s) "
          "skipped)")
    return 0 if turns else EXIT_NO_TURNS


def register(sub: argparse._SubParsersAction) -> None:
    from ..importers import FORMATS

    p = sub.add_parser("import-traces", help="turn an export of traces (OTel, OpenInference, Langfuse, LangSmith) "
                                             "into evidence JSON Lines + an import report")
    p.add_argument("file", help="the export file (JSON or JSON Lines)")
    p.add_argument("--format", required=True, choices=sorted(FORMATS), help="the export's format")
    p.add_argument("--out", required=True, help="evidence file to write (the report goes beside it: "
                                                "TURNS.import.json)")
    p.add_argument("--sql-tool", action="append", metavar="NAME",
                   help="a tool whose calls are SQL statements (repeatable); tools whose arguments hold 'sql' "
                        "are found without it")
    p.add_argument("--blocked-when", action="append", metavar="EXPR",
                   help="a guardrail signal that makes a step 'blocked': name=SPAN_NAME, error.type=VALUE, or a "
                        "bare VALUE matching either (repeatable)")
    for name, conventional in (("client", "service.name"), ("surface", "surface"), ("region", "cloud.region")):
        p.add_argument(f"--{name}-attr", action="append", metavar="ATTR",
                       help=f"attribute (resource, span or metadata) holding the {name}, tried before "
                            f"axon_eval.{name} and {conventional} (repeatable)")
        p.add_argument(f"--{name}-default", default="unknown", metavar="VALUE",
                       help=f"{name} when no attribute holds it (default: unknown)")
    p.set_defaults(handler=_cmd_import)

    p = sub.add_parser("export-otlp", help="write an evidence file as OTLP JSON (GenAI + database conventions)")
    p.add_argument("turns", help="evidence JSON Lines")
    p.add_argument("--out", required=True, help="OTLP JSON file to write")
    p.set_defaults(handler=_cmd_export)
