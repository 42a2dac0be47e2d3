"""Where a project comes from (:class:`Origin`) and what that lets it do: a file the CLI user runs
is theirs and trusted; a project that arrives through the browser (upload, YAML editor, stored
project) may set only what the allow-list allows (:mod:`.allowlist`): no Python code
(``agent.ref``, function tools) unless the server opted in (``STUDIO_ALLOW_CODE_REFS=1`` /
``studio ui --allow-code-refs``), no transport settings, no server files, no rate limits."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel

from studio.model.config import EvolutionConfig
from studio.model.errors import ProjectFileError
from studio.model.records import (
    RunSpec,
)
from studio.projects.adk_folders import check_folder_trust
from studio.projects.files.allowlist import (
    ALLOW_CODE_REFS_ENV,
    check_browser_project_fields,
    check_browser_settings,
    check_browser_spec_fields,
    code_refs_allowed,
)
from studio.projects.files.sections import ProjectFile

__all__ = ["ALLOW_CODE_REFS_ENV", "Origin", "check_browser_config", "check_code_ref",
           "check_spec_trust", "check_tool_trust", "check_trust", "code_refs_allowed",
           "set_fields"]


class Origin(StrEnum):
    """Where a project comes from, which decides what it may do."""

    LOCAL = "local"
    """A file the CLI user runs from their own disk: may load code and read dataset files."""
    BROWSER = "browser"
    """An upload, the YAML editor or a stored project run from the studio: untrusted."""


def set_fields(model: BaseModel) -> dict[str, Any]:
    """What a section sets: its fields without the studio's defaults, as plain data."""
    return model.model_dump(mode="json", exclude_defaults=True)


def check_trust(project: ProjectFile, origin: Origin, source: str) -> None:
    """Refuse, in a project from the browser, Python references (unless the server opted in)
    and every field the allow-list does not allow (:mod:`.allowlist`).

    Raises:
        ProjectFileError: naming the field, why, and what to do instead.
    """
    check_folder_trust(project.agent.folder if project.agent else None,
                       origin is not Origin.BROWSER or code_refs_allowed(), source)
    check_code_ref(project.agent.ref if project.agent else None, origin, f"{source}: agent.ref")
    if isinstance(project.critic.adk_metrics, str) and origin is Origin.BROWSER:
        raise ProjectFileError(
            f"critic.adk_metrics {project.critic.adk_metrics!r}: a project from the browser "
            "cannot read files on the server; paste the criteria inline "
            "(adk_metrics: {criteria: {...}})", where=f"{source}: critic.adk_metrics",
            value=project.critic.adk_metrics)
    for agent in ([project.agent] if project.agent else []) + list(project.agents):
        where = f"{source}: " + ("agent" if agent is project.agent else f"agents.{agent.name}")
        check_tool_trust(agent.tools, agent.name, origin, where)
    if origin is Origin.BROWSER:
        check_browser_project_fields(set_fields(project), source)


def check_spec_trust(spec: RunSpec, origin: Origin, where: str) -> None:
    """The same rule for a stored run's spec (resuming, forking, aligning or scoring it from
    the studio, trying it on one example)."""
    check_code_ref(spec.agent_ref, origin, f"{where}: agent.ref")
    if spec.agent is not None:
        check_tool_trust(spec.agent.tools, spec.agent.name, origin, f"{where}: agent")
    for agent in spec.agents:
        check_tool_trust(agent.tools, agent.name, origin, f"{where}: agents.{agent.name}")
    if origin is Origin.BROWSER:
        check_browser_spec_fields(set_fields(spec), where)


def check_browser_config(config: EvolutionConfig, source: str) -> None:
    """Run settings chosen in the browser (the Run page's form on top of the project's)."""
    check_browser_settings(set_fields(config), source)


def check_tool_trust(tools: list[str], agent: str, origin: Origin, where: str) -> None:
    """Function tools run Python code on the server each time the model calls one: from the
    browser only when the server opted in, as for ``agent.ref``."""
    if not tools or origin is not Origin.BROWSER or code_refs_allowed():
        return
    raise ProjectFileError(
        f"agent {agent!r} tool {tools[0]!r} runs Python code on the server whenever the model "
        "calls it, which projects from the browser (upload, YAML editor, stored projects) may "
        "not do. Remove the agent's tools, run the file from the command line (`studio run "
        "project.yaml`), or start the studio with `studio ui --allow-code-refs` "
        f"({ALLOW_CODE_REFS_ENV}=1) on a machine whose users you trust",
        where=f"{where}.tools[0]", value=tools[0])


def check_code_ref(ref: str | None, origin: Origin, where: str) -> None:
    """A ``module:attribute`` reference may be loaded only from a trusted origin."""
    if ref and origin is Origin.BROWSER and not code_refs_allowed():
        raise ProjectFileError(
            f"agent.ref {ref!r} loads Python code on the server, which projects from the "
            "browser (upload, YAML editor, stored projects) may not do. Declare the agent "
            "(name, model, instruction) instead, run the file from the command line (`studio "
            f"run project.yaml`), or start the studio with `studio ui --allow-code-refs` "
            f"({ALLOW_CODE_REFS_ENV}=1) on a machine whose users you trust",
            where=where, value=ref)
