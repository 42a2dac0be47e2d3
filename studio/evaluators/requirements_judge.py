"""Requirements judge: the trajectory judged against each requirement separately, with evidence.

Unlike :class:`studio.evaluators.criteria_judge.AgentAsJudgeEval` (one holistic verdict on an
output), this gives one discrete verdict per requirement, the unit a reviewer can check.

Verdicts are matched to requirements — by the requirement's text (exact after normalizing),
else its number, else a close text — so the score is satisfied / number of *requirements*, not
of verdicts returned (Potato divides by the verdicts, so a skipped requirement vanishes). A
requirement the judge skipped counts as not satisfied: nothing shows it was met. It is flagged
(``flag: "missing verdict"``) and counted in ``metadata["missing"]``. A verdict whose
``satisfied`` cannot be read is flagged ``"unreadable verdict"`` and not satisfied either;
verdicts that match no requirement, or repeat one, are listed in
``metadata["unmatched_verdicts"]``. A reply with no verdict matching any requirement is
``score=None`` (the judge did not judge).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from studio.evaluators._judge import (
    DATA_NOTE,
    Fence,
    JudgeEvaluator,
    parse_bool,
    parse_number,
    reasoning_of,
    task_text,
)
from studio.evaluators.base import EvaluatorResult, registered
from studio.evaluators.errors import TrajectoryShapeError
from studio.evaluators.trajectory import normalize_trajectory, render_trajectory
from studio.model.errors import ConfigError
from studio.model.jsontools import JsonDict, JsonValue

if TYPE_CHECKING:
    from studio.runtime.execution import AgentExecutor

_FUZZY_CUTOFF = 0.8
_NUMBERED = re.compile(r"^\s*(?:requirement\s*)?#?(\d+)\s*[.):-]?\s*", re.I)
_SCHEMA: JsonDict = {
    "type": "object",
    "properties": {
        "verdicts": {"type": "array", "items": {
            "type": "object",
            "properties": {"id": {"type": "integer"}, "requirement": {"type": "string"},
                           "satisfied": {"type": "boolean"}, "evidence": {"type": "string"}},
            "required": ["id", "requirement", "satisfied", "evidence"]}},
        "reasoning": {"type": "string"},
    },
    "required": ["verdicts", "reasoning"],
}
_SYSTEM = (
    "You are an expert evaluator acting as an AGENT-AS-JUDGE. Inspect the agent's full "
    "trajectory (its intermediate steps, tool calls and final answer) and judge whether it "
    "satisfies EACH numbered requirement, citing the step that is your evidence. Give exactly "
    "one verdict per requirement, with the requirement's number as id.\n\n"
    f"{DATA_NOTE}\n\nRespond with JSON only: "
    '{"verdicts": [{"id": <number>, "requirement": "<text>", "satisfied": <true or false>, '
    '"evidence": "<step and why>"}], "reasoning": "<one sentence overall>"}'
)


def check_requirements(requirements: object, *, where: str = "requirements") -> list[str]:
    """A non-empty list of non-empty requirement texts (a single string is one requirement).

    Raises:
        ConfigError: the list is empty or holds a blank/non-text item.
    """
    items = [requirements] if isinstance(requirements, str) else requirements
    if not isinstance(items, Sequence) or not items:
        raise ConfigError("requirements is empty: give at least one requirement such as "
                          "'The flight is under $400'", where=where, value=requirements)
    for index, item in enumerate(items):
        if not isinstance(item, str) or not item.strip():
            raise ConfigError(f"requirement {index + 1} is {item!r}; each requirement must be "
                              f"non-empty text", where=where, value=item)
    return [item.strip() for item in items]


@registered('agent_as_judge', 'Per-requirement verdicts with evidence')
class AgentAsJudgeEvaluator(JudgeEvaluator):
    """Judge a trajectory against a checklist; score = satisfied / number of requirements.

    Args:
        config: optional settings; the judge model is ``config["model"]``, else Potato's
            ``ai_support`` (``endpoint_type`` + ``ai_config.model``).
        requirements: the checklist; when None, ``requirements=`` at evaluate time or
            ``inputs["requirements"]`` is used.
        model: LiteLLM model string (default: ``config["model"]`` or the embedded model).
        executor: an :class:`studio.runtime.execution.AgentExecutor` to share.
        requirements_key: the ``inputs`` field holding requirements.
        question_key: the ``inputs`` field holding the task.
        key: metric name.

    Raises:
        ConfigError: ``requirements`` is given but empty (or holds blank items).
    """

    uses_trace: ClassVar[bool] = True

    def __init__(self, config: Mapping[str, JsonValue] | None = None, endpoint: object = None,
                 requirements: Sequence[str] | str | None = None,
                 requirements_key: str = "requirements", *, model: object = None,
                 executor: AgentExecutor | None = None, question_key: str = "question",
                 key: str = "agent_as_judge") -> None:
        super().__init__(config, model=model, executor=executor, endpoint=endpoint)
        self.requirements = None if requirements is None else check_requirements(requirements)
        self.requirements_key = requirements_key
        self.question_key = question_key
        self.key = key
        self._judge = self.judge(name="requirements_judge", system=_SYSTEM, schema=_SCHEMA)

    async def aevaluate(self, *, outputs: object = None, reference_outputs: object = None,
                        inputs: object = None, **kwargs: object) -> EvaluatorResult:
        requirements = self._requirements(inputs, kwargs)
        if isinstance(requirements, EvaluatorResult):
            return requirements
        if outputs is None:
            return EvaluatorResult.not_evaluated(self.key, "no trajectory to judge (it is None)")
        try:
            trajectory = render_trajectory(normalize_trajectory(outputs))
        except TrajectoryShapeError as exc:
            return EvaluatorResult.not_evaluated(self.key, str(exc), error_kind="trajectory_shape")
        reply = await self._judge.ask(_user_text(task_text(inputs, self.question_key),
                                                 trajectory, requirements))
        if reply.data is None:
            return reply.failure(self.key, requirements=requirements)
        return self._result(requirements, reply.data)

    def _requirements(self, inputs: object, kwargs: Mapping[str, object]
                      ) -> list[str] | EvaluatorResult:
        raw = kwargs.get("requirements")
        if raw is None:
            raw = self.requirements
        if raw is None and isinstance(inputs, Mapping):
            raw = inputs.get(self.requirements_key)
        if raw is None:
            return EvaluatorResult.not_evaluated(self.key, "no requirements given")
        try:
            return check_requirements(raw)
        except ConfigError as exc:
            return EvaluatorResult.not_evaluated(self.key, str(exc))

    def _result(self, requirements: list[str], data: Mapping[str, object]) -> EvaluatorResult:
        raw = data.get("verdicts")
        verdicts, unmatched = match_verdicts(requirements, raw if isinstance(raw, list) else [])
        if all(v["flag"] == "missing verdict" for v in verdicts):
            return EvaluatorResult.not_evaluated(
                self.key, "the judge returned no verdict that matches a requirement",
                error_kind="judge_reply", verdicts=verdicts, unmatched_verdicts=unmatched)
        satisfied = sum(1 for v in verdicts if v["satisfied"])
        total = len(requirements)
        return EvaluatorResult(
            key=self.key, score=satisfied / total,
            value=f"{satisfied}/{total} requirements satisfied",
            comment=_comment(verdicts, satisfied, reasoning_of(data)),
            metadata={"verdicts": verdicts, "satisfied": satisfied, "total": total,
                      "flagged": sum(1 for v in verdicts if v["flag"]),
                      "missing": sum(1 for v in verdicts if v["flag"] == "missing verdict"),
                      "unmatched_verdicts": unmatched},
        )


def _user_text(task: str, trajectory: str, requirements: list[str]) -> str:
    numbered = "\n".join(f"{i}. {r}" for i, r in enumerate(requirements, 1))
    parts = [f"Task / goal:\n{task}"] if task else []
    parts.append("Agent trajectory:\n" + Fence().wrap(trajectory, "output"))
    parts.append(f"Requirements:\n{numbered}")
    return "\n\n".join(parts)


def match_verdicts(requirements: list[str],
                   raw_verdicts: list[Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Align the judge's verdicts with the requirements.

    Returns:
        ``(verdicts, unmatched)``: one verdict per requirement, in order (missing ones flagged
        and not satisfied), and the judge's verdicts that matched nothing or repeated one.
    """
    slots: list[dict[str, Any] | None] = [None] * len(requirements)
    unmatched: list[dict[str, Any]] = []
    normalized = [_normalize(r) for r in requirements]
    for item in raw_verdicts:
        verdict = item if isinstance(item, Mapping) else {"requirement": str(item)}
        index = _verdict_index(verdict, requirements, normalized)
        if index is None or slots[index] is not None:
            why = "matches no requirement" if index is None else "repeats a requirement"
            unmatched.append({**dict(verdict), "why": why})
            continue
        slots[index] = _verdict(requirements[index], verdict)
    return [slot or _missing(requirements[i]) for i, slot in enumerate(slots)], unmatched


