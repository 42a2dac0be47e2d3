"""The evolution engine: the GEPA loop with human gates, driven through the store."""

from studio.engine.api import (
    EvolutionResult,
    evolve,
    evolve_group,
    evolve_sync,
    evolve_workflow,
    load_result,
)
from studio.engine.build import build_engine, create_run
from studio.engine.gates import decide, override, undo_override
from studio.engine.queue import enqueue, queue_run
from studio.model.config import EvolutionConfig, ReviewMode, Selection

__all__ = [
    "EvolutionConfig",
    "EvolutionResult",
    "ReviewMode",
    "Selection",
    "build_engine",
    "create_run",
    "decide",
    "enqueue",
    "evolve",
    "evolve_group",
    "evolve_sync",
    "evolve_workflow",
    "load_result",
    "override",
    "queue_run",
    "undo_override",
]
