"""Any model, zero edits: an agent folder written for Gemini (in the shape of ADK's published
samples) runs offline on ``--model scripted/demo`` with no edit to its files, every
model-bearing agent of its tree included; ``model="scripted/demo"`` in ``agent.py`` runs too; a
project file says the same with ``agent: {folder, model, models}``; and the proposals are
written by the agent's own model unless told otherwise."""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from studio.cli import main
from studio.model.agent_models import ModelOverrides, running_note
from studio.model.errors import ConfigError
from studio.projects.files import create_project_run, parse_project
from studio.runtime.agent_models import code_models, effective_models, model_bearers, with_models
from studio.runtime.agents import folder_reference, load_agent
from studio.store import open_store
from tests.projects.adk_samples import GEMINI, write_sample_folder
from tests.projects.test_served_agents import write_graph_folder

ROOT = Path(__file__).resolve().parents[2]
EVERY_AGENT = {"fact_checker": GEMINI, "summarizer": GEMINI, "researcher": GEMINI}


@pytest.fixture
def offline(monkeypatch):
    """No Google key anywhere, and imports of agent folders forgotten after the test."""
    for name in ("GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(sys, "path", list(sys.path))


def sample(tmp_path: Path, request, *, model: str = GEMINI) -> Path:
    """The sample folder under a name unique to the test (Python caches imported packages)."""
    name = f"facts_{request.node.name.split('[')[0][-30:]}".replace("-", "_")
    return write_sample_folder(tmp_path, name, model=model)


def digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file() and "__pycache__" not in p.parts}


def run_folder(tmp_path, folder, *args) -> tuple[int, str]:
    return main(["--db", f"sqlite:///{tmp_path}/s.db", "run", str(folder), "--evalset",
                 str(folder / "facts.evalset.json"), *args]), f"sqlite:///{tmp_path}/s.db"


def stored(db: str, run_id: str):
    store = open_store(db, cached=False)
    try:
        return store.get_run(run_id), store.trials(run_id)
    finally:
        store.close()


def test_a_gemini_folder_runs_offline_on_another_model_with_zero_edits(offline, tmp_path,
                                                                      request, capsys):
    folder = sample(tmp_path, request)
    before = digest(folder)
    code, db = run_folder(tmp_path, folder, "--model", "scripted/demo", "--max-iterations", "1")
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "running on scripted/demo (the folder says gemini-2.5-flash)" in err
    run, trials = stored(db, json.loads(out)["run_id"])
    assert run.status.value == "completed"
    assert run.spec.code_models == EVERY_AGENT
    assert run.spec.models == ModelOverrides(every="scripted/demo")
    assert run.spec.reflection.model == "scripted/demo"  # the agent's own (overridden) model
    assert trials and all(t.error is None and t.output for t in trials)
    assert digest(folder) == before  # zero edits


def test_every_model_bearing_agent_of_the_tree_runs_on_the_override(offline, tmp_path,
                                                                    request):
    folder = sample(tmp_path, request)
    root = load_agent(folder_reference(folder), folder=folder)
    overrides = ModelOverrides(every="scripted/demo", agents={"summarizer": "scripted/echo"})
    copy = with_models(root, overrides)
    models = {agent.name: agent.model for agent in model_bearers(copy)}
    assert {name: model.model for name, model in models.items()} == {
        "fact_checker": "scripted/demo", "researcher": "scripted/demo",
        "summarizer": "scripted/echo"}  # the sub-agent and the AgentTool's agent too
    assert copy.sub_agents[0].parent_agent is copy
    assert effective_models(root, overrides) == {"fact_checker": "scripted/demo",
                                                 "summarizer": "scripted/echo",
                                                 "researcher": "scripted/demo"}
    assert code_models(root) == EVERY_AGENT  # the folder's own tree is never changed
    assert effective_models(root, ModelOverrides()) == EVERY_AGENT


def test_a_graph_workflows_nodes_run_on_the_override(offline, tmp_path):
    folder = write_graph_folder(tmp_path, "graph_models")
    root = load_agent(folder_reference(folder), folder=folder)
    copy = with_models(root, ModelOverrides(every="scripted/echo"))
    assert {a.name: a.model.model for a in model_bearers(copy)} == dict.fromkeys(
        ("plan", "pros", "cons", "final"), "scripted/echo")
    assert set(code_models(root).values()) == {"scripted/demo"}


