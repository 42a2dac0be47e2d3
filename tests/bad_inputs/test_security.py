"""Security edges: projects from the browser never run or load code, never read server files;
secrets never reach the store or an export; the server refuses to serve other machines."""

from __future__ import annotations

import csv
import io
import json
import os
import sys
import tempfile
from pathlib import Path

import pytest
import yaml

from studio.cli import main
from studio.model.config import EvolutionConfig
from studio.model.errors import ConfigError, DatasetError, ProjectFileError
from studio.projects.files import ALLOW_CODE_REFS_ENV, parse_project
from studio.projects.probe import probe_sync
from studio.projects.workspace import (
    import_upload,
    import_yaml,
    save_project,
    start_project_run,
)
from tests.bad_inputs.conftest import project, write_project
from tests.helpers import empty_postgres_store, postgres_url

HOSTILE_REFS = ["os:abort", "faulthandler:_sigsegv", "tempfile:mkdtemp", "os:system",
                "shutil:rmtree", "subprocess:Popen"]


def _ref_yaml(ref: str) -> str:
    return yaml.safe_dump(project(agent={"ref": ref}))


@pytest.mark.parametrize("ref", HOSTILE_REFS)
def test_an_upload_with_agent_ref_is_refused_with_the_opt_in_named(store, saved, ref):
    with pytest.raises(ProjectFileError) as refused:
        import_upload(store, _ref_yaml(ref).encode(), "evil.yaml")
    message = str(refused.value)
    assert "evil.yaml: agent.ref" in message and ref in message
    assert "studio ui --allow-code-refs" in message and ALLOW_CODE_REFS_ENV in message
    assert saved()


def test_the_yaml_editor_cannot_save_an_agent_ref(store, saved):
    edited = parse_project(_ref_yaml("os:abort"), source="YAML editor")
    with pytest.raises(ProjectFileError, match="agent.ref 'os:abort' loads Python code"):
        save_project(store, edited, None)
    assert saved()


def test_a_stored_project_with_a_ref_neither_starts_nor_tries(store):
    record = store.save_project("legacy", _ref_yaml("tempfile:mkdtemp"))  # from an older version
    before = set(os.listdir(tempfile.gettempdir()))
    with pytest.raises(ProjectFileError, match="project 'legacy': agent.ref"):
        start_project_run(store, record.id, EvolutionConfig(max_iterations=1))
    with pytest.raises(ProjectFileError, match="STUDIO_ALLOW_CODE_REFS"):
        probe_sync(parse_project(record.yaml), {"topic": "x"})
    assert store.list_runs() == [] and set(os.listdir(tempfile.gettempdir())) <= before


def test_resuming_a_run_with_a_ref_from_the_studio_is_refused(store):
    from studio.engine.hosting.build import create_run
    from studio.model.records import RunSpec
    from studio.projects.workspace import resume_run

    run = create_run(store, spec=RunSpec(agent_ref="os:abort"), trainset=[{"topic": "a"}])
    with pytest.raises(ProjectFileError, match=f"run {run.id}: agent.ref"):
        resume_run(store, run.id)
    assert store.get_run(run.id).status.value == "pending"  # untouched


@pytest.mark.parametrize("ref, kind", [("tempfile:mkdtemp", "function"),
                                       ("os:abort", "builtin_function_or_method"),
                                       ("collections:OrderedDict", "type"),
                                       ("os:sep", "str")])
def test_with_the_opt_in_a_ref_is_loaded_never_called(store, monkeypatch, ref, kind):
    monkeypatch.setenv(ALLOW_CODE_REFS_ENV, "1")
    record = import_upload(store, _ref_yaml(ref).encode(), "opted-in.yaml")
    before = set(os.listdir(tempfile.gettempdir()))
    with pytest.raises(ConfigError) as refused:
        probe_sync(parse_project(record.yaml), {"topic": "x"})
    assert f"is a {kind}, not an ADK agent instance" in str(refused.value)
    assert "agent.ref" in str(refused.value)
    assert set(os.listdir(tempfile.gettempdir())) <= before  # mkdtemp was not called


def test_private_attributes_are_not_loaded(store, monkeypatch):
    monkeypatch.setenv(ALLOW_CODE_REFS_ENV, "1")
    with pytest.raises(ConfigError, match="private names"):
        probe_sync(parse_project(_ref_yaml("faulthandler:_sigsegv")), {"topic": "x"})


