"""Which text of an evaluator critic an align run can evolve, and putting the aligned text back.

A judge is aligned through the text that tells it what good is: an ``agent_as_judge`` block's
``criteria``, an ``llm_trajectory_judge``'s ``prompt``, a ``rubric_dag``'s rubric (its guidance
and one question per node, :func:`rubric_text`). In a weighted combination exactly one part is
aligned (picked by its label when several could be); the others stay as they are. Programmatic
evaluators, the RAG triad and the requirements checklist have no such text: they are refused
with a ConfigError naming the part.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from studio.evaluators.llm_judge import DEFAULT_TRAJECTORY_PROMPT
from studio.evaluators.rubric_dag import RUBRIC_PRESETS, RubricDag, validate_rubric_dag
from studio.model.errors import ConfigError

KINDS = ("criteria", "prompt", "rubric")
_NODE_LINE = re.compile(r"^\s*[-*]?\s*([\w.-]+)\s*:\s*(\S.*)$")


@dataclass(frozen=True)
class JudgeText:
    """The alignable text of one evaluator config (or of one part of a weighted one)."""

    kind: str
    """``criteria``, ``prompt`` or ``rubric``: what the evolved text replaces."""
    text: str
    model: str | None
    """The judge's own model (None: the run's)."""
    mode: str
    """How agreement is scored: ``pass_fail`` for a pass/fail judge, else ``score``."""
    part: int | None = None
    """Index in a weighted critic's ``evaluators`` (None: the whole config)."""
    part_name: str = ""


def judge_text(config: Mapping[str, object] | None, part: str | None = None) -> JudgeText:
    """The text to align in an evaluator critic's config.

    Raises:
        ConfigError: nothing in the config can be aligned (where: ``critic.evaluator``), a
            weighted critic has several alignable parts and ``part`` names none of them
            (where: ``part``).
    """
    config = config or {}
    if "evaluators" in config:
        return _weighted_text(config.get("evaluators"), part)
    found = _item_text(config, config.get("evaluator"))
    if isinstance(found, str):
        raise ConfigError(f"{found}. Align works for critic agents and for judges with "
                          f"criteria, a prompt or a rubric", where="critic.evaluator",
                          value=dict(config))
    return found


def alignable_parts(config: Mapping[str, object] | None) -> list[str]:
    """The names of a weighted critic's parts that could be aligned ([] for any other)."""
    items = (config or {}).get("evaluators")
    if not isinstance(items, list):
        return []
    return [_part_name(item, index) for index, item in enumerate(items)
            if isinstance(item, Mapping) and not isinstance(_item_text(item, item.get("name")),
                                                            str)]


def with_judge_text(config: Mapping[str, Any], kind: str, text: str,
                    part: int | None = None) -> dict[str, Any]:
    """``config`` (a copy) with its ``kind`` text (of part ``part`` when weighted) replaced.

    Raises:
        ConfigError: an aligned rubric that no longer makes a valid rubric DAG.
    """
    copied = copy.deepcopy(dict(config))
    if part is None:
        return _replaced(copied, copied.get("evaluator"), kind, text)
    items = list(copied["evaluators"])
    item = items[part]
    items[part] = _replaced(dict(item), item.get("name"), kind, text)
    return {**copied, "evaluators": items}


# --------------------------------------------------------------------------- finding the text


def _weighted_text(items: object, part: str | None) -> JudgeText:
    where = "critic.evaluator.evaluators"
    if not isinstance(items, list) or not items:
        raise ConfigError("'evaluators' must be a non-empty list", where=where, value=items)
    found: list[JudgeText] = []
    refused: list[str] = []
    for index, item in enumerate(items):
        name = _part_name(item, index)
        text = _item_text(item, item.get("name")) if isinstance(item, Mapping) else "not a mapping"
        if isinstance(text, str):
            refused.append(f"{name} ({text})")
        else:
            found.append(JudgeText(text.kind, text.text, text.model, text.mode, index, name))
    return _pick(found, refused, part, where)


