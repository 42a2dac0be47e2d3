"""Tool-use correctness: one expected call, or partial credit against a reference."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from studio.evaluators._matching import (
    args_match,
    check_arg_mode,
    describe_call,
    match_calls,
    tool_calls_or_error,
)
from studio.evaluators.base import CheckKind, Evaluator, EvaluatorResult, registered
from studio.model.errors import ConfigError


@registered('tool_use', 'A specific expected tool was called', CheckKind.TOOL)
class ToolUseEvaluator(Evaluator):
    """Did the agent call ``expected_tool`` (optionally with ``expected_args``) at least once?

    Args:
        expected_tool: the tool's name.
        expected_args: arguments the call must carry; None or ``{}`` checks the name only.
        args_match_mode: how the agent's arguments compare with ``expected_args``; the default
            ``superset`` means the call has every expected key/value, extras allowed.
        key: metric name; ``tool_use:<expected_tool>`` by default.

    Raises:
        ConfigError: ``expected_tool`` is empty.
        ValueError: ``args_match_mode`` is outside exact, ignore, subset, superset.
    """

    uses_trace: ClassVar[bool] = True

    def __init__(
        self,
        expected_tool: str,
        expected_args: Mapping[str, object] | None = None,
        args_match_mode: str = "superset",
        key: str | None = None,
    ) -> None:
        if not isinstance(expected_tool, str) or not expected_tool.strip():
            raise ConfigError("expected_tool must be a tool name", where="expected_tool",
                              value=expected_tool)
        self.expected_tool = expected_tool
        self.expected_args = dict(expected_args or {})
        self.args_match_mode = check_arg_mode(args_match_mode, field="args_match_mode")
        self.key = key or f"tool_use:{expected_tool}"

    def evaluate(
        self, *, outputs: object = None, reference_outputs: object = None, inputs: object = None,
        **kwargs: object,
    ) -> EvaluatorResult:
        calls = tool_calls_or_error(self.key, outputs, "agent")
        if isinstance(calls, EvaluatorResult):
            return calls
        named = [c for c in calls if c.name == self.expected_tool]
        hit = next((c for c in named if self._args_ok(c.args)), None)
        return EvaluatorResult.passed(
            self.key, hit is not None, self._comment(hit, named),
            called_tools=[c.name for c in calls],
            matching_call=describe_call(hit) if hit else None,
        )

    def _args_ok(self, args: Mapping[str, object]) -> bool:
        return not self.expected_args or args_match(args, self.expected_args,
                                                    self.args_match_mode)

    def _comment(self, hit: object, named: list) -> str:
        wanted = f"tool '{self.expected_tool}'"
        if self.expected_args:
            wanted += f" with args {self.expected_args} ({self.args_match_mode})"
        if hit is not None:
            return f"{wanted} was called"
        if named:
            seen = ", ".join(describe_call(c) for c in named[:3])
            return f"{wanted} was not called; calls with other args: {seen}"
        return f"{wanted} was not called"


@registered('tool_call_accuracy',
            'Fraction of reference tool calls reproduced (partial credit)', CheckKind.TOOL)
class ToolCallAccuracyEvaluator(Evaluator):
    """Fraction of the reference's tool calls the agent reproduced (partial credit).

    Each reference call is credited to at most one agent call, using a maximum matching (not
    greedy), so the score is the best achievable. An empty reference makes the fraction undefined:
    the result is ``score=None`` with a comment (use ``TrajectoryMatchEvaluator(mode="strict")``
    to require "no tool calls").

    Args:
        args_match_mode: ``exact`` | ``ignore`` | ``subset`` | ``superset``.
        key: metric name.
    """

    uses_trace: ClassVar[bool] = True

    def __init__(self, args_match_mode: str = "exact", key: str = "tool_call_accuracy") -> None:
        self.args_match_mode = check_arg_mode(args_match_mode, field="args_match_mode")
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
        if not reference:
            return EvaluatorResult.not_evaluated(
                self.key, "the reference has no tool calls, so accuracy is undefined",
                agent_count=len(agent),
            )
        partners = match_calls(agent, reference, self.args_match_mode, {})
        matched = {j for j in partners if j is not None}
        missing = [describe_call(r) for j, r in enumerate(reference) if j not in matched]
        hits = len(reference) - len(missing)
        comment = f"reproduced {hits} of {len(reference)} reference tool calls"
        if missing:
            comment += "; missing: " + ", ".join(missing)
        return EvaluatorResult(
            key=self.key, score=hits / len(reference), value=f"{hits}/{len(reference)}",
            comment=comment,
            metadata={"matched": hits, "reference_count": len(reference),
                      "agent_count": len(agent), "missing_calls": missing},
        )
