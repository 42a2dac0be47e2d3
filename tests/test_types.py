"""The type checker passes on ``studio/``, ``components/`` and ``pages/``: mypy with the settings
in ``pyproject.toml`` ([tool.mypy]: every function body checked, no module's errors ignored).

Marked slow: a first run reads LiteLLM, ADK, google-cloud and SQLAlchemy (about 80 CPU-s);
later runs reuse mypy's cache (``.mypy_cache``, or ``MYPY_CACHE_DIR``, which ``.ci/run`` keeps
beside pip's cache) and take seconds. ``pytest --all`` (CI) runs it.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_mypy_passes_on_studio():
    mypy = shutil.which("mypy", path=str(Path(sys.executable).parent))
    assert mypy, "mypy is a dev dependency: pip install -e '.[dev]'"
    done = subprocess.run([mypy], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Success: no issues found" in done.stdout, done.stdout


def test_every_module_is_checked():
    """Nothing is left out: the UI is checked with the package, and no module's errors are
    ignored (an ignore list hides errors that grow)."""
    import tomllib

    settings = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    assert settings["files"] == ["studio", "components", "pages"]
    assert not any(o.get("ignore_errors") or o.get("follow_imports") == "silent"
                   for o in settings.get("overrides", []))
