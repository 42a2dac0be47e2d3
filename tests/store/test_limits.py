"""Names wider than their column: one limit per field, checked before anything is stored, with
the same message on SQLite (which ignores widths) and PostgreSQL (which refuses past them)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from studio.engine import EvolutionConfig, create_run, enqueue
from studio.model.errors import ConfigError
from studio.model.limits import MAX_NAME_CHARS, MAX_QUEUE_CHARS
from studio.model.records import Run
from studio.store import open_store
from tests import zygote
from tests.helpers import ROOT, demo_spec, empty_postgres_store, trainset

PG_URL = os.environ.get("STUDIO_TEST_PG_URL")
PROJECT = ROOT / "examples/haiku_scripted.yaml"


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/studio.db"
    if not PG_URL:
        pytest.skip("no PostgreSQL server configured (set STUDIO_TEST_PG_URL)")
    empty_postgres_store(PG_URL).close()
    return PG_URL


def studio(url: str, *args: str) -> subprocess.CompletedProcess:
    return zygote.run([sys.executable, "-m", "studio.cli", "--db", url, *args], cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True,
                          text=True, timeout=120)


def run_count(url: str) -> int:
    store = open_store(url, cached=False)
    try:
        return len(store.list_runs())
    finally:
        store.close()


@pytest.mark.parametrize("option,limit", [("--name", MAX_NAME_CHARS), ("--queue", MAX_QUEUE_CHARS)])
def test_studio_queue_refuses_a_long_option_before_a_run_is_made(url, option, limit):
    result = studio(url, "queue", str(PROJECT), option, "x" * (limit + 1))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert f"argument {option}" in result.stderr and f"the limit is {limit}" in result.stderr
    assert run_count(url) == 0  # nothing left "pending" forever


def test_studio_run_refuses_a_300_character_name(url):
    result = studio(url, "run", str(PROJECT), "--name", "n" * 300)
    assert result.returncode == 2 and "argument --name: 300 characters" in result.stderr
    assert run_count(url) == 0


@pytest.mark.parametrize("command", ["decide", "override"])
def test_a_long_author_is_refused_by_name(url, command):
    args = ["1", "accept"] if command == "decide" else ["1", "--score", "1"]
    result = studio(url, command, *args, "--author", "a" * 201)
    assert result.returncode == 2 and "argument --author: 201 characters" in result.stderr


@pytest.mark.slow  # real processes: seconds, not the fast tier's 1 s
def test_a_long_project_name_is_refused_by_validate_and_run(url, tmp_path):
    project = tmp_path / "long.yaml"
    project.write_text(PROJECT.read_text().replace("name: haiku-scripted", "name: " + "p" * 250))
    for command in ("validate", "run"):
        result = studio(url, command, str(project))
        assert result.returncode == 2 and "Traceback" not in result.stderr
        assert f"{project}: name: the text is 250 characters; the limit is 200" in result.stderr
    assert run_count(url) == 0


def test_a_name_at_the_limit_is_accepted_on_both_backends(url):
    store = open_store(url, cached=False)
    run = store.create_run(Run(id="at-limit", name="n" * MAX_NAME_CHARS))
    assert store.get_run(run.id).name == "n" * MAX_NAME_CHARS
    store.close()


@pytest.mark.parametrize("field,call", [
    ("run name (--name)", lambda s: s.create_run(Run(id="r", name="n" * 201))),
    ("project name", lambda s: s.save_project("p" * 201, "name: x")),
    ("queue name (--queue)", lambda s: s.enqueue_run(
        s.create_run(Run(id="q")).id, "q" * 65)),
    ("evaluation name", lambda s: s.add_eval_run("e" * 201, "judge", {}, [])),
])
def test_the_store_refuses_the_same_values_on_both_backends(url, field, call):
    store = open_store(url, cached=False)
    with pytest.raises(ConfigError, match=r"characters is too long: the limit is") as error:
        call(store)
    assert str(error.value).startswith(field)
    assert store.get_run("q").queue is None if field.startswith("queue") else True
    store.close()


def test_the_library_enqueue_refuses_a_long_queue_before_storing(url):
    store = open_store(url, cached=False)
    with pytest.raises(ConfigError, match="queue name"):
        enqueue(spec=demo_spec(), trainset=trainset(2), queue="q" * 65, store=store,
                config=EvolutionConfig(max_iterations=1))
    assert store.list_runs() == []
    store.close()


def test_create_run_with_a_long_name_stores_nothing(url):
    store = open_store(url, cached=False)
    with pytest.raises(ConfigError, match=r"run name \(--name\): 250 characters"):
        create_run(store, spec=demo_spec(), trainset=trainset(2), name="n" * 250)
    assert store.list_runs() == []
    store.close()
