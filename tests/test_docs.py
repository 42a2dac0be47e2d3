"""Every YAML and Python snippet of README.md and docs/ runs, so a documented example can never
be refused by the product again.

Fences, by their info string:

- ```` ```yaml ````: a whole project file, checked by ``studio validate`` (the loader and every
  check ``studio run`` makes before its first model call) in a temporary folder holding a copy
  of ``examples/`` and of ``examples/data/`` (so ``{path: data/capitals.csv}`` resolves).
- ```` ```yaml fragment ````: some top-level sections of a project, put into a small scripted
  project in place of its own sections and checked the same way.
- ```` ```python ````: executed in that folder with the store there (top-level ``await`` is
  allowed, as in a notebook). Snippets use the scripted model, so they run in seconds offline.
- ``fixture=NAME`` adds files a snippet names (see :data:`FIXTURES`).
- ``no-run: REASON``: not run; there are few, and each says why.

Also checked: the generated reference pages are fresh (``docs/generate.py``), every ``studio``
command in a shell block exists, the commands ``.ci/run`` runs as the README's are in the
README, every relative link resolves, and the README stays a newcomer's page (3-8 KB).
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import importlib.util
import io
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOC_FILES = [README, *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
MAX_NO_RUN = 6
"""Snippets that are not run must stay exceptions: raise this only with a reason to."""
OTHER_BRANCH_LINKS = {"bench/README.md"}
"""Linked pages another change creates (the benchmarks' own README); checked once they exist."""

BASE_PROJECT = {
    "name": "docs",
    "agent": {"name": "writer", "model": "scripted/demo",
              "instruction": "Write a haiku about the given topic."},
    "critic": {"type": "agent", "schema": "simple", "model": "scripted/demo"},
    "reflection": {"model": "scripted/demo"},
    "dataset": {"train": [{"topic": "autumn leaves", "expected": "leaves"},
                          {"topic": "city rain", "expected": "rain"}]},
    "run": {"max_iterations": 2},
}
"""What a ``yaml fragment`` is completed with: the scripted haiku world, offline."""


@dataclass(frozen=True)
class Snippet:
    """One fenced code block of a doc page."""

    path: Path
    line: int
    language: str
    options: tuple[str, ...]
    text: str

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"

    @property
    def no_run_reason(self) -> str | None:
        info = " ".join(self.options)
        if not info.startswith("no-run"):
            return None
        return info.removeprefix("no-run").lstrip(":").strip()

    def option(self, name: str) -> str | None:
        return next((o.split("=", 1)[1] for o in self.options if o.startswith(name + "=")),
                    None)


def snippets(path: Path) -> list[Snippet]:
    text = path.read_text(encoding="utf-8")
    found = []
    for match in FENCE.finditer(text):
        language, *options = match.group(1).split() or [""]
        line = text.count("\n", 0, match.start()) + 1
        found.append(Snippet(path, line, language, tuple(options), match.group(2)))
    return found


ALL = [s for path in DOC_FILES for s in snippets(path)]
RUNNABLE = [s for s in ALL if s.language in ("yaml", "python") and s.no_run_reason is None]


def png_bytes() -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (4, 4), (200, 120, 40)).save(out, format="PNG")
    return out.getvalue()


def _images_fixture(folder: Path) -> None:
    (folder / "data" / "img").mkdir(parents=True, exist_ok=True)
    (folder / "data" / "img" / "cat.png").write_bytes(png_bytes())
    (folder / "data" / "photos.csv").write_text(
        "photo,question,answer\nimg/cat.png,What animal is this?,cat\n", encoding="utf-8")
    (folder / "cat.png").write_bytes(png_bytes())


