"""A tool invocation: what a scripted model asks ADK to run, what trajectory matching compares."""

from __future__ import annotations

from typing import Any, NamedTuple


class ToolCall(NamedTuple):
    """One tool invocation: the tool's name, its arguments and the call id when known."""

    name: str
    args: dict[str, Any]
    id: str | None = None
