"""Trajectory normalization: every shape an agent trace arrives in becomes ``list[Step]``.

Accepted shapes (detected automatically):

1. OpenAI-style message lists: ``[{"role": "assistant", "tool_calls": [...]}, {"role": "tool",
   ...}]``, including the legacy ``function_call`` / ``role: "function"`` form; or a dict holding
   them under ``messages``.
2. Canonical conversation turns: ``[{"speaker": "Agent (Action)", "text": "search(query='x')"}]``
   (tool calls flattened into action turns), or a dict holding them under ``conversation``.
3. A trace object with a ``conversation`` attribute, or any object with ``model_dump()`` /
   ``to_dict()`` returning one of these shapes.
4. The studio executor's trace (``{"events": [...], "tool_calls": [...], ...}``), its ``events``
   list, or its ``tool_calls`` list (``[{"id", "name", "args", "result"}]``); raw ADK ``Event``
   objects work too.
5. A plain list of tool calls: ``{"name": ..., "args"|"arguments": ...}`` dicts, OpenAI
   ``{"function": {...}}`` call objects, or strings such as ``"search"`` and
   ``'search(query="x", k=3)'``.
6. A bare string: one assistant message (no tool calls). ``None``: the empty trajectory.

Tool arguments given as JSON text, Python-literal dicts or keyword style (``query="x", k=3``) are
parsed into dicts; anything else is kept as ``{"_raw": text}``.

Unknown shapes: :func:`normalize_trajectory` raises :class:`TrajectoryShapeError` naming what it
received. Evaluators catch it and return ``score=None`` with that message as the comment, so a
malformed trace is a recorded "could not evaluate", never a crash and never a silent 0.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping
from functools import lru_cache
from typing import TYPE_CHECKING, Any, NamedTuple, TypeGuard

from studio.evaluators.errors import TrajectoryShapeError
from studio.model.tools import ToolCall

if TYPE_CHECKING:
    from google.adk.events import Event

_CALL_TEXT = re.compile(r"^\s*([A-Za-z_][\w.\-]*)\s*\((.*)\)\s*$", re.DOTALL)
_BARE_NAME = re.compile(r"^\s*([A-Za-z_][\w.\-]*)\s*$")
_JSON_WORDS = {"true": True, "false": False, "null": None}
_STUDIO_EVENT_TYPES = frozenset({"tool_call", "tool_result", "text"})
_CACHED_TEXT_LIMIT = 2000
"""Longer argument texts are parsed every time, so the parse caches stay small."""
_RENDER_LIMIT = 1000
"""Longest text kept per step when a trajectory is shown to a judge."""
SHAPES_HELP = (
    "expected an OpenAI message list, conversation turns ({speaker, text}), the studio trace "
    "({events, tool_calls}), a list of tool calls ({name, args} or 'name(args)') or an object "
    "with a .conversation attribute"
)


_SCAN_JSON = json.JSONDecoder().scan_once  # type: ignore[attr-defined]  # set in its __init__
_new = tuple.__new__
"""Builds a NamedTuple from a ready tuple: half the cost of its generated ``__new__``, which
matters at thousands of trajectories per second."""


class Step(NamedTuple):
    """One normalized trajectory step."""

    role: str
    """``user``, ``assistant``, ``tool`` or ``system``."""
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    name: str | None = None
    """The tool's name on a ``tool`` (result) step."""


# --------------------------------------------------------------------------- public API


def normalize_trajectory(obj: object) -> list[Step]:
    """Turn any accepted trajectory shape (see the module docstring) into ``list[Step]``.

    Raises:
        TrajectoryShapeError: ``obj`` (or one of its items) is in no known shape; the message
            names what was received.
    """
    if obj is None:
        return []
    if isinstance(obj, list | tuple):
        return _steps_from_items(obj)
    if isinstance(obj, dict):
        return _steps_from_dict(obj)
    if isinstance(obj, str):
        return _steps_from_string(obj)
    return _steps_from_object(obj)


def extract_tool_calls(obj: object) -> list[ToolCall]:
    """The ordered tool calls of a trajectory (any accepted shape)."""
    items = _studio_trace_items(obj) if _is_studio_trace(obj) else obj
    if type(items) is list:
        calls = _direct_calls(items)
        if calls is not None:
            return calls
    return [call for step in normalize_trajectory(obj) for call in step.tool_calls]


