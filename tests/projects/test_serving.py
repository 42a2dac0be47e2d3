"""How `studio ui` serves: the UI folder found in a checkout, the shipped Streamlit settings passed
as flags wherever it starts, and a server that stops when `studio ui` is told to stop."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from studio.projects.serving import (
    CHECKOUT_UI,
    config_flags,
    streamlit_command,
    ui_root,
)
from studio.projects.workspace import EXAMPLES_DIR, list_examples
from tests.helpers import wait_until
from tests.ui.browser import _healthy, free_port

ROOT = Path(__file__).resolve().parents[2]


def test_a_checkout_serves_the_pages_and_examples_at_its_root():
    assert ui_root() == CHECKOUT_UI == ROOT
    assert EXAMPLES_DIR == ROOT / "examples"
    assert "haiku-scripted" in {example.name for example in list_examples()}


def test_the_shipped_streamlit_settings_are_flags_but_those_the_command_sets(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text(textwrap.dedent("""\
        [server]
        port = 1
        allowedHosts = ["a", "b"]
        [theme]
        base = "light"
        [runner]
        magicEnabled = false
    """))
    flags = config_flags(config, set_by=["--server.port", "9"])
    assert flags == ["--server.allowedHosts", "a", "--server.allowedHosts", "b",
                     "--theme.base", "light", "--runner.magicEnabled", "false"]
    assert config_flags(tmp_path / "missing.toml") == []


def test_a_setting_of_the_persons_own_streamlit_config_is_left_to_it(tmp_path):
    shipped, mine = tmp_path / "shipped.toml", tmp_path / "mine.toml"
    shipped.write_text('[theme]\nbase = "light"\nprimaryColor = "#2f6f4e"\n')
    mine.write_text('[theme]\nbase = "dark"\n')
    broken = tmp_path / "broken.toml"
    broken.write_text("[theme\n")
    assert config_flags(shipped, user_files=[mine, broken, tmp_path / "none.toml"]) == [
        "--theme.primaryColor", "#2f6f4e"]


def test_studio_ui_carries_the_theme_of_the_repository_config(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    command = streamlit_command(port=8600)
    flags = dict(zip(command[5::2], command[6::2], strict=False))
    assert flags["--theme.primaryColor"] == "#2f6f4e" and flags["--client.toolbarMode"] == "minimal"
    assert command.count("--server.port") == 1 and flags["--server.port"] == "8600"


def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (Linux's /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # ended while listed
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def listening(port: int) -> bool:
    """Whether anything accepts connections on ``port`` at localhost (IPv4 or IPv6)."""
    for family, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
        with socket.socket(family) as sock:
            sock.settimeout(1)
            if sock.connect_ex((host, port)) == 0:
                return True
    return False


@pytest.mark.slow
@pytest.mark.skipif(os.name != "posix", reason="signals and /proc: Linux")
def test_sigterm_to_studio_ui_stops_the_server_and_frees_the_port(tmp_path):
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "STUDIO_DB_URL": f"sqlite:///{tmp_path}/s.db"}
    ui = subprocess.Popen(
        [sys.executable, "-c", "import sys; from studio.cli import main; sys.exit(main())",
         "ui", "--port", str(port)],
        cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until(lambda: ui.poll() is not None or _healthy(f"http://localhost:{port}"), 60,
                   step=0.2, message="`studio ui` to serve")
        assert ui.poll() is None, f"`studio ui` exited with {ui.returncode}"
        # `studio ui` became the server: the signal reaches Streamlit, no child to leave behind
        assert "streamlit" in Path(f"/proc/{ui.pid}/cmdline").read_bytes().decode()
        left = children(ui.pid)
        ui.send_signal(signal.SIGTERM)
        ui.wait(timeout=30)
        assert not listening(port)
        assert not [pid for pid in left if alive(pid)]
    finally:
        if ui.poll() is None:
            ui.kill()
            ui.wait()


FORWARDER = """
import sys
from studio.projects.serving import serve_as_child
child = [sys.executable, "-c", "import os, time; print(os.getpid(), flush=True); time.sleep(60)"]
sys.exit(serve_as_child(child, {}))
"""


@pytest.mark.skipif(os.name != "posix", reason="sends SIGTERM")
def test_a_server_run_as_a_child_gets_the_signals_sent_to_studio_ui():
    """Where a process cannot be replaced (Windows), the server is a child that is passed every
    SIGINT and SIGTERM: it stops with its parent."""
    parent = subprocess.Popen([sys.executable, "-c", FORWARDER], cwd=ROOT, stdout=subprocess.PIPE,
                              env={**os.environ, "PYTHONPATH": str(ROOT)}, text=True)
    try:
        child = int(parent.stdout.readline())
        parent.send_signal(signal.SIGTERM)
        assert parent.wait(timeout=30) == 128 + signal.SIGTERM
        assert not alive(child)
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
