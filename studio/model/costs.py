"""Money as the studio shows it: LiteLLM's prices are US dollars, often fractions of a cent; and
the sanity bound on what one model call may report (:func:`implausible_call`)."""

from __future__ import annotations

import math


def format_cost(usd: float) -> str:
    """``$0`` for nothing (the embedded and scripted models), else dollars with enough digits
    that a fraction of a cent is not shown as ``$0.00``."""
    if not isinstance(usd, int | float) or not math.isfinite(usd) or usd <= 0:
        return "$0"
    if usd >= 1:
        return f"${usd:,.2f}"
    return f"${usd:.4f}" if usd >= 0.0001 else f"${usd:.2g}"


MAX_CALL_TOKENS = 5_000_000
"""More tokens than any model reads and writes in one call (the largest contexts hold two
million): a provider reporting more reports a fault, not a use."""
MAX_CALL_COST_USD = 1_000.0
"""More than any one model call costs at any provider's price: a figure above it comes from a
faulty usage report or price, not from a call."""


def implausible_call(tokens: float, cost_usd: float = 0.0) -> str | None:
    """Why one call's reported usage (or its price) cannot be believed, or None when it can.
    Such a call is left out of the token and cost figures and kept, raw, in the trial's trace
    (``usage.implausible``, ``unpriced_calls``), so one faulty report never shows a run at
    billions of dollars."""
    if not math.isfinite(tokens) or tokens > MAX_CALL_TOKENS or tokens < 0:
        return f"reported {tokens:,.0f} tokens for one call (more than {MAX_CALL_TOKENS:,})"
    if not math.isfinite(cost_usd) or cost_usd > MAX_CALL_COST_USD:
        return f"priced one call at ${cost_usd:,.2f} (more than ${MAX_CALL_COST_USD:,.0f})"
    return None
