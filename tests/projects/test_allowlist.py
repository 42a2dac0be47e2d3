"""The allow-list of what a project from the browser may set
(:mod:`studio.projects.files.allowlist`) has a decision for every field reachable from the
project file: the studio's own sections, the free-form sections (declarative critics, evaluator
params, ADK's eval criteria) and every ADK and google-genai model reachable inside them
(``JudgeModelOptions`` -> ``GenerateContentConfig`` -> ``HttpOptions`` ...). A field a new
release adds fails here until someone decides about it; a decision for a field that no longer
exists fails too."""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from studio.critics import adapters
from studio.critics.adk_metrics import ADK_DEFAULT_JUDGE_SAMPLES, REFUSED
from studio.evaluators import registry
from studio.evaluators.rubric_dag import RubricDag, RubricLeaf, RubricNode
from studio.model.errors import ConfigError
from studio.model.records import RunSpec
from studio.projects.files.allowlist import (
    BROWSER_FIELDS,
    CRITERION_NODES,
    EVALUATOR_ALIASES,
    AdkCriteria,
    Allowed,
    CodeOptIn,
    Entries,
    Refused,
    Rows,
    Section,
    check_browser_project_fields,
)
from studio.projects.files.sections import DataSource, ProjectFile

FREE_FORM: dict[str, set[str]] = {
    "critic config": adapters._CRITIC_KEYS | adapters._IGNORED_KEYS,
    "critic config item": adapters._ITEM_KEYS | adapters._IGNORED_KEYS,
    "agent_as_judge": adapters._JUDGE_KEYS,
}
"""Nodes whose shape is a set of keys the studio's code reads (not a pydantic model)."""

STOPS = (Refused, CodeOptIn)
"""Decisions that end the walk: nothing inside a refused field is reachable."""

OPAQUE = {("RunSpec", "graph")}
"""Model-typed fields allowed whole: written by the studio itself, never read as settings."""


