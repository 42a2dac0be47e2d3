"""A deterministic scripted model behind LiteLLM, for tests, demos and benchmarks.

``scripted/<name>`` calls the script registered under ``name``; ``scripted/<name>@<ms>ms`` adds
a fixed latency (e.g. ``scripted/demo@100ms``). Because it is a LiteLLM custom provider, agents
that use it run through the real ADK runner and LiteLLM, exactly like a hosted model. A script
sees the images and videos of the request in ``request.media`` (type, size, SHA-256), and their
markers in its text.

Built-in scripts: ``demo`` (a small haiku world where evolution visibly works, see
:mod:`studio.runtime.providers.demo`), ``strict`` (a critic too strict on short answers, see
:mod:`studio.runtime.providers.strict`), ``echo`` (repeats the last user message) and ``schema``
(a minimal valid instance of the requested JSON Schema).
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from litellm import CustomLLM

import studio.runtime.providers.demo as demo
import studio.runtime.providers.strict as strict
from studio.model.errors import ModelConfigError
from studio.model.tools import ToolCall
from studio.runtime.providers._protocol import (
    ChatRequest,
    as_litellm_error,
    build_request,
    fill_response,
    register_free_model,
    rough_token_count,
    streaming_chunk,
)


@dataclass(frozen=True)
class ScriptedReply:
    """A scripted model's answer: text, or tool calls (ADK runs them and asks the model again)."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()


Reply = str | dict[str, Any] | ScriptedReply
ScriptFn = Callable[[ChatRequest], Reply]

_LATENCY_SUFFIX = re.compile(r"^(?P<name>[^@]+)@(?P<ms>\d+(?:\.\d+)?)ms$")


@dataclass(frozen=True)
class Script:
    """A named reply function; a dict reply is sent as JSON text."""

    name: str
    reply: ScriptFn
    latency_s: float = 0.0
    description: str = ""


_scripts: dict[str, Script] = {}
_history: deque[tuple[int, ChatRequest]] = deque(maxlen=2000)
"""The latest requests, each with its number in the order received (see :func:`request_mark`)."""
_received = 0
_lock = threading.Lock()


def register_script(
    name: str, reply: ScriptFn, *, latency_s: float = 0.0, description: str = ""
) -> str:
    """Register ``reply`` as ``scripted/<name>`` and return that model string."""
    if not name or "/" in name or "@" in name:
        raise ValueError(f"script name {name!r} must be non-empty and contain no '/' or '@'")
    with _lock:
        _scripts[name] = Script(name, reply, latency_s, description)
    return f"scripted/{name}"


def unregister_script(name: str) -> None:
    with _lock:
        _scripts.pop(name, None)


def recorded_requests(name: str | None = None, *, since: int = 0) -> list[ChatRequest]:
    """Requests the scripted provider received (newest last), optionally for one script, and
    only those after ``since`` (a :func:`request_mark`): the history keeps the latest 2,000, so
    counting items would break once it is full."""
    with _lock:
        items = list(_history)
    return [r for number, r in items
            if number > since and (name is None or _split(r.model)[0] == name)]


def request_mark() -> int:
    """How many requests the provider has received so far: pass it as ``since``."""
    with _lock:
        return _received


def _split(model: str) -> tuple[str, float | None]:
    name = model.split("/", 1)[-1]
    match = _LATENCY_SUFFIX.match(name)
    if match:
        return match["name"], float(match["ms"]) / 1000.0
    return name, None


def check_script(name: str) -> Script:
    base, _ = _split(name)
    _ensure_builtins()
    script = _scripts.get(base)
    if script is None:
        known = ", ".join(sorted(_scripts))
        raise ModelConfigError(
            f"unknown scripted model 'scripted/{base}'; registered scripts: {known}",
            value=f"scripted/{name}",
        )
    return script


def _ensure_builtins() -> None:
    if "demo" in _scripts:
        return

    register_script("demo", demo.reply, description="haiku world where reflection helps")
    register_script("pipeline", demo.pipeline_reply,
                    description="outline -> write -> polish: evolving the writer helps")
    register_script("strict", strict.reply,
                    description="a critic too strict on short answers (critic alignment)")
    register_script("echo", lambda request: request.last_user, description="repeats the input")
    register_script("schema", lambda request: demo.schema_instance(request.json_schema or {}),
                    description="a minimal valid instance of the requested JSON Schema")


def _run(model: str, messages: list, optional_params: dict
         ) -> tuple[ChatRequest, Script, float, ScriptedReply]:
    try:
        return _run_script(model, messages, optional_params)
    except Exception as exc:
        raise as_litellm_error(exc, model=model, provider="scripted") from exc


def _run_script(model: str, messages: list, optional_params: dict):
    global _received
    script = check_script(model.split("/", 1)[-1])
    register_free_model(f"scripted/{model.split('/', 1)[-1]}")
    _, latency_override = _split(model)
    request = build_request(f"scripted/{model.split('/', 1)[-1]}", messages, optional_params)
    with _lock:
        _received += 1
        _history.append((_received, request))
    reply = script.reply(request)
    if isinstance(reply, str):
        reply = ScriptedReply(text=reply)
    elif isinstance(reply, dict):
        reply = ScriptedReply(text=json.dumps(reply, ensure_ascii=False))
    latency = script.latency_s if latency_override is None else latency_override
    return request, script, latency, reply


class ScriptedProvider(CustomLLM):
    """LiteLLM custom provider ``scripted``."""

    def completion(self, model, messages, api_base, custom_prompt_dict, model_response,
                   print_verbose, encoding, api_key, logging_obj, optional_params,
                   acompletion=None, litellm_params=None, logger_fn=None, headers=None,
                   timeout=None, client=None):
        request, _, latency, reply = _run(model, messages, optional_params)
        if latency:
            time.sleep(latency)
        return _respond(model_response, request, reply)

    async def acompletion(self, model, messages, api_base, custom_prompt_dict, model_response,
                          print_verbose, encoding, api_key, logging_obj, optional_params,
                          acompletion=None, litellm_params=None, logger_fn=None, headers=None,
                          timeout=None, client=None):
        request, _, latency, reply = _run(model, messages, optional_params)
        if latency:
            await asyncio.sleep(latency)
        return _respond(model_response, request, reply)

    def streaming(self, *args, **kwargs):
        response = self.completion(*args, **kwargs)
        yield streaming_chunk(response)

    async def astreaming(self, *args, **kwargs):
        response = await self.acompletion(*args, **kwargs)
        yield streaming_chunk(response)


def _respond(model_response: object, request: ChatRequest, reply: ScriptedReply) -> Any:
    response = fill_response(
        model_response,
        model=request.model,
        text=reply.text,
        prompt_tokens=rough_token_count(request.prompt_text),
        completion_tokens=rough_token_count(reply.text),
        finish_reason="tool_calls" if reply.tool_calls else "stop",
    )
    if reply.tool_calls:
        from litellm.types.utils import ChatCompletionMessageToolCall

        response.choices[0].message.tool_calls = [
            ChatCompletionMessageToolCall(
                id=f"call_{i}_{call.name}", type="function",
                function={"name": call.name, "arguments": json.dumps(call.args)})
            for i, call in enumerate(reply.tool_calls)
        ]
    return response

