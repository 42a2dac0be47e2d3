"""Python function tools for agents, named ``package.module:function``, resolved to ADK tools.

A tool runs on the server with arguments a model chose, so its code must be code the user
installed: a module of the standard library or of an installed distribution, found where that
distribution put it. A module that Python would find in the current directory or next to a
project file (say a ``tools.py`` that arrived with a downloaded project) is refused, even when
it shadows an installed name, and it is refused *before* it is imported, so none of its code
runs. Whether a project may name tools at all depends on where it came from
(:func:`studio.projects.files.check_tool_trust`).
"""

from __future__ import annotations

import functools
import importlib
import importlib.machinery
import importlib.metadata
import importlib.util
import inspect
import json
import sys
import sysconfig
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlparse

from studio.model.errors import ConfigError
from studio.model.tools import split_tool_ref

if TYPE_CHECKING:
    from google.adk.agents.llm_agent import ToolUnion
    from google.adk.tools import FunctionTool

REFUSED_MODULES = frozenset({
    "builtins", "os", "posix", "nt", "subprocess", "shutil", "pty", "ctypes", "importlib",
    "runpy", "pickle", "marshal", "code", "codeop", "sys", "signal", "multiprocessing",
    "socket", "tempfile", "pathlib", "io", "studio"})
"""Modules whose functions run commands, delete or open files, load code, kill processes or
reach the network (``os:system``, ``shutil:rmtree``, ``subprocess:getoutput``...), and the
studio itself: a model decides what such a tool is called with, so they are never tools."""


def resolve_tools(refs: list[str], *, agent: str, where: str = "agent"
                  ) -> list[ToolUnion]:
    """ADK ``FunctionTool`` objects for an agent's ``tools``, in order.

    Raises:
        ConfigError: naming the agent and the tool, ``where`` such as ``agent.tools[0]``.
    """
    tools: list[ToolUnion] = []
    names: dict[str, str] = {}
    for index, ref in enumerate(refs):
        place = f"{where}.tools[{index}]"
        tool = resolve_tool(ref, agent=agent, where=place)
        if tool.name in names:
            raise ConfigError(f"agent {agent!r} tool {ref!r}: {names[tool.name]!r} has the same "
                              f"name {tool.name!r}, and the model calls tools by name: keep one",
                              where=place, value=ref)
        names[tool.name] = ref
        tools.append(tool)
    return tools


def resolve_tool(ref: str, *, agent: str, where: str) -> FunctionTool:
    """One ADK ``FunctionTool`` for ``ref``, after checking where its module comes from."""
    from google.adk.tools import FunctionTool  # ADK is heavy: loaded on first build

    module_name, function_name = split_tool_ref(ref, agent=agent, where=where)
    what = f"agent {agent!r} tool {ref!r}"
    problem = installed_problem(module_name)
    if problem is not None:
        raise ConfigError(f"{what}: {problem}", where=where, value=ref)
    function = _load_function(module_name, function_name, what, where, ref)
    tool = FunctionTool(function)
    try:
        tool._get_declaration()  # what ADK sends the model; fails here rather than mid-run
    except Exception as exc:  # ADK raises plain ValueErrors and TypeErrors here
        raise ConfigError(f"{what}: ADK cannot describe this function to the model "
                          f"({type(exc).__name__}: {str(exc)[:200]}); wrap it in a function of "
                          "your own with named, typed parameters", where=where, value=ref) from exc
    return tool


def _load_function(module_name: str, function_name: str, what: str, where: str, ref: str
                   ) -> Callable[..., object]:
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # an installed module may fail at import in any way
        raise ConfigError(f"{what}: cannot import {module_name!r}: {type(exc).__name__}: {exc}",
                          where=where, value=ref) from exc
    if not hasattr(module, function_name):
        raise ConfigError(f"{what}: {module_name!r} has no attribute {function_name!r}",
                          where=where, value=ref)
    function = getattr(module, function_name)
    if inspect.isclass(function):
        raise ConfigError(f"{what}: is a class, not a function; name a plain function (a tool "
                          "is called with the model's arguments)", where=where, value=ref)
    if not (inspect.isfunction(function) or inspect.isbuiltin(function)):
        raise ConfigError(f"{what}: is a {type(function).__name__}, not a function; name a "
                          "plain function", where=where, value=ref)
    return function


# --------------------------------------------------------------------------- installed or not


