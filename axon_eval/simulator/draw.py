"""Drawing a rugby sample from the scenario templates: drafts, captures, and the sample set file.

The bundled sample is data (``axon_eval/fixtures/sets/sample.jsonl``, one case a line in capture order,
in the case format of :mod:`axon_eval.fixtures.labelled`). This module is how it was drawn, and how a
sample with other seeds is drawn for a held-out measure:

1. :func:`generate_drafts` runs every scenario builder in a fixed order (:data:`SCENARIO_COUNTS` order,
   then index) over one warehouse connection: its SQL really runs, its answer is composed from the rows;
2. :func:`assign_turns` gives each draft a region, surface, client, timestamp and turn id (seeded), and
   runs the generator's self-checks (:func:`check_planned`);
3. :func:`sample_cases` writes each turn as a case of the set format; :func:`incomplete_extra_turn` draws
   the one further clean turn whose event stream stops before its answer.

The same seeds give the same file byte for byte: the committed seeds reproduce ``sets/sample.jsonl``.
The labels are CONSTRUCTED FROM THE SEEDED DEFECTS, not human judgements; no judge may read them.
"""

from __future__ import annotations

import json
import random
import sqlite3
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from ..evidence import Turn, split_segments
from ..fixtures.build import INCOMPLETE_TURN_FILE, FixtureSeeds, build_all
from ..fixtures.capture import Capture
from ..fixtures.labelled import SetCase, check_case, spec, write_text
from ..warehouses.sports import build_warehouse
from .scenarios import MCP_TURNS, SCENARIO_COUNTS, Draft, ScenarioBook, builder, drop_answer

REGIONS = ("eu", "us")
SURFACES = ("web", "slack")  # plus "mcp" for the turns in MCP_TURNS
CLIENTS = ("client-a", "client-b", "client-c", "client-d", "client-e")
FIRST_CAPTURE = datetime(2026, 7, 1, 7, 30, 0, tzinfo=timezone.utc)


@dataclass
class Planned:
    """One draft on its way to a captured turn."""

    scenario: str
    index: int
    draft: Draft
    turn: Turn | None = None


def check_planned(p: Planned) -> None:
    """Generator self-checks: the case passes every check of the set format
    (:func:`~axon_eval.fixtures.labelled.check_case`: one label per segment, claims in the answer, the
    verdict equal to the band of the range midpoints), and a ``no_tools`` turn has no steps."""
    turn = p.turn
    assert turn is not None
    try:
        check_case(SetCase.model_validate(_as_case(p)), turn)
    except ValueError as err:  # a pydantic ValidationError is a ValueError too
        raise AssertionError(f"{turn.turn_id} ({p.scenario} #{p.index}): {err}") from None
    if p.scenario == "no_tools" and turn.steps:
        raise AssertionError("no_tools turn has steps")


def generate_drafts(conn: sqlite3.Connection, seeds: FixtureSeeds = FixtureSeeds()) -> list[Planned]:
    """Run every scenario builder in a fixed order (scenario table order, then index)."""
    book = ScenarioBook(Capture(conn, random.Random(seeds.timing)), random.Random(seeds.scenario))
    planned = []
    for scenario, n in SCENARIO_COUNTS.items():
        make = builder(book, scenario)
        for k in range(n):
            draft = make(k)
            if (scenario, k) in MCP_TURNS:
                if not draft.mcp_ok:
                    raise AssertionError(f"{scenario}#{k} cannot be an mcp capture")
                draft = drop_answer(draft)
            planned.append(Planned(scenario, k, draft))
    return planned


def assign_turns(planned: list[Planned], seeds: FixtureSeeds = FixtureSeeds()) -> list[Planned]:
    """Give every draft a region, surface, client, timestamp and turn id; returns them in time order."""
    rng = random.Random(seeds.assignment)
    order = list(range(len(planned)))
    rng.shuffle(order)
    clock = {r: FIRST_CAPTURE + timedelta(minutes=rng.randint(0, 300)) for r in REGIONS}
    counters = {r: 0 for r in REGIONS}
    out = []
    for idx in order:
        p = planned[idx]
        region = REGIONS[0] if rng.random() < 0.5 else REGIONS[1]
        mcp = (p.scenario, p.index) in MCP_TURNS
        surface = "mcp" if mcp else rng.choice(SURFACES)
        client = rng.choice(CLIENTS)
        clock[region] += timedelta(seconds=rng.randint(3 * 3600, 21 * 3600))
        counters[region] += 1
        obj = {
            "schema_version": 1, "turn_id": f"{region}-{counters[region]:04d}",
            "captured_at": clock[region].strftime("%Y-%m-%dT%H:%M:%SZ"), "region": region,
            "surface": surface, "client": client, "question": p.draft.question,
            "answer": p.draft.answer, "steps": p.draft.steps,
        }
        if p.draft.segments:
            obj["segments"] = p.draft.segments
        p.turn = Turn.model_validate(obj)
        check_planned(p)
        out.append(p)
    last = max(p.turn.captured_at for p in out)
    if last.month != 7:
        raise AssertionError(f"captures run past July 2026: {last}")
    out.sort(key=lambda p: (p.turn.captured_at, p.turn.turn_id))
    return out


