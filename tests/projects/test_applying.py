"""Shipping the winner: ``studio apply RUN`` writes a finished run's best candidate into the
agent folder's source (issue 31), on a folder shaped as ADK's samples, run for real (scripted
models through ADK and LiteLLM, a real SQLite store). A fresh interpreter importing the folder
is the oracle for what the agent's instruction now is."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from studio.cli import main
from studio.model.applied import Applied
from studio.model.errors import ConfigError
from studio.projects.applying import applications, best_bundle, plan_served_apply
from studio.projects.served_agents import AGENTS_DIR_ENV
from studio.store import open_store
from tests.helpers import ROOT
from tests.projects.adk_haiku_sample import COORDINATOR_PROMPT, write_sample_folder
from tests.projects.test_adk_projects import write_eval_set
from tests.projects.test_agent_source import write_router

pytestmark = pytest.mark.slow

PROJECT = """
name: apply-sample
agent: {{folder: {folder}}}
critic: {{type: agent, schema: advanced, model: scripted/demo}}
reflection: {{model: scripted/demo}}
dataset: {{train: {{path: haiku.evalset.json}}}}
run: {{max_iterations: 2, minibatch_size: 2, review: auto, seed: 3}}
"""


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A finished run of the sample folder whose best candidate is not the seed:
    ``(db, run_id, folder, best instruction)``."""
    home = tmp_path_factory.mktemp("apply")
    folder = write_sample_folder(home / "agents", "apply_sample")
    write_eval_set(home / "haiku.evalset.json")
    project = home / "project.yaml"
    project.write_text(PROJECT.format(folder="agents/apply_sample"), encoding="utf-8")
    db = f"sqlite:///{home}/studio.db"
    path = list(sys.path)
    try:
        assert main(["--db", db, "run", str(project)]) == 0
    finally:
        sys.path[:] = path
    store = open_store(db, cached=False)
    try:
        run = store.list_runs(limit=1)[0]
        from studio.engine.policies.pool import load_view

        best = next(c for c in store.candidates(run.id) if c.id == load_view(store, run.id).best_id)
    finally:
        store.close()
    assert best.index > 0 and best.components["instruction"] != COORDINATOR_PROMPT
    return db, run.id, folder, best.components["instruction"]


def copy_of(folder: Path, tmp_path: Path) -> Path:
    """The folder as another checkout of it (the same package name, elsewhere)."""
    target = tmp_path / "checkout" / folder.name
    shutil.copytree(folder, target)
    return target


def imported_instruction(folder: Path, attribute: str = "root_agent") -> str:
    """The agent's instruction as a fresh Python importing the folder sees it."""
    code = (f"import {folder.name}.agent as a; import sys; "
            f"sys.stdout.write(a.{attribute}.instruction)")
    done = subprocess.run([sys.executable, "-c", code], cwd=folder.parent, capture_output=True,
                          text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": f"{folder.parent}:{ROOT}"})
    assert done.returncode == 0, done.stderr
    return done.stdout


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and "__pycache__" not in p.parts}


