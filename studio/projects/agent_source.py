"""Where an ADK agent folder's evolvable components are written in its Python source, read
without importing it (:mod:`studio.projects.source_literals` writes new values there).

An ADK developer keeps an instruction as a string literal in the agent's constructor, or as a
module constant (``ROOT_PROMPT`` in ``prompt.py``, used as ``from .prompt import ROOT_PROMPT``
or ``from . import prompt`` then ``prompt.ROOT_PROMPT``), for the root agent and for each
sub-agent. :class:`SourceFolder` parses every ``.py`` file of the folder with libcst (a
concrete syntax tree: the rewritten file keeps every other byte, comments and formatting) and
follows an agent's ``instruction=`` through names, imports and attributes to the literal that
holds it (:meth:`SourceFolder.locate`). The literal is found *by its value* too: the text the
run started from must be there, else the file changed since (:class:`Refusal`).

A value computed at run time (an f-string, a concatenation with ``+``, a function call, a file
read) has no literal to rewrite: :meth:`SourceFolder.locate` refuses, naming the file, line and
what computes it. Output schemas (a dict literal) and generation configs (a
``GenerateContentConfig(...)`` call with literal numbers) are found where they are literals in
the same way; a pydantic class as the schema is refused. :mod:`studio.projects.source_literals`
writes the new values.

Nothing here imports or runs the folder's code.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import libcst as cst
from libcst.helpers import get_full_name_for_node
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

from studio.model.errors import ConfigError
from studio.model.records import GenerationConfig, config_from_yaml

MAX_SOURCE_FILES = 500
"""A folder with more Python files than this is not read whole (a virtualenv inside it)."""
MAX_SOURCE_BYTES = 2_000_000
"""A Python file larger than this (2 MB) is left out."""
SKIPPED_FOLDERS = {"__pycache__", ".venv", "venv", "node_modules", ".git", ".adk"}
GENERATION_CONFIG_CALLS = ("GenerateContentConfig",)
"""The call a ``generate_content_config=`` literal is made with (``types.GenerateContentConfig``)
read by its last name."""
FILE_READS = ("open", "read_text", "read", "read_bytes", "load", "loads", "safe_load")
"""Function names that read a file (or parse one just read): named as such in a refusal."""


@dataclass(frozen=True)
class SourceModule:
    """One parsed file: its dotted name (``my_agent.prompt``), path and tree with positions."""

    name: str
    path: Path
    tree: cst.Module
    positions: Mapping[cst.CSTNode, CodeRange]
    is_package: bool

    def line(self, node: cst.CSTNode) -> int:
        return self.positions[node].start.line

    @property
    def package(self) -> str:
        return self.name if self.is_package else self.name.rpartition(".")[0]

    def statements(self) -> Iterator[cst.BaseSmallStatement | cst.BaseCompoundStatement]:
        """The module's top-level statements (small statements unpacked from their lines)."""
        for statement in self.tree.body:
            if isinstance(statement, cst.SimpleStatementLine):
                yield from statement.body
            else:
                yield statement


@dataclass(frozen=True)
class Found:
    """A component's value where the source writes it literally."""

    module: SourceModule
    node: cst.BaseExpression
    """The literal: a string (simple, triple-quoted or implicitly concatenated), a dict, or a
    ``GenerateContentConfig(...)`` call."""
    via: str
    """How the agent reaches it, for people: ``the constant ROOT_PROMPT``."""
    root: Path

    @property
    def where(self) -> str:
        """``prompt.py:12 (the constant ROOT_PROMPT)``."""
        return f"{self.relative}:{self.module.line(self.node)} ({self.via})"

    @property
    def relative(self) -> str:
        return self.module.path.relative_to(self.root).as_posix()

    @property
    def key(self) -> tuple[Path, int]:
        """The same literal reached two ways has one key (two agents sharing a constant)."""
        return self.module.path, id(self.node)


@dataclass(frozen=True)
class Refusal:
    """Why a component cannot be written into the source; the message names the place."""

    reason: str


@dataclass(frozen=True)
class AgentCall:
    """An agent's constructor in the source: ``LlmAgent(name="x", instruction=..., ...)``."""

    name: str
    module: SourceModule
    call: cst.Call

    def argument(self, keyword: str) -> cst.BaseExpression | None:
        for arg in self.call.args:
            if arg.keyword is not None and arg.keyword.value == keyword:
                return arg.value
        return None

    @property
    def line(self) -> int:
        return self.module.line(self.call)


