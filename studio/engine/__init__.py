"""The evolution engine: the GEPA loop with human gates, driven through the store."""

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

__all__ = [
    "EvolutionConfig",
    "EvolutionResult",
    "ReviewMode",
    "Selection",
    "StopReason",
    "build_engine",
    "create_run",
    "decide",
    "enqueue",
    "evolve",
    "evolve_group",
    "evolve_sync",
    "evolve_workflow",
    "fork",
    "load_result",
    "override",
    "queue_run",
    "score_test_set",
    "start_test_scoring",
    "undo_override",
]