def _pick(found: list[JudgeText], refused: list[str], part: str | None,
          where: str) -> JudgeText:
    names = [t.part_name for t in found]
    if part is not None:
        if part not in names:
            raise ConfigError(f"no alignable part is named {part!r}; alignable parts: "
                              f"{', '.join(names) or 'none'}", where="part", value=part)
        return found[names.index(part)]
    if not found:
        raise ConfigError("no part of this weighted critic can be aligned: "
                          + "; ".join(refused), where=where)
    if len(found) > 1:
        raise ConfigError(f"several parts of this weighted critic can be aligned "
                          f"({', '.join(names)}): pick one by name (part=..., or --part NAME)",
                          where="part")
    return found[0]


def _part_name(item: object, index: int) -> str:
    if not isinstance(item, Mapping):
        return f"evaluators[{index}]"
    return str(item.get("label") or item.get("name")
               or ("agent_as_judge" if "agent_as_judge" in item else f"evaluators[{index}]"))


def _item_text(item: Mapping[str, object], name: object) -> JudgeText | str:
    """The item's alignable text, or why it has none."""
    judge = item.get("agent_as_judge")
    if isinstance(judge, Mapping):
        criteria = str(judge.get("criteria") or "")
        if not criteria.strip():
            return "an agent_as_judge without criteria"
        mode = "pass_fail" if judge.get("scoring_strategy", "binary") == "binary" else "score"
        return JudgeText("criteria", criteria, _model(judge), mode)
    params = item.get("params")
    if not isinstance(params, Mapping):
        params = {}
    if name == "llm_trajectory_judge":
        mode = "score" if params.get("continuous") else "pass_fail"
        return JudgeText("prompt", str(params.get("prompt") or DEFAULT_TRAJECTORY_PROMPT),
                         _model(params), mode)
    if name == "rubric_dag":
        return JudgeText("rubric", rubric_text(_rubric(params)), _model(params), "score")
    return f"{name or 'this evaluator'} is programmatic or has no instruction, criteria or rubric"


def _model(params: Mapping[str, Any]) -> str | None:
    config = params.get("config")
    if not isinstance(config, Mapping):
        config = {}
    return params.get("model") or config.get("model") or None


def _rubric(params: Mapping[str, object]) -> RubricDag:
    preset = params.get("preset")
    raw = params.get("dag") if params.get("dag") is not None else RUBRIC_PRESETS.get(str(preset))
    if raw is None:
        raise ConfigError("a rubric_dag needs dag=... or a known preset", where="rubric_dag",
                          value=dict(params))
    return validate_rubric_dag(raw)


# --------------------------------------------------------------------------- rubric as text


def rubric_text(dag: RubricDag) -> str:
    """The rubric as the text an align run evolves: its guidance, then ``node: question`` lines.
    Choices, branches and leaf scores are the rubric's structure and are not evolved."""
    lines = [dag.guidance] if dag.guidance.strip() else []
    lines += [f"{name}: {node.question}" for name, node in dag.nodes.items()]
    return "\n".join(lines)


def rubric_from_text(dag: RubricDag, text: str) -> dict[str, Any]:
    """``dag`` with the questions and guidance of ``text``: a ``node: question`` line sets that
    node's question; any other line is guidance shown with every question; a node without a
    line keeps its question."""
    questions: dict[str, str] = {}
    guidance: list[str] = []
    for line in text.splitlines():
        match = _NODE_LINE.match(line)
        if match and match.group(1) in dag.nodes:
            questions[match.group(1)] = match.group(2).strip()
        elif line.strip():
            guidance.append(line.strip())
    raw = dag.model_dump()
    for name, question in questions.items():
        raw["nodes"][name]["question"] = question
    raw["guidance"] = "\n".join(guidance)
    return raw


def _replaced(item: dict[str, Any], name: object, kind: str, text: str) -> dict[str, Any]:
    if kind == "criteria":
        return {**item, "agent_as_judge": {**item["agent_as_judge"], "criteria": text}}
    params = dict(item.get("params") or {})
    if kind == "prompt":
        params["prompt"] = text
    elif kind == "rubric":
        params["dag"] = rubric_from_text(_rubric(params), text)
        validate_rubric_dag(params["dag"])
        params.pop("preset", None)
    else:
        raise ConfigError(f"cannot put an aligned {kind!r} into {name!r}", where="target",
                          value=kind)
    return {**item, "params": params}
