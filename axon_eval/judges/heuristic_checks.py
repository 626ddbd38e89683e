"""Compatibility module: the heuristic's checks live in the package :mod:`axon_eval.judges.heuristic`
(one module per job: ``lexicon``, ``text``, ``question``, ``sql_facts``, ``evidence_index``, ``claims``,
``periods``, ``wording``, ``targeting``, ``segments``, ``intent``, ``sql_quality``, ``relevance``,
``faithfulness``, ``judge``).

Every module-level name of those modules is re-exported here, so ``from axon_eval.judges import
heuristic_checks as hc`` keeps working for code written before the split. New code imports from
the package.
"""

from __future__ import annotations

from importlib import import_module as _import_module

_MODULES = ("lexicon", "text", "question", "sql_facts", "evidence_index", "claims", "common", "periods", "wording",
            "targeting", "segments", "intent", "sql_quality", "relevance", "faithfulness", "judge")
for _name in _MODULES:
    _module = _import_module(f"{__package__}.heuristic.{_name}")
    globals().update({k: v for k, v in vars(_module).items() if not k.startswith("__") and k != "annotations"})
del _name, _module
