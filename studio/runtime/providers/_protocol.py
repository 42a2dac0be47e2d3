"""Request/response plumbing shared by the in-process LiteLLM providers."""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

_MEDIA_PARTS = {"image_url": "image", "video_url": "video", "file": "file",
                "input_audio": "audio"}


@dataclass(frozen=True)
class SeenMedia:
    """An image, video, audio or file part of a request, as the provider received it: what a
    test asserts to know the image reached the model (never the bytes themselves)."""

    kind: str
    """``image``, ``video``, ``audio`` or ``file``."""
    mime_type: str
    size: int
    """Decoded bytes (0 for a URL that is not a data URI)."""
    sha256: str

    @property
    def marker(self) -> str:
        """The text a text-only model reads in its place."""
        return f"[{self.kind}: {self.mime_type}]"


@dataclass(frozen=True)
class ChatRequest:
    """What a provider needs from a LiteLLM call, in plain types."""

    model: str
    messages: list[dict[str, str]]
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    stop: list[str] = field(default_factory=list)
    json_schema: dict[str, Any] | None = None
    """JSON Schema the reply must satisfy (from ``response_format``), or None for free text."""
    json_mode: bool = False
    """True when any JSON object is required (``response_format={"type": "json_object"}``)."""
    seed: int | None = None
    has_tools: bool = False
    tool_names: tuple[str, ...] = ()
    """Names of the function tools offered to the model, in order."""
    media: tuple[SeenMedia, ...] = ()
    """Images and videos in the messages, in order (their text is a marker: see
    :func:`content_text`)."""

    @property
    def system(self) -> str:
        return "\n\n".join(m["content"] for m in self.messages if m["role"] == "system")

    @property
    def last_user(self) -> str:
        for message in reversed(self.messages):
            if message["role"] == "user":
                return message["content"]
        return ""

    @property
    def prompt_text(self) -> str:
        return "\n\n".join(m["content"] for m in self.messages)


