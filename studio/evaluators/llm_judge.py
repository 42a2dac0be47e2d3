"""Reference-free LLM judge of a whole trajectory (was the path sensible, the answer right?)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, ClassVar

from studio.evaluators._judge import (
    DATA_NOTE,
    Fence,
    JudgeEvaluator,
    parse_bool,
    reasoning_of,
    task_text,
    unit_score,
)
from studio.evaluators.base import CheckKind, EvaluatorResult, registered
from studio.evaluators.errors import TrajectoryShapeError
from studio.evaluators.trajectory import normalize_trajectory, render_trajectory
from studio.model.jsontools import JsonDict, JsonValue

if TYPE_CHECKING:
    from studio.runtime.execution import AgentExecutor

DEFAULT_TRAJECTORY_PROMPT = (
    "You are an expert evaluator judging the quality of an AI agent's trajectory. Consider "
    "whether the agent took sensible steps, used tools appropriately, avoided unnecessary or "
    "erroneous actions, and reached a correct, complete final answer for the task."
)
_CONTINUOUS_SCHEMA: JsonDict = {
    "type": "object",
    "properties": {"score": {"type": "number", "minimum": 0, "maximum": 1},
                   "reasoning": {"type": "string"}},
    "required": ["score", "reasoning"],
}
_BINARY_SCHEMA: JsonDict = {
    "type": "object",
    "properties": {"pass": {"type": "boolean"}, "reasoning": {"type": "string"}},
    "required": ["pass", "reasoning"],
}


@registered('llm_trajectory_judge', 'Reference-free LLM judge of a trajectory', CheckKind.TOOL)
class LLMTrajectoryJudge(JudgeEvaluator):
    """Judge a trajectory without a gold reference (many valid agent paths exist).

    Args:
        config: optional settings; the judge model is ``config["model"]``, else Potato's
            ``ai_support`` (``endpoint_type`` + ``ai_config.model``, e.g. ``openai/gpt-4o``).
        prompt: the rubric the judge applies.
        continuous: True for a 0.0-1.0 score, False (default) for a pass/fail verdict. As in
            Potato, a continuous score outside [0, 1] is clamped (5.0 -> 1.0); the result's
            ``metadata["clamped_from"]`` keeps the judge's number and the comment says so.
        model: LiteLLM model string or model object (default: from ``config``, else the
            embedded model).
        executor: an :class:`studio.runtime.execution.AgentExecutor` to share.
        endpoint: a Potato endpoint (``query(prompt, schema_model)``) to ask instead of a model.
        key: metric name.

    ``outputs`` is the trajectory (any shape :func:`normalize_trajectory` accepts), ``inputs`` the
    task; a ``reference_outputs`` trajectory, when given, is shown for comparison.
    """

    uses_trace: ClassVar[bool] = True

    def __init__(self, config: Mapping[str, JsonValue] | None = None,
                 prompt: str = DEFAULT_TRAJECTORY_PROMPT, continuous: bool = False,
                 endpoint: object = None, key: str = "trajectory_accuracy", *,
                 model: object = None, executor: AgentExecutor | None = None) -> None:
        super().__init__(config, model=model, executor=executor, endpoint=endpoint)
        self.prompt = prompt
        self.continuous = continuous
        self.key = key
        answer = ('{"score": <number from 0.0 to 1.0>, "reasoning": "<one sentence>"}'
                  if continuous else '{"pass": <true or false>, "reasoning": "<one sentence>"}')
        self._judge = self.judge(
            name="trajectory_judge",
            system=f"{prompt}\n\n{DATA_NOTE}\n\nRespond with JSON only: {answer}",
            schema=_CONTINUOUS_SCHEMA if continuous else _BINARY_SCHEMA,
        )

    async def aevaluate(self, *, outputs: object = None, reference_outputs: object = None,
                        inputs: object = None, **kwargs: object) -> EvaluatorResult:
        if outputs is None:
            return EvaluatorResult.not_evaluated(self.key, "no trajectory to judge (it is None)")
        try:
            user_text = self._user_text(outputs, reference_outputs, inputs)
        except TrajectoryShapeError as exc:
            return EvaluatorResult.not_evaluated(self.key, str(exc), error_kind="trajectory_shape")
        reply = await self._judge.ask(user_text)
        if reply.data is None:
            return reply.failure(self.key)
        return self._verdict(reply.data)

    def _user_text(self, outputs: object, reference: object, inputs: object) -> str:
        fence = Fence()
        task = task_text(inputs)
        parts = [f"Task:\n{task}"] if task else []
        parts.append("Agent trajectory:\n" + fence.wrap(render_trajectory(
            normalize_trajectory(outputs)), "output"))
        if reference is not None:
            parts.append("Reference trajectory (for comparison):\n" + fence.wrap(
                render_trajectory(normalize_trajectory(reference)), "reference"))
        return "\n\n".join(parts)

    def _verdict(self, data: Mapping[str, object]) -> EvaluatorResult:
        reasoning = reasoning_of(data)
        if self.continuous:
            score, problem = unit_score(data, clamp=True)
            if score is None:
                return EvaluatorResult.not_evaluated(self.key, problem, error_kind="judge_reply",
                                                     reply=data)
            if problem:  # clamped, as Potato does: said, and the judge's number kept
                return EvaluatorResult(
                    key=self.key, score=score, value=score,
                    comment=f"{reasoning}\n({problem}; clamped to {score})".lstrip(),
                    metadata={"clamped_from": data.get("score")})
            return EvaluatorResult(key=self.key, score=score, value=score, comment=reasoning)
        verdict = parse_bool(data.get("pass", data.get("passed")))
        if verdict is None:
            return EvaluatorResult.not_evaluated(
                self.key, f"judge verdict {data.get('pass')!r} is not true or false",
                error_kind="judge_reply", reply=data)
        return EvaluatorResult.passed(self.key, verdict, reasoning)
