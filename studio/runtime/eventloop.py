"""The event loop the studio runs agents on: LiteLLM's request setup runs on it, not in a thread.

``litellm.acompletion`` hands its synchronous part (``completion()``: parameter mapping, the
logging object, the provider's request) to the loop's default thread pool and awaits it. For a
provider whose async path returns a coroutine that part is CPU, not I/O, and the hop costs
twice: the thread fights the loop for the GIL (a waiting thread gets it back only after the
5 ms switch interval), and the chain resumes behind every other ready callback. When a round of
replies returns together (a batch's calls start together and have similar latencies), every
chain's setup then finishes before the first of them reaches the model, so all slots stay
empty for the whole round's CPU (figures in ``bench/README.md``).

:class:`StudioEventLoop` runs that setup in place, so each chain goes straight from its last
reply to its next call. Only for providers known to return a coroutine from it (the studio's
own and the HTTP providers below); any other provider, and anything else given to the default
executor (DNS lookups, user code), still goes to the thread pool.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from studio.runtime.providers import STUDIO_PROVIDERS

T = TypeVar("T")

INLINE_PROVIDERS = frozenset({p.prefix for p in STUDIO_PROVIDERS if p.inline_setup} | {
    "openai", "anthropic", "gemini", "openrouter", "groq",
    "mistral", "deepseek", "xai", "together_ai", "fireworks_ai", "ollama_chat", "hosted_vllm",
})
"""Providers whose ``completion(acompletion=True)`` only builds the request coroutine (custom
providers, and LiteLLM's async HTTP handlers): its setup is safe to run on the loop. Vertex AI
and Azure are not listed: their credentials (service account refresh, Azure AD / OIDC token)
may be fetched synchronously there, which on the loop would stall every chain."""

_providers: dict[str, bool] = {}


class StudioEventLoop(asyncio.SelectorEventLoop):
    """An asyncio loop that runs LiteLLM's request setup in place (see the module's docstring)."""

    def run_in_executor(  # type: ignore[override]  # typeshed's is variadic-generic; same calls
        self, executor: Any, func: Callable[..., T], *args: Any
    ) -> asyncio.Future[T]:
        if executor is None and not args and is_litellm_setup(func):
            future: asyncio.Future[T] = self.create_future()
            try:
                future.set_result(func())
            except (SystemExit, KeyboardInterrupt):
                raise
            except BaseException as exc:  # raised where LiteLLM awaits it, as from the thread
                future.set_exception(exc)
            return future
        return super().run_in_executor(executor, func, *args)


def is_litellm_setup(func: object) -> bool:
    """True for ``litellm.acompletion``'s ``partial(context.run, partial(completion, ...))`` when
    the model's provider is in :data:`INLINE_PROVIDERS`."""
    if not (isinstance(func, functools.partial) and len(func.args) == 1
            and isinstance(func.args[0], functools.partial)):
        return False
    call = func.args[0]
    from litellm import main  # the name litellm.acompletion calls (not litellm.completion)

    if call.func is not main.completion:
        return False
    model = call.keywords.get("model")
    return isinstance(model, str) and _inline_provider(model,
                                                       call.keywords.get("custom_llm_provider"))


def _inline_provider(model: str, provider: str | None) -> bool:
    key = f"{provider or ''}|{model}"
    known = _providers.get(key)
    if known is None:
        from litellm import get_llm_provider

        try:
            name = get_llm_provider(model=model, custom_llm_provider=provider)[1]
        except Exception:  # LiteLLM raises its own error for the model from the thread
            return False
        known = name in INLINE_PROVIDERS or _async_custom_provider(name)
        if len(_providers) < 1024:
            _providers[key] = known
    return known


def _async_custom_provider(name: str) -> bool:
    """A custom provider (``litellm.custom_provider_map``) whose handler's ``acompletion`` is a
    coroutine function: LiteLLM's setup only calls it to build the coroutine, as for the
    studio's own providers. A synchronous ``acompletion`` may block, so it keeps the thread."""
    import litellm

    handlers = [entry.get("custom_handler") for entry in litellm.custom_provider_map or []
                if isinstance(entry, dict) and entry.get("provider") == name]
    return bool(handlers) and all(inspect.iscoroutinefunction(getattr(h, "acompletion", None))
                                  for h in handlers)


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run`` on a :class:`StudioEventLoop`."""
    with asyncio.Runner(loop_factory=StudioEventLoop) as runner:
        return runner.run(coroutine)
