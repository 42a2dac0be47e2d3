"""Few-shot demonstrations as real conversation turns (DSPy-style demos on an ADK agent).

A small model copies the form of what it already said far more readily than it obeys an
instruction: a demo written into the instruction barely moves SmolLM2, the same demo as a prior
user turn and model turn does. :class:`FewShotDemos` is the agent's ``before_model_callback``
that puts them there: it prepends one user/model pair per demo to that agent's own model request
(never to the session, so no other agent and no later turn sees them) and lets the call go on.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from studio.model.records import Demo, checked_demos

if TYPE_CHECKING:
    from google.adk.agents.callback_context import CallbackContext
    from google.adk.models.llm_request import LlmRequest
    from google.genai.types import Content


class FewShotDemos:
    """``before_model_callback`` prepending ``demos`` as prior turns; returns None, so the model
    is still called (and any later callback still runs)."""

    def __init__(self, demos: Iterable[Demo | dict[str, str]]) -> None:
        self.demos: tuple[Demo, ...] = tuple(checked_demos(list(demos)))

    def __call__(self, callback_context: CallbackContext | None = None,
                 llm_request: LlmRequest | None = None, **_: object) -> None:
        if llm_request is not None and self.demos:
            llm_request.contents[:0] = self.turns()
        return None

    def turns(self) -> list[Content]:
        """The demos as ``types.Content``: user input, then the model's reply, per demo."""
        from google.genai import types

        turns = []
        for demo in self.demos:
            turns.append(types.Content(role="user", parts=[types.Part(text=demo.input)]))
            turns.append(types.Content(role="model", parts=[types.Part(text=demo.output)]))
        return turns

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FewShotDemos) and other.demos == self.demos

    def __hash__(self) -> int:
        return hash(self.demos)

    def __repr__(self) -> str:
        return f"FewShotDemos({len(self.demos)} demos)"


def callbacks_of(agent: object) -> list[Any]:
    """The agent's ``before_model_callback`` as a list (ADK accepts one callable or a list)."""
    current = getattr(agent, "before_model_callback", None)
    if current is None:
        return []
    return list(current) if isinstance(current, list) else [current]


def demos_of(agent: object) -> list[Demo]:
    """The demos the studio gave ``agent`` (none when it has no :class:`FewShotDemos`)."""
    for callback in callbacks_of(agent):
        if isinstance(callback, FewShotDemos):
            return list(callback.demos)
    return []


def with_demos(agent: object, demos: list[Demo]) -> Any:
    """The ``before_model_callback`` value for ``agent`` showing ``demos``: the person's own
    callbacks kept in order, ours first (so theirs see the request the model will get), none
    when there are no demos."""
    own = [c for c in callbacks_of(agent) if not isinstance(c, FewShotDemos)]
    callbacks = ([FewShotDemos(demos)] if demos else []) + own
    if not callbacks:
        return None
    return callbacks[0] if len(callbacks) == 1 else callbacks
