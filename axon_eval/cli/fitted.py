"""``python -m axon_eval fit-heuristic``: refit the fitted offline judge and print its validation table.

::

    python -m axon_eval fit-heuristic [--data DIR] [--out FILE] [--keep-all-families]
        [--no-validate] [--n-boot N] [--seed S]

Reads every labelled set of ``--data`` (default the repository's ``data/turns`` and ``data/realdb``,
the sets on real public sample databases: each ``<domain>_turns.jsonl`` with its
``<domain>_labels.csv``, and ``sample_turns.jsonl`` with ``labels.csv``; a ``--data`` folder is read
alone), validates leave-one-domain-out (:func:`axon_eval.stats.lodo.validate`: the ablation,
the families whose out-of-domain contribution is negative dropped unless ``--keep-all-families``, the
per-domain and pooled table with bootstrap intervals, the rule judge ``heuristic-rules`` beside on the
same folds, the IN-SAMPLE figures beside, the goals), fits the model on all the sets and writes the
coefficient file ``--out``
(default the packaged file of the ``heuristic-fitted`` judge). The judge id of the written
coefficients is printed; use them with ``--judge 'heuristic-fitted(file=<FILE>)'``.

Exit status: 0 written; 2 usage error (no labelled set found, unreadable data).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from .reference import plain_help


def _fmt(value: Any, digits: int = 3) -> str:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return str(value)
    return "n/a" if v != v else f"{v:.{digits}f}"


def _ci(row: Any, name: str) -> str:
    if name not in row or _fmt(row[name]) == "n/a":
        return "n/a"
    return f"{_fmt(row[name])} [{_fmt(row[name + '_low'], 2)}, {_fmt(row[name + '_high'], 2)}]"


def format_report(report: Any) -> str:
    """The validation report as plain text: LODO table, goals, reliability, ablation, in-sample figures beside."""
    lines = ["Leave-one-domain-out (fitted on every other domain; 95% bootstrap intervals); the rule judge "
             "heuristic-rules beside on the same folds (not fitted: no P(good), no calibration)",
             "", "| domain | n | good | AUC score | AUC P(good) | verdict kappa | ECE P(good) | good kept "
             "| rewrites | rewrites judged good | heuristic-rules AUC score | heuristic-rules kappa "
             "| heuristic-rules good kept | heuristic-rules rewrites judged good |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for _, r in report.table.iterrows():
        lines.append(f"| {r['domain']} | {r['n']} | {r['n_good']} | {_ci(r, 'auc_score')} | {_ci(r, 'auc_p_good')} | "
                     f"{_ci(r, 'kappa')} | {_ci(r, 'ece')} | {_ci(r, 'good_kept')} | {r.get('n_equivalent', 0)} | "
                     f"{_ci(r, 'equivalent_good')} | {_ci(r, 'rule_auc_score')} | {_ci(r, 'rule_kappa')} | "
                     f"{_ci(r, 'rule_good_kept')} | {_ci(r, 'rule_equivalent_good')} |")
    lines += ["", "Goals (leave-one-domain-out)", ""]
    for name, g in report.goals.items():
        where = f" ({g['domain']})" if g.get("domain") else f" (n {g['n']})" if "n" in g else ""
        lines.append(f"- {name}: {_fmt(g['value'])}{where}, goal {g['goal']}: {'met' if g['met'] else 'NOT MET'}")
    lines += ["", "Reliability of P(good), pooled out-of-fold predictions (equal-width bins)", "",
              "| P(good) bin | n | mean P(good) | share good |", "|---|---|---|---|"]
    for _, r in report.reliability.iterrows():
        if r["n"]:
            lines.append(f"| {r['low']:.1f}-{r['high']:.1f} | {int(r['n'])} | {_fmt(r['mean_p'])} | "
                         f"{_fmt(r['share_good'])} |")
    lines += ["", "Ablation (each signal family dropped; change in pooled LODO AUC)", "",
              "| family dropped | signals | AUC P(good) | change | AUC score | change |", "|---|---|---|---|---|---|"]
    for _, r in report.ablation.iterrows():
        lines.append(f"| {r['family']} | {r['signals']} | {_fmt(r['auc_p_good'])} | {float(r['delta_auc_p_good']):+.3f} | "
                     f"{_fmt(r['auc_score'])} | {float(r['delta_auc_score']):+.3f} |")
    lines.append("")
    lines.append("Families dropped (negative out-of-domain contribution): "
                 + (", ".join(report.dropped) if report.dropped else "none"))
    lines += ["", "IN-SAMPLE (one model fitted on every set and scored on the same sets; beside only)", "",
              "| domain | AUC score | AUC P(good) | verdict kappa | ECE P(good) |", "|---|---|---|---|---|"]
    for _, r in report.in_sample.iterrows():
        lines.append(f"| {r['domain']} (in-sample) | {_fmt(r['auc_score'])} | {_fmt(r['auc_p_good'])} | "
                     f"{_fmt(r['kappa'])} | {_fmt(r['ece'])} |")
    return "\n".join(lines)


def _cmd_fit_heuristic(args: argparse.Namespace) -> int:
    from ..judges.heuristic.fitted import DEFAULT_COEFFICIENTS, fit_model, save_model
    from ..judges.heuristic.signals import SIGNAL_NAMES, family_of
    from ..calibration.training import labelled_sets, training_frame
    from ..stats.lodo import validate

    sets = labelled_sets(args.data)
    if not sets:
        where = args.data or "data/turns, data/realdb"
        print(f"error: no labelled set (<domain>_turns.jsonl with <domain>_labels.csv) in {where}", file=sys.stderr)
        return 2
    try:
        frame = training_frame(sets)
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    counts = frame["domain"].value_counts()
    listed = ", ".join(f"{s.domain} ({int(counts.get(s.domain, 0))})" for s in sets)
    print(f"labelled sets: {listed}; {len(frame)} segments")
    signals = SIGNAL_NAMES
    if not args.no_validate:
        if frame["domain"].nunique() < 2:
            print("error: leave-one-domain-out needs at least 2 domains (use --no-validate)", file=sys.stderr)
            return 2
        report = validate(frame, drop_harmful=not args.keep_all_families, n_boot=args.n_boot, seed=args.seed)
        print()
        print(format_report(report))
        signals = report.signals
    elif not args.keep_all_families:
        print("(no validation: every signal family kept)")
    dropped = sorted({family_of(n) for n in SIGNAL_NAMES} - {family_of(n) for n in signals})
    model = fit_model(frame, signals, training={"sources": frame.attrs.get("sources", []),
                                               "dropped_families": dropped})
    out = Path(args.out) if args.out else DEFAULT_COEFFICIENTS
    digest = save_model(model, out)
    print(f"\nwrote {out} ({model.n_parameters} parameters; training data sha256 {model.training['data_sha256'][:12]})")
    print(f"judge id: heuristic-fitted[{digest[:10]}]")
    return 0


def register(sub: Any) -> None:
    """Add the ``fit-heuristic`` verb to the subparsers ``sub``."""
    p = sub.add_parser("fit-heuristic", help="refit the fitted offline judge and print its validation table",
                       description=plain_help(__doc__ or ""), formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", default=None,
                   help="folder of labelled sets, read alone (default: the repository's data/turns and data/realdb)")
    p.add_argument("--out", default=None, help="coefficient file to write (default: the packaged file)")
    p.add_argument("--keep-all-families", action="store_true",
                   help="keep every signal family, even one whose out-of-domain contribution is negative")
    p.add_argument("--no-validate", action="store_true", help="fit only: no leave-one-domain-out table")
    p.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples per interval (default 1000)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    p.set_defaults(handler=_cmd_fit_heuristic)
