"""Small JSON helpers shared by the executor, critics and evaluators."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any


def to_jsonable(value: Any) -> Any:
    """Plain JSON types only (pydantic models dumped, the rest as text), so it can be stored."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [to_jsonable(v) for v in value]
    if hasattr(value, "model_dump"):
        return to_jsonable(value.model_dump(mode="json", exclude_none=True))
    return str(value)


def first_json_object(text: str, *, max_starts: int | None = None) -> dict[str, Any] | None:
    """The first JSON object embedded in prose (``Here you go: {"score": 1} ...``), trying at
    most ``max_starts`` opening braces."""
    decoder = json.JSONDecoder()
    start = text.find("{")
    tried = 0
    while start != -1 and (max_starts is None or tried < max_starts):
        tried += 1
        try:
            value, _ = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            value = None
        if isinstance(value, dict):
            return value
        start = text.find("{", start + 1)
    return None
