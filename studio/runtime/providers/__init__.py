"""Models behind LiteLLM: the embedded offline SmolLM2 and a deterministic scripted model.

Both are LiteLLM custom providers, so ADK reaches them exactly like a hosted model:
``LiteLlm(model="local/smollm2")`` or ``LiteLlm(model="scripted/demo")``. Any other LiteLLM
model string (``gemini/...``, ``openai/...``, ``ollama_chat/...``) works with its key from the
environment; :func:`check_model` says what is missing before a run starts.
"""

from __future__ import annotations

import os
import threading

from studio.model.errors import ModelConfigError
from studio.runtime.providers._protocol import register_free_model

LOCAL_PROVIDER = "local"
SCRIPTED_PROVIDER = "scripted"
LOCAL_MODEL = "local/smollm2"
"""The embedded default model: SmolLM2-135M-Instruct, offline, in-process."""

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
        from studio.runtime.providers.local import LocalModelProvider
        from studio.runtime.providers.scripted import ScriptedProvider

        litellm.suppress_debug_info = True
        litellm.telemetry = False
        per_loop_logging()  # no logging task destroyed while pending when loops run side by side
        quiet_unbuilt_client_cleanup()  # google-genai's cleanup of a client never built
        register_free_model(LOCAL_MODEL)
        ours = {LOCAL_PROVIDER, SCRIPTED_PROVIDER}
        litellm.custom_provider_map = [
            item for item in litellm.custom_provider_map if item["provider"] not in ours
        ] + [
            {"provider": LOCAL_PROVIDER, "custom_handler": LocalModelProvider()},
            {"provider": SCRIPTED_PROVIDER, "custom_handler": ScriptedProvider()},
        ]
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
    provider, _, name = model.partition("/")
    if provider == LOCAL_PROVIDER:
        from studio.runtime.providers.local import check_local_model  # imports litellm: see above

        check_local_model(name)
        return
    if provider == SCRIPTED_PROVIDER:
        from studio.runtime.providers.scripted import check_script  # imports litellm: see above

        check_script(name)
        return
    from studio.runtime.providers.adk_names import check_adk_model, is_adk_model_name

    if is_adk_model_name(model):
        check_adk_model(model)
        return
    _check_hosted_model(model)


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

