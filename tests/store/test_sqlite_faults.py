"""SQLite faults with real processes: a full disk (a small tmpfs), another process holding the
write lock, and URLs the studio cannot honour (in-memory, read-only)."""

from __future__ import annotations

import errno
import os
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from studio.model.errors import StoreError
from studio.model.records import Run, RunStatus
from studio.store import open_store
from tests import zygote
from tests.helpers import HEARTBEAT_SECONDS, ROOT, StudioProcess, wait_until

PROJECT = ROOT / "examples/haiku_scripted.yaml"


def studio(url: str, *args: str, **env: str) -> subprocess.CompletedProcess:
    return zygote.run([sys.executable, "-m", "studio.cli", "--db", url, *args], cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT), **env},
                          capture_output=True, text=True, timeout=300)


@pytest.fixture
def small_disk():
    """A 4 MB tmpfs, unmounted after the test."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mount = Path(tempfile.mkdtemp(prefix="studio-full-"))
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)
    mount.rmdir()


def fill(disk: Path) -> Path:
    """Take every free byte of ``disk``. On a loaded machine the run may have filled it first
    (a CI run found no room for even the filler's name): the disk is full all the same."""
    filler = disk / "filler"
    try:
        with open(filler, "wb") as out:
            while True:
                out.write(b"\0" * 65536)
                out.flush()
    except OSError as exc:  # the disk is full (also when not even the name fitted)
        if exc.errno != errno.ENOSPC:
            raise
    return filler


def stored_trials(url: str) -> tuple[str, int]:
    store = open_store(url, cached=False)
    try:
        runs = store.list_runs()
        return (runs[0].id, store.count_trials(runs[0].id)) if runs else ("", 0)
    finally:
        store.close()


@pytest.mark.slow
def test_a_full_disk_stops_the_run_resumably_naming_the_file(small_disk):
    url = f"sqlite:///{small_disk}/studio.db"
    run = StudioProcess(url, "run", str(PROJECT), "--max-iterations", "3",
                     STUDIO_DB_RETRY_SECONDS="2", STUDIO_STALE_AFTER_SECONDS="1",
                     STUDIO_HEARTBEAT_SECONDS=HEARTBEAT_SECONDS)
    wait_until(lambda: stored_trials(url)[1] >= 2, timeout=120, message="trials stored")
    filler = fill(small_disk)
    assert run.process.wait(120) == 2, run.text
    assert "Traceback" not in run.text and "***" not in run.text, run.text
    assert f"the disk holding the database file {small_disk}/studio.db is full" in run.text
    assert "studio resume" in run.text
    run_id, kept = stored_trials(url)
    filler.unlink(missing_ok=True)
    resumed = studio(url, "resume", run_id, STUDIO_STALE_AFTER_SECONDS="1",
                     STUDIO_HEARTBEAT_SECONDS=HEARTBEAT_SECONDS)
    assert resumed.returncode == 0, resumed.stderr
    store = open_store(url, cached=False)
    assert store.get_run(run_id).status is RunStatus.COMPLETED
    assert store.count_trials(run_id) >= kept  # nothing saved was lost
    store.close()


@pytest.mark.slow
def test_a_long_external_write_lock_is_waited_for_then_the_run_completes(tmp_path):
    url = f"sqlite:///{tmp_path}/studio.db"
    open_store(url, cached=False).close()
    holder = sqlite3.connect(tmp_path / "studio.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    run = StudioProcess(url, "run", str(PROJECT), "--max-iterations", "1",
                     STUDIO_DB_RETRY_SECONDS="120")
    try:
        wait_until(lambda: run.said("locked by another process"), timeout=120,
                   message="the run to say it waits for the lock")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert run.process.wait(180) == 0, run.text
    assert "Traceback" not in run.text
    store = open_store(url, cached=False)
    assert store.list_runs()[0].status is RunStatus.COMPLETED
    store.close()


@pytest.mark.slow
def test_a_lock_held_past_the_budget_is_a_clear_error_and_nothing_is_stored(tmp_path):
    url = f"sqlite:///{tmp_path}/studio.db"
    open_store(url, cached=False).close()
    holder = sqlite3.connect(tmp_path / "studio.db", isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        result = studio(url, "run", str(PROJECT), STUDIO_DB_RETRY_SECONDS="0")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "locked" in result.stderr and str(tmp_path / "studio.db") in result.stderr


@pytest.mark.slow
@pytest.mark.parametrize("url", ["sqlite:///:memory:", "sqlite://", "sqlite:///file::memory:"])
def test_an_in_memory_database_is_refused_clearly(url):
    result = studio(url, "runs")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "in-memory SQLite database is not supported" in result.stderr
    assert "max_overflow" not in result.stderr


def test_an_in_memory_database_is_refused_by_the_library():
    with pytest.raises(StoreError, match="in-memory"):
        open_store("sqlite:///:memory:", cached=False)


@pytest.mark.slow
@pytest.mark.parametrize("options", ["mode=ro", "mode=ro&uri=true", "cache=shared"])
def test_read_only_and_other_sqlite_options_are_refused_and_the_file_untouched(tmp_path, options):
    path = tmp_path / "studio.db"
    store = open_store(f"sqlite:///{path}", cached=False)
    store.create_run(Run(id="kept", name="kept"))
    store.close()
    before = path.read_bytes()
    result = studio(f"sqlite:///{path}?{options}", "run", str(PROJECT))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert f"SQLite URL options ({options}) are not supported" in result.stderr
    assert path.read_bytes() == before


@pytest.mark.slow
def test_a_sqlite_path_in_a_message_is_not_masked_but_a_password_is(tmp_path):
    folder = tmp_path / "not-writable"
    folder.mkdir()
    url = f"sqlite:///{folder}/sub/studio.db"
    (folder / "sub").write_text("a file where the folder should be")
    result = studio(url, "runs", STUDIO_DB_URL=url)
    assert result.returncode == 2 and str(folder / "sub") in result.stderr
    assert "***" not in result.stderr
    secret = "postgresql://studio:s3cret-passw0rd@127.0.0.1:1/none"
    result = studio(secret, "runs", STUDIO_DB_URL=secret, STUDIO_DB_RETRY_SECONDS="0")
    assert result.returncode == 2 and "s3cret-passw0rd" not in result.stderr
    assert "127.0.0.1" in result.stderr and "the server is up" in result.stderr


@pytest.mark.slow
@pytest.mark.parametrize("value", ["abc", "-1", "nan", "inf", "99999"])
def test_a_bad_retry_budget_is_refused_naming_the_variable(tmp_path, value):
    result = studio(f"sqlite:///{tmp_path}/studio.db", "runs", STUDIO_DB_RETRY_SECONDS=value)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "STUDIO_DB_RETRY_SECONDS" in result.stderr and "from 0 to 3600" in result.stderr


@pytest.mark.parametrize("url,said", [
    ("notaurl", "Could not parse SQLAlchemy URL"),
    ("http://example.com/db", "Can't load plugin"),
    ("mysql://u:pw12345678@h/db", "mysql://u:***@h/db"),
    ("sqlite:////proc/studio.db", "not writable"),
    ("sqlite:////dev/null", "check that /dev/null is a readable, writable SQLite file"),
    ("postgresql://nobody_here@127.0.0.1:1/x", "check the URL and that the server is up"),
])
def test_odd_database_urls_get_a_clear_error_at_once(url, said):
    result = studio(url, "runs")  # the default 60 s retry budget: must not be waited out
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert said in result.stderr and "pw12345678" not in result.stderr
