"""The labelling studio's verbs: ``python -m axon_eval label init|serve|status|review|export``.

``label init PACK --raters r1,r2,r3 --overlap 20 [--seed S] [--run RUN]``, ``label init PACK --extend``
    the seeded assignment (``assignment.json``: an overlap every rater labels, the rest split, each queue
    shuffled), the blind evidence and the rubric guide, in the pack (:mod:`axon_eval.studio.pack`).
``label serve PACK --rater r1 [--port N] [--no-browser]``
    the rater's local web app on 127.0.0.1; prints its URL with a fresh token. The default port is
    derived from the pack and rater, so the browser's outbox of unsaved labels (kept per address) is
    found again after a restart; ``--port 0`` takes any free port.
``label status PACK [--json]``
    progress per rater; agreement on the overlap (kappa, alpha, with intervals).
``label review PACK [--threshold 2] [--json]``
    the adjudication queue. ``--adjudicate SEGMENT --reviewer NAME --scores 7,8,6,9 --verdict good
    [--comment TEXT]`` saves an adjudicated label (``--scores 7,8,6,-`` when no answer was captured);
    ``--reviewer NAME --show-judge`` prints the judge's grades of the segments NAME has labelled (and
    records that they were shown). ``--serve --reviewer NAME [--port N] [--no-browser]``: the same queue
    in the studio's review page (the evidence, the raters' labels side by side, the adjudicated label
    typed by keyboard or mouse; the judge's grades on request under the ``--show-judge`` rule).
``label export PACK [--out FILE] [--adjudicated]``
    the labels file ``import-labels`` writes (``studio.imported.csv`` in the pack), read by ``gate
    --corrected --labels``, ``compare --labels`` and the studies.

Exit status: 0 ok; 2 usage error (not a pack, no assignment, unknown rater, a bad label, a port in use).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import uuid
from pathlib import Path

EXIT_OK = 0
EXIT_USAGE = 2


def _fail(exc: Exception) -> int:
    print(f"error: {exc}", file=sys.stderr)
    return EXIT_USAGE


def default_port(pack: str | Path, rater: str) -> int:
    """A port in 20000-29999 fixed by the pack's path and the rater (see the module docstring)."""
    digest = hashlib.sha256(f"{Path(pack).resolve()}\0{rater}".encode()).digest()
    return 20000 + int.from_bytes(digest[:4], "big") % 10000


def _cmd_init(args: argparse.Namespace) -> int:
    from ..studio.pack import init_pack

    raters = [r.strip() for r in (args.raters or "").split(",") if r.strip()]
    if not raters and not args.extend:
        return _fail(ValueError("label init needs --raters r1,r2,... (or --extend, for a pack assigned already)"))
    try:
        if args.extend and raters:  # the raters are the assignment's: a different list is a mistake, said
            from ..studio.pack import read_assignment

            assigned = list(read_assignment(Path(args.pack)).raters)
            if raters != assigned:
                raise ValueError(f"--raters {','.join(raters)} differs from the pack's assignment "
                                 f"({','.join(assigned)}); --extend deals to the assigned raters (leave --raters out)")
        a = init_pack(args.pack, raters, args.overlap, args.seed, run=args.run, extend=args.extend)
    except (OSError, ValueError) as exc:
        return _fail(exc)
    n = len({s for q in a.queues.values() for s in q})
    print(f"assigned {n} segments to {len(a.raters)} rater(s), overlap {len(a.overlap)}, seed {a.seed}: "
          + ", ".join(f"{r} {len(q)}" for r, q in a.queues.items()))
    print(f"assignment: {Path(args.pack) / 'assignment.json'}")
    return EXIT_OK


def _serve(app, args: argparse.Namespace, default: int) -> int:
    """Bind ``app`` (the default port ``default``, else any free one), print its URL, serve until stopped."""
    import asyncio

    try:
        app.requested_port = default if args.port is None else args.port
        try:
            app.bind()
        except OSError as exc:
            if args.port is not None:
                raise ValueError(f"port {args.port} cannot be used ({exc.strerror}); try --port 0") from None
            app.requested_port = 0
            app.bind()
            print("note: the default port was in use; labels not yet saved in the browser's outbox are kept "
                  "per address, so reopen the earlier address when its server runs again", file=sys.stderr)
    except (OSError, ValueError) as exc:
        app.session.close()
        return _fail(exc)
    for journal in (app.session.journal, getattr(app.session, "reveals", None)):
        for repair in journal.repairs if journal is not None else ():
            print(f"repaired: {repair}", file=sys.stderr)
    p = app.session.progress()
    if app.review:
        print(f"reviewer {app.session.rater}: {p['done']} of {p['total']} disagreement(s) adjudicated")
    else:
        print(f"rater {app.session.rater}: {p['done']} of {p['total']} labelled")
    print(f"open {app.url}", flush=True)
    if not args.no_browser:
        import webbrowser

        webbrowser.open(app.url)
    try:
        asyncio.run(app.serve())
    finally:
        app.session.close()
    return EXIT_OK


