"""A process forked by the test zygote (tests/zygote.py) is what a cold ``python -m`` start
would be: its own environment read at import (the studio's modules are never preloaded), its
folder, arguments and streams, the interpreter's exit codes and ending, real signals; and what
the zygote cannot reproduce starts cold. The process tiers rest on this (issue 33)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from tests import zygote
from tests.helpers import ROOT, wait_until

pytestmark = pytest.mark.slow  # a zygote imports LiteLLM and ADK once: seconds

PROBE = [sys.executable, "-m", "tests.processes.zygote_probe"]


def probe(*args: str, **kwargs) -> subprocess.CompletedProcess:
    kwargs.setdefault("env", {**os.environ, "PYTHONPATH": str(ROOT)})
    return zygote.run([*PROBE, *args], capture_output=True, text=True, timeout=120, **kwargs)


def test_a_child_reads_its_own_environment_folder_and_arguments(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "STUDIO_HEARTBEAT_SECONDS": "0.3",
           "PROBE_MARKER": "mine"}
    process = zygote.popen([*PROBE, "report"], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                           text=True)
    assert isinstance(process, zygote.ZygoteProcess)
    seen = json.loads(process.communicate(timeout=120)[0])
    assert process.returncode == 0
    assert seen["pid"] == process.pid != os.getpid()
    assert seen["preloaded"] == {"litellm": True, "studio": False}
    assert seen["heartbeat"] == 0.3  # read at import, in the child, from the child's env
    assert seen["marker"] == "mine" and seen["main"] == "__main__"
    assert seen["cwd"] == str(tmp_path) and seen["path0"] == str(tmp_path)
    assert seen["argv"][1:] == ["report"] and seen["argv"][0].endswith("zygote_probe.py")


def test_signal_dispositions_are_a_cold_start_s_with_what_the_starter_ignores():
    """An exec keeps ignored signals ignored (a pytest-xdist worker ignores SIGINT): the
    zygote's child must too, and otherwise start from the defaults."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    before = signal.signal(signal.SIGUSR1, signal.SIG_IGN)
    try:
        warm = zygote.popen([*PROBE, "report"], env=env, stdout=subprocess.PIPE, text=True)
        assert isinstance(warm, zygote.ZygoteProcess)
        warm_signals = json.loads(warm.communicate(timeout=120)[0])["signals"]
        cold = subprocess.run([*PROBE, "report"], env=env, capture_output=True, text=True,
                              timeout=120)
    finally:
        signal.signal(signal.SIGUSR1, before)
    assert warm_signals == json.loads(cold.stdout)["signals"]
    assert warm_signals["SIGUSR1"] == str(signal.SIG_IGN)


def test_exit_codes_and_errors_are_the_interpreter_s():
    assert probe("exit", "3").returncode == 3
    raised = probe("raise")
    assert raised.returncode == 1
    assert "ValueError: the probe's own error" in raised.stderr
    assert "Traceback" in raised.stderr


def test_the_child_ends_as_the_interpreter_does(tmp_path):
    """Non-daemon threads are joined before ``atexit`` runs, as at a cold process's end."""
    log = tmp_path / "ending.log"
    assert probe("ending", str(log)).returncode == 0
    assert log.read_text().splitlines() == ["thread", "atexit"]


def test_streams_pipes_and_input():
    assert probe("echo", input="haiku").stdout == "HAIKU"


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM])
def test_a_signal_ends_the_child_and_is_its_return_code(signum):
    process = zygote.popen([*PROBE, "sleep"], stdout=subprocess.PIPE, text=True,
                           env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert process.stdout.readline().strip() == "ready"
    assert process.poll() is None
    with pytest.raises(subprocess.TimeoutExpired):
        process.wait(timeout=0.2)
    process.send_signal(signum)
    assert process.wait(timeout=60) == -signum
    wait_until(lambda: not os.path.exists(f"/proc/{process.pid}"), timeout=30,
               message="the zygote to reap its child")


def test_what_the_zygote_cannot_reproduce_starts_cold():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    assert isinstance(zygote.popen([sys.executable, "-c", "pass"]), subprocess.Popen)
    other_litellm = {**env, "LITELLM_LOG": "DEBUG-" + str(os.getpid())}
    cold = zygote.popen([*PROBE, "exit", "0"], env=other_litellm)
    assert isinstance(cold, subprocess.Popen) and cold.wait(120) == 0
    grouped = zygote.popen([*PROBE, "exit", "0"], env=env, start_new_session=True)
    assert isinstance(grouped, subprocess.Popen) and grouped.wait(120) == 0


def test_cold_processes_everywhere_on_request(monkeypatch):
    monkeypatch.setenv("STUDIO_TEST_COLD_PROCESSES", "1")
    process = zygote.popen([*PROBE, "exit", "4"], env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert isinstance(process, subprocess.Popen) and process.wait(120) == 4
