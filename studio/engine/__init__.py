"""The evolution engine: the GEPA loop with human gates, driven through the store."""

from studio.engine.api import EvolutionResult, evolve, evolve_sync, load_result
from studio.engine.build import build_engine, create_run
from studio.engine.gates import decide, override, undo_override
from studio.model.config import EvolutionConfig, ReviewMode, Selection

__all__ = [
    "EvolutionConfig",
    "EvolutionResult",
    "ReviewMode",
    "Selection",
    "build_engine",
    "create_run",
    "decide",
    "evolve",
    "evolve_sync",
    "load_result",
    "override",
    "undo_override",
]
