"""Cost of a paid run: the estimate printed before it starts, and the budget that stops it.

Estimate (USD) for the views a run will send to a priced model, per judge call::

    input_tokens  ~= (len(system prompt) + len(view text)) / CHARS_PER_TOKEN
    output_tokens ~= EXPECTED_OUTPUT_TOKENS
    cost           = prices.cost_usd(model, usage, batch=...)

with ``CHARS_PER_TOKEN = 3.5`` (English and SQL, a conservative rule of thumb: real tokenisers give
3.5-4.5 characters per token on such text, so the estimate errs high) and ``EXPECTED_OUTPUT_TOKENS =
250`` (a verdict JSON with a few sentences of explanation). The system prompt is counted at the full
input price on every call, ignoring prompt-cache reads, again so the estimate errs high. It is an
estimate, printed as one; the manifest records it beside the cost the API reported.

Only leaf LLM judges (objects with a ``model`` found in the price table and a ``prompt``) cost money;
``repeat(.., n)`` multiplies by n and ``ensemble`` sums its members. Unpriced models give ``None``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..judges.prices import TokenUsage, cost_usd
from ..view import EvidenceView

CHARS_PER_TOKEN = 3.5
EXPECTED_OUTPUT_TOKENS = 250


def format_usd(amount: float | None) -> str:
    """US dollars for people: 3 significant digits, at most 6 decimals (``$0.0397``, ``$0.004``, ``$12.3``);
    ``unknown`` for ``None``."""
    from ..display import fmt_number

    return "unknown" if amount is None else f"${fmt_number(amount, 3, max_decimals=6)}"


class BudgetExceeded(RuntimeError):
    """Judging the next views would take the run's reported cost above ``max_cost_usd``."""


def leaf_judges(judge: Any) -> list[tuple[Any, int]]:
    """``[(leaf judge, calls per view)]``: unwraps ``repeat`` (x n), ``ensemble`` (each member), ``noise``
    and ``simulate`` wrappers (their inner judge)."""
    members = getattr(judge, "members", None)
    if members:
        return [pair for m in members for pair in leaf_judges(m)]
    inner = getattr(judge, "inner", None)
    if inner is not None:
        n = int(getattr(judge, "n", 1)) if type(judge).__name__ == "RepeatJudge" else 1
        return [(leaf, k * n) for leaf, k in leaf_judges(inner)]
    return [(judge, 1)]


def is_paid(judge: Any) -> bool:
    """True when any leaf of ``judge`` calls a model API (it has a prompt and a model name)."""
    return any(hasattr(leaf, "prompt") and hasattr(leaf, "max_tokens") for leaf, _ in leaf_judges(judge))


def unpriced_models(judge: Any) -> list[str]:
    """Models of the paid leaves of ``judge`` that the price table does not know (a budget cannot be kept
    for them)."""
    return sorted({leaf.model for leaf, _ in leaf_judges(judge)
                   if hasattr(leaf, "prompt") and hasattr(leaf, "max_tokens")
                   and cost_usd(leaf.model, TokenUsage(input_tokens=1, output_tokens=1)) is None})


def estimate_view_cost(judge: Any, view: EvidenceView, *, batch: bool = False) -> float | None:
    """Estimated USD for judging one view with ``judge`` (all samples and members); ``None`` when a paid
    leaf's model has no price."""
    total = 0.0
    for leaf, calls in leaf_judges(judge):
        prompt = getattr(leaf, "prompt", None)
        if prompt is None or not hasattr(leaf, "max_tokens"):
            continue  # code judges (heuristic, replay) are free
        chars = len(getattr(prompt, "text", "")) + len(view.text)
        usage = TokenUsage(input_tokens=int(chars / CHARS_PER_TOKEN) + 1,
                           output_tokens=min(EXPECTED_OUTPUT_TOKENS, int(getattr(leaf, "max_tokens", 1024))))
        cost = cost_usd(leaf.model, usage, batch=batch)
        if cost is None:
            return None
        total += cost * calls
    return total


def estimate_cost(judge: Any, views: Iterable[EvidenceView], *, batch: bool = False) -> float | None:
    """Sum of :func:`estimate_view_cost` over ``views`` (``None`` when any is unpriced)."""
    total = 0.0
    for view in views:
        cost = estimate_view_cost(judge, view, batch=batch)
        if cost is None:
            return None
        total += cost
    return total
