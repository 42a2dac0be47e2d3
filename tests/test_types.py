"""The type checker passes on ``studio/``: mypy with the settings in ``pyproject.toml``
([tool.mypy]: every function body checked, modules still being fixed listed by name).

Marked slow: a first run reads ADK, pydantic and SQLAlchemy (about 45 s); later runs reuse
``.mypy_cache`` and take seconds. ``pytest --all`` (CI) runs it.
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
