"""Tool-call comparison and maximum bipartite matching for the trajectory evaluators.

Greedy matching (take the first compatible call) can miss a valid assignment when argument
matching is loose: with ``subset`` args, agent call A may fit reference calls 1 and 2 while agent
call B fits only 1; greedy gives 1 to A and fails. Maximum matching by augmenting paths always
finds an assignment when one exists.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from studio.evaluators.base import EvaluatorResult
from studio.evaluators.errors import TrajectoryShapeError
from studio.evaluators.trajectory import ToolCall, extract_tool_calls

ARG_MODES = ("exact", "ignore", "subset", "superset")
_EQUIVALENCES = ("exact", "ignore")


def check_arg_mode(mode: object, *, field: str) -> str:
    """Validate an argument-matching mode.

    Raises:
        ValueError: naming the value and the allowed modes.
    """
    if mode not in ARG_MODES:
        raise ValueError(f"{field} must be one of {', '.join(ARG_MODES)}; got {mode!r}")
    return mode


def check_overrides(overrides: Mapping[str, str] | None) -> dict[str, str]:
    """Validate per-tool argument-mode overrides (``{"search": "ignore"}``)."""
    checked = dict(overrides or {})
    for tool, mode in checked.items():
        check_arg_mode(mode, field=f"tool_args_match_overrides[{tool!r}]")
    return checked


def args_match(agent_args: Mapping[str, object], ref_args: Mapping[str, object], mode: str) -> bool:
    """Compare an agent call's arguments with a reference call's under ``mode``."""
    if mode == "exact":
        return agent_args == ref_args
    if mode == "ignore":
        return True
    # Item views compare key by key and value by ==, so unhashable values are fine.
    if mode == "subset":  # every argument the agent passed appears in the reference
        return agent_args.items() <= ref_args.items()
    return ref_args.items() <= agent_args.items()


def match_calls(agent: Sequence[ToolCall], reference: Sequence[ToolCall], mode: str,
                overrides: Mapping[str, str]) -> list[int | None]:
    """For each agent call, the reference call it is matched with, in a maximum matching."""
    if mode in _EQUIVALENCES and all(m in _EQUIVALENCES for m in overrides.values()):
        return _partners_by_equivalence(agent, reference, mode, overrides)
    return maximum_matching(compatibility(agent, reference, mode, overrides), len(reference))


def _partners_by_equivalence(agent: Sequence[ToolCall], reference: Sequence[ToolCall],
                             mode: str, overrides: Mapping[str, str]) -> list[int | None]:
    """When "matches" is an equivalence (same name, and equal or ignored args), any compatible
    pair may be taken first without losing a larger matching, so one greedy pass is maximum."""
    free: dict[str, list[int]] = {}
    for j, ref in enumerate(reference):
        free.setdefault(ref.name, []).append(j)
    partners: list[int | None] = []
    for call in agent:
        candidates = free.get(call.name)
        found = None
        if candidates:
            if overrides.get(call.name, mode) == "ignore":
                found = candidates.pop(0)
            else:
                for position, j in enumerate(candidates):
                    if reference[j].args == call.args:
                        found = candidates.pop(position)
                        break
        partners.append(found)
    return partners


def compatibility(
    agent: Sequence[ToolCall],
    reference: Sequence[ToolCall],
    mode: str,
    overrides: Mapping[str, str],
) -> list[list[int]]:
    """For each agent call, the indices of the reference calls it may be matched with.

    Same semantics as :func:`args_match`, inlined per mode: this is the inner loop of
    unordered, subset and superset matching.
    """
    by_name: dict[str, list[int]] = {}
    for j, ref in enumerate(reference):
        by_name.setdefault(ref.name, []).append(j)
    ref_items = [ref.args.items() for ref in reference]
    adjacency = []
    for call in agent:
        call_mode = overrides.get(call.name, mode) if overrides else mode
        candidates = by_name.get(call.name, [])
        items = call.args.items()
        if call_mode == "exact":
            adjacency.append([j for j in candidates if reference[j].args == call.args])
        elif call_mode == "subset":
            adjacency.append([j for j in candidates if items <= ref_items[j]])
        elif call_mode == "superset":
            adjacency.append([j for j in candidates if ref_items[j] <= items])
        else:
            adjacency.append(list(candidates))
    return adjacency


def maximum_matching(adjacency: list[list[int]], n_right: int) -> list[int | None]:
    """Maximum bipartite matching (augmenting paths, O(V·E)); returns each left vertex's partner.

    A greedy pass seeds the matching (it is usually already perfect), then every left vertex
    left free gets one breadth-first search for an augmenting path.
    """
    match_left: list[int | None] = [None] * len(adjacency)
    match_right: list[int | None] = [None] * n_right
    for left, options in enumerate(adjacency):
        for right in options:
            if match_right[right] is None:
                match_left[left], match_right[right] = right, left
                break
    for left, partner in enumerate(match_left):
        if partner is None and adjacency[left]:
            _augment(left, adjacency, match_left, match_right)
    return match_left


def _augment(
    start: int,
    adjacency: list[list[int]],
    match_left: list[int | None],
    match_right: list[int | None],
) -> bool:
    """Search an alternating path from free ``start`` to a free right vertex and flip it."""
    reached_from: dict[int, int] = {}
    queue = [start]
    while queue:
        left = queue.pop()
        for right in adjacency[left]:
            if right in reached_from:
                continue
            reached_from[right] = left
            owner = match_right[right]
            if owner is None:
                _flip(right, start, reached_from, match_left, match_right)
                return True
            queue.append(owner)
    return False


def _flip(right: int, start: int, reached_from: dict[int, int],
          match_left: list[int | None], match_right: list[int | None]) -> None:
    while True:
        left = reached_from[right]
        previous = match_left[left]
        match_left[left], match_right[right] = right, left
        if left == start or previous is None:
            return
        right = previous


def tool_calls_or_error(key: str, value: object, what: str) -> list[ToolCall] | EvaluatorResult:
    """The tool calls of ``value``, or the "could not evaluate" result explaining why not."""
    if value is None:
        return EvaluatorResult.not_evaluated(key, f"no {what} trajectory (it is None)")
    try:
        return extract_tool_calls(value)
    except TrajectoryShapeError as exc:
        return EvaluatorResult.not_evaluated(
            key, f"{what} trajectory: {exc}", error_kind="trajectory_shape", shape=exc.shape
        )


def describe_call(call: ToolCall) -> str:
    """``name(k=v, ...)`` for comments."""
    args = ", ".join(f"{k}={v!r}" for k, v in call.args.items())
    return f"{call.name}({args})"