def _models_in(annotation: object) -> list[type[BaseModel]]:
    """The pydantic models an annotation can hold (in unions, lists, dicts, Annotated)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    found: list[type[BaseModel]] = []
    for arg in typing.get_args(annotation):
        found += _models_in(arg)
    return found


def _free_form(annotation: object) -> bool:
    """dict/Any fields: what is inside is raw data, described by a node of its own."""
    origin = typing.get_origin(annotation)
    return annotation is typing.Any or origin in (dict, typing.Union, types.UnionType) and \
        any(_free_form(a) or typing.get_origin(a) is dict for a in typing.get_args(annotation)) \
        or origin is dict


def _evaluator_params() -> dict[str, set[str]]:
    params = {}
    for name, (factory, _) in registry._REGISTRY.items():
        signature = inspect.signature(factory)
        params[f"evaluator:{name}"] = {
            p.name for p in signature.parameters.values()
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    return params


def _criterion_classes() -> dict[str, type[BaseModel]]:
    from google.adk.evaluation.metric_evaluator_registry import (
        DEFAULT_METRIC_EVALUATOR_REGISTRY,
    )

    return {name: evaluator.criterion_type
            for name, (evaluator, _) in DEFAULT_METRIC_EVALUATOR_REGISTRY._registry.items()}


def undecided(model: type[BaseModel], node: str, seen: set[str] | None = None
              ) -> Iterator[str]:
    """Every ``node.field`` reachable from ``model`` that has no decision (or whose decision
    does not fit its type), and every decision for a field ``model`` does not have."""
    seen = seen if seen is not None else set()
    if node in seen:
        return
    seen.add(node)
    table = BROWSER_FIELDS.get(node)
    if table is None:
        yield f"{node}: no node in the table (for {model.__module__}.{model.__qualname__})"
        return
    yield from (f"{node}.{name}: decided, but {model.__name__} has no such field"
                for name in set(table) - set(model.model_fields))
    for name, field in model.model_fields.items():
        decision = table.get(name)
        if decision is None:
            yield f"{node}.{name}: reachable from the browser with no decision"
            continue
        yield from _inside(node, name, field.annotation, decision, seen)


def _inside(node: str, name: str, annotation: object, decision: object,
            seen: set[str]) -> Iterator[str]:
    """What a decision lets through: the nested models it walks into must be decided too."""
    if isinstance(decision, STOPS):
        return
    models = _models_in(annotation)
    if isinstance(decision, Section) and isinstance(decision.node, str):
        inner = [m for m in models if m.__name__ == decision.node] or models
        if inner:
            for model in inner:
                yield from undecided(model, decision.node, seen)
        else:
            yield from _free_node(decision.node, seen)
    elif isinstance(decision, Entries):  # keyed by name, each value one model
        for model in models:
            yield from undecided(model, model.__name__, seen)
    elif isinstance(decision, Rows):
        yield from undecided(DataSource, "DataSource", seen)
    elif isinstance(decision, AdkCriteria):
        yield from _eval_config(seen)
    elif isinstance(decision, Section):  # params: the evaluator a sibling names
        yield from _evaluators(seen)
    elif models and (node, name) not in OPAQUE:
        yield f"{node}.{name}: holds {[m.__name__ for m in models]} but is allowed whole"


def _free_node(node: str, seen: set[str]) -> Iterator[str]:
    if node in seen:
        return
    seen.add(node)
    keys = FREE_FORM.get(node)
    table = BROWSER_FIELDS[node]
    if keys is None:
        return  # a Potato judge config: its keys are the ones config_model reads
    yield from (f"{node}.{key}: the code reads it, the table has no decision"
                for key in sorted(keys - set(table)))
    yield from (f"{node}.{key}: decided, but the code never reads it"
                for key in sorted(set(table) - keys))
    for key, decision in table.items():
        yield from _inside(node, key, object, decision, seen)


def _evaluators(seen: set[str]) -> Iterator[str]:
    if "evaluators" in seen:
        return
    seen.add("evaluators")
    params = _evaluator_params()
    tabled = {n for n in BROWSER_FIELDS if n.startswith("evaluator:")}
    yield from (f"{n}: a registered evaluator with no decisions" for n in sorted(set(params) -
                                                                                   tabled))
    yield from (f"{n}: decided, but no such evaluator is registered"
                for n in sorted(tabled - set(params)))
    for node in sorted(set(params) & tabled):
        yield from (f"{node}.{p}: a parameter with no decision"
                    for p in sorted(params[node] - set(BROWSER_FIELDS[node])))
        yield from (f"{node}.{p}: decided, but the evaluator has no such parameter"
                    for p in sorted(set(BROWSER_FIELDS[node]) - params[node]))
    yield from undecided(RubricDag, "RubricDag", seen)
    yield from undecided(RubricNode, "RubricNode", seen)
    yield from undecided(RubricLeaf, "RubricLeaf", seen)


def _eval_config(seen: set[str]) -> Iterator[str]:
    from google.adk.evaluation.eval_config import EvalConfig

    if "EvalConfig" in seen:
        return
    yield from undecided(EvalConfig, "EvalConfig", seen)
    classes = _criterion_classes()
    for metric, criterion in classes.items():
        if metric in REFUSED:
            continue
        node = CRITERION_NODES.get(metric)
        if node is None:
            yield f"criteria.{metric}: an ADK metric with no decision"
        elif node != criterion.__name__:
            yield f"criteria.{metric}: read as {node}, but ADK reads {criterion.__name__}"
        else:
            yield from undecided(criterion, node, seen)
    yield from (f"criteria.{m}: decided, but ADK has no such metric"
                for m in sorted(set(CRITERION_NODES) - set(classes)))


def test_every_field_reachable_from_a_browser_project_has_a_decision():
    problems = list(undecided(ProjectFile, "ProjectFile"))
    assert problems == []


def test_every_field_of_a_stored_run_the_studio_starts_has_a_decision():
    assert list(undecided(RunSpec, "RunSpec")) == []


def test_the_walk_reaches_the_transport_of_adks_judge_and_refuses_it():
    """The chain the critical report went through is in the table, and refused at its end."""
    chain = [("ProjectFile", "critic"), ("CriticSection", "adk_metrics"),
             ("LlmAsAJudgeCriterion", "judge_model_options"),
             ("JudgeModelOptions", "judge_model_config"),
             ("GenerateContentConfig", "http_options")]
    assert all(field in BROWSER_FIELDS[node] for node, field in chain)
    assert isinstance(BROWSER_FIELDS["GenerateContentConfig"]["http_options"], Refused)
    assert isinstance(BROWSER_FIELDS["EvolutionConfig"]["rate_limits"], Refused)


def test_a_field_a_new_release_adds_fails_the_walk_until_it_is_decided():
    from google.genai import types as genai

    class NewerConfig(genai.GenerateContentConfig):
        proxy_url: str | None = None  # what a new google-genai might add

    problems = list(undecided(NewerConfig, "GenerateContentConfig"))
    assert problems == ["GenerateContentConfig.proxy_url: reachable from the browser with no "
                        "decision"]


@pytest.mark.parametrize("name", sorted(EVALUATOR_ALIASES))
def test_an_evaluators_other_names_point_at_a_decided_evaluator(name):
    assert f"evaluator:{EVALUATOR_ALIASES[name]}" in BROWSER_FIELDS
    assert registry._ALIASES[name] == EVALUATOR_ALIASES[name]


def test_the_judge_samples_default_is_adks():
    from google.adk.evaluation.eval_metrics import JudgeModelOptions

    assert JudgeModelOptions().num_samples == ADK_DEFAULT_JUDGE_SAMPLES


def test_every_decision_is_one_the_walk_knows():
    known = (Allowed, Refused, CodeOptIn, Section, Entries, Rows, AdkCriteria)
    kinds = {type(d).__name__ for fields in BROWSER_FIELDS.values() for d in fields.values()
             if not isinstance(d, known)}
    assert kinds <= {"Number", "Text", "Pattern", "ModelName", "ModelMap", "EvaluatorName",
                     "PotatoEndpoint"}


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["criteria", "final_response_match_v2", "judge_model_options",
                         "judgeModelConfig", "http_options", "params", "evaluator", "name",
                         "evaluators", "model", "config", "ai_support", "threshold", "x"]),
        inner, max_size=3),
    max_leaves=12)


@pytest.mark.slow
@settings(max_examples=40, deadline=None)
@given(evaluator=JSON, criteria=JSON)
def test_any_shape_in_the_free_form_sections_is_refused_or_allowed_never_crashes(
        evaluator, criteria):
    """Whatever a hostile upload puts in a free-form section, the walk answers with a refusal
    (a ConfigError naming the field) or lets it through; never another exception."""
    data = {"name": "x", "critic": {"evaluator": evaluator, "adk_metrics": criteria}}
    try:
        check_browser_project_fields(data, "fuzz.yaml")
    except ConfigError as refused:
        assert refused.where.startswith("fuzz.yaml: ")


def test_a_model_map_from_the_browser_names_providers_never_addresses(monkeypatch):
    """``agent.models`` (a folder's per-agent overrides, with the code opt-in) is checked model
    by model like any other model name."""
    monkeypatch.setenv("STUDIO_ALLOW_CODE_REFS", "1")
    data = {"name": "x", "agent": {"folder": "my_agent",
                                   "models": {"searcher": "openai/http://127.0.0.1:9/x"}}}
    with pytest.raises(ConfigError, match=r"agent\.models\.searcher"):
        check_browser_project_fields(data, "p.yaml")
    check_browser_project_fields({"name": "x", "agent": {
        "folder": "my_agent", "models": {"searcher": "scripted/demo"}}}, "p.yaml")