def _cmd_serve(args: argparse.Namespace) -> int:
    from ..studio.server import StudioApp

    try:
        app = StudioApp(args.pack, args.rater, port=0)
    except (OSError, ValueError) as exc:
        return _fail(exc)
    return _serve(app, args, default_port(args.pack, args.rater))


def _cmd_status(args: argparse.Namespace) -> int:
    from ..studio.collect import latest_labels
    from ..studio.pack import read_assignment
    from ..studio.status import format_status, overlap_agreement, rater_progress

    try:
        a = read_assignment(args.pack)
    except (OSError, ValueError) as exc:
        return _fail(exc)
    labels = latest_labels(args.pack)
    progress = rater_progress(labels, a.queues, a.overlap)
    agreement = overlap_agreement(labels, a.overlap, n_boot=args.n_boot, seed=args.seed)
    if args.json:
        print(json.dumps({"progress": progress, "agreement": agreement}, indent=1))
    else:
        print("\n".join(format_status(progress, agreement)))
    return EXIT_OK


def _scores(text: str) -> dict[str, int | None]:
    from ..rubric import DIMENSIONS

    parts = [p.strip() for p in text.split(",")]
    if len(parts) != len(DIMENSIONS):
        raise ValueError(f"--scores {text!r}: expected {len(DIMENSIONS)} comma-separated values 0-10 "
                         f"({', '.join(DIMENSIONS)}; '-' for no answer)")
    out: dict[str, int | None] = {}
    for d, p in zip(DIMENSIONS, parts, strict=True):
        if p in ("-", ""):
            out[d] = None
        elif p.isdigit():
            out[d] = int(p)
        else:
            raise ValueError(f"--scores: {d} {p!r}: expected an integer 0-10 or '-'")
    return out


def _cmd_review(args: argparse.Namespace) -> int:
    from ..rubric import DIMENSIONS
    from ..studio.collect import latest_labels
    from ..studio.ledger import Journal
    from ..studio.pack import ADJUDICATED, LABELS_DIR, EvidenceStore, read_assignment
    from ..studio.review import (REVEALS_FILE, adjudication_record, judge_grades, judge_shown, record_reveal,
                                 review_queue, reviewer_labelled)
    from ..studio.session import check_label

    pack = Path(args.pack)
    if args.serve:
        from ..studio.server import StudioApp

        if not args.reviewer:
            return _fail(ValueError("--serve needs --reviewer NAME"))
        try:
            app = StudioApp.for_review(pack, args.reviewer, threshold=args.threshold)
        except (OSError, ValueError) as exc:
            return _fail(exc)
        return _serve(app, args, default_port(pack, f"review:{args.reviewer}"))
    try:
        a = read_assignment(pack)
        labels = latest_labels(pack)
        queue = review_queue(labels, a.overlap, args.threshold)
        if args.show_judge:
            if not args.reviewer:
                raise ValueError("--show-judge needs --reviewer NAME (their own labels come first)")
            own = reviewer_labelled(pack, args.reviewer)
            results = judge_grades(pack)
            reveals = Journal(pack / LABELS_DIR / REVEALS_FILE)
            for item in queue:
                sid = item["segment_id"]
                if sid not in own:
                    print(f"{sid}: label it yourself first (label serve --rater {args.reviewer}); the judge stays hidden")
                    continue
                record_reveal(reveals, args.reviewer, sid)
                row = results.loc[sid]
                print(f"{sid}: judge " + ", ".join(f"{d} {row[d]}" for d in DIMENSIONS) + f", verdict {row['judge_verdict']}")
            reveals.close()
            return EXIT_OK
        if args.adjudicate:
            if not args.reviewer:
                raise ValueError("--adjudicate needs --reviewer NAME")
            item = next((q for q in queue if q["segment_id"] == args.adjudicate), None)
            if item is None:
                raise ValueError(f"segment {args.adjudicate!r} is not in the adjudication queue (threshold {args.threshold})")
            store = EvidenceStore(pack)
            label = check_label({"id": uuid.uuid4().hex, "scores": _scores(args.scores or ""), "verdict": args.verdict,
                                 "comment": args.comment or ""},
                                answer_captured=store.get(args.adjudicate)["answer_captured"])
            store.close()
            shown = judge_shown(pack, args.reviewer, args.adjudicate)
            journal = Journal(pack / LABELS_DIR / f"{ADJUDICATED}.jsonl")
            done = journal.append(adjudication_record(item, args.reviewer, label, shown=shown))
            journal.close()
            print(f"adjudicated {args.adjudicate} by {args.reviewer}: labels/{ADJUDICATED}.jsonl line {done.line}"
                  + (" (the judge's grades had been shown to the reviewer)" if shown else ""))
            return EXIT_OK
    except (OSError, ValueError, KeyError) as exc:
        return _fail(exc)
    if args.json:
        print(json.dumps(queue, indent=1, default=str))
        return EXIT_OK
    print(f"{len(queue)} overlap segment(s) where raters differ (verdicts, or a dimension by more than {args.threshold}):")
    for item in queue:
        print(f"{item['segment_id']}:" + (" verdicts differ;" if item["verdicts_differ"] else "")
              + " spread " + ", ".join(f"{d} {v}" for d, v in item["spread"].items()))
        for rater, lab in item["labels"].items():
            print(f"  {rater:<12} " + " ".join("-" if lab[d] is None else str(lab[d]) for d in DIMENSIONS)
                  + f"  {lab['verdict']}  {lab['comment'] or ''}".rstrip())
    return EXIT_OK


