"""Each part of the engine, and each service, asks for its own narrow store
(studio/store/seams.py), and the protocol says what it really uses: a store method a part starts
calling, or stops calling, changes its protocol in the same commit. mypy proves the facade
satisfies each one (tests/test_types.py); what wires the parts together, opens stores or starts
a run keeps the whole Store (listed below, with the reason in each module's docstring)."""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from studio.store import Store, seams

STUDIO = Path(__file__).resolve().parents[2] / "studio"
ENGINE = STUDIO / "engine"
PARTS = {
    "loop": seams.LoopStore,
    "people": seams.PeopleStore,
    "propose": seams.ProposeStore,
    "scoring": seams.ScoringStore,
    "policies": seams.PolicyStore,
    "run": seams.RunPartsStore,
}
FACADE = {name for name in dir(Store) if not name.startswith("_")}
SERVICES = sorted([*(STUDIO / "projects").rglob("*.py"), *(ENGINE / "hosting").glob("*.py")])
WHOLE_STORE = {  # module -> its functions that take the whole Store, and why
    "studio.engine.hosting.api": {  # build and run an engine
        "start_test_scoring", "score_test_set", "_run_objects", "_new_run"},
    "studio.engine.hosting.build": {"build_engine"},  # hands it to the run's context
    "studio.engine.hosting.dispatch": {"dispatch", "launch"},  # builds and starts an engine
    "studio.engine.hosting.queue": {"__init__"},  # a worker: opens stores, runs engines
    "studio.engine.hosting.worker": {"get_manager", "__init__"},  # the run manager
    "studio.projects.aligning": {"start_align", "align_critic"},  # start a run
    "studio.projects.forking": {"start_fork"},
    "studio.projects.served_agents": {"start_served_agent_run"},
    "studio.projects.testsets": {"score_test_from_browser"},
    "studio.projects.workspace": {"start_project_run", "resume_run", "recover_orphans"},
}


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


def all_methods(protocol: type) -> set[str]:
    """Every store method a protocol asks for, its parts' included."""
    return {name for base in protocol.__mro__ if base.__name__.startswith("Has")
            for name in vars(base) if not name.startswith("_")}


def has(method: str) -> str:
    """The one-method protocol of ``method`` (``get_run`` → ``HasGetRun``)."""
    return "Has" + method.title().replace("_", "")


def _extend(protocol: type, method: str) -> str:
    if protocol.__name__.startswith("Has"):  # a helper that asked for one method only
        return (f"ask for the module's protocol instead of {protocol.__name__} (and add "
                f"{has(method)} to it in studio/store/seams.py if it lacks it)")
    return (f"add {has(method)} to {protocol.__name__}'s bases in studio/store/seams.py "
            "(written there once if it is not yet)")


@pytest.mark.parametrize("folder", sorted(PARTS))
def test_a_part_s_protocol_lists_the_store_methods_it_calls(folder):
    protocol, called = PARTS[folder], called_on_a_store(folder)
    problems = [f"engine/{folder} calls store.{method}(): {_extend(protocol, method)}"
                for method in sorted(called - own_methods(protocol))]
    problems += [f"{protocol.__name__} lists {has(method)}, which engine/{folder} no longer "
                 "calls: drop it" for method in sorted(own_methods(protocol) - called)]
    assert not problems, "\n".join(problems)


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


