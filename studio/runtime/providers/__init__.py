"""Models behind LiteLLM: the embedded offline SmolLM2 and a deterministic scripted model.

Both are LiteLLM custom providers, so ADK reaches them exactly like a hosted model:
``LiteLlm(model="local/smollm2")`` or ``LiteLlm(model="scripted/demo")``. Any other LiteLLM
model string (``gemini/...``, ``openai/...``, ``ollama_chat/...``) works with its key from the
environment; :func:`check_model` says what is missing before a run starts.
"""

from __future__ import annotations

import importlib
import os
import re
import threading
from dataclasses import dataclass
from typing import Any

from studio.model.agent_models import LOCAL_MODEL
from studio.model.errors import ModelConfigError
from studio.runtime.providers._protocol import register_free_model


@dataclass(frozen=True)
class StudioProvider:
    """One in-process model provider of the studio, all its facts in one record: every use
    (LiteLLM's provider map, :func:`check_model`, ADK's model registry, the event loop, the
    engine's lanes) reads it here. Adding one is its module plus its record in
    :data:`STUDIO_PROVIDERS`; the module is named, not imported, because it imports LiteLLM,
    which takes seconds: only when a model is used."""

    prefix: str
    """``prefix/name`` model strings are its (``local/smollm2``)."""
    module: str
    """Its module, holding :attr:`handler` and :attr:`check`."""
    handler: str
    """The LiteLLM ``CustomLLM`` class serving its calls (built once, registered with LiteLLM)."""
    check: str
    """``check(name)`` raises :class:`ModelConfigError` for a name it cannot serve."""
    free_models: tuple[str, ...] = ()
    """Model strings priced at zero from the start (the cost table knows nothing of them)."""
    inline_setup: bool = True
    """LiteLLM's request setup for it only builds a coroutine, so the studio's event loop
    runs it in place (:mod:`studio.runtime.eventloop`)."""
    serial: bool = False
    """One model in-process serving its calls one at a time: a run on it keeps one lane
    (:mod:`studio.engine.loop.window`)."""
    keys: tuple[str, ...] = ()
    """Environment variables it needs (read from the environment only, never stored)."""

    def serves(self, model: str) -> bool:
        return model.startswith(f"{self.prefix}/")

    @property
    def adk_pattern(self) -> str:
        """Its model strings, as ADK's ``LLMRegistry`` matches them."""
        return rf"{re.escape(self.prefix)}/.+"

    def load(self, attribute: str) -> Any:
        return getattr(importlib.import_module(self.module), attribute)


LOCAL = StudioProvider("local", "studio.runtime.providers.local", "LocalModelProvider",
                       "check_local_model", free_models=(LOCAL_MODEL,), serial=True)
"""The embedded SmolLM2-135M-Instruct, offline, in-process (:data:`LOCAL_MODEL`)."""
SCRIPTED = StudioProvider("scripted", "studio.runtime.providers.scripted", "ScriptedProvider",
                          "check_script")
"""The deterministic scripted model tests and demos run on."""
STUDIO_PROVIDERS: tuple[StudioProvider, ...] = (LOCAL, SCRIPTED)
"""Every in-process provider: the one list each use reads."""
LOCAL_PROVIDER = LOCAL.prefix
SCRIPTED_PROVIDER = SCRIPTED.prefix


def studio_provider(model: str) -> StudioProvider | None:
    """The in-process provider serving ``model``, None for a hosted (or ADK-named) model."""
    return next((p for p in STUDIO_PROVIDERS if p.serves(model)), None)

# Providers that need no API key (a local server or in-process model).
_KEYLESS_PROVIDERS = {"ollama", "ollama_chat", "lm_studio", "llamafile", "vllm", "hosted_vllm"}
# LiteLLM lists alternatives together for some providers: any one present is enough.
_ALTERNATIVE_KEYS = {"gemini": {"GEMINI_API_KEY", "GOOGLE_API_KEY"}}

_registered = False
_register_lock = threading.Lock()