def test_apply_writes_the_best_into_prompt_py_and_dry_run_changes_nothing(finished, tmp_path,
                                                                         capsys):
    db, run_id, folder, best = finished
    target = copy_of(folder, tmp_path)
    before = snapshot(target)
    assert imported_instruction(target) == COORDINATOR_PROMPT

    assert main(["--db", db, "apply", run_id, "--to", str(target), "--dry-run"]) == 0
    out, err = capsys.readouterr()
    assert snapshot(target) == before
    assert f"--- a/{target.name}/prompt.py\n+++ b/{target.name}/prompt.py\n" in out
    assert "instruction: prompt.py:8 (the constant COORDINATOR_PROMPT)" in err
    assert "dry run: nothing written" in err

    assert main(["--db", db, "apply", run_id, "--to", str(target), "--author", "ana"]) == 0
    patch, err = capsys.readouterr()
    assert patch == out
    after = snapshot(target)
    assert [name for name in before if before[name] != after[name]] == ["prompt.py"]
    old, new = before["prompt.py"].splitlines(keepends=True), \
        after["prompt.py"].splitlines(keepends=True)
    assert new[:7] == old[:7] and old[8:] == []  # the header, docstring and comment as they were
    assert imported_instruction(target) == best
    assert imported_instruction(target, "root_agent.sub_agents[0]") == \
        "Find one fact about the topic and state it in a sentence."

    store = open_store(db, cached=False)
    try:
        [record] = [a for a in applications(store, run_id) if a.folder == str(target)]
    finally:
        store.close()
    assert isinstance(record, Applied)
    assert (record.files, record.components, record.author, record.text_files) == \
        (["prompt.py"], ["instruction"], "ana", [])
    assert main(["--db", db, "runs"]) == 0
    assert f"applied #{record.candidate_index} to {target.name} by ana" in capsys.readouterr().out


def test_a_computed_instruction_goes_to_a_text_file_and_the_place_is_named(finished, tmp_path,
                                                                          capsys):
    db, run_id, folder, best = finished
    target = copy_of(folder, tmp_path)
    prompt = target / "prompt.py"
    prompt.write_text(prompt.read_text().replace(
        f'COORDINATOR_PROMPT = """{COORDINATOR_PROMPT}"""',
        'TOPIC = "the given topic"\nCOORDINATOR_PROMPT = f"Write a haiku about {TOPIC}."'))
    before = prompt.read_bytes()
    assert main(["--db", db, "apply", run_id, "--to", str(target)]) == 1
    err = capsys.readouterr().err
    assert ("the instruction of agent 'haiku_coordinator' is computed at run time at "
            "prompt.py:9: an f-string") in err
    assert "the text goes to haiku_coordinator.instruction.txt" in err
    assert prompt.read_bytes() == before
    assert (target / "haiku_coordinator.instruction.txt").read_text() == best


def test_a_file_changed_since_the_run_started_is_refused_naming_what_was_expected(
        finished, tmp_path, capsys):
    db, run_id, folder, _best = finished
    target = copy_of(folder, tmp_path)
    prompt = target / "prompt.py"
    prompt.write_text(prompt.read_text().replace(COORDINATOR_PROMPT, "Write a limerick."))
    assert main(["--db", db, "apply", run_id, "--to", str(target), "--dry-run"]) == 1
    err = capsys.readouterr().err
    assert ("prompt.py:8 (the constant COORDINATOR_PROMPT) no longer holds the instruction run "
            "started from: expected 'Write a haiku about the given topic.', found 'Write a "
            "limerick.'") in err
    assert not (target / "haiku_coordinator.instruction.txt").exists()


def test_apply_refuses_a_candidate_the_run_does_not_have(finished, capsys):
    db, run_id, _folder, _best = finished
    assert main(["--db", db, "apply", run_id, "--candidate", "99", "--dry-run"]) == 2
    assert f"run {run_id} has no candidate #99 (its candidates: #0" in capsys.readouterr().err


def test_download_the_best_has_the_texts_and_the_patch_only_for_a_served_folder(
        finished, tmp_path, monkeypatch):
    """The browser writes, and reads source for a patch, only inside the folder ``studio ui
    --agents`` serves: a run whose folder lies elsewhere gets its texts only, and Apply is
    refused."""
    db, run_id, folder, best = finished
    store = open_store(db, cached=False)
    try:
        monkeypatch.setenv(AGENTS_DIR_ENV, str(folder.parent))
        name, data = best_bundle(store, run_id)
        bundle = zipfile.ZipFile(io.BytesIO(data))
        assert sorted(bundle.namelist()) == ["apply_sample.patch",
                                             "haiku_coordinator.instruction.txt"]
        assert bundle.read("haiku_coordinator.instruction.txt").decode() == best
        assert "+++ b/apply_sample/prompt.py" in bundle.read("apply_sample.patch").decode()
        assert name.startswith(f"best-{run_id}-#")

        monkeypatch.setenv(AGENTS_DIR_ENV, str(tmp_path))
        _name, data = best_bundle(store, run_id)
        assert zipfile.ZipFile(io.BytesIO(data)).namelist() == [
            "haiku_coordinator.instruction.txt"]
        with pytest.raises(ConfigError, match="is not one this studio serves"):
            plan_served_apply(store, run_id)
    finally:
        store.close()


