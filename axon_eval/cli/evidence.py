"""Evidence verbs of ``python -m axon_eval``: ``schema`` (print the evidence JSON Schema) and ``validate``.

``validate`` reports on an evidence file: exit 0, 5 when it holds no valid turn, 6 with ``--strict`` when any
line is invalid, 2 when it cannot be read.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter

from ..evidence import (
    EvidenceFileError,
    describe_invalid_lines,
    invalid_lines,
    load_turns,
    split_segments,
    trajectory_facts,
    turn_json_schema,
)


def _cmd_schema(args: argparse.Namespace) -> int:
    json.dump(turn_json_schema(), sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


def _cmd_validate(args: argparse.Namespace) -> int:
    try:
        turns, invalid = load_turns(args.turns)
    except EvidenceFileError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    segments = [s for t in turns for s in split_segments(t)]
    facts = Counter()
    for t in turns:
        f = trajectory_facts(t)
        for name in ("all_sql_failed", "ended_on_failure", "no_tools"):
            facts[name] += bool(getattr(f, name))
        facts["recovered_errors"] += f.recovered_errors > 0
    report = {
        "file": str(args.turns),
        "valid_turns": len(turns),
        "segments": len(segments),
        "invalid_lines": len(invalid_lines(invalid)),
        "invalid_problems": len(invalid),
        "no_answer_captured": sum(t.answer is None for t in turns),
        "turns_with_fact": dict(facts),
        "by_region": dict(Counter(t.region for t in turns)),
        "by_surface": dict(Counter(t.surface for t in turns)),
        "by_client": dict(Counter(t.client for t in turns)),
        "invalid": [i.to_dict() for i in invalid],
    }
    if args.json:
        json.dump(report, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        problems = f" ({len(invalid)} problems)" if len(invalid) != report["invalid_lines"] else ""
        print(f"{args.turns}: {len(turns)} valid turns ({len(segments)} segments), "
              f"{report['invalid_lines']} invalid line(s){problems}")
        for key in ("no_answer_captured", "turns_with_fact", "by_region", "by_surface", "by_client"):
            print(f"  {key}: {report[key]}")
        for text in describe_invalid_lines(invalid):
            print(f"  INVALID {args.turns}: {text}")
    if not turns:
        print(f"error: {args.turns} holds no valid turn", file=sys.stderr)
        return 5
    return 6 if (invalid and args.strict) else 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``schema`` and ``validate`` to the CLI's subparsers."""
    p = sub.add_parser("schema", help="print the JSON Schema of one evidence line")
    p.set_defaults(handler=_cmd_schema)

    p = sub.add_parser("validate", help="validate an evidence file and summarise it")
    p.add_argument("turns", help="JSON Lines evidence file")
    p.add_argument("--json", action="store_true", help="machine-readable report")
    p.add_argument("--strict", action="store_true", help="exit 6 when any line is invalid")
    p.set_defaults(handler=_cmd_validate)
