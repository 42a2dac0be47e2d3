"""The studio's own LiteLLM models (``scripted/...``, ``local/...``) known to ADK's
``LLMRegistry``, so a model string ADK resolves by itself (an eval metric's judge model,
``judge_model_options.judge_model``) reaches them exactly as an agent's ``LiteLlm`` does.

ADK resolves ``provider/model`` strings through LiteLLM only for providers in
``litellm.provider_list``; LiteLLM's custom providers are not in it, so without this a judge
named ``scripted/judge`` fails with "Model not found".
"""

from __future__ import annotations

import threading

from studio.runtime.providers import LOCAL_PROVIDER, SCRIPTED_PROVIDER, register_providers

_STUDIO_MODEL_PATTERNS = (rf"{SCRIPTED_PROVIDER}/.+", rf"{LOCAL_PROVIDER}/.+")
_registered = False
_lock = threading.Lock()


def register_studio_models_with_adk() -> None:
    """Let ``LLMRegistry.resolve("scripted/x")`` answer ADK's ``LiteLlm`` (idempotent)."""
    global _registered
    if _registered:
        return
    with _lock:
        if _registered:
            return
        register_providers()
        from google.adk.models.lite_llm import LiteLlm
        from google.adk.models.registry import LLMRegistry

        class StudioLiteLlm(LiteLlm):
            """ADK's ``LiteLlm``, registered for the studio's custom LiteLLM providers."""

            @classmethod
            def supported_models(cls) -> list[str]:
                return list(_STUDIO_MODEL_PATTERNS)

        LLMRegistry.register(StudioLiteLlm)
        _registered = True
