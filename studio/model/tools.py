"""Tools: a tool invocation (what a scripted model asks ADK to run, what trajectory matching
compares) and the form of a tool reference in an agent spec (``package.module:function``).

Only the form is checked here; which modules may be imported is decided when the agent is built
(:mod:`studio.runtime.tools`) and where a project came from (:mod:`studio.projects.files`).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, NamedTuple

from studio.model.errors import ConfigError
from studio.model.limits import MAX_TOOL_REF_CHARS, MAX_TOOLS

if TYPE_CHECKING:
    from pydantic.json_schema import JsonDict

TOOL_REF_FORM = "package.module:function"
_IDENTIFIER = r"[A-Za-z_][A-Za-z0-9_]*"
_TOOL_REF = re.compile(
    rf"^(?P<module>{_IDENTIFIER}(?:\.{_IDENTIFIER})*):(?P<function>{_IDENTIFIER})$")
TOOLS_JSON_SCHEMA: JsonDict = {
    "maxItems": MAX_TOOLS,
    "items": {"type": "string", "maxLength": MAX_TOOL_REF_CHARS,
              "pattern": rf"^{_IDENTIFIER}(\.{_IDENTIFIER})*:{_IDENTIFIER}$"},
    "description": f"Python function tools as '{TOOL_REF_FORM}', from installed packages or the "
                   "standard library only (e.g. 'calendar:isleap').",
}
"""How a project file's ``tools`` list is described in the JSON Schema of the format."""


class ToolCall(NamedTuple):
    """One tool invocation: the tool's name, its arguments and the call id when known."""

    name: str
    args: dict[str, Any]
    id: str | None = None


def split_tool_ref(ref: object, *, agent: str, where: str) -> tuple[str, str]:
    """``(module, function)`` of a well-formed, public tool reference.

    Raises:
        ConfigError: naming the agent and the tool, when the form is wrong or a name is private.
    """
    what = f"agent {agent!r} tool {ref!r}"
    if not isinstance(ref, str) or len(ref) > MAX_TOOL_REF_CHARS:
        raise ConfigError(f"{what}: a tool is named as text of at most {MAX_TOOL_REF_CHARS} "
                          f"characters, in the form '{TOOL_REF_FORM}'", where=where, value=ref)
    match = _TOOL_REF.match(ref)
    if match is None:
        raise ConfigError(f"{what}: use the form '{TOOL_REF_FORM}' (e.g. 'calendar:isleap')",
                          where=where, value=ref)
    module, function = match["module"], match["function"]
    if function.startswith("_") or any(p.startswith("_") for p in module.split(".")):
        raise ConfigError(f"{what}: private names (starting with _) are not loaded as tools",
                          where=where, value=ref)
    return module, function


def check_tool_refs(refs: list[str], *, agent: str, where: str = "tools") -> list[str]:
    """Each reference well formed, none twice, at most :data:`MAX_TOOLS`.

    Raises:
        ConfigError: with ``where`` such as ``tools[2]`` and the agent named.
    """
    if len(refs) > MAX_TOOLS:
        raise ConfigError(f"agent {agent!r} names {len(refs)} tools; the limit is {MAX_TOOLS}",
                          where=where)
    seen: set[str] = set()
    for index, ref in enumerate(refs):
        split_tool_ref(ref, agent=agent, where=f"{where}[{index}]")
        if ref in seen:
            raise ConfigError(f"agent {agent!r} tool {ref!r} is listed twice: keep one",
                              where=f"{where}[{index}]", value=ref)
        seen.add(ref)
    return refs
