"""Rubric DAG: a decision tree the judge walks, one discrete question per node.

Each answer leads to another node or to a leaf with a fixed, authored score, so the score is
deterministic given the answers, and the traversed path (``metadata["path"]``) lets a person
correct one branch instead of re-grading the whole output.

A DAG is validated when it is built — unknown nodes, cycles, nodes without question or choices,
choices without branches, branches for unknown choices, leaf scores outside [0, 1] — and the error
(:class:`RubricDagError`) names the node. YAML 1.1 reads ``yes``/``no`` as booleans, so boolean
choices and branch keys are read back as ``"yes"``/``"no"``.

Config shape::

    key: answer_quality
    root: answers
    nodes:
      answers:
        question: Does the response directly answer the question?
        choices: [yes, partially, no]
        branches:
          yes: grounded                           # -> next node
          partially: {score: 0.5, label: partial} # -> leaf
          no: {score: 0.0, label: no answer}
      grounded: ...
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from studio.evaluators._judge import (
    DATA_NOTE,
    Fence,
    Judge,
    JudgeEvaluator,
    reasoning_of,
    task_text,
)
from studio.evaluators.base import EvaluatorResult, as_text, registered
from studio.evaluators.errors import RubricDagError
from studio.model.errors import ConfigError
from studio.model.jsontools import JsonDict, JsonValue

if TYPE_CHECKING:
    from studio.runtime.execution import AgentExecutor


class RubricLeaf(BaseModel):
    """Where a branch ends: an authored score."""

    score: float = Field(ge=0.0, le=1.0)
    label: str = ""


class RubricNode(BaseModel):
    """One question with its allowed answers and where each answer leads."""

    question: str
    choices: list[str]
    branches: dict[str, str | RubricLeaf]
    """Choice -> the next node's name, or a leaf."""


class RubricDag(BaseModel):
    """A validated rubric decision graph (build it with :func:`validate_rubric_dag`)."""

    key: str = "rubric_dag"
    root: str
    nodes: dict[str, RubricNode]
    guidance: str = ""
    """Shown with every question (what aligning the rubric with people adds)."""


RUBRIC_PRESETS: dict[str, dict[str, Any]] = {
    "answer_quality": {
        "key": "answer_quality",
        "root": "answers",
        "nodes": {
            "answers": {
                "question": "Does the response directly and correctly answer the question?",
                "choices": ["yes", "partially", "no"],
                "branches": {
                    "yes": "grounded",
                    "partially": {"score": 0.5, "label": "partial answer"},
                    "no": {"score": 0.0, "label": "does not answer"},
                },
            },
            "grounded": {
                "question": "Is the answer well-supported (no unsupported or fabricated claims)?",
                "choices": ["yes", "no"],
                "branches": {
                    "yes": {"score": 1.0, "label": "correct & grounded"},
                    "no": {"score": 0.7, "label": "correct but unsupported"},
                },
            },
        },
    },
    "instruction_following": {
        "key": "instruction_following",
        "root": "follows",
        "nodes": {
            "follows": {
                "question": "Does the response follow every explicit instruction in the task?",
                "choices": ["yes", "mostly", "no"],
                "branches": {
                    "yes": "format",
                    "mostly": {"score": 0.5, "label": "minor deviations"},
                    "no": {"score": 0.0, "label": "ignores instructions"},
                },
            },
            "format": {
                "question": "Is the response in the format the task asked for?",
                "choices": ["yes", "no"],
                "branches": {
                    "yes": {"score": 1.0, "label": "fully compliant"},
                    "no": {"score": 0.75, "label": "right content, wrong format"},
                },
            },
        },
    },
}
"""Reusable rubrics by name; add your own by assigning a new key."""


# --------------------------------------------------------------------------- validation