def _adk_fixture(folder: Path) -> None:
    """An ADK agent folder as ``adk create`` makes it, with an eval set ``adk web`` saved."""
    from google.adk.evaluation.eval_case import EvalCase, IntermediateData, Invocation
    from google.adk.evaluation.eval_set import EvalSet
    from google.genai import types

    agent = folder / "my_agent"
    agent.mkdir(exist_ok=True)
    (agent / "__init__.py").write_text("from . import agent\n", encoding="utf-8")
    (agent / "agent.py").write_text(
        "from google.adk.agents import LlmAgent\nfrom google.adk.models.lite_llm import LiteLlm"
        "\n\nroot_agent = LlmAgent(name='writer', model=LiteLlm(model='scripted/demo'),\n"
        "                      instruction='Write a haiku about the given topic.')\n",
        encoding="utf-8")
    (agent / ".env").write_text("# the agent's keys would go here\n", encoding="utf-8")

    def case(eval_id: str, topic: str, reply: str) -> EvalCase:
        return EvalCase(eval_id=eval_id, conversation=[Invocation(
            user_content=types.Content(role="user", parts=[types.Part.from_text(text=topic)]),
            final_response=types.Content(role="model", parts=[types.Part.from_text(text=reply)]),
            intermediate_data=IntermediateData())])
    eval_set = EvalSet(eval_set_id="haiku", eval_cases=[
        case("leaves", "autumn leaves", "leaves"), case("rain", "city rain", "rain")])
    (agent / "haiku.evalset.json").write_text(eval_set.model_dump_json(indent=2),
                                              encoding="utf-8")
    (agent / "test_config.json").write_text(  # ADK's eval criteria, beside the eval set
        '{"criteria": {"response_match_score": 0.8}}', encoding="utf-8")


FIXTURES = {"images": _images_fixture, "adk": _adk_fixture}
"""Files a snippet names that a reader would have: ``fixture=images`` gives a photo dataset,
``fixture=adk`` an ADK agent folder ``my_agent/`` with an eval set ``haiku.evalset.json``."""


@pytest.fixture
def folder(tmp_path, monkeypatch):
    """A reader's folder: the examples, their data, and a store of its own."""
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    shutil.copytree(ROOT / "examples" / "data", tmp_path / "data")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("STUDIO_DB_URL", f"sqlite:///{tmp_path}/studio.db")
    return tmp_path


def studio(*argv: str) -> tuple[int, str]:
    """``studio ARGV`` in this process: its exit code and what it printed."""
    from studio.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = main(list(argv))
    return code, out.getvalue()


def project_text(snippet: Snippet) -> str:
    if "fragment" not in snippet.options:
        return snippet.text
    fragment = yaml.safe_load(snippet.text)
    assert isinstance(fragment, dict), f"{snippet.where}: a fragment holds project sections"
    return yaml.safe_dump({**BASE_PROJECT, **fragment}, sort_keys=False)


