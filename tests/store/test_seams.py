"""Each part of the engine asks for its own narrow store (studio/store/seams.py), and the
protocol says what the part really calls: a store method a part starts calling, or stops
calling, changes its protocol in the same commit. mypy proves the facade satisfies each one
(tests/test_types.py); the hosting folder wires the parts together and keeps the whole Store."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from studio.store import Store, seams

ENGINE = Path(__file__).resolve().parents[2] / "studio" / "engine"
PARTS = {
    "loop": seams.LoopStore,
    "people": seams.PeopleStore,
    "propose": seams.ProposeStore,
    "scoring": seams.ScoringStore,
    "policies": seams.PolicyStore,
    "run": seams.RunPartsStore,
}
FACADE = {name for name in dir(Store) if not name.startswith("_")}


def _is_store(node: ast.expr) -> bool:
    """``store``, ``self.store`` or ``ctx.store``: the names the engine gives its store."""
    return (isinstance(node, ast.Name) and node.id == "store") or \
        (isinstance(node, ast.Attribute) and node.attr == "store")


def called_on_a_store(folder: str) -> set[str]:
    """The facade's methods the folder's modules call on a store."""
    called = set()
    for path in (ENGINE / folder).glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and _is_store(node.func.value) and node.func.attr in FACADE:
                called.add(node.func.attr)
    return called


def own_methods(protocol: type) -> set[str]:
    """The methods a part's protocol lists itself (its ``Has...`` bases), not those of the
    part below it that it also asks for."""
    return {name for base in protocol.__bases__ if base.__name__.startswith("Has")
            for name in vars(base) if not name.startswith("_")}


@pytest.mark.parametrize("folder", sorted(PARTS))
def test_a_part_s_protocol_lists_the_store_methods_it_calls(folder):
    assert own_methods(PARTS[folder]) == called_on_a_store(folder)


@pytest.mark.parametrize("folder", sorted(PARTS))
def test_a_part_never_names_the_whole_store(folder):
    """(The people's gates may still open the default store, for the CLI and the pages: what
    they get is used as a :class:`~studio.store.seams.PeopleStore`.)"""
    named = []
    for path in (ENGINE / folder).glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("studio.store"):
                named += [f"{path.name}: {alias.name}" for alias in node.names
                          if alias.name == "Store"]
    assert named == []
