"""The rugby sample's simulator: scenario templates over the sports warehouse, drawn with seeds.

An assistant's captured turn is simulated per scenario: a question template filled from the warehouse,
steps whose SQL really runs (:mod:`axon_eval.fixtures.capture`), an answer composed from the captured
rows with exactly the one defect the scenario seeds, and the constructed label of each segment. The
builders are :mod:`~axon_eval.simulator.scenarios` (with ``scenario_base``, ``scenario_sql``,
``scenario_answers``, ``scenario_tools`` and the warehouse ``queries``); :mod:`~axon_eval.simulator.draw`
draws a whole sample and writes it as a set file.

The bundled sample (``axon_eval/fixtures/sets/sample.jsonl``) was drawn with the committed seeds, and a
test redraws it byte for byte. ``python -m axon_eval.simulator --scenario-seed 11 --warehouse-seed 777
--out tmp/heldout`` draws a held-out sample and builds a data folder from it (what ``make bench``
measures the offline judge on, beside the committed sample).

The labels are CONSTRUCTED FROM THE SEEDED DEFECTS, not human judgements; no judge may read them.
"""

from .draw import build_held_out, draw_sample_set, sample_cases, write_sample_set

__all__ = ["build_held_out", "draw_sample_set", "sample_cases", "write_sample_set"]
