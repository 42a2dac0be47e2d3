"""Graph trajectories: the nodes an agent graph visited, turn by turn, against a reference.

The shape is ``agentevals``' ``GraphTrajectory``: ``{"steps": [[node, ...], ...], "results":
[...], "inputs": [...]}``, one list of visited nodes per turn (what LangGraph users extract from
a thread). :class:`GraphTrajectoryStrictMatch` passes when every turn visited the same nodes in
the same order; :class:`GraphTrajectoryLLMJudge` asks a judge whether the path was sensible.
Potato reaches both through ``agentevals``; here they are the studio's own
(:mod:`studio.evaluators.agentevals_adapter` keeps Potato's names).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from studio.evaluators._judge import Fence, task_text
from studio.evaluators.base import Evaluator, EvaluatorResult
from studio.evaluators.errors import TrajectoryShapeError
from studio.evaluators.llm_judge import LLMTrajectoryJudge
from studio.model.jsontools import JsonValue
from studio.model.limits import clip

if TYPE_CHECKING:
    from studio.runtime.execution import AgentExecutor

GRAPH_TRAJECTORY_PROMPT = (
    "You are an expert evaluator judging the path an AI agent took through its graph of nodes. "
    "Consider whether each turn visited sensible nodes in a sensible order, without "
    "unnecessary detours or loops, and whether the turns' results answer the task."
)
RESULTS_SHOWN_CHARS = 4_000
"""Characters of the turns' results shown to the judge (the path is always shown whole)."""


def graph_steps(trajectory: object) -> list[list[str]]:
    """The nodes visited per turn of a ``GraphTrajectory`` (or of the ``{"outputs": ...}``
    that agentevals' thread extraction returns).

    Raises:
        TrajectoryShapeError: it holds no ``steps`` that are lists of node names.
    """
    trajectory = _unwrapped(trajectory)
    steps = trajectory.get("steps") if isinstance(trajectory, Mapping) else None
    if isinstance(steps, list) and all(
            isinstance(turn, list) and all(isinstance(node, str) for node in turn)
            for turn in steps):
        return steps
    shape = (f"a mapping with keys {sorted(map(str, trajectory))[:8]}"
             if isinstance(trajectory, Mapping) else type(trajectory).__name__)
    raise TrajectoryShapeError(
        f"a graph trajectory is {{'steps': [[node, ...], ...]}}, the nodes visited per turn "
        f"(agentevals' GraphTrajectory); got {shape}", shape=shape)


def _unwrapped(trajectory: object) -> Any:
    """The GraphTrajectory itself, out of the ``{"inputs", "outputs"}`` of a thread extract."""
    if isinstance(trajectory, Mapping) and "steps" not in trajectory \
            and isinstance(trajectory.get("outputs"), Mapping):
        return trajectory["outputs"]
    return trajectory


def first_difference(agent: list[list[str]], reference: list[list[str]]) -> str | None:
    """Where two graph paths part, in words, or None when they are the same."""
    if len(agent) != len(reference):
        return f"the agent took {len(agent)} turn(s), the reference {len(reference)}"
    for number, (ours, theirs) in enumerate(zip(agent, reference, strict=True), start=1):
        if ours != theirs:
            return (f"turn {number}: the agent visited {' → '.join(ours) or 'no node'}, the "
                    f"reference {' → '.join(theirs) or 'no node'}")
    return None


class GraphTrajectoryStrictMatch(Evaluator):
    """Pass when the agent's graph path is the reference's, turn for turn and node for node
    (agentevals' ``graph_trajectory_strict_match``). A missing side or a trajectory of
    another shape is not evaluated (``score=None``), never a fail."""

    key = "graph_trajectory_strict_match"

    def evaluate(self, *, outputs: object = None, reference_outputs: object = None,
                 inputs: object = None, **kwargs: object) -> EvaluatorResult:
        if outputs is None or reference_outputs is None:
            return EvaluatorResult.not_evaluated(
                self.key, "a strict graph-trajectory match needs both outputs and "
                          "reference_outputs")
        try:
            agent, reference = graph_steps(outputs), graph_steps(reference_outputs)
        except TrajectoryShapeError as exc:
            return EvaluatorResult.not_evaluated(self.key, str(exc),
                                                 error_kind="trajectory_shape")
        differs = first_difference(agent, reference)
        if differs is None:
            return EvaluatorResult.passed(self.key, True,
                                          f"the same {len(agent)} turn(s), node for node")
        return EvaluatorResult.passed(self.key, False, differs)


class GraphTrajectoryLLMJudge(LLMTrajectoryJudge):
    """A judge of a graph path (agentevals' ``create_graph_trajectory_llm_as_judge``): the
    task (``inputs``), the nodes visited per turn and the turns' results go to the judge, the
    path fenced as data; pass/fail, or a 0.0-1.0 score with ``continuous=True``. Arguments as
    :class:`LLMTrajectoryJudge`'s; the default key is ``graph_trajectory_accuracy``."""

    def __init__(self, config: Mapping[str, JsonValue] | None = None,
                 prompt: str = GRAPH_TRAJECTORY_PROMPT, continuous: bool = False,
                 endpoint: object = None, key: str = "graph_trajectory_accuracy", *,
                 model: object = None, executor: AgentExecutor | None = None) -> None:
        super().__init__(config, prompt, continuous, endpoint, key, model=model,
                         executor=executor)

    def _user_text(self, outputs: object, reference: object, inputs: object) -> str:
        fence = Fence()
        task = task_text(inputs)
        parts = [f"Task:\n{task}"] if task else []
        parts.append("The agent's path, turn by turn:\n" + fence.wrap(
            _path_text(outputs), "output"))
        if reference is not None:
            parts.append("Reference path (for comparison):\n" + fence.wrap(
                _path_text(reference), "reference"))
        return "\n\n".join(parts)


def _path_text(trajectory: object) -> str:
    lines = [f"turn {number}: {' → '.join(turn) or '(no node)'}"
             for number, turn in enumerate(graph_steps(trajectory), start=1)]
    results = _unwrapped(trajectory).get("results")
    if results:
        lines.append("results: " + clip(json.dumps(results, default=str, ensure_ascii=False),
                                        RESULTS_SHOWN_CHARS))
    return "\n".join(lines)
