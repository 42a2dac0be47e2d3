"""Small JSON helpers shared by the executor, critics and evaluators."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any, TypeAlias, overload

JsonValue: TypeAlias = "str | int | float | bool | None | list[JsonValue] | dict[str, JsonValue]"
"""A value as JSON holds it (parsed JSON or YAML, a model's reply, a record's JSON field).
Read it with ``isinstance`` before use: a model or a person may have written any of these."""

JsonDict: TypeAlias = dict[str, JsonValue]
"""A JSON object: what ``json.loads`` returns for ``{...}``."""


@overload
def to_jsonable(value: Mapping[str, object]) -> JsonDict: ...


@overload
def to_jsonable(value: object) -> JsonValue: ...


def to_jsonable(value: object) -> JsonValue:
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


MAX_JSON_DEPTH = 64
"""How deeply JSON a person gives (a dataset row, an eval set) may nest objects and arrays.
Python's parser, and pydantic's, go one level deeper per bracket: a few thousand levels end in
a RecursionError, a traceback instead of a line saying what is wrong."""


def json_depth(text: str, limit: int = MAX_JSON_DEPTH) -> int:
    """The deepest bracket nesting of a JSON text (brackets inside strings skipped), without
    parsing it; 0 when the text holds too few brackets to nest deeper than ``limit``."""
    if text.count("[") + text.count("{") <= limit:
        return 0
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def finite_float(text: str) -> float:
    """``json.loads``'s ``parse_float`` for JSON a person gives: a number too large for a float
    (``1e400``) is refused, where ``json`` would read it as infinity, which the studio refuses
    everywhere else (NaN and ``Infinity`` are refused by ``parse_constant``)."""
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is beyond the range of a number (it would be read as "
                         "infinity); write a number between -1.8e308 and 1.8e308, or null")
    return value


def first_non_finite(value: object, path: str = "") -> tuple[str, float] | None:
    """The first NaN or infinity in ``value`` (nested mappings and lists) and where it is, as
    ``path.key[0]``; None when every number is finite."""
    stack = [(value, path)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            return where, item
        if isinstance(item, Mapping):
            stack += [(v, f"{where}.{k}" if where else str(k)) for k, v in item.items()]
        elif isinstance(item, list | tuple):
            stack += [(v, f"{where}[{i}]") for i, v in enumerate(item)]
    return None


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


def finite_json(value: object) -> Any:
    """``value`` with NaN and infinities as None: they are not JSON (strict parsers and
    PostgreSQL refuse them). A value with none (nearly every one) is returned as it is, tuples
    and all (JSON writes them as lists anyway): this runs on every trace, event and checkpoint
    the store writes, and the check is one pass of the C encoder instead of a walk in Python."""
    return value if _all_finite(value) else _made_finite(value)


def _all_finite(value: object) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if not isinstance(value, dict | list | tuple):
        return True
    try:
        json.dumps(value, allow_nan=False)
    except (ValueError, TypeError):  # a NaN or an infinity, or a value JSON cannot encode
        return False
    return True


def _made_finite(value: object) -> Any:
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
