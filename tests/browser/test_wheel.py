"""The package as a user installs it: a wheel built offline from this checkout, installed into a
fresh virtual environment that sees the studio's dependencies but neither this checkout nor its
editable install, `studio ui` started in an empty folder, every page rendered in Chromium with no
exception, the examples offered, and the server stopped by a SIGTERM to `studio ui`."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import signal
import site
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

from tests.helpers import wait_until
from tests.projects.test_serving import listening
from tests.ui.browser import (
    ARTIFACTS,
    ROOT,
    _healthy,
    chromium_page,
    free_port,
    full_page_shot,
    nav,
    settled,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

NOT_SOURCES = shutil.ignore_patterns(
    ".git", ".ci-venv", ".venv", "venv", "build", "dist", "*.egg-info", "__pycache__",
    "test-artifacts", ".pytest_cache", ".ruff_cache", ".mypy_cache", "*.db", "*.db-*",
    ".evolution-studio")
"""What a clean checkout does not have: a stale build/ would put deleted modules in the wheel."""
SHIPPED = {"studio/app.py", "studio/_ui/.streamlit/config.toml", "studio/_ui/pages/home.py",
           "studio/_ui/components/frame.py", "studio/_ui/examples/haiku_scripted.yaml",
           "studio/_ui/examples/data/capitals.csv"}
PAGES = ["Projects", "Run", "Review", "Proposals", "Compare", "Agreement", "Home"]


def run(command: list[str], **kwargs) -> str:
    """A command's output; its output in the failure when it fails (kept quiet when it works:
    the build prints setuptools' deprecation notices)."""
    done = subprocess.run(command, capture_output=True, text=True, **kwargs)
    assert done.returncode == 0, f"{command[:4]} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def build_wheel(work: Path) -> Path:
    """The wheel of a copy of this checkout, built offline with this environment's setuptools
    (the dev extra pins the one pyproject.toml builds with)."""
    if not any(importlib.util.find_spec(m) for m in ("setuptools.command.bdist_wheel", "wheel")):
        pytest.fail("this environment's setuptools cannot build wheels (before 70.1, without the "
                    "wheel package): pip install -e '.[dev]' installs the pinned setuptools")
    source = work / "source"
    shutil.copytree(ROOT, source, ignore=NOT_SOURCES)
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
         "--wheel-dir", str(work / "dist"), str(source)])
    return next((work / "dist").glob("evolution_studio-*.whl"))


def outside_env(**extra: str) -> dict[str, str]:
    """This process's environment without what would put this checkout on ``sys.path``."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")} | extra


def fresh_environment(path: Path, wheel: Path) -> Path:
    """A virtual environment with the wheel installed; its dependencies are this environment's
    site-packages, added as plain paths so that none of their .pth files runs: the editable
    install's import hook stays off and only the wheel can provide the studio."""
    venv.EnvBuilder(with_pip=False, symlinks=os.name != "nt").create(path)
    python = path / "bin" / "python"
    purelib = run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"])
    run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index",
         "--ignore-installed", str(wheel)], env=outside_env())
    # after the install: pip would see this environment's editable studio and skip the wheel
    dependencies = [*site.getsitepackages(), site.getusersitepackages()]
    Path(purelib.strip(), "studio_dependencies.pth").write_text("\n".join(dependencies))
    return path / "bin"


def installed_studio(bin_dir: Path, cwd: Path, env: dict[str, str]) -> list[str]:
    """Where the environment imports ``studio`` from, and whether a top-level ``components``
    exists there (it must not: the wheel keeps the UI inside the package)."""
    probe = ("import importlib.util, studio; print(studio.__file__); "
             "print(importlib.util.find_spec('components'))")
    return run([str(bin_dir / "python"), "-c", probe], cwd=cwd, env=env).split()


def problems_shown(page) -> list[str]:
    """Exceptions and error boxes on the page, as the person sees them."""
    boxes = page.locator('[data-testid="stException"], [data-testid="stAlertContentError"]')
    return [boxes.nth(i).inner_text() for i in range(boxes.count())]


def test_the_installed_wheel_serves_every_page_from_an_empty_folder(tmp_path):
    wheel = build_wheel(tmp_path)
    names = set(zipfile.ZipFile(wheel).namelist())
    tops = {name.split("/")[0] for name in names if not name.startswith("evolution_studio-")}
    assert tops == {"studio"}, "the wheel claims a top-level name besides studio"
    assert not SHIPPED - names, SHIPPED - names
    bin_dir = fresh_environment(tmp_path / "venv", wheel)
    empty = tmp_path / "elsewhere"
    empty.mkdir()
    env = outside_env(STUDIO_DB_URL=f"sqlite:///{tmp_path}/studio.db", PYTHONUNBUFFERED="1")
    studio_file, components = installed_studio(bin_dir, empty, env)
    assert Path(studio_file).is_relative_to(tmp_path / "venv") and components == "None"

    port = free_port()
    url = f"http://localhost:{port}"
    with open(tmp_path / "ui.log", "w") as log:
        ui = subprocess.Popen([str(bin_dir / "studio"), "ui", "--port", str(port)], cwd=empty,
                              env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_until(lambda: ui.poll() is not None or _healthy(url), 60, step=0.3,
                   message="the installed `studio ui` to serve")
        assert ui.poll() is None, (tmp_path / "ui.log").read_text()
        with chromium_page() as page:
            try:
                every_page_renders(page, url)
            except Exception:
                full_page_shot(page, ARTIFACTS / "failure_installed_wheel.png")
                raise
        ui.send_signal(signal.SIGTERM)
        ui.wait(timeout=30)
        assert not listening(port)
    finally:
        if ui.poll() is None:
            ui.kill()
            ui.wait()
    assert not list(empty.iterdir()), "`studio ui` wrote into the folder it was started in"


def every_page_renders(page, url: str) -> None:
    """The shipped example loads (one click from Home), a run starts on it, and every page of
    the sidebar renders with it, with no exception or error box."""
    page.goto(url)
    page.get_by_role("heading", name="Evolution Studio", exact=True).wait_for()
    settled(page)
    assert problems_shown(page) == []
    page.get_by_role("button", name="Load the scripted demo project and open Run").click()
    page.get_by_text("Loaded the example project").wait_for()
    page.get_by_text("Auto: the acceptance rule decides").click()
    page.get_by_role("button", name="Start run").click()
    page.get_by_text(re.compile(r"Run \w+ started")).wait_for()
    page.get_by_text(re.compile(r"newest trial \d+ \(id \d+\)")).wait_for()
    for title in PAGES:
        nav(page, title)
        assert problems_shown(page) == [], title
