"""Docs that cannot drift: the reference says what every project-file field is, and the
module lists and paths the docs give are the tree's."""

from __future__ import annotations

import re
from pathlib import Path

from studio.projects.files import PROJECT_JSON_SCHEMA

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
TREE_LINE = re.compile(r"^  (\w+)/\s")
"""A folder of ``studio/`` in architecture.md's tree (two spaces in, then ``name/``)."""
LISTED = re.compile(r"\((\w+)/: ([\w, \n]+)\)")
"""A sub-folder's module list, as ``(files/: sections, trust, ...)``."""
PATH = re.compile(r"`((?:studio|components|pages|tests|bench|docs|examples)/[\w/.-]+\.py)`")


def _tree_block() -> dict[str, str]:
    """architecture.md's tree: each folder of ``studio/`` and the words that describe it."""
    text = (DOCS / "architecture.md").read_text(encoding="utf-8")
    block = text.split("```text\n", 1)[1].split("```", 1)[0]
    folders: dict[str, str] = {}
    current = None
    for line in block.splitlines():
        match = TREE_LINE.match(line)
        if match:
            current = match.group(1)
            folders[current] = ""
        elif not line.startswith("   "):  # the package, another top-level entry, a blank
            current = None
        if current is not None:
            folders[current] += " " + line.strip()
    return folders


def _modules(folder: Path) -> set[str]:
    return {p.stem for p in folder.glob("*.py") if p.stem != "__init__"} | \
        {p.name for p in folder.iterdir() if (p / "__init__.py").is_file()}


def test_architecture_names_only_modules_that_exist_and_lists_whole_folders():
    folders = _tree_block()
    assert {"model", "runtime", "store", "engine", "projects", "views"} <= set(folders)
    problems = []
    for folder, words in folders.items():
        package = ROOT / "studio" / folder
        named = set(re.findall(r"\b(\w+)\.py\b", words))
        found = {p.stem for p in package.rglob("*.py")}  # a module may sit in a sub-folder
        problems += [f"{folder}/: {name}.py is not in the tree" for name in named - found]
        for sub, listed in LISTED.findall(words):
            modules = {m.strip() for m in listed.split(",")}
            actual = _modules(package / sub)
            if modules != actual:
                problems.append(f"{folder}/{sub}/: the docs list {sorted(modules)}; the tree "
                                f"holds {sorted(actual)}")
    assert problems == []


def test_every_path_the_docs_give_exists():
    pages = [ROOT / "README.md", *DOCS.rglob("*.md")]
    missing = sorted({f"{page.relative_to(ROOT)}: {path}" for page in pages
                      for path in PATH.findall(page.read_text(encoding="utf-8"))
                      if not (ROOT / path).exists()})
    assert missing == []


def test_the_reference_describes_every_project_file_field():
    """Every field of the project file has a description in its JSON Schema, so the
    generated reference (docs/reference/project-file.md) has no empty row."""
    schema = PROJECT_JSON_SCHEMA  # what `studio schema` prints and docs/generate.py reads
    models = {"ProjectFile": schema, **schema.get("$defs", {})}
    undescribed = [f"{name}.{field}" for name, model in models.items()
                   for field, prop in model.get("properties", {}).items()
                   if not prop.get("description")]
    assert undescribed == []
