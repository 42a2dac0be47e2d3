"""Money as the studio shows it: LiteLLM's prices are US dollars, often fractions of a cent."""

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
