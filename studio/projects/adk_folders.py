"""ADK agent folders as a project's agent (``agent: {folder: my_agent}``).

An ADK user's agent lives in a folder ``adk create`` made: ``my_agent/__init__.py``,
``my_agent/agent.py`` defining ``root_agent``, and maybe ``my_agent/.env`` with the keys it
needs. A project names the folder (relative to the project file) and the studio imports it as
``adk web`` does (:func:`studio.runtime.agents.prepare_agent_folder`). Importing a folder runs
its Python code, so only trusted projects may name one (a file run from the command line, or a
server started with ``--allow-code-refs``), as for ``agent.ref``.
"""

from __future__ import annotations

from pathlib import PurePath
from typing import Any

from studio.model.errors import ProjectFileError
from studio.runtime.agents import folder_reference


def folder_section(data: Any) -> Any:
    """An ``agent:`` section with ``folder`` and no ``ref``, given the folder's standard
    reference (``my_agent.agent:root_agent``); a ``ref`` given with a folder must import from
    that folder.

    Raises:
        ValueError: the ``ref`` names another package than the folder (pydantic reports it at
            ``agent``).
    """
    if not isinstance(data, dict) or not isinstance(data.get("folder"), str):
        return data
    name = PurePath(data["folder"]).name
    if not name.isidentifier():
        raise ValueError(f"agent.folder {data['folder']!r}: the folder's name {name!r} must be "
                         "a Python identifier (letters, digits, _), as ADK imports it as a "
                         "package")
    ref = data.get("ref")
    if not ref:
        return {**data, "ref": folder_reference(data["folder"])}
    top = str(ref).partition(":")[0].partition(".")[0]
    if top != name:
        raise ValueError(f"agent.ref {ref!r} does not import from agent.folder "
                         f"{data['folder']!r}: start it with {name!r} (e.g. "
                         f"'{folder_reference(name)}'), or leave ref out")
    return data


def check_folder_trust(folder: str | None, trusted: bool, source: str) -> None:
    """Refuse an agent folder in a project that is not trusted (from the browser, unless the
    server opted in).

    Raises:
        ProjectFileError: naming the folder and the ways to run it.
    """
    if folder is None or trusted:
        return
    raise ProjectFileError(
        f"agent.folder {folder!r} imports the agent folder's Python code (and reads its .env) "
        "on the server, which projects from the browser (upload, YAML editor, stored projects) "
        "may not do. Run the project file from the command line (`studio run project.yaml`), "
        "or start the studio with `studio ui --allow-code-refs` on a machine whose users you "
        "trust", where=f"{source}: agent.folder", value=folder)
