"""A model provider of the studio is one record (studio.runtime.providers.StudioProvider):
LiteLLM's provider map, the model check, ADK's registry, the event loop and the engine's
lanes all read it, so none of them names a provider of its own."""

from __future__ import annotations

import dataclasses

import pytest

from studio.engine.hosting.build import serial_model
from studio.model.errors import ModelConfigError
from studio.runtime import eventloop, providers
from studio.runtime.adk_models import register_studio_models_with_adk
from studio.runtime.providers import LOCAL_MODEL, STUDIO_PROVIDERS, check_model, register_providers


def test_every_use_of_a_provider_reads_its_record():
    import litellm
    from google.adk.models.registry import LLMRegistry

    register_providers()
    register_studio_models_with_adk()
    mapped = {item["provider"]: item["custom_handler"] for item in litellm.custom_provider_map}
    for provider in STUDIO_PROVIDERS:
        assert type(mapped[provider.prefix]) is provider.load(provider.handler)
        assert (provider.prefix in eventloop.INLINE_PROVIDERS) is provider.inline_setup
        assert serial_model(f"{provider.prefix}/x") is provider.serial
        assert LLMRegistry.resolve(f"{provider.prefix}/x").__name__ == "StudioLiteLlm"
        for model in provider.free_models:
            assert litellm.model_cost[model]["input_cost_per_token"] == 0
    assert providers.studio_provider(LOCAL_MODEL) is providers.LOCAL
    assert providers.studio_provider("openai/gpt-4o-mini") is None


def test_a_provider_record_that_needs_a_key_is_refused_without_it(monkeypatch):
    keyed = dataclasses.replace(providers.SCRIPTED, keys=("STUDIO_TEST_SCRIPTED_KEY",))
    monkeypatch.setattr(providers, "STUDIO_PROVIDERS", (providers.LOCAL, keyed))
    monkeypatch.delenv("STUDIO_TEST_SCRIPTED_KEY", raising=False)
    with pytest.raises(ModelConfigError, match="needs STUDIO_TEST_SCRIPTED_KEY in the environment"):
        check_model("scripted/demo")
    monkeypatch.setenv("STUDIO_TEST_SCRIPTED_KEY", "x")
    check_model("scripted/demo")
