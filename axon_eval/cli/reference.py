"""``python -m axon_eval grade-reference``: grade recorded responses against the simulated business.

::

    python -m axon_eval grade-reference [--judge heuristic|anthropic:<model>[@<base_url>]]
        [--questions FILE] [--responses FILE] [--labels FILE | --no-labels] [--db FILE]
        [--question ID ...] [--response ID ...] [--max-cost-usd X] [--concurrency N] [--batch]
        [--out DIR] [--no-cache] [--strict] [--json]

Defaults: the bundled set (``data/reference/questions.yaml``, ``responses.jsonl``, ``labels.csv``) on the
bundled ``shop.sqlite`` with the offline heuristic judge. A paid judge is an API leaf in the grammar of
every other verb's judge spec, ``anthropic:<model>[@<base_url>]`` (``claude:<model>[@<base_url>]`` is
an alias). Writes a run folder (:func:`axon_eval.reference.run.grade_reference`), prints it, the grade
counts, the agreement with the labels (false passes, false fails, review-required; overall and held-out),
cache hits, tokens and cost. For a paid judge the estimated cost is printed on stderr before the first call.

``--batch`` (``anthropic:`` judge only; the heuristic is refused, exit 2): the uncached responses go to the
API as one Message Batch at the batch price (``axon_eval.reference.batch``); its id is in the manifest and the
run folder's ``batch.json`` before polling, so a run interrupted while waiting, started again with the same
arguments, resumes polling that batch instead of paying again. ``--max-cost-usd`` bounds what is submitted.

Exit status (:mod:`axon_eval.runs.manifest`): 0 every response graded (responses whose evidence could not
be prepared are listed, allowed unless ``--strict``); 1 the run raised after its folder was made (kept,
marked failed); 2 usage error (bad spec, unknown id, missing file, budget for an unpriced model, missing
API key; nothing written); 3 some responses ungraded (judge errors, output that does not verify, the
budget); 4 none graded; 5 no response selected; 6 ``--strict`` and some evidence could not be prepared.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parents[2] / "data" / "reference"
_ROLE = re.compile(r":[a-z]+:`~?([^`]+)`")
_LITERAL = re.compile(r"``([^`]+)``")


def plain_help(text: str) -> str:
    """reST text (a module docstring) as plain text for ``--help``: ``:func:`~a.b.c``` -> ``c``,
    ``:mod:`a.b``` -> ``a.b``, double-backtick literals lose their backticks, a bare ``::`` line goes and
    a paragraph ending in ``::`` (a literal block follows) ends in ``:``."""
    def role(match: re.Match[str]) -> str:
        target = match.group(1)
        return target.rsplit(".", 1)[-1] if match.group(0).split("`", 1)[1].startswith("~") else target

    text = _LITERAL.sub(r"\1", _ROLE.sub(role, text))
    text = re.sub(r"(?m)^[ \t]*::[ \t]*\n(?:[ \t]*\n)?", "", text)  # a bare "::" line introduces a literal block
    return re.sub(r"(?m)::$", ":", text)


def _cmd_grade_reference(args: argparse.Namespace) -> int:
    from ..judges.base import MissingApiKey
    from ..runs import (
        EXIT_ERROR,
        EXIT_NO_VALID_TURNS,
        EXIT_USAGE,
        NoValidTurnsError,
        exit_code,
    )
    from ..reference.run import grade_reference

    labels = None if args.no_labels else (args.labels or DATA / "labels.csv")
    try:
        run = grade_reference(args.questions or DATA / "questions.yaml", args.responses or DATA / "responses.jsonl",
                              args.judge, labels_file=labels, db_path=args.db, question_ids=args.question or None,
                              response_ids=args.response or None, out_dir=args.out,
                              cache=False if args.no_cache else None, max_cost_usd=args.max_cost_usd,
                              concurrency=args.concurrency, batch=args.batch)
    except (MissingApiKey, ValueError, FileNotFoundError, FileExistsError, TypeError, KeyError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_NO_VALID_TURNS if isinstance(exc, NoValidTurnsError) else EXIT_USAGE
    except TimeoutError as exc:  # batch mode: the run folder is kept, marked failed; the batch stays recorded
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    m = run.manifest
    code = exit_code(m, strict=args.strict)
    summary: dict[str, Any] = {
        "run_folder": str(run.run_dir), "status": m.status, "exit": code, "judge_id": m.judge_id,
        "grades": {g: int(n) for g, n in run.table["grade"].value_counts().sort_index().items()},
        "agreement": run.agreement, "cache_hits": m.cache_hits, "cache_misses": m.cache_misses,
        "input_tokens": m.input_tokens, "output_tokens": m.output_tokens, "cost_usd": m.cost_usd,
        "estimated_cost_usd": m.estimated_cost_usd, "batch": m.batch}
    if args.json:
        json.dump(summary, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(f"run folder: {run.run_dir}")
        print(f"judge:      {m.judge_id}")
        print("grades:     " + ", ".join(f"{g} {n}" for g, n in summary["grades"].items()))
        if run.agreement is not None:
            for split, c in run.agreement.items():
                print(f"{split:<8}    {c['n_responses']} responses ({c['n_questions']} questions): false pass "
                      f"{c['false_pass']}, false fail {c['false_fail']}, review required {c['review_required']}, "
                      f"error {c['error']}")
        from ..runs.budget import format_usd

        cost = format_usd(m.cost_usd) if m.cost_usd is not None else (
            "not reported" if m.input_tokens is not None else "none (no API call made)")
        tokens = (f"tokens in/out {m.input_tokens:,}/{m.output_tokens or 0:,}" if m.input_tokens is not None
                  else "tokens not reported")
        cache = ("not used" if m.cache_hits is None else f"{m.cache_hits} hit(s), {m.cache_misses or 0} miss(es)")
        print(f"cache:      {cache}; {tokens}; cost {cost}")
        if m.batch is not None:
            print(f"batch:      submitted {m.batch['submitted'] or 'none'} ({m.batch['requests']} request(s)), "
                  f"resumed {m.batch['resumed'] or 'none'}; costs at the Message Batches price")
    c = m.counts
    line = (f"status: {m.status} (exit {code}): {c.judged} of {c.turns} responses graded, {c.unjudged} ungraded, "
            f"{c.invalid} stopped by their evidence")
    print(line, file=sys.stderr if code or args.json else sys.stdout)
    for warning in m.warnings:
        print(f"WARNING: {warning}", file=sys.stderr)
    return code


def register(sub: Any) -> None:
    """Add the ``grade-reference`` verb to the ``python -m axon_eval`` subparsers ``sub``."""
    p = sub.add_parser("grade-reference", help="grade recorded answers against the simulated business",
                       description=plain_help(__doc__ or ""), formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--judge", default="heuristic",
                   help="heuristic (offline, default) or anthropic:<model>[@<base_url>] (the API leaf of every "
                        "verb's judge spec; claude:<model>[@<base_url>] is an alias)")
    p.add_argument("--questions", type=Path, help="questions YAML (default: the bundled set)")
    p.add_argument("--responses", type=Path, help="responses JSON Lines (default: the bundled set)")
    p.add_argument("--labels", type=Path, help="constructed labels CSV (default: the bundled labels)")
    p.add_argument("--no-labels", action="store_true", help="do not compare with labels")
    p.add_argument("--db", type=Path, help="reference SQLite warehouse (default: the bundled shop.sqlite)")
    p.add_argument("--question", action="append", metavar="ID", help="grade only this question (repeatable)")
    p.add_argument("--response", action="append", metavar="ID", help="grade only this response (repeatable)")
    p.add_argument("--max-cost-usd", type=float, metavar="X", help="stop before the reported cost exceeds X USD")
    p.add_argument("--concurrency", type=int, default=4, help="judge calls at a time (default 4)")
    p.add_argument("--batch", action="store_true",
                   help="send the uncached responses as one Anthropic Message Batch (anthropic: judge only; batch "
                        "price; resumable)")
    p.add_argument("--out", type=Path, help="parent folder of the run folder (default runs/)")
    p.add_argument("--no-cache", action="store_true", help="neither reuse nor store grades")
    p.add_argument("--strict", action="store_true", help="exit 6 when some question's evidence could not be prepared")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(handler=_cmd_grade_reference)
