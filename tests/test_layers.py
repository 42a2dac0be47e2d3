"""The package's layering stays true: imports point down (model <- runtime/store <- evaluators <-
critics <- engine <- projects <- views <- app/cli), and only the app imports Streamlit.

The contracts live in ``pyproject.toml`` ([tool.importlinter]); this runs them as CI would.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_import_contracts_hold():
    lint = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    assert lint, "import-linter is a dev dependency: pip install -e '.[dev]'"
    done = subprocess.run([lint, "--no-cache"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 kept, 0 broken" in done.stdout, done.stdout
