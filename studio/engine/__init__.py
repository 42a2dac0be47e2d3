"""The evolution engine: the GEPA loop with human gates, driven through the store.

The names below load on first use (PEP 562): a person's decision or a Stop from the shell
(``studio decide``, ``studio stop``) needs the gates and the store, not ADK and google-genai,
which :mod:`studio.engine.hosting.api` brings in (about 2.5 s of a process start).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from studio.engine.hosting.api import (
        EvolutionResult,
        evolve,
        evolve_group,
        evolve_sync,
        evolve_workflow,
        load_result,
        score_test_set,
        start_test_scoring,
    )
    from studio.engine.hosting.build import build_engine, create_run
    from studio.engine.hosting.forks import fork
    from studio.engine.hosting.queue import enqueue, queue_run
    from studio.engine.people.gates import decide, override, undo_override
    from studio.model.config import EvolutionConfig, ReviewMode, Selection
    from studio.model.records import StopReason

_HOMES = {
    "studio.engine.hosting.api": ("EvolutionResult", "evolve", "evolve_group", "evolve_sync",
                                  "evolve_workflow", "load_result", "score_test_set",
                                  "start_test_scoring"),
    "studio.engine.hosting.build": ("build_engine", "create_run"),
    "studio.engine.hosting.forks": ("fork",),
    "studio.engine.hosting.queue": ("enqueue", "queue_run"),
    "studio.engine.people.gates": ("decide", "override", "undo_override"),
    "studio.model.config": ("EvolutionConfig", "ReviewMode", "Selection"),
    "studio.model.records": ("StopReason",),
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}

__all__ = ["EvolutionConfig", "EvolutionResult", "ReviewMode", "Selection", "StopReason",
           "build_engine", "create_run", "decide", "enqueue", "evolve", "evolve_group",
           "evolve_sync", "evolve_workflow", "fork", "load_result", "override", "queue_run",
           "score_test_set", "start_test_scoring", "undo_override"]
assert sorted(__all__) == sorted(_HOME_OF), "every exported name has one home"


def __getattr__(name: str) -> Any:
    """Load an exported name from its home module the first time it is asked for."""
    module = _HOME_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