def render_trajectory(steps: list[Step], *, limit: int = _RENDER_LIMIT) -> str:
    """A numbered, readable transcript of ``steps`` for an LLM judge."""
    lines = []
    for step in steps:
        label = f"tool {step.name}" if step.role == "tool" and step.name else step.role
        if step.content:
            lines.append(f"[{label}] {_clip(step.content, limit)}")
        for call in step.tool_calls:
            args = json.dumps(call.args, ensure_ascii=False, default=str)
            lines.append(f"[{step.role}] calls tool {call.name}({_clip(args, limit)})")
    return "\n".join(f"{i}. {line}" for i, line in enumerate(lines, 1)) or "(empty trajectory)"


def parse_tool_call_text(text: str) -> ToolCall | None:
    """Parse ``'search(query="x")'``, ``'lookup({"id": 1})'`` or a bare ``'search'``."""
    call = (_cached_call_text if len(text) <= _CACHED_TEXT_LIMIT else _call_text)(text)
    return None if call is None else _new(ToolCall, (call.name, dict(call.args), None))


def parse_args(raw: object) -> dict[str, Any]:
    """Tool arguments as a dict, from a dict, JSON text, a Python literal or keyword style."""
    if type(raw) is dict:
        return raw
    if raw is None:
        return {}
    if not isinstance(raw, str):
        return raw if isinstance(raw, dict) else {"_value": raw}
    if len(raw) > _CACHED_TEXT_LIMIT:
        return _args_text(raw)
    # A copy: the parse is cached (references are re-read for every candidate and example).
    return dict(_cached_args_text(raw))


def _call_text(text: str) -> ToolCall | None:
    match = _CALL_TEXT.match(text)
    if match:
        return ToolCall(match.group(1), parse_args(match.group(2)))
    match = _BARE_NAME.match(text)
    return ToolCall(match.group(1), {}) if match else None


def _args_text(raw: str) -> dict[str, Any]:
    text = raw.strip()
    if not text:
        return {}
    if text[0] == "{":
        parsed = _json_or_literal(text)
        if isinstance(parsed, dict):
            return parsed
    keywords = _keyword_args(text)
    return keywords if keywords is not None else {"_raw": raw}


_cached_call_text = lru_cache(maxsize=4096)(_call_text)
_cached_args_text = lru_cache(maxsize=8192)(_args_text)


# --------------------------------------------------------------------------- containers


def _steps_from_items(items: list | tuple) -> list[Step]:
    steps: list[Step] = []
    append = steps.append
    for index, item in enumerate(items):
        if type(item) is dict:  # the hot path: messages, events and {name, args} rows
            append(_step_from_message(item) if "role" in item
                   else _step_from_dict_item(item, index))
        else:
            _add_item(steps, item, index)
    return steps


def _steps_from_dict(obj: Mapping[str, object]) -> list[Step]:
    # A single message first: an assistant message also has a ``tool_calls`` key.
    if "role" in obj or "speaker" in obj:
        return _steps_from_items([obj])
    if _is_studio_trace(obj):
        return _steps_from_items(_studio_trace_items(obj))
    for key in ("messages", "conversation", "steps", "trajectory"):
        if key in obj:
            return normalize_trajectory(obj[key] or [])
    if "function" in obj or "name" in obj or obj.get("type") in _STUDIO_EVENT_TYPES:
        return _steps_from_items([obj])
    raise TrajectoryShapeError(
        f"unknown trajectory shape: {_describe(obj)}; {SHAPES_HELP}",
        shape=_describe(obj), value=obj,
    )


def _is_studio_trace(obj: object) -> TypeGuard[dict[str, Any]]:
    return (type(obj) is dict and ("events" in obj or "tool_calls" in obj)
            and "role" not in obj and "speaker" not in obj)


def _studio_trace_items(trace: dict[str, Any]) -> list[Any]:
    """The executor's trace: its events hold text and tool calls in order; fall back to
    ``tool_calls`` when a trace was stored without events."""
    return list(trace.get("events") or trace.get("tool_calls") or [])


def _direct_calls(items: list[Any]) -> list[ToolCall] | None:
    """Tool calls straight from the common item shapes (OpenAI messages, studio events,
    ``{name, args}`` rows) without building steps: the hot path of trajectory matching.
    Returns None as soon as an item needs :func:`normalize_trajectory`'s general path, which
    gives the same calls (a test holds the two paths together)."""
    calls: list[ToolCall] = []
    for item in items:
        if type(item) is not dict or "speaker" in item:
            return None
        if "role" in item:
            raw = _message_calls(item)
            if raw:
                calls.extend([_call_from_dict(c) for c in raw])
            if item.get("function_call"):
                return None
            continue
        kind = item.get("type")
        if kind in _STUDIO_EVENT_TYPES and "author" in item:
            if kind == "tool_call":
                calls.extend(_step_from_studio_event(item, kind).tool_calls)
        elif "function" in item or "name" in item:
            calls.append(_call_from_dict(item))
        else:
            return None
    return calls


