"""The package's layering stays true: imports point down (model <- runtime/store <- evaluators <-
critics <- engine <- projects <- views <- app/cli; inside the engine run <- policies <- people,
propose, scoring <- loop <- hosting; studio <- components <- pages), only the app imports
Streamlit or the UI, the UI reads the store only through components/loaders.py, and no module
imports itself back (a cycle), not even for annotations.

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
    assert "6 kept, 0 broken" in done.stdout, done.stdout


def import_cycles(graph) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for imported in graph.find_modules_directly_imported_by(module):
            if imported not in graph.modules:
                continue
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            group = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                group.append(top)
                if top == module:
                    break
            if len(group) > 1:
                cycles.append(sorted(group))

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return cycles


def test_no_module_imports_itself_back():
    """A cycle held off by ``if TYPE_CHECKING`` or an import inside a function is still a
    cycle: modules that must be read together. The graph includes those imports."""
    import grimp

    sys.setrecursionlimit(10_000)
    graph = grimp.build_graph("studio", "components", "pages", cache_dir=None)
    assert import_cycles(graph) == []
