"""Real ADK agents from the studio's specs, or from the user's own Python code."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from studio.model.errors import ConfigError
from studio.model.records import AgentSpec
from studio.runtime.agent_imports import import_agent_module
from studio.runtime.demos import FewShotDemos
from studio.runtime.providers import adk_or_litellm_model
from studio.runtime.tools import resolve_tools

if TYPE_CHECKING:
    from google.adk.agents import BaseAgent, LlmAgent


def build_agent(spec: AgentSpec, *, output_key: str | None = None, where: str = "agent"
                ) -> LlmAgent:
    """A real ADK ``LlmAgent`` for ``spec``, reaching its model through LiteLLM (or ADK's own
    class for a name like ``gemini-2.5-flash``: :func:`adk_or_litellm_model`), with its
    function tools (``where`` places a bad tool's error: ``agent`` or ``agents.<name>``) and its
    few-shot demos as prior turns (:class:`FewShotDemos`)."""
    from google.adk.agents import LlmAgent  # ADK is heavy: loaded on first build, not at import

    return LlmAgent(
        name=spec.name,
        model=adk_or_litellm_model(spec.model),
        instruction=spec.instruction,
        output_schema=spec.output_schema,
        output_key=output_key,
        generate_content_config=spec.generate_content_config.to_adk(),
        tools=resolve_tools(spec.tools, agent=spec.name, where=where),
        before_model_callback=FewShotDemos(spec.few_shot) if spec.few_shot else None,
    )


def load_agent(reference: str, *, folder: str | Path | None = None) -> BaseAgent:
    """Load an existing ADK agent from Python code, as ``"package.module:attribute"``; with
    ``folder`` (an ADK agent folder) the folder is made importable and its ``.env`` loaded
    first (:func:`prepare_agent_folder`).

    The attribute must *be* an agent instance: nothing is ever called, so a reference can at
    most import a module (only trusted projects may use one: see ``studio.projects.files``).

    Raises:
        ConfigError: if the folder or module or attribute is missing, or the object is not an
            ADK agent.
        AgentImportError: the module's code raised or exited while it was imported (one line:
            the file and line, the cause, what to do; :mod:`studio.runtime.agent_imports`).
    """
    from google.adk.agents import BaseAgent

    from studio.runtime.adk_models import register_studio_models_with_adk

    register_studio_models_with_adk()  # `model="scripted/demo"` in the code resolves in ADK
    if folder is not None:
        prepare_agent_folder(Path(folder))
    module_name, sep, attribute = reference.partition(":")
    if not sep or not module_name or not attribute:
        raise ConfigError("use the form 'package.module:attribute'", where="agent.ref",
                          value=reference)
    module = import_agent_module(module_name, reference=reference,
                                 folder=None if folder is None else Path(folder).resolve())
    target: Any = module
    for name in attribute.split("."):
        if folder is not None and attribute == "root_agent" and not hasattr(target, name):
            raise ConfigError(f"the agent folder {folder} has no root_agent: its {module_name} "
                              "module must define one (e.g. `root_agent = LlmAgent(...)`), the "
                              "agent ADK's adk web, adk run and adk optimize load too",
                              where="agent.folder", value=reference)
        if name.startswith("_") or not hasattr(target, name):
            raise ConfigError(f"{module_name!r} has no attribute {attribute!r} (private names "
                              "starting with _ are not loaded)",
                              where="agent.ref", value=reference)
        target = getattr(target, name)
    from studio.runtime.graphs import is_graph_workflow

    if is_graph_workflow(target):  # its nodes evolve with the graph kept (engine.api)
        # a graph Workflow is an ADK BaseNode, not a BaseAgent: the run's agent slot (typed
        # BaseAgent through the engine) holds it all the same, and every use checks for it
        return target  # type: ignore[return-value]
    if not isinstance(target, BaseAgent):
        raise ConfigError(f"{reference!r} is a {type(target).__name__}, not an ADK agent "
                          "instance (a reference is never called: point it at the agent object "
                          "itself, e.g. `root_agent = LlmAgent(...)`)", where="agent.ref",
                          value=reference)
    return target


def folder_reference(folder: str | Path) -> str:
    """The reference to an ADK agent folder's agent as ``adk create`` lays it out:
    ``my_agent/agent.py`` defining ``root_agent`` is ``my_agent.agent:root_agent``."""
    return f"{Path(folder).name}.agent:root_agent"


def prepare_agent_folder(folder: Path) -> None:
    """Make an ADK agent folder importable and load its ``.env`` as ADK's ``AgentLoader``
    does: the folder's parent goes first on ``sys.path`` (so ``my_agent.agent`` imports
    without ``PYTHONPATH``), and the first ``.env`` found from the folder up is loaded by
    ADK's own loader (``ADK_DISABLE_LOAD_DOTENV`` honoured). A variable set before is never
    overridden, even when ADK took its snapshot of "explicit" variables earlier in this
    process.

    Raises:
        ConfigError: the folder is missing or is not an ADK agent folder.
    """
    from google.adk.cli.utils.envs import load_dotenv_for_agent

    folder = folder.resolve()
    if not folder.is_dir():
        raise ConfigError(f"agent folder not found: {folder}", where="agent.folder",
                          value=str(folder))
    if not ((folder / "agent.py").is_file() or (folder / "__init__.py").is_file()):
        raise ConfigError(f"{folder} is not an ADK agent folder: it needs agent.py defining "
                          "root_agent (and __init__.py with `from . import agent`), as "
                          "`adk create` makes it", where="agent.folder", value=str(folder))
    parent = str(folder.parent)
    if parent not in sys.path:
        sys.path.insert(0, parent)
    already_set = dict(os.environ)
    load_dotenv_for_agent(folder.name, parent)
    os.environ.update(already_set)


def resolve_agent_folder(reference: str | None, folder: str | None, base_dir: Path
                         ) -> str | None:
    """The absolute agent folder a project's agent is imported from: ``folder`` (relative to
    the project file's folder ``base_dir``), else the folder next to the project file that
    ``reference``'s top package names (``my_agent`` for ``my_agent.agent:root_agent``), as
    ``adk web`` finds agents under its folder; None for an installed package's agent."""
    if folder is not None:
        return str((base_dir / folder).resolve())
    top = (reference or "").partition(":")[0].partition(".")[0]
    candidate = base_dir / top
    if top and ((candidate / "agent.py").is_file() or (candidate / "__init__.py").is_file()):
        return str(candidate.resolve())
    return None