def validate_rubric_dag(raw: object) -> RubricDag:
    """Check a rubric DAG completely and return it typed.

    Raises:
        RubricDagError: the first problem found, naming the node (``error.node``).
    """
    if isinstance(raw, RubricDag):
        return raw
    if not isinstance(raw, Mapping):
        raise RubricDagError("a rubric DAG must be a mapping with 'root' and 'nodes'", value=raw)
    nodes = raw.get("nodes")
    if not isinstance(nodes, Mapping) or not nodes:
        raise RubricDagError("the rubric DAG has no nodes: add a 'nodes' mapping")
    root = raw.get("root")
    if not isinstance(root, str) or root not in nodes:
        raise RubricDagError(
            f"root {root!r} is not one of the nodes ({', '.join(map(str, nodes))})",
            node=root if isinstance(root, str) else None, value=root)
    checked = {str(name): _check_node(str(name), node, nodes) for name, node in nodes.items()}
    _check_acyclic(checked)
    guidance = raw.get("guidance") or ""
    if not isinstance(guidance, str):
        raise RubricDagError("the rubric's guidance must be text", value=guidance)
    return RubricDag(key=str(raw.get("key") or "rubric_dag"), root=root, nodes=checked,
                     guidance=guidance)


def _check_node(name: str, node: object, names: Mapping[str, object]) -> RubricNode:
    if not isinstance(node, Mapping):
        raise RubricDagError(f"node {name!r} must be a mapping with question, choices and "
                             f"branches", node=name, value=node)
    question = node.get("question")
    if not isinstance(question, str) or not question.strip():
        raise RubricDagError(f"node {name!r} has no question", node=name)
    choices = _choices(name, node.get("choices"))
    branches = node.get("branches")
    if not isinstance(branches, Mapping) or not branches:
        raise RubricDagError(f"node {name!r} has no branches", node=name)
    resolved = {_choice_name(k): _branch(name, _choice_name(k), v, names)
                for k, v in branches.items()}
    for choice in choices:
        if choice not in resolved:
            raise RubricDagError(f"choice {choice!r} of node {name!r} has no branch", node=name)
    for choice in resolved:
        if choice not in choices:
            raise RubricDagError(f"node {name!r} has a branch for {choice!r}, which is not one "
                                 f"of its choices ({', '.join(choices)})", node=name)
    return RubricNode(question=question, choices=choices, branches=resolved)


def _choices(name: str, raw: object) -> list[str]:
    if not isinstance(raw, list | tuple) or not raw:
        raise RubricDagError(f"node {name!r} has no choices", node=name)
    choices = [_choice_name(c) for c in raw]
    for choice in choices:
        if not choice.strip():
            raise RubricDagError(f"node {name!r} has an empty choice", node=name)
        if choices.count(choice) > 1:
            raise RubricDagError(f"node {name!r} lists choice {choice!r} twice", node=name)
    return choices


def _choice_name(value: object) -> str:
    if isinstance(value, bool):  # YAML 1.1: `yes` and `no` arrive as booleans
        return "yes" if value else "no"
    return str(value)


def _branch(name: str, choice: str, target: object, names: Mapping[str, object]
            ) -> str | RubricLeaf:
    if isinstance(target, str):
        if target not in names:
            raise RubricDagError(f"node {name!r} branch {choice!r} leads to unknown node "
                                 f"{target!r}", node=name, value=target)
        return target
    if not isinstance(target, Mapping) or "score" not in target:
        raise RubricDagError(f"node {name!r} branch {choice!r} must name a node or be a leaf "
                             f"{{score, label}}", node=name, value=target)
    score = target["score"]
    if isinstance(score, bool) or not isinstance(score, int | float) or not 0 <= score <= 1:
        raise RubricDagError(f"leaf {choice!r} of node {name!r} has score {score!r}, outside "
                             f"[0, 1]", node=name, value=score)
    return RubricLeaf(score=float(score), label=str(target.get("label") or ""))


def _check_acyclic(nodes: Mapping[str, RubricNode]) -> None:
    state: dict[str, str] = {}  # "open" while on the current path, "done" once fully explored

    def visit(name: str, stack: list[str]) -> None:
        state[name] = "open"
        stack.append(name)
        for target in nodes[name].branches.values():
            if not isinstance(target, str):
                continue
            if state.get(target) == "open":
                cycle = [*stack[stack.index(target):], target]
                raise RubricDagError(f"the rubric DAG has a cycle: {' -> '.join(cycle)}",
                                     node=target)
            if target not in state:
                visit(target, stack)
        stack.pop()
        state[name] = "done"

    for name in nodes:
        if name not in state:
            visit(name, [])


