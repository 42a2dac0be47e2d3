"""Models behind LiteLLM: the embedded offline SmolLM2 and a deterministic scripted model.

Both are LiteLLM custom providers, so ADK reaches them exactly like a hosted model:
``LiteLlm(model="local/smollm2")`` or ``LiteLlm(model="scripted/demo")``. Any other LiteLLM
model string (``gemini/...``, ``openai/...``, ``ollama_chat/...``) works with its key from the
environment; :func:`check_model` says what is missing before a run starts.
"""

from __future__ import annotations

import os

from studio.model.agent_models import LOCAL_MODEL
from studio.model.errors import ModelConfigError
from studio.runtime.providers.records import (
    LOCAL,
    LOCAL_PROVIDER,
    SCRIPTED,
    SCRIPTED_PROVIDER,
    STUDIO_PROVIDERS,
    StudioProvider,
    register_providers,
)

__all__ = ["LOCAL", "LOCAL_MODEL", "LOCAL_PROVIDER", "SCRIPTED", "SCRIPTED_PROVIDER",
           "STUDIO_PROVIDERS", "StudioProvider", "adk_or_litellm_model", "check_model",
           "litellm_model", "register_providers", "studio_provider"]


def studio_provider(model: str) -> StudioProvider | None:
    """The in-process provider serving ``model``, None for a hosted (or ADK-named) model."""
    return next((p for p in STUDIO_PROVIDERS if p.serves(model)), None)


# Providers that need no API key (a local server or in-process model).
_KEYLESS_PROVIDERS = {"ollama", "ollama_chat", "lm_studio", "llamafile", "vllm", "hosted_vllm"}
# LiteLLM lists alternatives together for some providers: any one present is enough.
_ALTERNATIVE_KEYS = {"gemini": {"GEMINI_API_KEY", "GOOGLE_API_KEY"}}


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
    from studio.runtime.adk_models import adk_model
    from studio.runtime.providers.adk_names import is_adk_model_name

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