def run_python(snippet: Snippet) -> None:
    code = compile(snippet.text, snippet.where, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    namespace: dict = {"__name__": "__main__"}
    result = eval(code, namespace)  # noqa: S307 (the repository's own documentation)
    if asyncio.iscoroutine(result):
        asyncio.run(result)


@pytest.mark.slow
@pytest.mark.parametrize("snippet", RUNNABLE, ids=[s.where for s in RUNNABLE])
def test_snippet_runs(snippet: Snippet, folder: Path) -> None:
    fixture = snippet.option("fixture")
    if fixture is not None:
        FIXTURES[fixture](folder)
    if snippet.language == "python":
        run_python(snippet)
        code, runs = studio("runs")
        unfinished = [line for line in runs.splitlines() if line.split()[1:2] != ["completed"]]
        assert code == 0 and not unfinished, f"{snippet.where} left runs unfinished: {unfinished}"
        return
    project = folder / "project.yaml"
    project.write_text(project_text(snippet), encoding="utf-8")
    code, output = studio("validate", str(project))
    assert code == 0, f"{snippet.where}: the studio refuses this project:\n{output}"
    assert "ok" in output


def test_snippets_not_run_are_few_and_say_why() -> None:
    skipped = [s for s in ALL if s.language in ("yaml", "python") and s.no_run_reason is not None]
    assert len(skipped) <= MAX_NO_RUN, [s.where for s in skipped]
    vague = [s.where for s in skipped if len(s.no_run_reason.split()) < 3]
    assert not vague, f"say why a snippet is not run (```python no-run: REASON): {vague}"


def test_snippets_are_found() -> None:
    """The fence pattern still matches: the README alone has YAML and Python to run."""
    languages = {s.language for s in RUNNABLE if s.path == README}
    assert {"yaml", "python"} <= languages


def shell_lines() -> list[tuple[Snippet, str]]:
    return [(s, line.strip()) for s in ALL if s.language in ("bash", "sh", "console")
            for line in s.text.splitlines() if line.strip()]


def test_every_documented_studio_command_exists() -> None:
    generate = load_generator()
    commands = set(generate.subcommands(generate.studio_output(["--help"])))
    unknown = []
    for snippet, line in shell_lines():
        words = re.sub(r"^(\S+=\S+\s+)+", "", line).split()  # VAR=value studio ...
        if words[:1] == ["studio"] and len(words) > 1 and words[1] not in commands \
                and not words[1].startswith("-"):
            unknown.append(f"{snippet.where}: {line}")
    assert not unknown, unknown


def ci_readme_commands() -> list[str]:
    """The commands ``.ci/run`` runs as the README's: the line after each ``# README:``."""
    lines = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    return [lines[i + 1].strip() for i, line in enumerate(lines[:-1])
            if line.startswith("# README:")]


def test_ci_runs_the_readme_commands() -> None:
    commands = ci_readme_commands()
    assert commands, ".ci/run marks no command as the README's"
    readme_shell = {line.split("#")[0].strip() for s, line in shell_lines() if s.path == README}
    missing = [c for c in commands if c not in readme_shell]
    assert not missing, f".ci/run runs these as the README's, but the README does not say so: " \
                        f"{missing}"


def load_generator():
    spec = importlib.util.spec_from_file_location("docs_generate", ROOT / "docs" / "generate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_generated_reference_is_fresh() -> None:
    stale = load_generator().stale_pages()
    assert not stale, f"run python docs/generate.py: stale {[str(p) for p in stale]}"


LINK = re.compile(r"\]\(([^)\s]+)\)")


def anchors(path: Path) -> set[str]:
    """The heading anchors GitHub makes: lower case, punctuation dropped, spaces to hyphens."""
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    headings = re.findall(r"^#+ (.+)$", text, re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


def test_relative_links_resolve() -> None:
    broken = []
    for path in DOC_FILES:
        for link in LINK.findall(path.read_text(encoding="utf-8")):
            target, _, anchor = link.partition("#")
            if re.match(r"^[a-z]+:", target):
                continue
            resolved = (path.parent / target).resolve() if target else path
            if not resolved.exists():
                if str(resolved.relative_to(ROOT)) not in OTHER_BRANCH_LINKS:
                    broken.append(f"{path.relative_to(ROOT)}: {link}")
            elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
                broken.append(f"{path.relative_to(ROOT)}: {link} (no such heading)")
    assert not broken, broken


def test_readme_is_a_newcomers_page() -> None:
    size = len(README.read_bytes())
    assert 3_000 <= size <= 8_192, f"README.md is {size:,} bytes: keep it 3-8 KB, move detail " \
                                   "to docs/"
    text = README.read_text(encoding="utf-8")
    for needed in ("streamlit run studio/app.py", "studio ui", "pytest --all",
                   "docs/images/", "llama-cpp-python"):
        assert needed in text, needed


def test_fork_panel_placeholder_is_a_critic_the_studio_accepts(folder: Path) -> None:
    """The Fork panel shows an example critic as its placeholder: a reader copies it, so it must
    be a shape the studio accepts (it once was ``evaluator: {name: ...}``, which is refused)."""
    source = (ROOT / "components" / "fork_panel.py").read_text(encoding="utf-8")
    match = re.search(r'placeholder="(\{type: evaluator[^"]*\})"', source)
    assert match is not None, "the Fork panel's critic placeholder moved: update this test"
    project = {**BASE_PROJECT, "critic": yaml.safe_load(match.group(1))}
    (folder / "project.yaml").write_text(yaml.safe_dump(project), encoding="utf-8")
    code, output = studio("validate", str(folder / "project.yaml"))
    assert code == 0, output