def _steps_from_string(text: str) -> list[Step]:
    stripped = text.strip()
    if stripped[:1] in ("[", "{"):
        try:
            return normalize_trajectory(json.loads(stripped))
        except json.JSONDecodeError:
            pass
    return [Step("assistant", text)] if stripped else []


def _steps_from_object(obj: object) -> list[Step]:
    conversation = getattr(obj, "conversation", None)
    if conversation is not None:
        return normalize_trajectory(list(conversation))
    for method in ("model_dump", "to_dict"):
        if callable(getattr(obj, method, None)):
            return normalize_trajectory(getattr(obj, method)())
    if _is_adk_event(obj):
        return _steps_from_items([obj])
    raise TrajectoryShapeError(
        f"unknown trajectory shape: {_describe(obj)}; {SHAPES_HELP}",
        shape=_describe(obj), value=obj,
    )


# --------------------------------------------------------------------------- items


def _add_item(steps: list[Step], item: object, index: int) -> None:
    if isinstance(item, dict):
        steps.append(_step_from_dict_item(item, index))
    elif isinstance(item, Step):
        steps.append(item)
    elif isinstance(item, ToolCall):
        steps.append(_new(Step, ("assistant", "", (item,), None)))
    elif isinstance(item, str):
        steps.append(_step_from_call_text(item, index))
    elif _is_adk_event(item):
        steps.extend(_steps_from_adk_event(item))
    else:
        raise _item_error(item, index)


def _step_from_dict_item(item: dict[str, Any], index: int) -> Step:
    if "role" in item:
        return _step_from_message(item)
    if "speaker" in item:
        return _step_from_turn(item)
    kind = item.get("type")
    if kind in _STUDIO_EVENT_TYPES and "author" in item:
        return _step_from_studio_event(item, kind)
    if "function" in item or "name" in item:
        return _new(Step, ("assistant", "", (_call_from_dict(item),), None))
    raise _item_error(item, index)


def _step_from_message(message: Mapping[str, object]) -> Step:
    """An OpenAI chat message (current ``tool_calls`` or legacy ``function_call``)."""
    role = message["role"]
    content = message.get("content")
    text = content if type(content) is str else _content_text(content)
    raw_calls = _message_calls(message)
    calls = tuple([_call_from_dict(c) for c in raw_calls]) if raw_calls else ()
    legacy = message.get("function_call")
    if legacy and isinstance(legacy, dict) and legacy.get("name"):
        calls += (_call_from_dict(legacy),)
    if role == "function":  # the legacy form of a tool result
        role = "tool"
    return _new(Step, (role, text, calls, message.get("name") if role == "tool" else None))


def _message_calls(message: Mapping[str, object]) -> list[Any] | None:
    raw = message.get("tool_calls")
    if raw is None or type(raw) is list:
        return raw
    raise TrajectoryShapeError(f"a message's tool_calls is {_describe(raw)}, not a list",
                               shape=_describe(raw), value=raw)


def _call_from_dict(call: Mapping[str, object]) -> ToolCall:
    if type(call) is not dict:
        raise TrajectoryShapeError(
            f"a tool call is {_describe(call)}; expected {{name, arguments}} or "
            f"{{function: {{name, arguments}}}}", shape=_describe(call), value=call)
    function = call.get("function")
    source = function if type(function) is dict else call
    name = source.get("name") or "unknown"
    raw = source.get("arguments")
    if raw is None:
        raw = source.get("args", source.get("input"))
    args = raw if type(raw) is dict else parse_args(raw)
    return _new(ToolCall, (name if type(name) is str else str(name), args, call.get("id")))


def _step_from_turn(turn: Mapping[str, object]) -> Step:
    """A canonical ``{speaker, text}`` turn; ``... (Action)`` turns carry a tool call."""
    speaker = str(turn.get("speaker") or "")
    text = turn.get("text")
    text = text if isinstance(text, str) else ("" if text is None else str(text))
    lowered = speaker.lower()
    role = _speaker_role(lowered)
    if "(action)" not in lowered or not text.strip():
        return Step(role, text)
    # An action that is not call-shaped is kept as a call named by its text (as the reference
    # would be written the same way), so matching stays possible.
    call = parse_tool_call_text(text) or ToolCall(text.strip(), {})
    return Step(role, text, (call,))


