"""Fixtures for the evaluator tests: scripted judge models behind the real ADK + LiteLLM path."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from studio.llm.scripted import recorded_requests, register_script, unregister_script


class Scripts:
    """Registers scripted models for one test and removes them afterwards."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def __call__(self, reply: Callable[[Any], Any] | Any) -> str:
        """Register ``reply`` (a function of the request, or a fixed reply); return the model."""
        name = f"t_{uuid.uuid4().hex[:10]}"
        self.names.append(name)
        fn = reply if callable(reply) else (lambda _request: reply)
        return register_script(name, fn)

    def requests(self, model: str) -> list[Any]:
        return recorded_requests(model.split("/", 1)[1])


@pytest.fixture
def scripts() -> Iterator[Scripts]:
    registry = Scripts()
    yield registry
    for name in registry.names:
        unregister_script(name)