def _cmd_export(args: argparse.Namespace) -> int:
    from ..studio.export import export_labels

    try:
        path, n, skipped = export_labels(args.pack, args.out, adjudicated=args.adjudicated)
    except (OSError, ValueError) as exc:
        return _fail(exc)
    print(f"wrote {n} label row(s) to {path}" + (f" ({skipped} skipped segment(s) left out)" if skipped else ""))
    return EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``label`` verb group to the ``python -m axon_eval`` sub-command parser."""
    p = sub.add_parser("label", help="the labelling studio: init, serve, status, review, export a pack's labels",
                       description="Label a labelling pack in a local, blind, keyboard-first web app.")
    verbs = p.add_subparsers(dest="label_verb", required=True, metavar="ACTION")
    i = verbs.add_parser("init", help="seeded assignment of the pack's segments to raters")
    i.add_argument("pack", help="a labelling pack folder (sample-for-labelling --out)")
    i.add_argument("--raters", default=None,
                   help="comma-separated rater ids, e.g. r1,r2,r3 (with --extend: the assignment's, may be left out)")
    i.add_argument("--overlap", type=int, default=20, help="segments every rater labels (default 20)")
    i.add_argument("--seed", type=int, default=0, help="seed of the assignment (default 0)")
    i.add_argument("--run", default=None, help="the run folder (default: the pack's source_run)")
    i.add_argument("--extend", action="store_true", help="deal the segments a later batch added")
    i.set_defaults(handler=_cmd_init)
    s = verbs.add_parser("serve", help="the rater's web app on 127.0.0.1")
    s.add_argument("pack")
    s.add_argument("--rater", required=True)
    s.add_argument("--port", type=int, default=None, help="port (default: fixed by pack and rater; 0: any free)")
    s.add_argument("--no-browser", action="store_true", help="print the URL only")
    s.set_defaults(handler=_cmd_serve)
    st = verbs.add_parser("status", help="progress per rater and agreement on the overlap")
    st.add_argument("pack")
    st.add_argument("--n-boot", type=int, default=500, help="bootstrap resamples (default 500)")
    st.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    st.add_argument("--json", action="store_true")
    st.set_defaults(handler=_cmd_status)
    r = verbs.add_parser("review", help="the adjudication queue; adjudicated labels kept apart")
    r.add_argument("pack")
    r.add_argument("--threshold", type=int, default=2, help="a dimension's spread above this is a disagreement")
    r.add_argument("--json", action="store_true")
    r.add_argument("--adjudicate", metavar="SEGMENT", default=None)
    r.add_argument("--reviewer", default=None)
    r.add_argument("--scores", default=None, help="the four dimensions, e.g. 7,8,6,9 ('-' for no answer)")
    r.add_argument("--verdict", default=None)
    r.add_argument("--comment", default=None)
    r.add_argument("--show-judge", action="store_true", help="the judge's grades of segments the reviewer labelled")
    r.add_argument("--serve", action="store_true", help="the review page on 127.0.0.1 for --reviewer NAME")
    r.add_argument("--port", type=int, default=None, help="with --serve: port (default: fixed by pack and reviewer; 0: any free)")
    r.add_argument("--no-browser", action="store_true", help="with --serve: print the URL only")
    r.set_defaults(handler=_cmd_review)
    e = verbs.add_parser("export", help="the labels file import-labels writes and the studies read")
    e.add_argument("pack")
    e.add_argument("--out", default=None, help="file (default: studio.imported.csv in the pack)")
    e.add_argument("--adjudicated", action="store_true", help="the adjudicated labels (studio-adjudicated.csv)")
    e.set_defaults(handler=_cmd_export)
