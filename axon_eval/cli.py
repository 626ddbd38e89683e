"""Command line: ``python -m axon_eval <verb> ...``.

Verbs defined here: ``schema`` (print the evidence JSON Schema) and ``validate`` (report on an evidence
file: exit 0, 5 when it holds no valid turn, 6 with ``--strict`` when any line is invalid, 2 when it
cannot be read). Run-related verbs are registered by :mod:`axon_eval.runs_cli`, which documents the exit
codes. Output piped into a program that stops reading early (``| head``) ends quietly.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from collections.abc import Callable, Sequence

from .evidence import (
    EvidenceFileError,
    describe_invalid_lines,
    invalid_lines,
    load_turns,
    split_segments,
    trajectory_facts,
    turn_json_schema,
)

Handler = Callable[[argparse.Namespace], int]


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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m axon_eval",
        description="axon_eval: evaluate captured text-to-SQL assistant turns (offline by default).")
    sub = parser.add_subparsers(dest="verb", required=True, metavar="VERB")

    p = sub.add_parser("schema", help="print the JSON Schema of one evidence line")
    p.set_defaults(handler=_cmd_schema)

    p = sub.add_parser("validate", help="validate an evidence file and summarise it")
    p.add_argument("turns", help="JSON Lines evidence file")
    p.add_argument("--json", action="store_true", help="machine-readable report")
    p.add_argument("--strict", action="store_true", help="exit 6 when any line is invalid")
    p.set_defaults(handler=_cmd_validate)

    from . import runs_cli  # run verbs live beside the run machinery

    runs_cli.register(sub)
    __import__("axon_eval.drift_cli", fromlist=["register"]).register(sub)  # anchor, drift (judge change control)
    from . import labelling_cli; labelling_cli.register(sub)  # sample-for-labelling, import-labels
    __import__("axon_eval.trend_cli", fromlist=["register"]).register(sub)  # trend (issue 21)
    __import__("axon_eval.importers.cli", fromlist=["register"]).register(sub)  # import-traces, export-otlp
    __import__("axon_eval.reference.cli", fromlist=["register"]).register(sub)  # grade-reference
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv[:1] == ["fake-judge-server"]:
            # its options belong to the server's own parser (argparse cannot pass "--port" through a
            # subcommand)
            from .judges import fake_server

            return int(fake_server.main(argv[1:]) or 0)
        args = build_parser().parse_args(argv)
        handler: Handler = args.handler
        return handler(args)
    except BrokenPipeError:
        # the reader went away (``| head``): stop quietly; point stdout at devnull so the interpreter's
        # final flush does not raise again
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