def incomplete_extra_turn(conn: sqlite3.Connection, planned: list[Planned],
                          seeds: FixtureSeeds = FixtureSeeds()) -> Turn:
    """A further clean turn, never in the sample, used only as the incomplete event stream."""
    book = ScenarioBook(Capture(conn, random.Random(seeds.events + 1)), random.Random(seeds.events + 2))
    draft = book.clean(0)
    last = max(p.turn.captured_at for p in planned if p.turn.region == "eu")
    n_eu = sum(1 for p in planned if p.turn.region == "eu")
    return Turn.model_validate({
        "schema_version": 1, "turn_id": f"eu-{n_eu + 1:04d}",
        "captured_at": (last + timedelta(minutes=47)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": "eu", "surface": "web", "client": "client-b", "question": draft.question,
        "answer": draft.answer, "steps": draft.steps})


def _as_case(p: Planned) -> dict[str, Any]:
    """One captured turn as a case of the set format (:class:`axon_eval.fixtures.labelled.SetCase`).

    A label's ``class`` is its defect and its ``reason`` the label's note (empty on some clean labels).
    """
    t = p.turn
    assert t is not None
    return {
        "id": f"{p.scenario}_{p.index}", "family": p.scenario, "question": p.draft.question,
        "answer": p.draft.answer,
        "labels": [{"class": lb.defect, "reason": lb.note, "defect": lb.defect, "verdict": lb.verdict,
                    "intent": list(lb.intent), "sql": list(lb.sql), "relevance": list(lb.relevance),
                    "faithfulness": None if lb.faithfulness is None else list(lb.faithfulness),
                    "claims": [c for c in lb.claims if c]} for lb in p.draft.labels],
        "steps": p.draft.steps, "segments": p.draft.segments or None,
        "turn": {"turn_id": t.turn_id, "captured_at": t.captured_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
                 "region": t.region, "surface": t.surface, "client": t.client},
    }


def sample_cases(planned: list[Planned]) -> list[dict[str, Any]]:
    """Each captured turn of ``planned`` as a case of the set format, in order (see :func:`_as_case`)."""
    return [_as_case(p) for p in planned]


def write_sample_set(folder: str | Path, conn: sqlite3.Connection, seeds: FixtureSeeds = FixtureSeeds()) -> Path:
    """Draw the sample from the warehouse ``conn`` with ``seeds`` and write its set file and incomplete turn
    into ``folder`` (``sample.jsonl`` and ``sample_incomplete.jsonl``); returns ``folder``."""
    folder = Path(folder)
    planned = assign_turns(generate_drafts(conn, seeds), seeds)
    extra = incomplete_extra_turn(conn, planned, seeds)
    lines = "".join(json.dumps(c, ensure_ascii=False) + "\n" for c in sample_cases(planned))
    write_text(folder / spec("sample").cases, lines)
    write_text(folder / INCOMPLETE_TURN_FILE, extra.to_json_line() + "\n")
    return folder


def draw_sample_set(folder: str | Path, seeds: FixtureSeeds, warehouse: str | Path) -> Path:
    """Build the sports warehouse of ``seeds`` at ``warehouse``, draw the sample on it and write its set
    files into ``folder`` (:func:`write_sample_set`); returns ``folder``."""
    wh_path = build_warehouse(warehouse, seeds.warehouse)
    conn = sqlite3.connect(f"file:{wh_path}?mode=ro", uri=True)
    try:
        return write_sample_set(folder, conn, seeds)
    finally:
        conn.close()


def build_held_out(out: str | Path, seeds: FixtureSeeds) -> dict[str, Any]:
    """Draw a sample with ``seeds`` and build ``out`` from it as :func:`~axon_eval.fixtures.build_all`
    builds ``data/`` (the sets whose rows are the committed warehouse's, and the READMEs, are left out on
    another warehouse seed); returns the build summary."""
    out = Path(out)
    sample_dir = draw_sample_set(out / "sets", seeds, out / "warehouse" / "sports.sqlite")
    return build_all(out, seeds, sample_dir=sample_dir)