def installed_problem(module_name: str) -> str | None:
    """Why ``module_name`` is not code the user installed, or None when it is.

    Nothing is imported: the module is located as the import system would find it (through
    namespace packages, without running any package's ``__init__``).
    """
    top = module_name.split(".")[0]
    if top in REFUSED_MODULES:
        return (f"functions of {top!r} run commands, open or delete files, load code or reach "
                "the network with what the model passes them; they are never tools")
    location = module_location(module_name)
    if location is None:
        return (f"no module {module_name!r} is installed (pip install the package that "
                "provides it)")
    if top in sys.stdlib_module_names:
        return None if _in_stdlib(location) else (
            f"{location} shadows the standard library module {top!r}; tools come only from the "
            "standard library and installed packages")
    distributions = _distributions().get(top, [])
    if any(_belongs_to(location, name) for name in distributions):
        return None
    if distributions:
        return (f"{top!r} is installed ({', '.join(distributions)}), but Python would import "
                f"it from {location}, which is not where it was installed (a folder on the "
                "path shadows it); tools come only from installed packages")
    return (f"{module_name!r} is found at {location}, which no installed package provides (a "
            "module in the current directory or next to a project file is not used as a tool): "
            "install it as a package (pip install -e your_tools) or use an installed function")


def module_location(module_name: str) -> Path | str | None:
    """The file Python would load for ``module_name`` (or its first regular package), "built-in"
    or "frozen", or None when it cannot be found. Runs no package's code."""
    loaded_spec = getattr(sys.modules.get(module_name), "__spec__", None)
    if loaded_spec is not None:
        return _spec_location(loaded_spec)
    parts = module_name.split(".")
    try:
        spec = importlib.util.find_spec(parts[0])
    except (ImportError, ValueError):
        return None
    for depth in range(1, len(parts)):
        if spec is None or not _is_namespace(spec):
            break
        spec = importlib.machinery.PathFinder.find_spec(
            ".".join(parts[:depth + 1]), list(spec.submodule_search_locations or []))
    return None if spec is None else _spec_location(spec)


def _is_namespace(spec: importlib.machinery.ModuleSpec) -> bool:
    return spec.origin in (None, "namespace") and spec.submodule_search_locations is not None


def _spec_location(spec: importlib.machinery.ModuleSpec) -> Path | str | None:
    if spec.origin in ("built-in", "frozen"):
        return spec.origin
    if spec.origin and spec.has_location:
        return Path(spec.origin).resolve()
    locations = list(spec.submodule_search_locations or [])
    return Path(locations[0]).resolve() if locations else None


def _in_stdlib(location: Path | str) -> bool:
    if isinstance(location, str):
        return True  # built-in or frozen: compiled into the interpreter
    paths = sysconfig.get_paths()
    roots = {Path(paths[key]).resolve() for key in ("stdlib", "platstdlib") if key in paths}
    return any(location.is_relative_to(root) for root in roots)


@functools.lru_cache(maxsize=1)
def _distributions() -> dict[str, list[str]]:
    """Top-level import name -> installed distributions (scanning them takes tens of ms)."""
    return {top: sorted(set(names))
            for top, names in importlib.metadata.packages_distributions().items()}


@functools.lru_cache(maxsize=256)
def _belongs_to(location: Path | str, distribution: str) -> bool:
    """Whether ``location`` is one of the distribution's installed files, or inside the source
    folder of an editable install (``pip install -e``)."""
    if isinstance(location, str):
        return False
    try:
        dist = importlib.metadata.distribution(distribution)
    except importlib.metadata.PackageNotFoundError:
        return False
    source = _editable_source(dist)
    if source is not None:
        return location.is_relative_to(source)
    base = Path(str(dist.locate_file(""))).resolve()
    if not location.is_relative_to(base):
        return False
    relative = location.relative_to(base).as_posix()
    return any(str(f).replace("\\", "/") == relative for f in dist.files or [])


def _editable_source(dist: importlib.metadata.Distribution) -> Path | None:
    """The source folder of an editable install, from its ``direct_url.json`` (PEP 610)."""
    try:
        direct = json.loads(dist.read_text("direct_url.json") or "null")
    except (json.JSONDecodeError, OSError):
        return None
    if not isinstance(direct, dict) or not (direct.get("dir_info") or {}).get("editable"):
        return None
    url = urlparse(str(direct.get("url", "")))
    return Path(unquote(url.path)).resolve() if url.scheme == "file" else None
