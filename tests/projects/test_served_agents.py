"""``studio ui --agents DIR``: the agent folders under DIR, picked by name from the browser."""

from __future__ import annotations

import sys

import pytest

from studio.cli import main, parser
from studio.cli.projects import server_environment
from studio.engine.hosting.worker import get_manager
from studio.model.config import EvolutionConfig
from studio.model.errors import ConfigError
from studio.model.graph import NodeKind
from studio.model.records import RunStatus
from studio.projects.served_agents import (
    AGENTS_DIR_ENV,
    list_served_agents,
    served_agent_graph,
    start_served_agent_run,
)
from studio.store import open_store
from tests.projects.test_adk_projects import write_agent_folder, write_eval_set


@pytest.fixture
def agents_root(tmp_path, monkeypatch):
    """DIR with one agent (its eval set inside), a folder without root_agent, a hidden folder
    and a file."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    root = tmp_path / "agents"
    folder = write_agent_folder(root, "served_haiku", "SERVED_HAIKU_TASK")
    monkeypatch.delenv("SERVED_HAIKU_TASK", raising=False)
    write_eval_set(folder / "haiku.evalset.json")
    (root / "helpers").mkdir()
    (root / "helpers" / "__init__.py").write_text("x = 1\n", encoding="utf-8")
    (root / ".venv").mkdir()
    (root / "README.md").write_text("agents\n", encoding="utf-8")
    return root


def test_the_agent_folders_under_dir_are_listed_with_their_eval_sets(agents_root):
    [agent] = list_served_agents(agents_root)
    assert (agent.name, agent.eval_sets) == ("served_haiku", ("haiku.evalset.json",))


def test_a_served_agent_runs_on_its_eval_set_trusted(agents_root, tmp_path):
    store = open_store(f"sqlite:///{tmp_path}/s.db", cached=False)
    run = start_served_agent_run(store, "served_haiku", "haiku.evalset.json",
                                 EvolutionConfig(max_iterations=1), root=agents_root,
                                 reflection_model="scripted/demo")
    get_manager(store).handle(run.id).wait(timeout=60)
    run = store.get_run(run.id)
    assert run.status is RunStatus.COMPLETED
    assert run.spec.agent_folder == str((agents_root / "served_haiku").resolve())


@pytest.mark.parametrize(("name", "eval_set", "message"), [
    ("helpers", "haiku.evalset.json", "no agent 'helpers' is served here (served: served_haiku)"),
    ("../agents/served_haiku", "haiku.evalset.json", "no agent '../agents/served_haiku'"),
    ("served_haiku", "../../secret.evalset.json", "has no eval set '../../secret.evalset.json'"),
])
def test_only_names_from_the_lists_are_accepted(agents_root, tmp_path, name, eval_set,
                                                message):
    store = open_store(f"sqlite:///{tmp_path}/s.db", cached=False)
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        start_served_agent_run(store, name, eval_set, EvolutionConfig(), root=agents_root)


def test_studio_ui_passes_the_folder_to_the_server(agents_root, tmp_path, capsys):
    args = parser().parse_args(["ui", "--agents", str(agents_root)])
    assert server_environment(args)[AGENTS_DIR_ENV] == str(agents_root.resolve())
    assert main(["ui", "--agents", str(agents_root), "--print-command"]) == 0
    assert main(["ui", "--agents", str(tmp_path / "missing"), "--print-command"]) == 2
    assert "--agents" in capsys.readouterr().err


GRAPH_AGENT = """from google.adk.agents import LlmAgent
from google.adk.models.lite_llm import LiteLlm
from google.adk.workflow import JoinNode, Workflow


def agent(name, instruction):
    return LlmAgent(name=name, model=LiteLlm(model="scripted/demo"), instruction=instruction)


root_agent = Workflow(name="decide", edges=[
    ("START", agent("plan", "Plan it."), (agent("pros", "List pros."), agent("cons", "List cons.")),
     JoinNode(name="join"), agent("final", "Decide."))])
"""


def write_graph_folder(root, name: str = "served_graph"):
    """An agent folder whose root_agent is an ADK 2 graph Workflow (a chain with a fan-out)."""
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text("from . import agent\n", encoding="utf-8")
    (folder / "agent.py").write_text(GRAPH_AGENT, encoding="utf-8")
    write_eval_set(folder / "haiku.evalset.json")
    return folder


def test_a_served_graph_workflows_shape_is_read_for_its_picture(agents_root):
    write_graph_folder(agents_root)
    spec = served_agent_graph("served_graph", agents_root)
    assert spec is not None and spec.graph is not None and spec.graph.name == "decide"
    assert spec.graph.node("join").kind is NodeKind.JOIN
    assert spec.components == [f"{n}.instruction" for n in ("plan", "pros", "cons", "final")]
    assert spec.primary == "final"
    assert served_agent_graph("served_haiku", agents_root) is None  # one LlmAgent: no graph
    with pytest.raises(ConfigError, match="no agent 'elsewhere'"):
        served_agent_graph("elsewhere", agents_root)