def test_the_cli_may_use_a_ref_to_a_real_agent_on_its_own_file(tmp_path, capsys, monkeypatch):
    (tmp_path / "team_agents.py").write_text(
        "from google.adk.agents import LlmAgent\n"
        "writer = LlmAgent(name='w', model='gemini-2.0-flash', instruction='x')\n"
        "def make():\n    raise SystemExit('a factory must never be called')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    good = write_project(tmp_path, project(agent={"ref": "team_agents:writer"}))
    assert main(["validate", str(good)]) == 0
    assert "ok (2 training rows" in capsys.readouterr().out
    factory = write_project(tmp_path, project(agent={"ref": "team_agents:make"}), "f.yaml")
    assert main(["validate", str(factory)]) == 2
    assert "is a function, not an ADK agent instance" in capsys.readouterr().err


BAD_PATHS = [
    ("absolute", "/etc/passwd.csv", "is an absolute path"),
    ("parent", "../outside.csv", "is outside the project's folder"),
    ("deep-parent", "data/../../outside.csv", "is outside the project's folder"),
    ("symlink-out", "link.csv", "is outside the project's folder"),
]


@pytest.mark.parametrize("path, fragment", [c[1:] for c in BAD_PATHS],
                         ids=[c[0] for c in BAD_PATHS])
def test_the_cli_reads_datasets_only_inside_the_project_folder(tmp_path, capsys, path, fragment):
    folder = tmp_path / "proj"
    (folder / "data").mkdir(parents=True)
    (tmp_path / "outside.csv").write_text("topic\nsecret row\n")
    (folder / "link.csv").symlink_to(tmp_path / "outside.csv")
    path_file = write_project(folder, project(dataset={"train": {"path": path}}))
    assert main(["validate", str(path_file)]) == 2
    err = capsys.readouterr().err
    assert fragment in err and repr(path) in err and "dataset.train.path" in err
    assert "secret row" not in err


def test_the_cli_resolves_dataset_paths_from_the_project_folder(tmp_path, capsys, monkeypatch):
    folder = tmp_path / "proj"
    (folder / "data").mkdir(parents=True)
    (folder / "data" / "rows.csv").write_text("topic\nautumn\nrain\nfog\n")
    path = write_project(folder, project(dataset={"train": {"path": "data/rows.csv"}}))
    monkeypatch.chdir(tmp_path)  # started elsewhere: still the project's folder
    assert main(["validate", str(path)]) == 0
    assert "ok (3 training rows" in capsys.readouterr().out


@pytest.mark.parametrize("path", ["rows.csv", "/etc/hostname.csv", "../x.jsonl"])
def test_an_upload_must_inline_its_datasets(store, saved, path):
    with pytest.raises(DatasetError) as refused:
        import_upload(store, yaml.safe_dump(project(dataset={"train": {"path": path}})).encode(),
                      "up.yaml")
    message = str(refused.value)
    assert "up.yaml: dataset.train.path" in message and "inline its rows" in message
    assert repr(path) in message and saved()


SECRETS = {"AWS_BEARER_TOKEN_BEDROCK": "bedrock-abcdef123456", "LITELLM_MASTER_KEY":
           "master-key-7788990011", "WATSONX_APIKEY": "wx-apikey-55443322",
           "MY_SERVICE_CREDENTIALS": "cred-0099887766", "DB_PASSWORD": "pw-hunter2hunter2"}


@pytest.mark.slow
def test_secrets_in_the_environment_are_stored_raw_for_the_loop_and_never_printed_or_exported(
        tmp_path, capsys, monkeypatch, script):
    """Trials are stored as judged (the loop reads them back); the project and the run's spec
    (where a key would be written literally) are stored redacted; `studio trials` and the
    export show ``***``."""
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    leak = " ".join(SECRETS.values())
    agent = script(f"here you go: {leak}")
    data = project(agent={"model": agent, "instruction": f"use key {SECRETS['WATSONX_APIKEY']}"},
                   description=f"token {SECRETS['AWS_BEARER_TOKEN_BEDROCK']}",
                   dataset={"train": [{"topic": "=HYPERLINK(\"http://evil\",\"x\")"},
                                      {"topic": "+1+1"}, {"topic": "-2"}, {"topic": "@SUM(A1)"}]},
                   run={"max_iterations": 1, "minibatch_size": 2})
    data["dataset"]["input_column"] = "topic"
    db = f"sqlite:///{tmp_path}/s.db"
    assert main(["--db", db, "run", str(write_project(tmp_path, data))]) == 0
    run_id = json.loads(capsys.readouterr().out)["run_id"]
    from studio.store import open_store

    stored = open_store(db, cached=False)
    trials = stored.trials(run_id)
    assert trials and all(leak in t.output for t in trials)  # raw: reflection reads it
    import_yaml(stored, yaml.safe_dump(data), "p.yaml")
    dumped = [p.yaml for p in stored.list_projects()]
    dumped += [r.spec.model_dump_json() for r in stored.list_runs()]
    for value in SECRETS.values():
        assert not any(value in text for text in dumped), value
    assert main(["--db", db, "trials", run_id, "--json"]) == 0
    printed = capsys.readouterr().out
    assert json.loads(printed)  # the trial list shows feedback, not outputs
    assert not any(value in printed for value in SECRETS.values())

    assert main(["--db", db, "export", run_id, "--format", "csv", "--out",
                 str(tmp_path / "out")]) == 0
    exported = (tmp_path / "out_trials.csv").read_text()
    assert not any(value in exported for value in SECRETS.values()) and "***" in exported
    inputs = {row["input"] for row in csv.DictReader(io.StringIO(exported))}
    assert inputs == {"'=HYPERLINK(\"http://evil\",\"x\")", "'+1+1", "'-2", "'@SUM(A1)"}


def test_a_project_whose_whole_value_is_a_secret_is_stored_redacted_and_still_loads(
        store, monkeypatch):
    from studio.projects.workspace import stored_project

    monkeypatch.setenv("TEAM_API_KEY", "team-secret-0123456789")
    record = import_yaml(store, yaml.safe_dump(project(description="team-secret-0123456789")),
                         "p.yaml")
    assert "team-secret" not in store.get_project(record.id).yaml
    assert stored_project(store, record.id).description == "***"


def test_studio_run_never_prints_the_database_password(capsys):
    url = "postgresql://studio:s3cr3t-pass-word@127.0.0.1:1/nowhere"
    assert main(["--db", url, "runs"]) == 2
    err = capsys.readouterr().err
    assert "error:" in err and "s3cr3t-pass-word" not in err


def test_studio_run_shows_the_postgres_database_without_its_password(tmp_path, capsys):
    url = postgres_url()
    empty_postgres_store(url).close()  # an earlier test's users would make the CLI ask who acts
    password = url.split("://", 1)[1].split("@")[0].split(":")[1]
    path = write_project(tmp_path, project(name="pg-mask", run={"max_iterations": 0}))
    assert main(["--db", url, "run", str(path)]) == 0
    out, err = capsys.readouterr()
    assert "database: postgresql" in err and f":{password}@" not in err + out
    assert ":***@" in err


@pytest.mark.parametrize("argv, fragment", [
    (["ui", "--address", "0.0.0.0"], "0.0.0.0"),
    (["ui", "--address", "192.168.1.20"], "192.168.1.20"),
    (["ui", "--address", ""], "every network interface"),
])
def test_studio_ui_refuses_a_public_address_without_the_flag(capsys, argv, fragment):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "server.address" in err and fragment in err and "--allow-remote" in err


def test_studio_ui_passes_the_studio_settings_wherever_it_starts(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["ui", "--print-command", "--port", "8600"]) == 0
    command = capsys.readouterr().out.split()
    flags = dict(zip(command[5::2], command[6::2], strict=False))
    assert command[:4] == [sys.executable, "-m", "streamlit", "run"]
    assert Path(command[4]).name == "app.py" and Path(command[4]).is_file()
    assert flags["--server.address"] == "localhost" and flags["--server.port"] == "8600"
    assert flags["--browser.gatherUsageStats"] == "false"
    assert flags["--server.enableXsrfProtection"] == "true"
    assert flags["--server.enableCORS"] == "true" and flags["--server.maxUploadSize"] == "20"
    hosts = [command[i + 1] for i, c in enumerate(command) if c == "--server.allowedHosts"]
    assert hosts == ["localhost", "127.0.0.1", "::1"]


def test_the_app_refuses_to_serve_on_all_interfaces(monkeypatch):
    from streamlit.testing.v1 import AppTest

    from studio.projects.serving import APP

    at = AppTest.from_file(str(APP), default_timeout=60)
    monkeypatch.delenv("STUDIO_ALLOW_REMOTE", raising=False)
    at.run()  # the repository's config: localhost
    assert not [e for e in at.error if "reachable from other machines" in e.value]
    from streamlit import config

    before = config.get_option("server.address")
    config.set_option("server.address", "0.0.0.0")
    try:
        at.run()
    finally:
        config.set_option("server.address", before)
    assert any("0.0.0.0, reachable from other machines" in e.value for e in at.error)
    monkeypatch.setenv("STUDIO_ALLOW_REMOTE", "1")  # the explicit opt-in serves
    config.set_option("server.address", "0.0.0.0")
    try:
        at.run()
    finally:
        config.set_option("server.address", before)
    assert not [e for e in at.error if "reachable from other machines" in e.value]


@pytest.mark.parametrize("name, secret", [
    ("AWS_BEARER_TOKEN_BEDROCK", True), ("LITELLM_MASTER_KEY", True), ("WATSONX_APIKEY", True),
    ("OPENAI_API_KEY", True), ("AZURE_CLIENT_SECRET", True), ("PGPASSWORD", True),
    ("GOOGLE_APPLICATION_CREDENTIALS_JSON", True), ("HF_TOKEN", True), ("my_private_key", True),
    ("HOME", False), ("PATH", False), ("GIT_AUTHOR_NAME", False), ("SSH_AUTH_SOCK", False),
    ("KEYBOARD_LAYOUT", False), ("GOOGLE_APPLICATION_CREDENTIALS_FILE", False),
])
def test_secret_variables_are_recognised_by_name_and_their_values_redacted(
        monkeypatch, name, secret):
    from studio.model.redaction import redact

    value = f"value-of-{name.lower()}-1234"
    monkeypatch.setenv(name, value)
    assert (redact(f"the output says {value}.") == "the output says ***.") is secret
