"""Models by ADK's own names: ``gemini-2.5-flash`` is what ADK's ``LLMRegistry`` says it is.

An ADK user writes ``LlmAgent(model="gemini-2.5-flash")``; ADK's registry resolves the bare name
to its ``Gemini`` class, which calls Google AI Studio with ``GOOGLE_API_KEY`` (or
``GEMINI_API_KEY``), or Vertex AI when ``GOOGLE_GENAI_USE_VERTEXAI`` is true (with
``GOOGLE_CLOUD_PROJECT``; ``GOOGLE_CLOUD_LOCATION`` defaults to ``global``). LiteLLM would
read the same bare name as a Vertex model and fail for want of ``VERTEXAI_PROJECT``, so a name
the registry gives to Google's classes (Gemini, Gemma 4, Vertex endpoint paths) is built by ADK
here too.

Every other string keeps its LiteLLM reading: ``gemini/...``, ``openai/...``,
``ollama_chat/...``, the studio's ``scripted/...`` and ``local/...``, and bare names ADK would
hand to another integration (``gpt-4o-mini`` stays LiteLLM's OpenAI model, as it always was).
"""

from __future__ import annotations

import logging
import os

from studio.model.errors import ModelConfigError

API_KEY_VARIABLES = ("GOOGLE_API_KEY", "GEMINI_API_KEY")
"""Google AI Studio's key, by the names ``google-genai`` reads (either one)."""
VERTEX_SWITCH = "GOOGLE_GENAI_USE_VERTEXAI"
VERTEX_PROJECT = "GOOGLE_CLOUD_PROJECT"
_TRUE = {"1", "true", "yes"}


def adk_model_class(model: str) -> type | None:
    """The ADK class its registry resolves ``model`` to when it is one of Google's own
    (``Gemini`` and its subclasses), else None (a LiteLLM string, or a name ADK does not know).
    Resolving imports nothing from the network and builds no client."""
    if not isinstance(model, str) or not model.strip():
        return None
    from google.adk.models.google_llm import Gemini
    from google.adk.models.registry import LLMRegistry

    try:
        cls = LLMRegistry.resolve(model)
    except ValueError:  # not in ADK's registry: LiteLLM or the studio's providers
        return None
    return cls if isinstance(cls, type) and issubclass(cls, Gemini) else None


def is_adk_model_name(model: str) -> bool:
    """Whether ``model`` is built by ADK's registry rather than by LiteLLM."""
    return adk_model_class(model) is not None


def uses_vertex() -> bool:
    """Whether ``google-genai`` (and so ADK's ``Gemini``) calls Vertex AI, by ADK's switch."""
    return os.environ.get(VERTEX_SWITCH, "").strip().lower() in _TRUE


def check_adk_model(model: str) -> None:
    """Fail early if ADK's ``Gemini`` could not reach ``model`` from this machine: Vertex AI
    without its project and location, or Google AI Studio without a key.

    Raises:
        ModelConfigError: naming the environment variables to set, by ADK's names.
    """
    if uses_vertex():
        if not os.environ.get(VERTEX_PROJECT) and not os.environ.get(API_KEY_VARIABLES[0]):
            raise ModelConfigError(
                f"model {model!r} is ADK's Gemini on Vertex AI ({VERTEX_SWITCH} is set), which "
                f"needs {VERTEX_PROJECT} (and Google Cloud credentials: `gcloud auth "
                "application-default login`; GOOGLE_CLOUD_LOCATION defaults to global), or "
                "GOOGLE_API_KEY for Vertex AI express mode, in the environment", value=model)
        return
    if not any(os.environ.get(name) for name in API_KEY_VARIABLES):
        raise ModelConfigError(
            f"model {model!r} is ADK's Gemini, which needs GOOGLE_API_KEY (or GEMINI_API_KEY) "
            f"for Google AI Studio, or {VERTEX_SWITCH}=TRUE with {VERTEX_PROJECT} for Vertex "
            "AI, in the environment (or the agent folder's .env); keys are read from the "
            "environment only and never stored", value=model)


class UnbuiltClientCleanup(logging.Filter):
    """Drops one log record of asyncio's: "Task exception was never retrieved" for
    ``google-genai``'s cleanup of a client that was never built.

    When ADK's ``Gemini`` builds its client and the constructor raises (no API key, Vertex AI
    without a project), the half-made ``BaseApiClient`` is collected later; its ``__del__``
    then starts ``aclose()`` as a task on the running loop, which fails at once on the
    attribute the constructor never set (``_async_httpx_client``), and nobody awaits it. The
    real failure is the trial's ("ValueError: No API key was provided"); this one is a
    traceback per collected client with nothing to close, printed at the end of a failed
    baseline. Every other record passes."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not (isinstance(exc, AttributeError)
                    and getattr(exc, "name", None) == "_async_httpx_client"
                    and type(getattr(exc, "obj", None)).__module__.startswith("google.genai"))


_CLEANUP_FILTER = UnbuiltClientCleanup()


def quiet_unbuilt_client_cleanup() -> None:
    """Put :class:`UnbuiltClientCleanup` on asyncio's logger (once per process)."""
    asyncio_logger = logging.getLogger("asyncio")
    if _CLEANUP_FILTER not in asyncio_logger.filters:
        asyncio_logger.addFilter(_CLEANUP_FILTER)