def content_text(content: object) -> str:
    """Flatten OpenAI-style message content (string or list of parts) to text; an image or
    video part becomes a marker such as ``[image: image/png]`` (the in-process models read
    text only)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        pieces: list[str] = []
        for part in content:
            seen = seen_media(part)
            if seen is not None:
                pieces.append(f"\n{seen.marker}" if pieces else seen.marker)
            elif isinstance(part, dict):
                pieces.append(str(part.get("text") or ""))
            else:
                pieces.append(str(part))
        return "".join(pieces)
    return str(content)


def seen_media(part: Any) -> SeenMedia | None:
    """The media of one OpenAI-style content part, or None for text."""
    kind = _MEDIA_PARTS.get(str(part.get("type"))) if isinstance(part, dict) else None
    if kind is None:
        return None
    body = part.get(part["type"])
    if kind == "audio":
        body = body if isinstance(body, dict) else {}
        return _seen(kind, f"audio/{body.get('format', 'unknown')}", str(body.get("data", "")))
    if isinstance(body, dict):
        url = body.get("url") or body.get("file_data") or ""
    else:
        url = str(body or "")
    header, _, payload = str(url).partition(",")
    if not header.startswith("data:"):
        return SeenMedia(kind, "unknown", 0, "")
    return _seen(kind, header[5:].split(";", 1)[0], payload)


def _seen(kind: str, mime_type: str, payload: str) -> SeenMedia:
    try:
        data = base64.b64decode(payload)
    except (binascii.Error, ValueError):
        data = b""
    return SeenMedia(kind, mime_type, len(data), hashlib.sha256(data).hexdigest())


def _request_media(messages: list) -> tuple[SeenMedia, ...]:
    found = []
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):
            found += [seen for seen in map(seen_media, content) if seen is not None]
    return tuple(found)


def _message_text(message: dict[str, Any]) -> str:
    text = content_text(message.get("content"))
    for call in message.get("tool_calls") or []:
        function = call.get("function", {}) if isinstance(call, dict) else {}
        text += f"\n[tool call {function.get('name')}({function.get('arguments')})]"
    return text


def normalize_messages(messages: list[dict[str, Any]]) -> list[dict[str, str]]:
    """Roles reduced to system/user/assistant; tool results become user text."""
    out = []
    for message in messages:
        role = message.get("role", "user")
        text = _message_text(message)
        if role == "tool":
            role, text = "user", f"[tool result] {text}"
        elif role not in ("system", "user", "assistant"):
            role = "user"
        out.append({"role": role, "content": text})
    return out


def schema_from_response_format(response_format: object) -> tuple[dict[str, Any] | None, bool]:
    """Extract ``(json_schema, json_mode)`` from any ``response_format`` LiteLLM may pass."""
    if not response_format:
        return None, False
    if hasattr(response_format, "model_json_schema"):
        return response_format.model_json_schema(), True
    if not isinstance(response_format, dict):
        return None, False
    kind = response_format.get("type")
    if kind == "json_schema":
        spec = response_format.get("json_schema") or {}
        return spec.get("schema") or None, True
    if kind == "json_object":
        schema = response_format.get("response_schema") or response_format.get("schema")
        return schema, True
    return None, False


def build_request(model: str, messages: list, optional_params: dict[str, Any]) -> ChatRequest:
    schema, json_mode = schema_from_response_format(optional_params.get("response_format"))
    stop = optional_params.get("stop") or []
    if isinstance(stop, str):
        stop = [stop]
    max_tokens = optional_params.get("max_tokens") or optional_params.get("max_completion_tokens")
    return ChatRequest(
        model=model,
        messages=normalize_messages(messages),
        temperature=optional_params.get("temperature"),
        top_p=optional_params.get("top_p"),
        max_tokens=int(max_tokens) if max_tokens else None,
        stop=list(stop),
        json_schema=schema,
        json_mode=json_mode,
        seed=optional_params.get("seed"),
        has_tools=bool(optional_params.get("tools")),
        tool_names=offered_tool_names(optional_params.get("tools")),
        media=_request_media(messages),
    )


def offered_tool_names(tools: Any) -> tuple[str, ...]:
    """Function names from OpenAI-style ``tools`` (``[{"type": "function", "function":
    {"name": ...}}]``); anything else in the list is skipped."""
    names = []
    for tool in tools or []:
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            names.append(function["name"])
    return tuple(names)


def fill_response(
    model_response: Any,
    *,
    model: str,
    text: str,
    prompt_tokens: int,
    completion_tokens: int,
    finish_reason: str = "stop",
) -> Any:
    """Write text and token usage into LiteLLM's ``ModelResponse``."""
    from litellm.types.utils import Usage

    choice = model_response.choices[0]
    choice.message.content = text
    choice.finish_reason = finish_reason
    model_response.model = model
    model_response.usage = Usage(
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        total_tokens=prompt_tokens + completion_tokens,
    )
    return model_response


def rough_token_count(text: str) -> int:
    """Token estimate for providers without a tokenizer (about 4 characters per token)."""
    return max(1, (len(text) + 3) // 4) if text else 0


def dumps(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)


def as_litellm_error(exc: Exception, *, model: str, provider: str) -> Exception:
    """In-process providers have no transient failures of their own: anything that is not already a
    LiteLLM error becomes a non-retryable ``BadRequestError`` (LiteLLM would otherwise report it as
    a retryable connection error)."""
    import litellm
    import openai

    if isinstance(exc, openai.OpenAIError):  # every LiteLLM exception derives from it
        return exc
    return litellm.BadRequestError(
        message=f"{type(exc).__name__}: {exc}", model=model, llm_provider=provider
    )


def streaming_chunk(response: Any) -> dict[str, Any]:
    """A whole reply as one LiteLLM streaming chunk (in-process models answer at once)."""
    usage = response.usage
    return {
        "text": response.choices[0].message.content or "",
        "tool_use": None,
        "is_finished": True,
        "finish_reason": response.choices[0].finish_reason or "stop",
        "usage": {
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
            "total_tokens": usage.total_tokens,
        },
        "index": 0,
    }


_free_models: set[str] = set()


def register_free_model(model: str) -> None:
    """Give an in-process model a zero-price entry in LiteLLM's cost map: without one, LiteLLM
    searches its whole map after every call (about 0.5 ms of CPU) to price it."""
    if model in _free_models:
        return
    import litellm

    provider = model.split("/", 1)[0]
    litellm.register_model({model: {
        "input_cost_per_token": 0.0, "output_cost_per_token": 0.0,
        "cache_creation_input_token_cost": 0.0, "cache_read_input_token_cost": 0.0,
        "litellm_provider": provider, "mode": "chat"}})
    _free_models.add(model)