@dataclass
class _Followed:
    """Where following a name ended: the expression, its module, and the way there."""

    module: SourceModule
    node: cst.BaseExpression
    via: list[str] = field(default_factory=list)
    stopped: str | None = None
    """Why following stopped before a value (a name defined elsewhere, a class)."""
    computed: bool = True
    """False when it stopped at a definition that is no value at all (a class)."""


class SourceFolder:
    """Every Python file of an agent folder, parsed (see the module's docstring).

    Raises:
        ConfigError: the folder holds no Python file the studio can read.
    """

    def __init__(self, folder: Path, *, package: str | None = None) -> None:
        self.folder = folder.resolve()
        self.package = package or self.folder.name
        self.modules: dict[str, SourceModule] = {}
        self.unreadable: list[str] = []
        for path in _python_files(self.folder):
            self._parse(path)
        if not self.modules:
            raise ConfigError(f"no Python file to read in {self.folder}", where="folder",
                              value=str(self.folder))
        self.agents = [call for module in self.modules.values() for call in _agent_calls(module)]

    def _parse(self, path: Path) -> None:
        relative = path.relative_to(self.folder).with_suffix("")
        parts = [self.package, *relative.parts]
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        try:
            tree = cst.parse_module(path.read_text(encoding="utf-8"))
        except (cst.ParserSyntaxError, UnicodeDecodeError, OSError) as exc:
            self.unreadable.append(f"{path.relative_to(self.folder)} ({type(exc).__name__})")
            return
        wrapper = MetadataWrapper(tree, unsafe_skip_copy=True)
        name = ".".join(parts)
        self.modules[name] = SourceModule(name, path, tree, wrapper.resolve(PositionProvider),
                                          is_package)

    # ----------------------------------------------------------------------- agents

    def agent(self, name: str) -> AgentCall | None:
        """The constructor of the agent called ``name`` (the first, should two share it)."""
        return next((a for a in self.agents if a.name == name), None)

    def root_agent_name(self) -> str | None:
        """The name of the agent ``root_agent`` is, when the source says it literally (``adk
        web``'s ``my_agent.agent:root_agent``, followed through aliases and imports), else
        None."""
        for module_name in (f"{self.package}.agent", self.package):
            module = self.modules.get(module_name)
            if module is None:
                continue
            followed = self._follow_name(module, "root_agent", cst.Name("root_agent"), 0)
            if isinstance(followed.node, cst.Call):
                return _agent_name(followed.node)
        return None

    # ----------------------------------------------------------------------- locating

    def locate(self, agent: str | None, component: str, seed: str) -> Found | Refusal:
        """Where ``agent``'s ``component`` (``instruction``, ``output_schema``,
        ``generate_content_config``) is written literally, checked against ``seed``: the text
        the run started from. ``agent`` None: the root agent."""
        owner = agent or self.root_agent_name()
        if component == "instruction":
            return self._locate_instruction(owner, seed)
        if component in ("output_schema", "generate_content_config"):
            return self._locate_argument(owner, component, seed)
        return Refusal(f"the {component} of agent {owner or 'root_agent'} has no literal in "
                       "the source the studio can rewrite (few-shot examples live in a "
                       "callback)")

    def _locate_instruction(self, owner: str | None, seed: str) -> Found | Refusal:
        by_value = self.literals_with_value(seed)
        call = self.agent(owner) if owner else None
        if call is None:
            return self._by_value_only(owner, seed, by_value)
        argument = call.argument("instruction")
        if argument is None:
            return Refusal(f"agent {owner!r} ({self._at(call.module, call.call)}) has no "
                           "instruction= argument to rewrite (is it set later in the code?)")
        followed = self.follow(call.module, argument)
        if not _is_text(followed.node):
            return Refusal(self._computed(owner, "instruction", followed))
        found = self._found(followed, "instruction")
        if found.key in {f.key for f in by_value}:
            return found
        return Refusal(_changed(found, "instruction", seed, _text(followed.node)))

    def _by_value_only(self, owner: str | None, seed: str, by_value: list[Found]
                       ) -> Found | Refusal:
        """No constructor with the agent's name in the source: the text alone decides."""
        if len(by_value) == 1:
            return by_value[0]
        who = f"agent {owner!r}" if owner else "the root agent"
        if by_value:
            return Refusal(f"the instruction of {who} is written in "
                           f"{len(by_value)} places ({', '.join(f.where for f in by_value)}) "
                           "and the source does not say which one is its own")
        return Refusal(f"the instruction of {who} was not found in {self.folder}: no string "
                       f"literal holds the text the run started from ({_first_line(seed)!r}). "
                       "The file changed since the run started, or the text is built at run "
                       "time")

    def _locate_argument(self, owner: str | None, component: str, seed: str) -> Found | Refusal:
        call = self.agent(owner) if owner else None
        if call is None:
            return Refusal(f"no constructor of agent {owner or 'root_agent'!r} with a literal "
                           f"name= was found in {self.folder}, so its {component} cannot be "
                           "found")
        argument = call.argument(component)
        if argument is None:
            return Refusal(f"agent {owner!r} ({self._at(call.module, call.call)}) has no "
                           f"{component}= argument to rewrite: add one, then apply again")
        followed = self.follow(call.module, argument)
        literal = _literal_value(component, followed.node)
        if isinstance(literal, Refusal) or literal is None:
            return Refusal(self._computed(owner, component, followed))
        found = self._found(followed, component)
        if literal != _seed_value(component, seed):
            return Refusal(_changed(found, component, seed, _shown(component, literal)))
        return found

    def literals_with_value(self, value: str) -> list[Found]:
        """Every string literal in the folder whose value is ``value`` (docstrings left out)."""
        found = []
        for module in self.modules.values():
            for node in _strings(module.tree):
                if _text(node) == value:
                    found.append(Found(module, node, _name_of_literal(module, node),
                                       self.folder))
        return found

    def sharing(self, found: Found, component: str) -> list[AgentCall]:
        """The agents whose ``component`` is this very literal (one constant, several agents)."""
        shared = []
        for call in self.agents:
            argument = call.argument(component)
            if argument is None:
                continue
            followed = self.follow(call.module, argument)
            if followed.module.path == found.module.path and followed.node is found.node:
                shared.append(call)
        return shared

    def follow(self, module: SourceModule, node: cst.BaseExpression, depth: int = 0
               ) -> _Followed:
        """Follow a name or a module attribute to the expression it is bound to (module-level
        assignments, ``from .x import Y``, ``from . import x`` then ``x.Y``)."""
        if depth > 20:
            return _Followed(module, node, stopped="a chain of names too long to follow")
        if isinstance(node, cst.Name):
            return self._follow_name(module, node.value, node, depth)
        if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name | cst.Attribute):
            target = self._module_bound(module, get_full_name_for_node(node.value) or "")
            if target is not None:
                return self._follow_name(target, node.attr.value, node, depth)
        return _Followed(module, node)

    def _follow_name(self, module: SourceModule, name: str, node: cst.BaseExpression,
                     depth: int) -> _Followed:
        if _augmented(module, name):
            return _Followed(module, node, stopped=f"{name} is built up with += in "
                             f"{module.path.relative_to(self.folder)}")
        value = _assigned(module, name)
        if value is not None:
            followed = self.follow(module, value, depth + 1)
            followed.via.insert(0, f"the constant {name}")
            return followed
        imported = _imported(module, name)
        if imported is not None:
            source, attribute = imported
            target = self._resolve_module(module, source)
            if target is not None and attribute is not None:
                return self._follow_name(target, attribute, node, depth + 1)
        defined = _class(module, name)
        if defined is not None:
            return _Followed(module, node, stopped=f"the class {name} (defined at "
                             f"{self._at(module, defined)})", computed=False)
        return _Followed(module, node, stopped=f"{name} is a name the studio cannot follow")

    def _module_bound(self, module: SourceModule, dotted: str) -> SourceModule | None:
        """The module a name stands for: ``prompt`` after ``from . import prompt``."""
        imported = _imported(module, dotted.partition(".")[0])
        if imported is None:
            return None
        source, attribute = imported
        full = source if attribute is None else \
            source + attribute if source.endswith(".") else f"{source}.{attribute}"
        rest = dotted.partition(".")[2]
        return self._resolve_module(module, f"{full}.{rest}" if rest else full)

    def _resolve_module(self, module: SourceModule, source: str) -> SourceModule | None:
        """The folder's module an import names: relative (``.prompt``, ``..shared``) from
        ``module``'s package, or absolute under the folder's package."""
        level = len(source) - len(source.lstrip("."))
        rest = source[level:]
        if level:
            base = module.package.split(".")
            base = base[:len(base) - (level - 1)] if level > 1 else base
            full = ".".join([*base, rest] if rest else base)
        else:
            top, _, tail = rest.partition(".")
            full = ".".join([self.package, tail] if tail else [self.package]) \
                if top == self.package else rest
        return self.modules.get(full)

    def _found(self, followed: _Followed, component: str) -> Found:
        via = followed.via[-1] if followed.via else f"the {component}= argument"
        return Found(followed.module, followed.node, via, self.folder)

    def _computed(self, owner: str | None, component: str, followed: _Followed) -> str:
        where = self._at(followed.module, followed.node)
        what = followed.stopped or _kind(followed.node)
        if not followed.computed:
            return f"the {component} of agent {owner!r} at {where} is {what}, not a literal: " \
                   "only a literal can be rewritten"
        return (f"the {component} of agent {owner!r} is computed at run time at {where}: "
                f"{what}; only a literal can be rewritten")

    def _at(self, module: SourceModule, node: cst.CSTNode) -> str:
        return f"{module.path.relative_to(self.folder).as_posix()}:{module.line(node)}"