def test_scripted_demo_written_in_agent_py_runs_under_studio_run(offline, tmp_path, request,
                                                                capsys):
    folder = sample(tmp_path, request, model="scripted/demo")
    code, db = run_folder(tmp_path, folder, "--max-iterations", "0")
    out, err = capsys.readouterr()
    assert code == 0, err
    run, trials = stored(db, json.loads(out)["run_id"])
    assert run.status.value == "completed" and trials
    assert all(t.error is None and t.output for t in trials)
    assert "running on" not in err  # nothing replaced


def test_a_project_file_chooses_models_for_the_whole_tree_and_one_agent(offline, tmp_path,
                                                                        request):
    folder = sample(tmp_path, request)
    project = parse_project(f"""
name: facts
agent: {{folder: {folder.name}, model: scripted/demo, models: {{summarizer: scripted/echo}}}}
dataset: {{train: {{path: {folder.name}/facts.evalset.json}}}}
run: {{max_iterations: 0}}
""", source="p.yaml")
    store = open_store(f"sqlite:///{tmp_path}/s.db", cached=False)
    run = create_project_run(store, project, tmp_path)
    assert run.spec.models == ModelOverrides(every="scripted/demo",
                                             agents={"summarizer": "scripted/echo"})
    assert running_note(run.spec.models, run.spec.code_models) == (
        "running on fact_checker: scripted/demo, summarizer: scripted/echo, researcher: "
        "scripted/demo (the folder says gemini-2.5-flash)")


def test_a_model_for_an_agent_the_tree_lacks_is_refused_before_anything_is_stored(
        offline, tmp_path, request):
    folder = sample(tmp_path, request)
    project = parse_project(f"""
name: facts
agent: {{folder: {folder.name}, models: {{writer: scripted/demo}}}}
dataset: {{train: {{path: {folder.name}/facts.evalset.json}}}}
""", source="p.yaml")
    store = open_store(f"sqlite:///{tmp_path}/s.db", cached=False)
    with pytest.raises(ConfigError, match=r"models: 'writer' is not a model-bearing agent of "
                                          r"'fact_checker' \(its LlmAgents: fact_checker, "
                                          r"summarizer, researcher\)"):
        create_project_run(store, project, tmp_path)
    assert store.list_runs() == []


def test_models_are_for_agents_loaded_from_code():
    with pytest.raises(ConfigError, match="'models' chooses models for the agents of a tree"):
        parse_project("""
name: x
agent: {name: writer, model: scripted/demo, models: {writer: scripted/echo}}
dataset: {train: [{input: a}]}
""", source="p.yaml")


def test_the_embedded_reflection_model_comes_with_a_notice(offline, tmp_path, request, capsys):
    folder = sample(tmp_path, request)
    code, _ = run_folder(tmp_path, folder, "--model", "scripted/demo", "--reflection-model",
                         "local/smollm2", "--max-iterations", "0")
    assert code == 0
    assert ("proposals are written by local/smollm2, the embedded 135M model that runs offline: "
            "it shows the machinery, not a gain") in capsys.readouterr().err


def test_the_one_import_lets_adks_registry_resolve_the_studios_models():
    from google.adk.models.registry import LLMRegistry

    importlib.import_module("studio.adk")
    assert LLMRegistry.resolve("scripted/demo").__name__ == "StudioLiteLlm"
    assert LLMRegistry.resolve("local/smollm2").__name__ == "StudioLiteLlm"


@pytest.mark.slow
def test_adks_own_adk_run_accepts_the_studios_model_after_the_one_import(tmp_path):
    """``adk run`` (ADK's CLI, its own process) on a folder whose agents name
    ``scripted/demo``, once ``import studio.adk`` is in ``agent.py`` (the one documented
    line)."""
    folder = write_sample_folder(tmp_path, "facts_adk_run", model="scripted/demo")
    agent = folder / "agent.py"
    agent.write_text("import studio.adk  # noqa: F401\n" + agent.read_text(encoding="utf-8"),
                     encoding="utf-8")
    queries = tmp_path / "queries.json"
    queries.write_text(json.dumps({"state": {}, "queries": ["How many planets orbit the Sun?"]}),
                       encoding="utf-8")
    adk = shutil.which("adk", path=str(Path(sys.executable).parent))
    assert adk, "ADK's CLI is installed with google-adk"
    done = subprocess.run([adk, "run", folder.name, "--replay", str(queries)], cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "[fact_checker]: the quiet world drifts by" in done.stdout  # the demo's haiku
