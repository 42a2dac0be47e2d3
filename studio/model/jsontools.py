"""Small JSON helpers shared by the executor, critics and evaluators."""

from __future__ import annotations

import json
import math
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


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` that refuses a JSON object naming a key twice: which value was
    meant is ambiguous (``json`` would silently keep the last)."""
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise DuplicateKeyError(key)
        seen[key] = value
    return seen


class DuplicateKeyError(ValueError):
    """A JSON object names the same key twice."""

    def __init__(self, key: str) -> None:
        super().__init__(f"the key {key!r} appears twice, so its value is ambiguous")
        self.key = key


def finite_json(value: Any) -> Any:
    """``value`` with NaN and infinities as None: they are not JSON (strict parsers and
    PostgreSQL refuse them). A value with none (nearly every one) is returned as it is, tuples
    and all (JSON writes them as lists anyway): this runs on every trace, event and checkpoint
    the store writes, and the check is one pass of the C encoder instead of a walk in Python."""
    return value if _all_finite(value) else _made_finite(value)


def _all_finite(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if not isinstance(value, dict | list | tuple):
        return True
    try:
        json.dumps(value, allow_nan=False)
    except (ValueError, TypeError):  # a NaN or an infinity, or a value JSON cannot encode
        return False
    return True


def _made_finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _made_finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_made_finite(v) for v in value]
    return value


def first_json_object(text: str, *, max_starts: int | None = None,
                      strict_keys: bool = False) -> dict[str, Any] | None:
    """The first JSON object embedded in prose (``Here you go: {"score": 1} ...``), trying at
    most ``max_starts`` opening braces. ``strict_keys`` raises :class:`DuplicateKeyError` for
    an object that names a key twice. Raw control characters inside strings (a model's literal
    newline) are read as text, not refused."""
    decoder = json.JSONDecoder(object_pairs_hook=unique_keys if strict_keys else None,
                               strict=False)
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
