"""The studio's event loop runs LiteLLM's request setup in place, and nothing else.

``litellm.acompletion`` sends its synchronous setup to the loop's default thread pool; on the
studio's loop (:class:`studio.runtime.eventloop.StudioEventLoop`, which runs every run) that
setup runs on the loop for providers that only build a coroutine there, so a chain goes from one
reply to its next call without a thread hop. Everything else keeps the thread pool.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import threading
from concurrent.futures import ThreadPoolExecutor

import litellm
import pytest
from litellm import CustomLLM
from litellm import main as litellm_main
from litellm.utils import custom_llm_setup

from studio.runtime import eventloop
from studio.runtime.execution import AgentExecutor
from studio.runtime.providers import register_providers
from tests.helpers import writer


class CountingExecutor(ThreadPoolExecutor):
    """A default executor that counts LiteLLM setups handed to it."""

    def __init__(self) -> None:
        super().__init__(max_workers=2)
        self.setups = 0

    def submit(self, fn, /, *args, **kwargs):
        inner = fn.args[0] if isinstance(fn, functools.partial) and fn.args else None
        if getattr(inner, "func", None) is litellm_main.completion:
            self.setups += 1
        return super().submit(fn, *args, **kwargs)


def call_with(runner, script) -> tuple[str, int]:
    """One agent call through ADK and LiteLLM; (its output, setups sent to the thread pool)."""
    model = script(lambda request: "a haiku")
    spy = CountingExecutor()

    async def call():
        asyncio.get_running_loop().set_default_executor(spy)
        result = await AgentExecutor(max_retries=0).execute(writer(model), "topic: rain")
        return result.output

    return runner(call()), spy.setups


def test_a_call_on_the_studio_loop_sends_no_setup_to_a_thread(script):
    output, setups = call_with(eventloop.run, script)
    assert output == "a haiku"
    assert setups == 0


def test_the_same_call_on_a_plain_loop_sends_its_setup_to_a_thread(script):
    """What the studio's loop removes: the plain asyncio loop hands LiteLLM's setup over."""
    output, setups = call_with(asyncio.run, script)
    assert output == "a haiku"
    assert setups == 1


def test_other_work_given_to_the_default_executor_still_runs_in_a_thread():
    async def where() -> int:
        return await asyncio.get_running_loop().run_in_executor(None, threading.get_ident)

    assert eventloop.run(where()) != threading.get_ident()


def test_a_setup_that_raises_fails_where_litellm_awaits_it(monkeypatch):
    register_providers()

    def refuses(**kwargs):
        raise ValueError("bad request")

    monkeypatch.setattr(litellm_main, "completion", refuses)
    setup = functools.partial(contextvars.copy_context().run,
                              functools.partial(litellm_main.completion, model="scripted/demo"))

    async def run_setup():
        return await asyncio.get_running_loop().run_in_executor(None, setup)

    with pytest.raises(ValueError, match="bad request"):
        eventloop.run(run_setup())


@pytest.mark.parametrize(("model", "inline"), [
    ("scripted/demo", True), ("openai/gpt-4o-mini", True), ("local/smollm2", True),
    ("vertex_ai/gemini-2.0-flash", False), ("azure/my-deployment", False),
    ("not-a-provider/x", False)])
def test_only_providers_that_build_a_coroutine_run_their_setup_in_place(model, inline):
    register_providers()
    setup = functools.partial(contextvars.copy_context().run,
                              functools.partial(litellm_main.completion, model=model))
    assert eventloop.is_litellm_setup(setup) is inline


def test_a_function_that_is_not_litellms_setup_is_not_recognized():
    assert not eventloop.is_litellm_setup(functools.partial(print, "x"))
    assert not eventloop.is_litellm_setup(threading.get_ident)


class AsyncProvider(CustomLLM):
    async def acompletion(self, *args, **kwargs):
        raise NotImplementedError


class SyncProvider(CustomLLM):
    def acompletion(self, *args, **kwargs):  # may block: its setup must keep the thread
        raise NotImplementedError


@pytest.mark.parametrize(("handler", "inline"), [(AsyncProvider(), True), (SyncProvider(), False)])
def test_a_custom_provider_with_a_coroutine_acompletion_runs_its_setup_in_place(handler, inline):
    """A user's own LiteLLM provider (``litellm.custom_provider_map``), like the studio's."""
    register_providers()
    name = f"mine{type(handler).__name__.lower()}"
    before = list(litellm.custom_provider_map)
    litellm.custom_provider_map = [*before, {"provider": name, "custom_handler": handler}]
    custom_llm_setup()
    try:
        setup = functools.partial(contextvars.copy_context().run,
                                  functools.partial(litellm_main.completion, model=f"{name}/x"))
        assert eventloop.is_litellm_setup(setup) is inline
    finally:
        litellm.custom_provider_map = before
        custom_llm_setup()