def _speaker_role(speaker: str) -> str:
    if speaker.startswith("user"):
        return "user"
    if speaker.startswith("system"):
        return "system"
    if speaker.startswith(("environment", "tool")) or "observation" in speaker:
        return "tool"
    return "assistant"


def _step_from_studio_event(event: dict[str, Any], kind: str) -> Step:
    if kind == "tool_call":
        call = _new(ToolCall, (str(event.get("name") or "unknown"),
                               parse_args(event.get("args")), event.get("id")))
        return _new(Step, ("assistant", "", (call,), None))
    if kind == "tool_result":
        return Step("tool", _result_text(event.get("result")), (), event.get("name"))
    role = "user" if event.get("author") == "user" else "assistant"
    return Step(role, str(event.get("text") or ""))


def _step_from_call_text(text: str, index: int) -> Step:
    call = parse_tool_call_text(text)
    if call is None:
        raise TrajectoryShapeError(
            f"trajectory item {index} is the text {_clip(text, 60)!r}, which is not a tool call "
            f"such as 'search' or 'search(query=\"x\")'; to judge free text pass it as a "
            f"message ({{'role': 'assistant', 'content': ...}})",
            shape="str", value=text,
        )
    return _new(Step, ("assistant", "", (call,), None))


def _is_adk_event(obj: object) -> TypeGuard[Event]:
    return callable(getattr(obj, "get_function_calls", None)) and hasattr(obj, "author")


def _steps_from_adk_event(event: Event) -> list[Step]:
    content = getattr(event, "content", None)
    steps = []
    for part in (getattr(content, "parts", None) or []) if content else []:
        if part.function_call is not None:
            call = part.function_call
            steps.append(Step("assistant", "", (ToolCall(call.name, dict(call.args or {}),
                                                         call.id),)))
        elif part.function_response is not None:
            response = part.function_response
            steps.append(Step("tool", _result_text(response.response), (), response.name))
        elif part.text and not part.thought:
            steps.append(Step("user" if event.author == "user" else "assistant", part.text))
    return steps


# --------------------------------------------------------------------------- helpers


def _json_or_literal(text: str) -> Any:
    try:  # the C scanner directly: a third of json.loads' cost on small argument objects
        value, end = _SCAN_JSON(text, 0)
        if end == len(text):
            return value
    except (StopIteration, ValueError):
        pass
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None


def _keyword_args(text: str) -> dict[str, Any] | None:
    """``query="x", k=3`` (keyword style, as agents and converters write calls) as a dict."""
    try:
        tree = ast.parse(f"_call({text})", mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    call = tree.body
    if not isinstance(call, ast.Call) or any(k.arg is None for k in call.keywords):
        return None
    values = {k.arg: _literal(k.value) for k in call.keywords if k.arg is not None}
    positional = [_literal(a) for a in call.args]
    if len(positional) == 1 and not values and isinstance(positional[0], dict):
        return positional[0]
    if positional:
        values["_positional"] = positional
    return values


def _literal(node: ast.expr) -> Any:
    if isinstance(node, ast.Name) and node.id in _JSON_WORDS:
        return _JSON_WORDS[node.id]
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError):
        return ast.unparse(node)


def _content_text(content: object) -> str:
    if content is None:
        return ""
    if isinstance(content, list):
        parts = [
            str(p.get("text") or p.get("content") or "") if isinstance(p, dict) else str(p)
            for p in content
        ]
        return " ".join(p for p in parts if p)
    return str(content)


def _result_text(result: object) -> str:
    if result is None or isinstance(result, str):
        return result or ""
    return json.dumps(result, ensure_ascii=False, default=str)


def _describe(value: object) -> str:
    if isinstance(value, dict):
        keys = sorted(map(str, value))
        shown = ", ".join(repr(k) for k in keys[:8]) + (", ..." if len(keys) > 8 else "")
        return f"a dict with keys [{shown}]" if keys else "an empty dict"
    return f"a value of type {type(value).__name__}"


def _item_error(item: object, index: int) -> TrajectoryShapeError:
    return TrajectoryShapeError(
        f"trajectory item {index} is {_describe(item)}, which is no known step shape; "
        f"{SHAPES_HELP}",
        shape=_describe(item), value=item,
    )


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