def _verdict_index(verdict: Mapping[str, object], requirements: list[str],
                   normalized: list[str]) -> int | None:
    """Exact text first (the strongest evidence), then the number, then a close text."""
    text = str(verdict.get("requirement") or "")
    key = _normalize(text)
    if key and key in normalized:
        return normalized.index(key)
    for field in ("id", "index", "number", "requirement_id"):
        number = parse_number(verdict.get(field))
        if number is not None and number.is_integer() and 1 <= number <= len(requirements):
            return int(number) - 1
    numbered = _NUMBERED.match(text)
    if numbered and 1 <= int(numbered.group(1)) <= len(requirements):
        return int(numbered.group(1)) - 1
    close = difflib.get_close_matches(key, normalized, n=1, cutoff=_FUZZY_CUTOFF) if key else []
    return normalized.index(close[0]) if close else None


def _normalize(text: str) -> str:
    text = _NUMBERED.sub("", text, count=1)
    return " ".join(text.casefold().split()).strip(" .!;:")


def _verdict(requirement: str, verdict: Mapping[str, object]) -> dict[str, Any]:
    satisfied = parse_bool(verdict.get("satisfied"))
    return {"requirement": requirement, "satisfied": bool(satisfied),
            "evidence": str(verdict.get("evidence") or ""),
            "flag": None if satisfied is not None else "unreadable verdict"}


def _missing(requirement: str) -> dict[str, Any]:
    """A requirement the judge gave no verdict on: not shown to be met, so not satisfied."""
    return {"requirement": requirement, "satisfied": False, "evidence": "",
            "flag": "missing verdict"}


def _comment(verdicts: list[dict[str, Any]], satisfied: int, reasoning: str) -> str:
    lines = [f"{satisfied} of {len(verdicts)} requirements satisfied"]
    for v in verdicts:
        if v["flag"] == "missing verdict":
            lines.append(f"- {v['requirement']}: the judge gave no verdict (counted as not "
                         "satisfied)")
        elif v["flag"]:
            lines.append(f"- {v['requirement']}: {v['flag']} (counted as not satisfied)")
        elif not v["satisfied"]:
            evidence = f" — {v['evidence']}" if v["evidence"] else ""
            lines.append(f"- not satisfied: {v['requirement']}{evidence}")
    if reasoning:
        lines.append(reasoning)
    return "\n".join(lines)
