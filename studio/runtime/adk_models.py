"""Models ADK's ``LLMRegistry`` resolves by name (an eval metric's judge model,
``judge_model_options.judge_model``; an agent folder's ``LlmAgent(model="openai/...")``; an
agent's ``gemini-2.5-flash``) reach their provider as an agent's ``LiteLlm`` does: through the
studio's client, rate-limited, retried on ``Retry-After`` and priced
(:mod:`studio.runtime.providers.calls`), so a judge's samples count in a trial's cost and share
the server's rate limits. ADK's ``Gemini`` (a bare Gemini name) is rate-limited and priced from
the usage Google reports.

ADK resolves ``provider/model`` strings through LiteLLM for the providers it lists
(``LiteLlm.supported_models()``) and, past those, for the ones in ``litellm.provider_list``;
LiteLLM's custom providers (the studio's ``scripted/...`` and ``local/...``) are in neither, so
without this a judge named ``scripted/judge`` fails with "Model not found".
"""

from __future__ import annotations

import re
import threading
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING, Any

from studio.runtime.providers.records import STUDIO_PROVIDERS, register_providers

if TYPE_CHECKING:
    from google.adk.models.base_llm import BaseLlm

_STUDIO_MODEL_PATTERNS = tuple(p.adk_pattern for p in STUDIO_PROVIDERS)
_registered = False
_lock = threading.Lock()


def register_studio_models_with_adk() -> None:
    """Let ``LLMRegistry.resolve("scripted/x")`` and every ``provider/model`` ADK gives to
    LiteLLM answer the studio's metered ``LiteLlm`` (idempotent)."""
    global _registered
    if _registered:
        return
    with _lock:
        if _registered:
            return
        register_providers()
        import litellm
        from google.adk.models.lite_llm import LiteLlm
        from google.adk.models.registry import LLMRegistry

        from studio.runtime.providers.calls import metered_client

        providers = sorted(str(getattr(p, "value", p)) for p in litellm.provider_list)
        patterns = [*_STUDIO_MODEL_PATTERNS, *LiteLlm.supported_models(),
                    "(" + "|".join(map(re.escape, providers)) + ")/.+"]

        LLMRegistry.register(_studio_gemini())

        class StudioLiteLlm(LiteLlm):
            """ADK's ``LiteLlm`` with the studio's metered client, for the models ADK's
            registry resolves by name."""

            def __init__(self, model: str, **kwargs: object) -> None:
                kwargs.setdefault("llm_client", metered_client())
                super().__init__(model=model, **kwargs)

            @classmethod
            def supported_models(cls) -> list[str]:
                return patterns

        LLMRegistry.register(StudioLiteLlm)
        _registered = True


def adk_model(model: str) -> BaseLlm:
    """ADK's model object for ``model``, as ``LlmAgent(model=model)`` would get it, rate-limited
    and priced (a name ADK's registry gives to Google:
    :func:`studio.runtime.providers.adk_names.is_adk_model_name`)."""
    from google.adk.models.registry import LLMRegistry

    register_studio_models_with_adk()
    return LLMRegistry.new_llm(model)


def _studio_gemini() -> type:
    """ADK's ``Gemini`` (``gemini-2.5-flash`` by its bare name: ADK's default judge), its calls
    held to the server's rate limit for the name and priced by LiteLLM's cost map from the
    usage Google reports, as a LiteLLM call is
    (:func:`studio.runtime.providers.calls.count_usage`)."""
    from google.adk.models.google_llm import Gemini

    from studio.runtime.providers.calls import count_usage, limiter_for

    class StudioGemini(Gemini):
        """ADK's ``Gemini``, rate-limited and priced."""

        @classmethod
        def supported_models(cls) -> list[str]:
            return Gemini.supported_models()

        async def generate_content_async(self, llm_request: Any, stream: bool = False
                                         ) -> AsyncGenerator[Any, None]:
            model = llm_request.model or self.model
            limiter = limiter_for(model)
            if limiter is not None:
                await limiter.acquire()
            async for response in super().generate_content_async(llm_request, stream):
                usage = response.usage_metadata
                if usage is not None and not response.partial:
                    count_usage(f"gemini/{model}", usage.prompt_token_count or 0,
                                (usage.candidates_token_count or 0)
                                + (usage.thoughts_token_count or 0))
                yield response

    return StudioGemini
