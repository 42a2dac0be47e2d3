"""The studio's in-process model providers as records, and their registration with LiteLLM.

The one fact both the model check (:mod:`studio.runtime.providers`) and ADK's model registry
(:mod:`studio.runtime.adk_models`) read, so it sits below both: neither imports the other to
learn which providers there are, and no module imports itself back.
"""

from __future__ import annotations

import importlib
import re
import threading
from dataclasses import dataclass
from typing import Any

from studio.model.agent_models import LOCAL_MODEL
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

