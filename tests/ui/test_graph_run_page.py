"""The Run page of an ADK 2 graph workflow run draws its graph (nodes, edges, routes)."""

from __future__ import annotations

import asyncio

import pytest

from studio.critics.adapters import build_critic
from studio.engine.hosting.api import evolve
from studio.model.config import EvolutionConfig
from studio.model.graph import NodeKind
from tests.engine.test_graph_workflows import decision_graph
from tests.ui.conftest import assert_ok


@pytest.mark.slow
def test_the_run_page_shows_a_graph_runs_picture(app, studio_db, script):
    model = script(lambda request: "a short answer")
    asyncio.run(evolve(decision_graph(model), [{"topic": "x"}, {"topic": "y"}],
                       critic=build_critic({"evaluator": "contains",
                                            "params": {"substring": "answer"}}),
                       components={"pros": ["instruction"]}, reflection_model=model,
                       store=studio_db, config=EvolutionConfig(max_iterations=1, review="auto")))
    [run] = studio_db.list_runs()
    assert run.spec.graph is not None and run.spec.graph.node("join").kind is NodeKind.JOIN
    at = app("run", run_id=run.id)
    assert_ok(at)
    assert any(e.label == "Graph workflow `decide`" for e in at.expander)
    assert at.get("graphviz_chart")