def register_providers() -> None:
    """Register the local and scripted providers with LiteLLM (idempotent, thread-safe)."""
    global _registered
    if _registered:
        return
    with _register_lock:
        if _registered:
            return
        # litellm and the providers built on it take seconds to import: only when a model is used.
        import litellm

        from studio.runtime.litellm_logging import per_loop_logging
        from studio.runtime.providers.adk_names import quiet_unbuilt_client_cleanup

        litellm.suppress_debug_info = True
        litellm.telemetry = False
        per_loop_logging()  # no logging task destroyed while pending when loops run side by side
        quiet_unbuilt_client_cleanup()  # google-genai's cleanup of a client never built
        for provider in STUDIO_PROVIDERS:
            for model in provider.free_models:
                register_free_model(model)
        ours = {p.prefix for p in STUDIO_PROVIDERS}
        litellm.custom_provider_map = [
            item for item in litellm.custom_provider_map if item["provider"] not in ours
        ] + [{"provider": p.prefix, "custom_handler": p.load(p.handler)()}
             for p in STUDIO_PROVIDERS]
        _registered = True


def litellm_model(model: str):
    """An ADK ``LiteLlm`` for a model string, with the studio's providers registered and its
    calls rate-limited, retried on ``Retry-After`` and priced (:mod:`.calls`)."""
    register_providers()
    from google.adk.models.lite_llm import LiteLlm

    from studio.runtime.providers.calls import metered_client

    return LiteLlm(model=model, llm_client=metered_client())


def adk_or_litellm_model(model: str):
    """The model object an agent gets for a model string: ADK's own class for a name ADK's
    registry gives to Google (``gemini-2.5-flash``: :mod:`.adk_names`), else LiteLLM's."""
    from studio.runtime.providers.adk_names import adk_model, is_adk_model_name

    return adk_model(model) if is_adk_model_name(model) else litellm_model(model)


def check_model(model: str) -> None:
    """Fail early and clearly if ``model`` cannot be called from this machine.

    Raises:
        ModelConfigError: unknown provider, unknown local/scripted model, or a missing API key
            (the message names the environment variable to set).
    """
    if not isinstance(model, str) or not model.strip():
        raise ModelConfigError("model must be a non-empty LiteLLM model string", value=model)
    ours = studio_provider(model)
    if ours is not None:
        _check_keys(model, ours.keys)
        ours.load(ours.check)(model.partition("/")[2])  # imports litellm: see above
        return
    from studio.runtime.providers.adk_names import check_adk_model, is_adk_model_name

    if is_adk_model_name(model):
        check_adk_model(model)
        return
    _check_hosted_model(model)


def _check_keys(model: str, keys: tuple[str, ...]) -> None:
    missing = [key for key in keys if not os.environ.get(key)]
    if missing:
        raise ModelConfigError(
            f"model {model!r} needs {', '.join(missing)} in the environment; set it before "
            f"starting the studio (keys are read from the environment only and never stored)",
            value=model)


def _check_hosted_model(model: str) -> None:
    register_providers()
    import litellm

    try:
        _, provider, _, _ = litellm.get_llm_provider(model=model)
    except Exception as exc:  # LiteLLM raises BadRequestError for unknown providers
        raise ModelConfigError(
            f"unknown model provider in {model!r}: use a LiteLLM model string such as "
            f"'gemini/gemini-2.5-flash', 'openai/gpt-4o-mini', 'ollama_chat/llama3.2', "
            f"or the embedded '{LOCAL_MODEL}'",
            value=model,
        ) from exc
    if provider in _KEYLESS_PROVIDERS:
        return
    missing = set(litellm.validate_environment(model=model).get("missing_keys") or [])
    alternatives = _ALTERNATIVE_KEYS.get(provider, set())
    if alternatives and any(os.environ.get(key) for key in alternatives):
        missing -= alternatives
    if missing:
        names = " or ".join(sorted(missing)) if alternatives else ", ".join(sorted(missing))
        raise ModelConfigError(
            f"model {model!r} needs {names} in the environment; set it before starting the "
            f"studio (keys are read from the environment only and never stored)",
            value=model,
        )