def scripted_router(parent: Path, name: str) -> Path:
    """The router of test_agent_source (two helpers sharing one constant), on the scripted
    model."""
    folder = write_router(parent, name)
    agent = folder / "agent.py"
    agent.write_text(agent.read_text().replace(
        'model="gemini-2.5-flash"', 'model=LiteLlm(model="scripted/demo")').replace(
        "from google.adk.agents import LlmAgent\n",
        "from google.adk.agents import LlmAgent\nfrom google.adk.models.lite_llm import LiteLlm\n"))
    return folder


def test_agents_sharing_a_constant_are_said_to_change_together(tmp_path, monkeypatch, capsys):
    """A candidate that changes helper_a's instruction, which helper_b shares through one
    constant: the plan says both change; the root's implicit concatenation is untouched."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    folder = scripted_router(tmp_path / "agents", "apply_router")
    write_eval_set(tmp_path / "haiku.evalset.json")
    project = tmp_path / "project.yaml"
    project.write_text(PROJECT.format(folder="agents/apply_router").replace(
        "reflection:", "components: [helper_a.instruction]\nreflection:"), encoding="utf-8")
    db = f"sqlite:///{tmp_path}/studio.db"
    assert main(["--db", db, "run", str(project), "--max-iterations", "1"]) == 0
    capsys.readouterr()
    store = open_store(db, cached=False)
    try:
        run_id = store.list_runs(limit=1)[0].id
        changed = next(c for c in store.candidates(run_id)
                       if c.components["helper_a.instruction"] != "Answer as a helper.")
    finally:
        store.close()
    assert main(["--db", db, "apply", run_id, "--candidate", str(changed.index)]) == 0
    err = capsys.readouterr().err
    assert "helper_a.instruction: prompt.py:1 (the constant SHARED_PROMPT)" in err
    assert ("note: the same literal is also the instruction of agent helper_b, which therefore "
            "changes too") in err
    assert imported_instruction(folder, "helper_b") == \
        changed.components["helper_a.instruction"]
    assert "Answer briefly." in (folder / "agent.py").read_text()


EXAMPLE_AGENT = ROOT / "examples" / "adk_agents" / "haiku_agent"


def test_the_readmes_example_folder_climbs_and_its_best_is_applied(tmp_path, monkeypatch,
                                                                    capsys):
    """The README's five commands on a copy of examples/adk_agents/haiku_agent, judged by ADK's
    default criteria; its Gemini model swapped for the scripted one in the copy, as ``--model
    scripted/demo`` does once the run takes it."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    folder = tmp_path / "haiku_agent"
    shutil.copytree(EXAMPLE_AGENT, folder, ignore=shutil.ignore_patterns("__pycache__"))
    agent = folder / "agent.py"
    agent.write_text(agent.read_text().replace(
        'MODEL = "gemini-2.5-flash"',
        'from google.adk.models.lite_llm import LiteLlm\n\nMODEL = LiteLlm(model="scripted/demo")'))
    db = f"sqlite:///{tmp_path}/studio.db"
    assert main(["--db", db, "run", str(folder), "--reflection-model", "scripted/demo",
                 "--evalset", str(folder / "haiku.evalset.json"), "--max-iterations", "3"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["final_score"] > summary["original_score"]
    assert main(["--db", db, "apply", summary["run_id"]]) == 0
    assert imported_instruction(folder) == summary["evolved_components"]["instruction"]
