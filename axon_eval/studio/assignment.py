"""Who labels what, in which order: the seeded assignment of a labelling pack's segments to raters.

:func:`plan_assignment` is pure. Of the pack's ``n`` segments, an **overlap set** of ``k`` segments (drawn
uniformly without replacement) goes to every rater, so that agreement between raters (Cohen's kappa,
Krippendorff's alpha) is measured on items chosen before anyone labels and independently of what they
say. The other ``n - k`` segments are dealt round-robin, after a seeded shuffle, so the raters' shares
differ by at most one. Each rater's queue (overlap plus share) is then shuffled on its own, and ordered by
batch (the design's first batch before its second: under a batch-sequential design the next segment
always comes from the earliest batch still open). Every random choice comes from one
``numpy.random.default_rng(seed)`` stream in a fixed order, so the same pack, raters, overlap and seed
give the same assignment.

Reference: Krippendorff, K. (2004), *Content Analysis*, 2nd ed., ch. 11 (reliability data: every coder
codes the same units, chosen before coding).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

#: The pattern of a rater id (letters, digits, ``.``, ``_`` and ``-``; it names the file ``labels/<rater>.jsonl``).
RATER_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
#: Rater ids the studio keeps for itself.
RESERVED_RATERS: frozenset[str] = frozenset({"adjudicated"})
ASSIGNMENT_VERSION = 1


@dataclass(frozen=True)
class Assignment:
    """A seeded assignment: ``queues`` maps each rater to its ordered segment ids; ``overlap`` lists the
    segments every rater labels (in the pack's order); ``batches`` maps each segment to its batch."""

    raters: tuple[str, ...]
    overlap: tuple[str, ...]
    queues: Mapping[str, tuple[str, ...]]
    seed: int
    batches: Mapping[str, int]

    def to_json(self) -> dict[str, Any]:
        """The content of ``assignment.json``."""
        return {"version": ASSIGNMENT_VERSION, "seed": self.seed, "raters": list(self.raters),
                "method": ("overlap: k segments drawn uniformly without replacement, labelled by every rater; the "
                           "rest shuffled and dealt round-robin; each rater's queue shuffled, then ordered by batch; "
                           "one numpy default_rng(seed) stream"),
                "overlap": list(self.overlap), "queues": {r: list(q) for r, q in self.queues.items()},
                "batches": dict(self.batches)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Assignment:
        """Read the content of ``assignment.json``; ``ValueError`` naming what is wrong."""
        if data.get("version") != ASSIGNMENT_VERSION:
            raise ValueError(f"assignment.json: version {data.get('version')!r}; expected {ASSIGNMENT_VERSION}")
        raters = tuple(str(r) for r in data["raters"])
        queues = {str(r): tuple(str(s) for s in q) for r, q in data["queues"].items()}
        if set(queues) != set(raters):
            raise ValueError(f"assignment.json: queues for {sorted(queues)}, raters {list(raters)}")
        return cls(raters, tuple(str(s) for s in data["overlap"]), queues, int(data["seed"]),
                   {str(k): int(v) for k, v in (data.get("batches") or {}).items()})


def check_raters(raters: Sequence[str]) -> tuple[str, ...]:
    """The rater ids, checked: at least one, each matching :data:`RATER_PATTERN`, none repeated or reserved."""
    out = tuple(str(r).strip() for r in raters if str(r).strip())
    if not out:
        raise ValueError("give at least one rater id (--raters r1,r2)")
    for r in out:
        if not RATER_PATTERN.match(r):
            raise ValueError(f"rater id {r!r}: expected letters, digits, '.', '_' or '-' (at most 64, not "
                             "starting with '.', '_' or '-')")
        if r in RESERVED_RATERS:
            raise ValueError(f"rater id {r!r} is reserved for the adjudicated labels")
    dup = sorted({r for r in out if out.count(r) > 1})
    if dup:
        raise ValueError(f"rater id(s) {dup} given twice")
    return out


def plan_assignment(segments: Sequence[str], raters: Sequence[str], overlap: int, seed: int,
                    batches: Mapping[str, int] | None = None) -> Assignment:
    """The seeded assignment of ``segments`` (unique ids, in the pack's order) to ``raters``.

    ``overlap`` (``k``, ``0 <= k <= n``) segments go to every rater; the rest are split so that shares
    differ by at most one; each queue is shuffled and then stably ordered by ``batches`` (segment ->
    batch number; absent: all batch 1). With one rater every segment is that rater's. ``ValueError``
    naming a bad overlap, a repeated segment or a bad rater id.
    """
    ids = [str(s) for s in segments]
    if len(set(ids)) != len(ids):
        dup = sorted({s for s in ids if ids.count(s) > 1})[:5]
        raise ValueError(f"segment id(s) {dup} appear more than once in the pack")
    names = check_raters(raters)
    n = len(ids)
    if isinstance(overlap, bool) or not isinstance(overlap, int | np.integer) or not 0 <= int(overlap) <= n:
        raise ValueError(f"overlap {overlap!r}: expected an integer from 0 to the pack's {n} segments")
    k = n if len(names) == 1 else int(overlap)
    batch_of = {s: int((batches or {}).get(s, 1)) for s in ids}
    rng = np.random.default_rng(int(seed))
    chosen = set(rng.choice(n, size=k, replace=False).tolist()) if k else set()
    shared = [ids[i] for i in sorted(chosen)]
    rest = [ids[i] for i in range(n) if i not in chosen]
    dealt = [rest[i] for i in rng.permutation(len(rest))]
    queues: dict[str, tuple[str, ...]] = {}
    for j, rater in enumerate(names):
        own = shared + dealt[j::len(names)]
        shuffled = [own[i] for i in rng.permutation(len(own))]
        queues[rater] = tuple(sorted(shuffled, key=lambda s: batch_of[s]))
    return Assignment(names, tuple(shared), queues, int(seed), batch_of)


def extend_assignment(current: Assignment, segments: Sequence[str], batches: Mapping[str, int]) -> Assignment:
    """``current`` with the pack's segments it does not yet hold (a later batch of the design) dealt to
    the raters: shuffled and dealt round-robin from the rater with the shortest queue, appended to each
    queue in a shuffled order. Seeded by the assignment's seed and the number of segments already held;
    the overlap does not grow."""
    held = {s for q in current.queues.values() for s in q}
    new = [str(s) for s in segments if str(s) not in held]
    if not new:
        return current
    rng = np.random.default_rng([current.seed, len(held)])
    dealt = [new[i] for i in rng.permutation(len(new))]
    order = sorted(current.raters, key=lambda r: (len(current.queues[r]), current.raters.index(r)))
    queues = {r: list(q) for r, q in current.queues.items()}
    for j, rater in enumerate(order):
        share = dealt[j::len(order)]
        queues[rater].extend(share[i] for i in rng.permutation(len(share)))
    batch_of = {**current.batches, **{s: int(batches.get(s, 1)) for s in new}}
    return Assignment(current.raters, current.overlap, {r: tuple(q) for r, q in queues.items()}, current.seed,
                      batch_of)
