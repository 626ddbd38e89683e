"""Command line: ``python -m axon_eval <verb> ...``; the parser of every verb group and :func:`main`.

Verb groups, one module each: :mod:`.evidence` (``schema``, ``validate``), :mod:`.runs` (the run verbs; it
documents the exit codes), :mod:`.compare` (``compare``, ``gate``), :mod:`.drift` (``anchor``, ``drift``), :mod:`.labelling`
(``sample-for-labelling``, ``import-labels``, ``plan-labels``), :mod:`.importers` (``import-traces``, ``export-otlp``),
:mod:`.reference` (``grade-reference``), :mod:`.fitted` (``fit-heuristic``). Output piped into a program that stops reading early (``| head``)
ends quietly. Ctrl-C prints one line (how much a run judged and where its folder is, kept and marked
``interrupted``: :class:`axon_eval.runs.manifest.RunInterrupted`), never a traceback, and exits 130.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable, Sequence

from . import compare, drift, evidence, fitted, importers, labelling, reference, runs, studio, trend

Handler = Callable[[argparse.Namespace], int]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m axon_eval",
        description="axon_eval: evaluate captured text-to-SQL assistant turns (offline by default).")
    sub = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
    evidence.register(sub)  # schema, validate
    runs.register(sub)  # run, evaluate, rejudge, rescore, report, rerun, index, fake-judge-server
    compare.register(sub)  # compare, gate (decisions on interval bounds)
    drift.register(sub)  # anchor, drift (judge change control)
    labelling.register(sub)  # sample-for-labelling, import-labels
    studio.register(sub)  # label init|serve|status|review|export (the labelling studio)
    trend.register(sub)  # trend (headline figures per run through DuckDB)
    importers.register(sub)  # import-traces, export-otlp
    reference.register(sub)  # grade-reference
    fitted.register(sub)  # fit-heuristic (the fitted offline judge's coefficients and validation)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv[:1] == ["fake-judge-server"]:
            # its options belong to the server's own parser (argparse cannot pass "--port" through a
            # subcommand)
            from ..judges import fake_server

            return int(fake_server.main(argv[1:]) or 0)
        args = build_parser().parse_args(argv)
        handler: Handler = args.handler
        return handler(args)
    except KeyboardInterrupt as exc:
        return interrupted(exc)
    except BrokenPipeError:
        # the reader went away (``| head``): stop quietly; point stdout at devnull so the interpreter's
        # final flush does not raise again
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0


def interrupted(exc: KeyboardInterrupt) -> int:
    """Ctrl-C: one line on stderr (a run's :meth:`~axon_eval.runs.manifest.RunInterrupted.line`, else
    ``interrupted``) and exit 130."""
    from ..runs.manifest import EXIT_INTERRUPTED

    line = exc.line() if hasattr(exc, "line") else "interrupted (Ctrl-C)"
    with contextlib.suppress(Exception):
        print(line, file=sys.stderr, flush=True)
    return EXIT_INTERRUPTED
