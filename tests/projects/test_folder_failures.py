"""An agent folder in the shape of ADK's samples that cannot run, through ``studio run FOLDER``:
one line naming the folder, the file and line, the cause and what to do (exit 2, no
traceback), and no run stored; a model without its key is refused the same way, naming the
variable and the agents that use the model."""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from studio.cli import main
from studio.model.errors import ModelConfigError
from studio.runtime.agents import load_agent
from tests.projects.sample_agents import BROKEN, break_sample, forget_modules, write_sample_agent

GOOGLE_SETTINGS = ("GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI",
                   "GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION")


@pytest.fixture
def sample(tmp_path, monkeypatch, request):
    """``sample(**kwargs)``: a sample-shaped agent folder (its package name unique per test, as
    Python caches an imported package), on a machine with no Google key or Vertex settings."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    for name in GOOGLE_SETTINGS:
        monkeypatch.delenv(name, raising=False)
    made: list[str] = []

    def make(**kwargs):
        name = f"haiku_{request.node.name.split('[')[0][-20:]}_{len(made)}"
        made.append(name)
        return write_sample_agent(tmp_path / "agents", name, **kwargs)

    yield make
    for name in made:
        forget_modules(name)


def run_folder(tmp_path: Path, folder: Path, capsys) -> tuple[int, str]:
    """``studio run FOLDER --evalset FOLDER/haiku.evalset.json``: (exit code, stderr)."""
    code = main(["--db", f"sqlite:///{tmp_path}/s.db", "run", str(folder), "--evalset",
                 str(folder / "haiku.evalset.json"), "--reflection-model", "scripted/demo",
                 "--max-iterations", "0"])
    return code, capsys.readouterr().err


def stored_runs(tmp_path: Path, capsys) -> str:
    """What ``studio runs`` prints for the test's database."""
    assert main(["--db", f"sqlite:///{tmp_path}/s.db", "runs"]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("kind", list(BROKEN))
def test_a_folder_that_fails_to_import_is_one_line_with_its_file_and_line(
        tmp_path, capsys, sample, kind):
    folder = sample()
    line, cause = break_sample(folder, kind)
    code, err = run_folder(tmp_path, folder, capsys)
    assert code == 2, err
    assert "Traceback" not in err and err.count("\n") == 1, err  # one line
    assert f"the agent folder {folder.name} could not be imported: {folder.name}/agent.py, " \
        f"line {line}: " in err, err
    assert cause in err, err
    assert "Fix it and run again" in err or "must not exit" in err
    assert stored_runs(tmp_path, capsys) == ""


def test_a_fixed_folder_imports_in_the_same_process(tmp_path, sample):
    """A failed import leaves nothing behind: once agent.py is fixed, the next try (the
    --agents form, in one server process) reads the files again."""
    from studio.model.errors import AgentImportError

    folder = sample(root_model='LiteLlm(model="scripted/demo")')
    original = (folder / "agent.py").read_text(encoding="utf-8")
    break_sample(folder, "syntax error")
    reference = f"{folder.name}.agent:root_agent"
    with pytest.raises(AgentImportError) as failed:
        load_agent(reference, folder=folder)
    assert failed.value.file == f"{folder.name}/agent.py" and failed.value.line
    assert not [m for m in sys.modules if m.startswith(folder.name)]  # prompt.py too
    (folder / "agent.py").write_text(original, encoding="utf-8")
    assert load_agent(reference, folder=folder).name == "haiku_writer"


def test_a_missing_dependency_says_what_to_install(tmp_path, capsys, sample):
    folder = sample()
    path = folder / "agent.py"
    path.write_text("import haiku_metrics_sdk_not_installed\n" + path.read_text(), "utf-8")
    code, err = run_folder(tmp_path, folder, capsys)
    assert code == 2 and "Traceback" not in err
    assert "agent.py, line 1: ModuleNotFoundError: No module named " in err
    assert "Install the package that provides 'haiku_metrics_sdk_not_installed'" in err


def test_a_gemini_folder_without_a_key_is_refused_before_a_run_is_stored(
        tmp_path, capsys, sample):
    folder = sample()
    code, err = run_folder(tmp_path, folder, capsys)
    assert code == 2 and "Traceback" not in err and err.count("\n") == 1, err
    assert "agent.folder > haiku_writer.model: model 'gemini-2.5-flash'" in err
    assert "needs GOOGLE_API_KEY (or GEMINI_API_KEY)" in err
    assert ("the model of agents 'haiku_writer', 'haiku_writer > tool fact_checker', "
            "'haiku_writer > stylist'") in err
    assert stored_runs(tmp_path, capsys) == ""


@pytest.mark.parametrize("models, agent", [
    ({"root_model": '"openai/gpt-4o-mini"'}, "haiku_writer"),
    ({"style_model": 'LiteLlm(model="openai/gpt-4o-mini")'}, "haiku_writer > stylist"),
    ({"fact_model": 'LiteLlm(model="openai/gpt-4o-mini")'}, "haiku_writer > tool fact_checker"),
])
def test_every_model_of_the_tree_is_checked_by_the_agent_that_uses_it(
        tmp_path, capsys, sample, monkeypatch, models, agent):
    """Sub-agents and the agents behind an AgentTool, by model name or LiteLlm object; the
    others run on the scripted model, so only that agent's model lacks its key."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    scripted = 'LiteLlm(model="scripted/demo")'
    folder = sample(**({"root_model": scripted, "fact_model": scripted,
                        "style_model": scripted} | models))
    code, err = run_folder(tmp_path, folder, capsys)
    assert code == 2, err
    assert f"agent.folder > {agent}.model: model 'openai/gpt-4o-mini' needs OPENAI_API_KEY" \
        in err
    assert f"(the model of agent '{agent}')" in err
    assert stored_runs(tmp_path, capsys) == ""


def test_a_graph_workflows_nodes_are_checked(tmp_path, capsys, sample):
    folder = sample(root_model='LiteLlm(model="scripted/demo")')
    path = folder / "agent.py"
    path.write_text(path.read_text() + (
        "\nfrom google.adk.workflow import Workflow\n\n\n"
        "def node(name):\n"
        "    return LlmAgent(name=name, model=MODEL, instruction=prompt.STYLE_PROMPT)\n\n\n"
        "root_agent = Workflow(name='pipeline', edges=[('START', node('draft'), "
        "node('polish'))])\n"), "utf-8")
    code, err = run_folder(tmp_path, folder, capsys)
    assert code == 2, err
    assert "agent.folder > pipeline > draft.model: model 'gemini-2.5-flash'" in err
    assert "'pipeline > draft', 'pipeline > polish'" in err


def test_a_sub_agent_without_a_model_is_checked_with_its_parents(sample):
    """ADK gives an LlmAgent without a model its nearest LlmAgent ancestor's."""
    from studio.runtime.model_checks import AgentModel, agent_tree_models

    folder = sample(style_model='""')
    root = load_agent(f"{folder.name}.agent:root_agent", folder=folder)
    assert AgentModel("haiku_writer > stylist", "gemini-2.5-flash") in agent_tree_models(root)


def test_a_model_given_its_own_key_or_a_key_in_the_environment_passes(sample, monkeypatch):
    from studio.runtime.model_checks import agent_tree_models, check_agent_models

    folder = sample(style_model='LiteLlm(model="openai/gpt-4o-mini", api_key="sk-in-code")')
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    root = load_agent(f"{folder.name}.agent:root_agent", folder=folder)
    models = agent_tree_models(root)
    assert [m.agent for m in models] == ["haiku_writer", "haiku_writer > tool fact_checker"]
    with pytest.raises(ModelConfigError, match="GOOGLE_API_KEY"):
        check_agent_models(models)
    monkeypatch.setenv("GEMINI_API_KEY", "not-a-real-key")
    check_agent_models(models)  # no error


def test_the_check_takes_the_models_a_caller_chose(sample):
    """What a model override (``--model``) gives each agent is checked, not the folder's."""
    from studio.runtime.model_checks import AgentModel, agent_tree_models, check_agent_models

    folder = sample()
    root = load_agent(f"{folder.name}.agent:root_agent", folder=folder)
    overridden = [AgentModel(m.agent, "scripted/demo") for m in agent_tree_models(root)]
    check_agent_models(overridden)  # no error: the scripted model needs no key


@pytest.mark.slow
def test_a_failed_gemini_call_leaves_no_unretrieved_task(sample, caplog):
    """google-genai's cleanup of a client its constructor gave up on (no key) was a task
    nobody awaited: one "Task exception was never retrieved" traceback per failed call."""
    from google.adk.agents import LlmAgent

    from studio.runtime.execution import AgentExecutor

    sample()  # only for its environment: no Google key
    agent = LlmAgent(name="writer", model="gemini-2.5-flash", instruction="Write a haiku.")
    executor = AgentExecutor(max_concurrency=2, max_retries=0)

    async def two_calls():
        results = await asyncio.gather(executor.execute(agent, "rain"),
                                       executor.execute(agent, "snow"))
        gc.collect()  # as the loop's next garbage collection would
        await asyncio.sleep(0.05)  # the cleanup tasks run
        return results

    with caplog.at_level(logging.ERROR, logger="asyncio"):
        results = asyncio.run(two_calls())
    assert all("No API key was provided" in (r.error_message or "") for r in results)
    assert not [r for r in caplog.records if "never retrieved" in r.getMessage()]


@pytest.mark.slow
def test_studio_run_refuses_a_keyless_gemini_folder_within_seconds(tmp_path, sample):
    """The whole command, as a person runs it: exit 2 after under 15 s of the command's own
    CPU (its wall time is that on an idle machine; on a busy one the other processes' share is
    added, so the CPU the command used is what is bounded), the variable named, and ``studio
    runs`` lists nothing."""
    folder = sample()
    env = {k: v for k, v in os.environ.items() if k not in GOOGLE_SETTINGS}
    db = f"sqlite:///{tmp_path}/s.db"
    command = [sys.executable, "-m", "studio.cli", "--db", db]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run([*command, "run", str(folder), "--evalset",
                           str(folder / "haiku.evalset.json")], capture_output=True, text=True,
                          env=env, timeout=120)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert done.returncode == 2, done.stderr
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    assert cpu < 15, cpu
    assert "GOOGLE_API_KEY" in done.stderr and "Traceback" not in done.stderr
    assert "never retrieved" not in done.stderr
    listed = subprocess.run([*command, "runs"], capture_output=True, text=True, env=env,
                            timeout=60)
    assert listed.returncode == 0 and listed.stdout == ""
