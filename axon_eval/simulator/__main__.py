"""``python -m axon_eval.simulator [--<name>-seed N ...] --out DIR``: draw a rugby sample and build DIR from it.

``--write-committed`` redraws the bundled sample's set file (``axon_eval/fixtures/sets/sample.jsonl``
and ``sample_incomplete.jsonl``) with the committed seeds instead; the result must equal the committed
bytes (a test checks it).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from ..fixtures.build import FixtureSeeds
from ..fixtures.labelled import SETS_DIR
from .draw import build_held_out, draw_sample_set

#: Every seed of :class:`~axon_eval.fixtures.build.FixtureSeeds`, each settable with ``--<name>-seed``.
SEED_NAMES: tuple[str, ...] = tuple(FixtureSeeds.__dataclass_fields__)


def main(argv: list[str] | None = None) -> int:
    """Run the simulator; returns the exit status (0 drawn, 2 usage error)."""
    parser = argparse.ArgumentParser(prog="python -m axon_eval.simulator", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", help="data folder to build from the drawn sample")
    parser.add_argument("--write-committed", action="store_true",
                        help="redraw the bundled sample's set file with the committed seeds")
    defaults = FixtureSeeds()
    for name in SEED_NAMES:
        parser.add_argument(f"--{name}-seed", type=int, default=getattr(defaults, name),
                            help=f"{name} seed (default {getattr(defaults, name)}: the committed sample's)")
    args = parser.parse_args(argv)
    seeds = FixtureSeeds(**{n: getattr(args, f"{n}_seed") for n in SEED_NAMES})
    if args.write_committed:
        if seeds != defaults:
            parser.error("--write-committed draws with the committed seeds; drop the --<name>-seed options")
        with tempfile.TemporaryDirectory(prefix="axon-sample-") as tmp:
            draw_sample_set(SETS_DIR, seeds, Path(tmp) / "sports.sqlite")
        print(f"wrote {SETS_DIR / 'sample.jsonl'}")
        return 0
    if not args.out:
        parser.error("expected --out DIR (or --write-committed)")
    try:
        summary = build_held_out(args.out, seeds)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    json.dump({k: summary[k] for k in ("turns", "segments", "verdict", "seeds")}, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