# --------------------------------------------------------------------------- the evaluator


class RubricDagEvaluator(JudgeEvaluator):
    """Walk a rubric DAG with an LLM judge; the leaf reached gives the score.

    Args:
        dag: the rubric (a mapping, validated now) or a :class:`RubricDag`.
        config: optional settings; ``config["model"]`` picks the judge model.
        model: LiteLLM model string (default: ``config["model"]`` or the embedded model).
        executor: an :class:`studio.runtime.execution.AgentExecutor` to share.
        key: metric name (default: the DAG's ``key``).

    Raises:
        RubricDagError: the DAG is malformed (naming the node).
    """

    def __init__(self, dag: Any, config: Mapping[str, JsonValue] | None = None,
                 endpoint: object = None, key: str | None = None, *, model: object = None,
                 executor: AgentExecutor | None = None) -> None:
        super().__init__(config, model=model, executor=executor, endpoint=endpoint)
        self.dag = validate_rubric_dag(dag)
        self.key = key or self.dag.key
        self._judges: dict[str, Judge] = {}

    @property
    def root(self) -> str:
        """The first node's name (Potato's ``evaluator.root``)."""
        return self.dag.root

    @property
    def nodes(self) -> dict[str, Any]:
        """The nodes by name (Potato's ``evaluator.nodes``)."""
        return self.dag.nodes

    async def aevaluate(self, *, outputs: object = None, reference_outputs: object = None,
                        inputs: object = None, **kwargs: object) -> EvaluatorResult:
        output = as_text(outputs)
        if output is None:
            return EvaluatorResult.not_evaluated(self.key, "no output to judge (it is None)")
        context = _context(output, as_text(reference_outputs), task_text(inputs))
        path: list[dict[str, Any]] = []
        name = self.dag.root
        for _ in range(len(self.dag.nodes)):  # acyclic, so at most one visit per node
            node = self.dag.nodes[name]
            step = await self._ask(name, node, context)
            if isinstance(step, EvaluatorResult):
                step.metadata["path"] = path
                return step
            path.append(step)
            target = node.branches[step["choice"]]
            if isinstance(target, RubricLeaf):
                return self._leaf_result(target, path)
            name = target
        # Unreachable for a validated (acyclic) DAG; kept so a bug cannot loop or crash a run.
        return EvaluatorResult.not_evaluated(self.key, "the rubric walk reached no leaf",
                                             path=path)

    async def _ask(self, name: str, node: RubricNode,
                   context: str) -> dict[str, Any] | EvaluatorResult:
        reply = await self._node_judge(name, node).ask(context)
        if reply.error is not None:
            return reply.failure(self.key, node=name)
        choice = recover_choice(reply.data, reply.text, node.choices)
        if choice is None:
            shown = reply.text if len(reply.text) <= 200 else reply.text[:199] + "…"
            return EvaluatorResult.not_evaluated(
                self.key, f"judge gave no valid choice at node {name!r} (allowed: "
                f"{', '.join(node.choices)}; reply: {shown!r})",
                error_kind="judge_reply", node=name)
        return {"node": name, "question": node.question, "choice": choice,
                "reasoning": reasoning_of(reply.data or {})}

    def _node_judge(self, name: str, node: RubricNode) -> Judge:
        if name not in self._judges:
            options = ", ".join(node.choices)
            guidance = f"Guidance: {self.dag.guidance}\n\n" if self.dag.guidance.strip() else ""
            system = (
                "You are evaluating an AI output against a rubric. Answer the single question "
                f"below by choosing exactly one allowed option.\n\n{guidance}"
                f"Question: {node.question}\n"
                f"Allowed options: {options}\n\n{DATA_NOTE}\n\nRespond with JSON only: "
                '{"choice": "<one allowed option>", "reasoning": "<one sentence>"}'
            )
            schema: JsonDict = {"type": "object",
                      "properties": {"choice": {"type": "string", "enum": [*node.choices]},
                                     "reasoning": {"type": "string"}},
                      "required": ["choice", "reasoning"]}
            self._judges[name] = self.judge(name="rubric_judge", system=system, schema=schema)
        return self._judges[name]

    def _leaf_result(self, leaf: RubricLeaf, path: list[dict[str, Any]]) -> EvaluatorResult:
        route = " -> ".join(f"{step['node']}={step['choice']}" for step in path)
        head = leaf.label or f"score {leaf.score:g}"
        reasons = "; ".join(f"{s['node']}: {s['reasoning']}" for s in path if s["reasoning"])
        comment = f"{head} ({route})" + (f": {reasons}" if reasons else "")
        return EvaluatorResult(key=self.key, score=leaf.score, value=leaf.label or leaf.score,
                               comment=comment,
                               metadata={"path": path, "leaf": leaf.model_dump()})


