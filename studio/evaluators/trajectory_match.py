"""Deterministic trajectory match: the agent's tool calls against a reference.

=========  ==============================================================
mode       passes when
=========  ==============================================================
strict     identical tool calls, same order
unordered  same multiset of tool calls, any order
subset     every agent call matches its own reference call (no extra tools)
superset   every reference call matches its own agent call (extras allowed)
=========  ==============================================================

``tool_args_match_mode`` (``exact`` | ``ignore`` | ``subset`` | ``superset``) says how arguments
compare (``subset``: agent args ⊆ reference args; ``superset``: reference args ⊆ agent args);
``tool_args_match_overrides`` sets it per tool. Unordered, subset and superset use maximum
bipartite matching, so a valid assignment is found whenever one exists.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from studio.evaluators._matching import (
    args_match,
    check_arg_mode,
    check_overrides,
    describe_call,
    match_calls,
    tool_calls_or_error,
)
from studio.evaluators.base import CheckKind, Evaluator, EvaluatorResult, registered
from studio.evaluators.trajectory import ToolCall

MODES = ("strict", "unordered", "subset", "superset")


@registered('trajectory_match', 'Deterministic tool-call sequence match', CheckKind.TOOL)
class TrajectoryMatchEvaluator(Evaluator):
    """Pass/fail comparison of the agent's tool calls with a reference trajectory.

    Args:
        mode: ``strict`` | ``unordered`` | ``subset`` | ``superset`` (see the module docstring).
        tool_args_match_mode: ``exact`` | ``ignore`` | ``subset`` | ``superset``.
        tool_args_match_overrides: per-tool argument mode, e.g. ``{"search": "ignore"}``.
        key: metric name in results.

    Raises:
        ValueError: a mode outside the allowed set (the message lists it).
    """

    uses_trace: ClassVar[bool] = True

    def __init__(
        self,
        mode: str = "strict",
        tool_args_match_mode: str = "exact",
        tool_args_match_overrides: Mapping[str, str] | None = None,
        key: str = "trajectory_match",
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}; got {mode!r}")
        self.mode = mode
        self.tool_args_match_mode = check_arg_mode(
            tool_args_match_mode, field="tool_args_match_mode"
        )
        self.tool_args_match_overrides = check_overrides(tool_args_match_overrides)
        self.key = key

    def evaluate(
        self, *, outputs: object = None, reference_outputs: object = None, inputs: object = None,
        **kwargs: object,
    ) -> EvaluatorResult:
        agent = tool_calls_or_error(self.key, outputs, "agent")
        if isinstance(agent, EvaluatorResult):
            return agent
        reference = tool_calls_or_error(self.key, reference_outputs, "reference")
        if isinstance(reference, EvaluatorResult):
            return reference
        if self.mode == "strict":
            return self._strict(agent, reference)
        return self._matched(agent, reference)

    def _strict(self, agent: list[ToolCall], reference: list[ToolCall]) -> EvaluatorResult:
        index = _first_mismatch(agent, reference, self.tool_args_match_mode,
                                self.tool_args_match_overrides)
        if index is None:
            return self._result(True, agent, reference, "")
        if index < min(len(agent), len(reference)):
            got, want = agent[index], reference[index]
            why = f"call {index + 1} is {describe_call(got)}, expected {describe_call(want)}"
        else:
            why = f"{len(agent)} agent tool calls vs {len(reference)} in the reference"
        return self._result(False, agent, reference, why, first_mismatch=index)

    def _matched(self, agent: list[ToolCall], reference: list[ToolCall]) -> EvaluatorResult:
        if self.mode == "unordered" and len(agent) != len(reference):
            why = f"{len(agent)} agent tool calls vs {len(reference)} in the reference"
            return self._result(False, agent, reference, why)
        partners = match_calls(agent, reference, self.tool_args_match_mode,
                               self.tool_args_match_overrides)
        matched = {j for j in partners if j is not None}
        extra = [agent[i] for i, j in enumerate(partners) if j is None]
        missing = [ref for j, ref in enumerate(reference) if j not in matched]
        ok = {"unordered": not extra and not missing, "subset": not extra,
              "superset": not missing}[self.mode]
        return self._result(ok, agent, reference, _unmatched_text(extra, missing),
                            matched=len(matched),
                            unmatched_agent_calls=[describe_call(c) for c in extra],
                            unmatched_reference_calls=[describe_call(c) for c in missing])

    def _result(self, ok: bool, agent: list[ToolCall], reference: list[ToolCall], why: str,
                **details: object) -> EvaluatorResult:
        verdict = "pass" if ok else "fail"
        comment = f"{self.mode} trajectory match: {verdict}"
        if not agent and not reference:
            comment += " (neither trajectory has tool calls)"
        elif not ok and why:
            comment += f"; {why}"
        return EvaluatorResult.passed(
            self.key, ok, comment,
            mode=self.mode, tool_args_match_mode=self.tool_args_match_mode,
            agent_tools=[c.name for c in agent], reference_tools=[c.name for c in reference],
            **details,
        )


def _first_mismatch(agent: list[ToolCall], reference: list[ToolCall], mode: str,
                    overrides: Mapping[str, str]) -> int | None:
    """Index of the first call that differs (or where one list ends early); None if equal."""
    for index, (got, want) in enumerate(zip(agent, reference, strict=False)):
        if got.name != want.name:
            return index
        call_mode = overrides.get(want.name, mode) if overrides else mode
        if not (got.args == want.args or args_match(got.args, want.args, call_mode)):
            return index
    return None if len(agent) == len(reference) else min(len(agent), len(reference))


def _unmatched_text(extra: list[ToolCall], missing: list[ToolCall]) -> str:
    parts = []
    if missing:
        parts.append("reference calls not made: " + ", ".join(map(describe_call, missing)))
    if extra:
        parts.append("agent calls not in the reference: " + ", ".join(map(describe_call, extra)))
    return "; ".join(parts)
