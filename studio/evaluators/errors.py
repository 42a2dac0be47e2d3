"""Typed errors of the evaluators package; each carries the value that is wrong."""

from __future__ import annotations

from studio.model.errors import ConfigError, StudioError


class TrajectoryShapeError(StudioError, ValueError):
    """A trajectory is in a shape :func:`normalize_trajectory` does not know.

    Evaluators never let it escape: they return a result with ``score=None`` and this message as
    the comment, so one odd trace cannot end an evolution run. Call :func:`normalize_trajectory`
    directly to get the exception.
    """

    def __init__(self, message: str, *, shape: str, value: object = None) -> None:
        self.shape = shape
        """A short description of what was received (type name and keys)."""
        self.value = value
        super().__init__(message)


class RubricDagError(ConfigError):
    """A rubric DAG is malformed; ``node`` names the node at fault (None for the whole DAG)."""

    def __init__(self, message: str, *, node: str | None = None, value: object = None) -> None:
        self.node = node
        super().__init__(message, where="rubric_dag", value=value)


class UnknownEvaluatorError(ConfigError, KeyError):
    """No evaluator is registered under ``name``; ``known`` lists the registered names."""

    def __init__(self, name: str, known: list[str]) -> None:
        self.name = name
        self.known = known
        super().__init__(
            f"unknown evaluator {name!r}; known evaluators: {', '.join(known)}",
            where="evaluator",
            value=name,
        )

    def __str__(self) -> str:  # KeyError would quote the whole message
        return str(self.args[0]) if self.args else "unknown evaluator"