def _context(output: str, reference: str | None, task: str) -> str:
    fence = Fence()
    parts = [f"Task / input:\n{task}"] if task else []
    parts.append("Output to evaluate:\n" + fence.wrap(output, "output"))
    if reference:
        parts.append("Reference / expected:\n" + fence.wrap(reference, "reference"))
    return "\n\n".join(parts)


def recover_choice(data: Mapping[str, object] | None, text: str, choices: list[str]) -> str | None:
    """The option the judge chose: from its JSON ``choice``, or, when the reply holds no JSON,
    from the raw text (a leading option, ``choice: X``, or the only option mentioned)."""
    if data:
        for field in ("choice", "answer", "option", "verdict"):
            if field in data:
                return match_choice(_choice_name(data[field]), choices)
        return None
    return match_choice(text, choices)


def match_choice(text: str, choices: list[str]) -> str | None:
    """Resolve free text to one allowed option, or None when it names none or several."""
    cleaned = text.strip().strip("\"'`*.!").strip()
    lowered = {c.lower(): c for c in choices}
    if cleaned.lower() in lowered:
        return lowered[cleaned.lower()]
    by_length = sorted(choices, key=len, reverse=True)
    labelled = re.search(r"(?:choice|answer|option|verdict)\W{0,3}\s*([^\n]+)", cleaned, re.I)
    if labelled:
        hit = _leading_option(labelled.group(1), by_length)
        if hit:
            return hit
    leading = _leading_option(cleaned, by_length)
    if leading:
        return leading
    mentioned = {c for c in by_length if re.search(rf"(?<!\w){re.escape(c)}(?!\w)", cleaned, re.I)}
    return mentioned.pop() if len(mentioned) == 1 else None


def _leading_option(text: str, by_length: list[str]) -> str | None:
    start = text.lstrip(" \t\"'`*:-")
    for choice in by_length:
        if re.match(rf"{re.escape(choice)}(?!\w)", start, re.I):
            return choice
    return None


# --------------------------------------------------------------------------- factory


@registered('rubric_dag', 'Decision-tree rubric walked by an LLM judge')
def make_rubric_dag(config: Mapping[str, JsonValue] | None = None, dag: object = None,
                    preset: str | None = None, endpoint: object = None, *, model: object = None,
                    executor: AgentExecutor | None = None, key: str | None = None
                    ) -> RubricDagEvaluator:
    """Build a rubric-DAG evaluator from an explicit ``dag`` or a named ``preset``.

    An explicit ``dag`` wins over ``preset``.

    Raises:
        ConfigError: neither was given, or the preset is unknown (listing the presets).
        RubricDagError: the DAG is malformed.
    """
    if dag is None:
        if preset is None:
            raise ConfigError("give dag=... or preset=... (presets: "
                              f"{', '.join(sorted(RUBRIC_PRESETS))})", where="rubric_dag")
        if preset not in RUBRIC_PRESETS:
            raise ConfigError(f"unknown rubric preset {preset!r}; presets: "
                              f"{', '.join(sorted(RUBRIC_PRESETS))}", where="preset",
                              value=preset)
        dag = copy.deepcopy(RUBRIC_PRESETS[preset])
    return RubricDagEvaluator(dag, config, model=model, executor=executor, key=key,
                              endpoint=endpoint)
