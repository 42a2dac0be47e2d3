"""The three evolve* entry points take the run's keywords from one place (RunKeywords),
and a misspelt keyword is still refused."""

from __future__ import annotations

import asyncio
import inspect

import pytest
from google.adk.agents import LlmAgent

from studio.engine.hosting.api import RunKeywords, evolve, evolve_graph, evolve_workflow


def test_the_evolve_entry_points_share_one_set_of_run_keywords():
    shared = set(RunKeywords.__annotations__)
    assert {"store", "name", "resume", "on_event", "testset"} <= shared
    for entry in (evolve, evolve_workflow, evolve_graph):
        params = inspect.signature(entry).parameters
        assert not shared & set(params), entry.__name__  # said once, in RunKeywords
        assert params["run"].kind is inspect.Parameter.VAR_KEYWORD


def test_a_misspelt_run_keyword_is_refused_before_anything_is_stored(tmp_path):
    from studio.store import open_store

    store = open_store(f"sqlite:///{tmp_path / 'studio.db'}")
    agent = LlmAgent(name="writer", model="scripted/demo", instruction="Write.")
    with pytest.raises(TypeError, match="unexpected keyword argument 'nmae'"):
        asyncio.run(evolve(agent, [{"topic": "x"}], critic=agent, store=store, nmae="typo"))
    assert store.list_runs() == []
