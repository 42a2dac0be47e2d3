"""The agents of ``studio ui --agents DIR``: ADK agent folders the server's operator chose, offered
on the Projects page as ``adk web DIR`` offers them.

Importing an agent folder runs its Python code, which a project from the browser may not do
(:func:`studio.projects.adk_folders.check_folder_trust`). A folder under ``DIR`` is different:
the person who started the server named ``DIR`` on the command line, as they would run
``studio run DIR/my_agent``. So the browser may pick one of these folders and one of its eval
sets *by name* from the lists below, and the run is made as the command line makes it
(:func:`studio.projects.adk_runs.folder_project`, trusted). The browser never gives a path:
a name that is not in the list is refused. Uploads and stored projects stay untrusted.

Starting a served agent's run takes the whole :class:`~studio.store.Store`: it dispatches the
run (:func:`studio.engine.hosting.dispatch.dispatch`), which may build its engine here.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from studio.engine.hosting.build import complete_spec, spec_agent
from studio.engine.hosting.dispatch import dispatch
from studio.model.config import EvolutionConfig
from studio.model.errors import ConfigError
from studio.model.records import Run, RunSpec
from studio.projects.adk_runs import FolderRunRequest, folder_project
from studio.projects.files import create_project_run
from studio.runtime.adk_evalsets import is_eval_set_file
from studio.runtime.agents import folder_reference
from studio.runtime.graphs import is_graph_workflow
from studio.store import Store

AGENTS_DIR_ENV = "STUDIO_AGENTS_DIR"
"""The folder ``studio ui --agents DIR`` serves agents from (absolute)."""
MAX_SERVED_AGENTS = 200
"""At most this many agent folders are listed (a huge folder is not walked whole)."""
_AGENT_FILES = ("agent.py", "__init__.py")


@dataclass(frozen=True)
class ServedAgent:
    """One agent folder under the served folder, and the eval sets saved in it."""

    name: str
    folder: Path
    eval_sets: tuple[str, ...]
    """File names of its eval sets (``*.evalset.json``, ``*.test.json``), as ``adk web``
    lists them in the folder."""


def served_agents_dir() -> Path | None:
    """The folder ``studio ui --agents`` named, or None when the server serves no agents."""
    value = os.environ.get(AGENTS_DIR_ENV, "").strip()
    return Path(value) if value else None


def check_agents_dir(path: Path) -> Path:
    """The absolute folder for ``--agents``.

    Raises:
        ConfigError: it is not a folder.
    """
    folder = path.expanduser().resolve()
    if not folder.is_dir():
        raise ConfigError(f"--agents {path}: not a folder; give the folder holding your agent "
                          "folders, as for `adk web DIR`", where="--agents", value=str(path))
    return folder


def list_served_agents(root: Path | None = None) -> list[ServedAgent]:
    """The agent folders directly under ``root`` (default: the served folder), as ``adk web``
    finds them: a folder whose name is a Python identifier, with ``agent.py`` or
    ``__init__.py`` naming ``root_agent``; sorted by name."""
    root = root or served_agents_dir()
    if root is None or not root.is_dir():
        return []
    agents = []
    for entry in sorted(root.iterdir(), key=lambda p: p.name)[:MAX_SERVED_AGENTS * 5]:
        if _is_agent_folder(entry):
            agents.append(ServedAgent(entry.name, entry, _eval_sets(entry)))
        if len(agents) >= MAX_SERVED_AGENTS:
            break
    return agents


def _is_agent_folder(path: Path) -> bool:
    if not path.is_dir() or path.is_symlink() or not path.name.isidentifier():
        return False
    return any(_names_root_agent(path / name) for name in _AGENT_FILES)


def _names_root_agent(path: Path) -> bool:
    """Whether the file mentions ``root_agent`` (``from . import agent`` in ``__init__.py``
    counts when ``agent.py`` does); read, never imported, and only its first 1 MB."""
    if not path.is_file():
        return False
    if path.name == "__init__.py" and (path.parent / "agent.py").is_file():
        return False  # agent.py decides
    with path.open("rb") as handle:
        return b"root_agent" in handle.read(1_000_000)


def _eval_sets(folder: Path) -> tuple[str, ...]:
    return tuple(sorted(p.name for p in folder.iterdir()
                        if p.is_file() and is_eval_set_file(p.name)))


def served_agent(name: str, root: Path | None = None) -> ServedAgent:
    """The served agent called ``name``.

    Raises:
        ConfigError: no agent of that name is served (the names are listed).
    """
    agents = {agent.name: agent for agent in list_served_agents(root)}
    if name not in agents:
        known = ", ".join(agents) or "none"
        raise ConfigError(f"no agent {name!r} is served here (served: {known})",
                          where="agent", value=name)
    return agents[name]


def served_agent_graph(name: str, root: Path | None = None) -> RunSpec | None:
    """The spec a run of served agent ``name`` starts from when its ``root_agent`` is an ADK 2
    graph ``Workflow``: its shape (nodes, edges, routes), the nodes whose instructions evolve
    and the scored node, for the Projects page's picture; None for any other agent. It imports
    the folder's agent, which is trusted (the person who started the server chose the folder);
    uploads and stored projects never come here.

    Raises:
        ConfigError: no agent of that name is served, or its folder does not load.
    """
    folder = served_agent(name, root).folder.resolve()
    spec = RunSpec(agent_ref=folder_reference(folder), agent_folder=str(folder),
                   components=["instruction"])  # what a folder run evolves (folder_project)
    agent = spec_agent(spec)
    return complete_spec(spec, agent) if is_graph_workflow(agent) else None


def start_served_agent_run(store: Store, name: str, eval_set: str, config: EvolutionConfig, *,
                           model: str | None = None, reflection_model: str | None = None,
                           root: Path | None = None) -> Run:
    """Create and dispatch the run of served agent ``name`` on its eval set ``eval_set`` (both
    by name), trusted as ``studio run DIR/name --evalset ... [--model M]
    [--reflection-model R]`` is (empty models: the folder's own).

    Raises:
        ConfigError (and subclasses): an unknown agent or eval set, or what ``studio run``
            refuses (an agent without ``root_agent``, a multi-turn case, a missing key...).
    """
    agent = served_agent(name, root)
    if eval_set not in agent.eval_sets:
        raise ConfigError(f"agent {name!r} has no eval set {eval_set!r} (its eval sets: "
                          f"{', '.join(agent.eval_sets) or 'none: record one in adk web'})",
                          where="eval set", value=eval_set)
    made = folder_project(FolderRunRequest(folder=agent.folder,
                                           evalsets=(agent.folder / eval_set,),
                                           model=(model or "").strip() or None,
                                           reflection_model=(reflection_model or "").strip()
                                           or None))
    run = create_project_run(store, made.project, made.base_dir, name=name, config=config,
                             source=f"{name} (served by studio ui --agents)")
    return dispatch(store, run.id).run
