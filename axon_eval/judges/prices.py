"""Judge cost from the one price table ``prices.yaml`` (USD per million tokens, see its header).

``cost_usd(model, usage)`` with ``usage`` a :class:`TokenUsage`::

    cost = (input_tokens * input + output_tokens * output
            + cache_creation_tokens * cache_write + cache_read_tokens * cache_read) / 1e6
    cost *= batch_discount            # only for batch requests

``input_tokens`` are the tokens billed at the base input rate (for OpenAI: prompt tokens minus cached
tokens). An unknown model returns ``None`` (never 0); callers record why via :func:`price_note`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

import yaml

_RATE_FIELDS = ("input", "output", "cache_write", "cache_read")


@dataclass(frozen=True)
class TokenUsage:
    """Token counts of one call. ``input_tokens`` = uncached input billed at the base rate."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_creation_tokens: int = 0


@dataclass(frozen=True)
class PriceTable:
    copied_on: str
    note: str
    batch_discount: float
    models: dict[str, dict[str, float]]

    def rates(self, model: str) -> dict[str, float] | None:
        """Rates of ``model``: exact entry, else the longest entry ``e`` with ``model.startswith(e + "-")``."""
        if model in self.models:
            return self.models[model]
        candidates = [m for m in self.models if model.startswith(m + "-")]
        return self.models[max(candidates, key=len)] if candidates else None


def _validate(data: Any) -> PriceTable:
    if not isinstance(data, dict) or not isinstance(data.get("models"), dict):
        raise ValueError("prices.yaml must be a mapping with a 'models' mapping")
    models: dict[str, dict[str, float]] = {}
    for name, rates in data["models"].items():
        missing = [f for f in _RATE_FIELDS if f not in (rates or {})]
        if missing:
            raise ValueError(f"prices.yaml: model {name!r} lacks {missing}")
        models[str(name)] = {f: float(rates[f]) for f in _RATE_FIELDS}
        bad = {f: v for f, v in models[str(name)].items() if v < 0}
        if bad:
            raise ValueError(f"prices.yaml: model {name!r} has negative rates {bad}")
    return PriceTable(str(data.get("copied_on", "")), str(data.get("note", "")),
                      float(data.get("batch_discount", 1.0)), models)


@lru_cache(maxsize=1)
def price_table() -> PriceTable:
    """The packaged price table (read once)."""
    text = (resources.files("axon_eval.judges") / "prices.yaml").read_text(encoding="utf-8")
    return _validate(yaml.safe_load(text))


def cost_usd(model: str, usage: TokenUsage, *, batch: bool = False,
             table: PriceTable | None = None) -> float | None:
    """Cost in USD of one call (formula in the module docstring); ``None`` for an unknown model."""
    rates = (table or price_table()).rates(model)
    if rates is None:
        return None
    cost = (usage.input_tokens * rates["input"] + usage.output_tokens * rates["output"]
            + usage.cache_creation_tokens * rates["cache_write"]
            + usage.cache_read_tokens * rates["cache_read"]) / 1_000_000
    if batch:
        cost *= (table or price_table()).batch_discount
    return round(cost, 8)


def price_note(model: str) -> str | None:
    """A note for records whose cost is unknown, or ``None`` when the model has a price."""
    table = price_table()
    if table.rates(model) is not None:
        return None
    return (f"no price for model {model!r} in axon_eval/judges/prices.yaml (copied {table.copied_on}); "
            "cost_usd is None")
