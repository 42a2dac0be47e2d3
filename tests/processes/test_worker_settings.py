"""Heartbeat and lease ages from the environment: a value that is not a finite number in range is
refused by name before anything runs (0 or negative would let a second process take a live run).

Which values are refused is the reader's, checked over every kind of bad value in
tests/runtime/test_timing.py; here, once per variable, each reaches the reader and a fresh
``studio`` process says so in one line before a run exists (each start imports ADK: about two
seconds, so not once per bad value)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.helpers import ROOT

SETTINGS = ["STUDIO_STALE_AFTER_SECONDS", "STUDIO_HEARTBEAT_SECONDS",
            "STUDIO_WEDGED_AFTER_SECONDS"]


def studio(tmp_path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    full_env = {key: value for key, value in os.environ.items() if key not in SETTINGS}
    full_env.update(PYTHONPATH=str(ROOT), **env)
    return subprocess.run([sys.executable, "-m", "studio.cli", "--db",
                           f"sqlite:///{tmp_path}/studio.db", *args], cwd=ROOT, env=full_env,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("name", SETTINGS)
def test_a_bad_seconds_setting_stops_the_cli_before_a_run_naming_the_variable(tmp_path, name):
    result = studio(tmp_path, {name: "nan"}, "run", str(ROOT / "examples/haiku_scripted.yaml"))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert name in result.stderr and "give a number of seconds from" in result.stderr
    assert "started" not in result.stderr  # refused before a run was created


def test_a_stale_age_below_two_heartbeats_is_refused(tmp_path):
    """A lease of one beat would let a second worker take a live run whose beat is late."""
    settings = {"STUDIO_HEARTBEAT_SECONDS": "5", "STUDIO_STALE_AFTER_SECONDS": "9.9"}
    result = studio(tmp_path, settings, "worker")
    assert result.returncode == 2 and "STUDIO_STALE_AFTER_SECONDS" in result.stderr
    assert "from 10 to 86400" in result.stderr


def test_a_good_setting_is_used(tmp_path):
    result = studio(tmp_path, {"STUDIO_STALE_AFTER_SECONDS": " 30 "}, "runs")
    assert result.returncode == 0, result.stderr


def test_a_wedge_age_below_three_heartbeats_is_refused(tmp_path):
    """A worker process is counted wedged only after several missed beats, never one late."""
    settings = {"STUDIO_HEARTBEAT_SECONDS": "5", "STUDIO_WEDGED_AFTER_SECONDS": "14"}
    result = studio(tmp_path, settings, "worker")
    assert result.returncode == 2 and "STUDIO_WEDGED_AFTER_SECONDS" in result.stderr
    assert "from 15 to 86400" in result.stderr
