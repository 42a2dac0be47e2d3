"""Evaluator registry: names to factories, so evaluators can be configured in YAML.

A project file lists evaluators as ``{name, params}`` entries::

    evaluators:
      - name: trajectory_match
        params: {mode: unordered, tool_args_match_mode: subset}
      - name: rubric_dag
        params: {preset: answer_quality, model: "local/smollm2"}

and :func:`build_evaluators` (or :func:`build_evaluator` for one) turns them into objects.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Mapping, Sequence
from typing import Any

from studio.evaluators.base import REGISTERED, CheckKind, Evaluator, Factory, check_kind
from studio.evaluators.errors import UnknownEvaluatorError
from studio.model.errors import ConfigError


def _import_evaluators() -> None:
    """Load every module of the package, so each evaluator's ``@registered`` has run."""
    package = importlib.import_module("studio.evaluators")
    for module in pkgutil.iter_modules(package.__path__):
        importlib.import_module(f"studio.evaluators.{module.name}")


_import_evaluators()
_REGISTRY: dict[str, tuple[Factory, str]] = REGISTERED
"""``name -> (factory, description)``: what each evaluator module registered (``@registered``),
plus :func:`register_evaluator`'s."""
_ALIASES = {"embedding_similarity": "embedding_distance"}


def register_evaluator(name: str, factory: Factory, description: str = "", *,
                       replace: bool = False, kind: CheckKind | None = None) -> None:
    """Make ``factory(**params)`` buildable as ``name``.

    Raises:
        ValueError: ``name`` is empty, or already registered and ``replace`` is False (so a
            typo cannot silently shadow a built-in).
    """
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"evaluator name must be non-empty text; got {name!r}")
    if not callable(factory):
        raise ValueError(f"factory for {name!r} must be callable; got {type(factory).__name__}")
    if (name in _REGISTRY or name in _ALIASES) and not replace:
        raise ValueError(f"evaluator {name!r} is already registered; pass replace=True to "
                         f"replace it")
    if kind is not None:
        factory.check_kind = kind  # type: ignore[attr-defined]
    _REGISTRY[name] = (factory, description)


def unregister_evaluator(name: str) -> None:
    """Remove ``name`` from the registry (no error when it is absent)."""
    _REGISTRY.pop(name, None)


def list_evaluators() -> list[dict[str, str]]:
    """``[{"name": ..., "description": ...}]`` sorted by name."""
    return [{"name": n, "description": d} for n, (_, d) in sorted(_REGISTRY.items())]


def evaluator_kind(name: str) -> CheckKind:
    """What the evaluator registered as ``name`` checks (:attr:`CheckKind.OTHER` when the name
    is unknown): its own fact, read by the rules reflection."""
    entry = _REGISTRY.get(_ALIASES.get(name, name))
    return CheckKind.OTHER if entry is None else check_kind(entry[0])


def evaluator_names() -> list[str]:
    return sorted(_REGISTRY)


def get_supported_evaluators() -> list[str]:
    """The registered evaluator names, sorted (Potato's name for :func:`evaluator_names`)."""
    return sorted(evaluator_names())


def build_evaluator(name: object, params: Mapping[str, object] | None = None) -> Evaluator:
    """Build the evaluator registered as ``name`` with keyword ``params`` (``name`` is read
    from a project file, so anything: it is checked here).

    Raises:
        UnknownEvaluatorError: no such name (the message lists the known ones).
        ConfigError: ``params`` is not a mapping or does not fit the evaluator (the message
            lists the accepted parameters), or the evaluator rejected a value.
    """
    if not isinstance(name, str):
        raise ConfigError(f"evaluator name must be text such as 'exact_match'; got {name!r}",
                          where="evaluator", value=name)
    resolved = _ALIASES.get(name, name)
    if resolved not in _REGISTRY:
        raise UnknownEvaluatorError(str(name), evaluator_names())
    if params is not None and not isinstance(params, Mapping):
        raise ConfigError(f"params of evaluator {name!r} must be a mapping", where=name,
                          value=params)
    factory, _ = _REGISTRY[resolved]
    _check_params(name, factory, dict(params or {}))
    try:
        return factory(**dict(params or {}))
    except ConfigError:
        raise
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"evaluator {name!r}: {exc}", where=name, value=params) from exc


def build_evaluators(specs: Sequence[Mapping[str, Any]]) -> list[Evaluator]:
    """Build a list of ``{name, params}`` entries (a project file's ``evaluators:``).

    Raises:
        ConfigError: an entry is not a mapping with a ``name`` (naming the entry's position).
    """
    built = []
    for index, spec in enumerate(specs):
        if not isinstance(spec, Mapping) or not isinstance(spec.get("name"), str):
            raise ConfigError("each entry needs a 'name' (and optional 'params')",
                              where=f"evaluators[{index}]", value=spec)
        built.append(build_evaluator(spec["name"], spec.get("params")))
    return built


def _check_params(name: str, factory: Factory, params: Mapping[str, object]) -> None:
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):  # builtins without a signature: let the call decide
        return
    accepted = [p.name for p in signature.parameters.values()
                if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    if any(p.kind is p.VAR_KEYWORD for p in signature.parameters.values()):
        return
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        raise ConfigError(f"evaluator {name!r} has no parameter {', '.join(map(repr, unknown))}; "
                          f"accepted: {', '.join(accepted)}", where=name, value=params)