# --------------------------------------------------------------------------- reading helpers


def _python_files(folder: Path) -> list[Path]:
    files = []
    for path in sorted(folder.rglob("*.py")):
        relative = path.relative_to(folder)
        if any(part in SKIPPED_FOLDERS or part.startswith(".") for part in relative.parts[:-1]):
            continue
        if path.is_symlink() or not path.is_file() or path.stat().st_size > MAX_SOURCE_BYTES:
            continue
        if not path.resolve().is_relative_to(folder):
            continue
        files.append(path)
        if len(files) >= MAX_SOURCE_FILES:
            break
    return files


def _agent_calls(module: SourceModule) -> list[AgentCall]:
    calls: list[AgentCall] = []

    class Visitor(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            name = _agent_name(node)
            if name is not None:
                calls.append(AgentCall(name, module, node))

    module.tree.visit(Visitor())
    return calls


def _agent_name(call: cst.Call) -> str | None:
    """The literal ``name=`` of an agent's constructor (a call to a class whose name ends with
    ``Agent``: ``Agent``, ``LlmAgent``, ``SequentialAgent`` ...), else None."""
    func = get_full_name_for_node(call.func) or ""
    if not func.rpartition(".")[2].endswith("Agent"):
        return None
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "name" and \
                isinstance(arg.value, cst.SimpleString):
            value = arg.value.evaluated_value
            return value if isinstance(value, str) else None
    return None


def _assigned(module: SourceModule, name: str) -> cst.BaseExpression | None:
    """The value of the module's last top-level ``name = ...`` (or ``name: T = ...``)."""
    value = None
    for statement in module.statements():
        if isinstance(statement, cst.Assign):
            if any(isinstance(t.target, cst.Name) and t.target.value == name
                   for t in statement.targets):
                value = statement.value
        elif isinstance(statement, cst.AnnAssign) and isinstance(statement.target, cst.Name) \
                and statement.target.value == name and statement.value is not None:
            value = statement.value
    return value


def _augmented(module: SourceModule, name: str) -> bool:
    return any(isinstance(s, cst.AugAssign) and isinstance(s.target, cst.Name)
               and s.target.value == name for s in module.statements())


def _class(module: SourceModule, name: str) -> cst.ClassDef | None:
    return next((s for s in module.statements()
                 if isinstance(s, cst.ClassDef) and s.name.value == name), None)


def _imported(module: SourceModule, name: str) -> tuple[str, str | None] | None:
    """What a top-level import binds ``name`` to: ``(module, attribute)`` for ``from module
    import attribute [as name]`` (the module written with its leading dots), ``(module, None)``
    for ``import module as name``."""
    for statement in module.statements():
        if isinstance(statement, cst.ImportFrom) and not isinstance(statement.names,
                                                                    cst.ImportStar):
            source = "." * len(statement.relative) + (
                get_full_name_for_node(statement.module) or "" if statement.module else "")
            for alias in statement.names:
                if alias.evaluated_alias == name or (alias.asname is None and
                                                     alias.evaluated_name == name):
                    return source, alias.evaluated_name
        elif isinstance(statement, cst.Import):
            for alias in statement.names:
                if alias.evaluated_alias == name:
                    return alias.evaluated_name, None
    return None


class _Strings(cst.CSTVisitor):
    """Every string literal, an implicit concatenation counted once, docstrings left out."""

    def __init__(self) -> None:
        self.found: list[cst.BaseExpression] = []

    def visit_Expr(self, node: cst.Expr) -> bool:
        return not isinstance(node.value, cst.SimpleString | cst.ConcatenatedString)

    def visit_ConcatenatedString(self, node: cst.ConcatenatedString) -> bool:
        self.found.append(node)
        return False

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        self.found.append(node)

    def visit_FormattedString(self, node: cst.FormattedString) -> bool:
        return False


def _strings(tree: cst.Module) -> list[cst.BaseExpression]:
    visitor = _Strings()
    tree.visit(visitor)
    return visitor.found


def _is_text(node: cst.BaseExpression) -> bool:
    return _text(node) is not None


def _text(node: cst.BaseExpression) -> str | None:
    """A string literal's value (None for anything else, an f-string, bytes)."""
    if isinstance(node, cst.SimpleString | cst.ConcatenatedString):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


def _name_of_literal(module: SourceModule, node: cst.BaseExpression) -> str:
    for statement in module.statements():
        if isinstance(statement, cst.Assign) and statement.value is node:
            names = [t.target.value for t in statement.targets if isinstance(t.target, cst.Name)]
            if names:
                return f"the constant {names[0]}"
        if isinstance(statement, cst.AnnAssign) and statement.value is node and \
                isinstance(statement.target, cst.Name):
            return f"the constant {statement.target.value}"
    return "a string literal"


def _kind(node: cst.BaseExpression) -> str:
    """What computes a value, for people."""
    if isinstance(node, cst.FormattedString) or (
            isinstance(node, cst.ConcatenatedString) and _text(node) is None):
        return "an f-string"
    if isinstance(node, cst.BinaryOperation):
        return "a concatenation (+)" if isinstance(node.operator, cst.Add) else \
            "an expression (" + type(node.operator).__name__.lower() + ")"
    if isinstance(node, cst.Call):
        name = get_full_name_for_node(node.func) or "a function"
        if name.rpartition(".")[2] in FILE_READS:
            return f"a file read ({name}(...))"
        return f"a function call ({name}(...))"
    if isinstance(node, cst.Name | cst.Attribute):
        return f"{get_full_name_for_node(node)}, a value the studio cannot follow"
    return f"an expression ({type(node).__name__})"


def _literal_value(component: str, node: cst.BaseExpression) -> Any:
    """The value a schema's dict literal or a config call's literal arguments hold (the
    config as a :class:`GenerationConfig`); None when it is not such a literal."""
    if component == "output_schema":
        if not isinstance(node, cst.Dict):
            return None
        try:
            return ast.literal_eval(cst.Module(body=[]).code_for_node(node))
        except (SyntaxError, ValueError):
            return None
    if not isinstance(node, cst.Call) or \
            (get_full_name_for_node(node.func) or "").rpartition(".")[2] \
            not in GENERATION_CONFIG_CALLS:
        return None
    values = {}
    for arg in node.args:
        name = arg.keyword.value if arg.keyword is not None else None
        if name in GenerationConfig.model_fields:
            try:
                values[name] = ast.literal_eval(cst.Module(body=[]).code_for_node(arg.value))
            except (SyntaxError, ValueError):
                return None
    try:
        return GenerationConfig(**values)
    except ValueError:
        return None


def _seed_value(component: str, seed: str) -> Any:
    if component == "output_schema":
        return json.loads(seed) if seed.strip() else None
    return config_from_yaml(seed)


def _shown(component: str, value: Any) -> str:
    if component == "output_schema":
        return json.dumps(value)
    return json.dumps(value.model_dump(exclude_none=True))


def _changed(found: Found, component: str, seed: str, now: str | None) -> str:
    return (f"{found.where} no longer holds the {component} run started from: expected "
            f"{_first_line(seed)!r}, found {_first_line(now or '')!r}. The file changed since "
            "the run started; apply by hand, or run again from the folder as it is now")


def _first_line(text: str, limit: int = 80) -> str:
    line = next((line for line in text.splitlines() if line.strip()), "")
    return line if len(line) <= limit else line[:limit - 1] + "…"