def test_the_proposers_call_the_store_they_got_from_propose_store():
    """The run's context carries every part's store (an EngineStore): a proposer that called
    ``ctx.store.<method>()`` would be held to that, not to ProposeStore. Through
    :func:`~studio.engine.propose.proposer.propose_store`, mypy holds each call."""
    direct = []
    for path in sorted((ENGINE / "propose").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and isinstance(node.func.value, ast.Attribute) \
                    and node.func.value.attr == "store" \
                    and isinstance(node.func.value.value, ast.Name) \
                    and node.func.value.value.id == "ctx":
                direct.append(f"{path.name}:{node.lineno}: ctx.store.{node.func.attr}()")
    assert not direct, "call store = propose_store(ctx) and then store.<method>(): " + \
        ", ".join(direct)


# The services: studio/projects and the hosting folder's parts that only read and write.


def _module_name(path: Path) -> str:
    return ".".join(path.relative_to(STUDIO.parent).with_suffix("").parts)


def _protocol_named(annotation: str) -> type | None:
    """The seams protocol an annotation names (``PolicyStore | None`` → PolicyStore)."""
    for name in re.findall(r"\w+", annotation):
        found = getattr(seams, name, None)
        if isinstance(found, type) and found.__module__ == seams.__name__:
            return found
    return None


@dataclass
class Use:
    """What one service function does with its narrow store."""

    where: str
    protocol: type
    called: set[str]  # the facade's methods it calls on the store itself
    handed: set[str]  # the methods of the stores it hands the store to
    unresolved: list[str]  # calls it hands the store to that this test cannot follow


def _namespace(module: object, function: ast.AST) -> dict[str, object]:
    """The names a function sees: its module's, and those it imports itself."""
    names = dict(vars(module))
    for node in ast.walk(function):
        if isinstance(node, ast.ImportFrom) and node.module:
            imported = importlib.import_module(node.module)
            names |= {a.asname or a.name: getattr(imported, a.name) for a in node.names}
    return names


def _handed_methods(namespace: dict[str, object], call: ast.Call, names: set[str], own: type
                    ) -> tuple[set[str], str | None]:
    """The methods asked for by the callee's parameter that receives the store, or the
    call's text when the callee or its parameter's protocol cannot be found. A callee that
    takes the caller's own protocol adds nothing here (its own calls are counted as its own)."""
    text = ast.unparse(call.func)
    first, *rest = text.split(".")  # a name or dotted attribute the function sees
    try:
        callee = functools.reduce(getattr, rest, namespace[first])
        parameters = list(inspect.signature(callee).parameters.values())
    except (KeyError, AttributeError, TypeError, ValueError):
        return set(), text
    methods: set[str] = set()
    for i, arg in enumerate(call.args):
        if isinstance(arg, ast.Name) and arg.id in names:
            protocol = _protocol_named(str(parameters[i].annotation))
            if protocol is None:
                return set(), text
            methods |= all_methods(protocol) if protocol is not own else set()
    by_name = {p.name: p for p in parameters}
    for keyword in call.keywords:
        if isinstance(keyword.value, ast.Name) and keyword.value.id in names:
            protocol = _protocol_named(str(by_name[keyword.arg].annotation)) \
                if keyword.arg in by_name else None
            if protocol is None:
                return set(), text
            methods |= all_methods(protocol) if protocol is not own else set()
    return methods, None


def service_uses() -> Iterator[Use]:
    """Every service function that takes a service's protocol (not an engine part's: those
    are the engine's and checked above)."""
    parts = set(PARTS.values()) | {seams.EngineStore}
    for path in SERVICES:
        module = importlib.import_module(_module_name(path))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            arguments = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
            typed = {a.arg: _protocol_named(ast.unparse(a.annotation))
                     for a in arguments if a.annotation is not None}
            names = {name for name, protocol in typed.items()
                     if protocol is not None and protocol not in parts}
            if not names:
                continue
            protocol = typed[min(names)]
            assert protocol is not None
            use = Use(f"{path.name}: {node.name}", protocol, set(), set(), [])
            for sub in ast.walk(node):
                if not isinstance(sub, ast.Call):
                    continue
                if isinstance(sub.func, ast.Attribute) and isinstance(sub.func.value, ast.Name) \
                        and sub.func.value.id in names and sub.func.attr in FACADE:
                    use.called.add(sub.func.attr)
                if any(isinstance(a, ast.Name) and a.id in names
                       for a in [*sub.args, *(k.value for k in sub.keywords)]):
                    methods, unresolved = _handed_methods(_namespace(module, node), sub, names,
                                                           use.protocol)
                    use.handed |= methods
                    use.unresolved += [unresolved] if unresolved else []
            yield use


USES = list(service_uses())
SERVICE_PROTOCOLS = sorted({use.protocol for use in USES}, key=lambda p: p.__name__)


def missing_from_protocols(uses: list[Use]) -> list[str]:
    """One line per store method a service uses that its protocol does not ask for, naming
    the protocol to extend."""
    return [f"{use.where} calls store.{method}(), which {use.protocol.__name__} does not ask "
            f"for: {_extend(use.protocol, method)}"
            for use in uses for method in sorted(use.called - all_methods(use.protocol))]


def test_every_service_store_asks_for_what_its_functions_use():
    missing = missing_from_protocols(USES)
    assert not missing, "\n".join(missing)


def test_a_new_store_call_in_a_service_names_the_protocol_to_extend():
    """A service that starts calling a method its protocol lacks fails the test above with
    this message (mypy fails too: the protocol has no such attribute)."""
    workspace = next(use for use in USES if use.protocol is seams.WorkspaceStore)
    grown = Use(workspace.where, workspace.protocol, workspace.called | {"list_users"}, set(), [])
    assert missing_from_protocols([grown]) == [
        f"{workspace.where} calls store.list_users(), which WorkspaceStore does not ask for: add "
        "HasListUsers to WorkspaceStore's bases in studio/store/seams.py (written there once if "
        "it is not yet)"]


@pytest.mark.parametrize("protocol", SERVICE_PROTOCOLS, ids=lambda p: p.__name__)
def test_a_service_s_protocol_asks_for_nothing_its_functions_do_not_use(protocol):
    uses = [use for use in USES if use.protocol is protocol]
    used = set().union(*(use.called | use.handed for use in uses))
    unused = sorted(all_methods(protocol) - used)
    assert not unused, f"{protocol.__name__} asks for {unused}, which none of its functions " \
        "use (nor hand on): drop them from its bases in studio/store/seams.py"


@pytest.mark.parametrize("protocol", SERVICE_PROTOCOLS, ids=lambda p: p.__name__)
def test_a_service_s_protocol_names_each_method_once(protocol):
    """A method its parts already ask for is not listed again (and the order of the bases
    stays one Python can linearize)."""
    inherited = {name for base in protocol.__bases__ if not base.__name__.startswith("Has")
                 for name in all_methods(base)}
    assert own_methods(protocol) & inherited == set()


def test_every_store_a_service_hands_on_is_followed():
    assert [f"{use.where}: {call}" for use in USES for call in use.unresolved] == []


def test_only_what_opens_stores_or_starts_runs_takes_the_whole_store():
    whole = {}
    for path in SERVICES:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and any(
                    a.annotation is not None and re.search(r"\bStore\b", ast.unparse(a.annotation))
                    for a in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]):
                whole.setdefault(_module_name(path), set()).add(node.name)
    assert whole == WHOLE_STORE
