"""The registry: names to evaluators, declarative YAML configs, clear errors."""

from __future__ import annotations

import pytest
import yaml

from studio.evaluators import (
    EvaluatorResult,
    ExactMatch,
    TrajectoryMatchEvaluator,
    UnknownEvaluatorError,
    build_evaluator,
    build_evaluators,
    list_evaluators,
    register_evaluator,
    unregister_evaluator,
)
from studio.evaluators.base import Evaluator
from studio.model.errors import ConfigError

ISSUE_NAMES = {"trajectory_match", "tool_use", "tool_call_accuracy", "llm_trajectory_judge",
               "exact_match", "contains", "regex_match", "edit_distance", "json_valid",
               "json_schema_match", "embedding_distance", "rubric_dag", "context_relevance",
               "groundedness", "answer_relevance", "agent_as_judge"}


def test_seed_example_build_and_list():
    ev = build_evaluator("trajectory_match", {"mode": "unordered"})
    assert isinstance(ev, TrajectoryMatchEvaluator) and ev.mode == "unordered"
    listed = list_evaluators()
    assert {item["name"] for item in listed} >= ISSUE_NAMES
    assert {"name": "trajectory_match",
            "description": "Deterministic tool-call sequence match"} in listed
    assert [item["name"] for item in listed] == sorted(item["name"] for item in listed)


def test_every_registered_evaluator_builds_with_minimal_params():
    minimal = {"tool_use": {"expected_tool": "search"}, "regex_match": {"pattern": "x"},
               "json_schema_match": {"schema": {"type": "object"}},
               "rubric_dag": {"preset": "answer_quality"},
               "agent_as_judge": {"requirements": ["be kind"]}}
    for name in ISSUE_NAMES:
        assert isinstance(build_evaluator(name, minimal.get(name)), Evaluator), name


def test_alias_for_potatos_embedding_name():
    assert build_evaluator("embedding_similarity").key == "embedding_distance"


def test_unknown_name_lists_the_known_ones():
    with pytest.raises(UnknownEvaluatorError) as info:
        build_evaluator("exact_matsh")
    message = str(info.value)
    assert message.startswith("evaluator: unknown evaluator 'exact_matsh'; known evaluators: ")
    assert "exact_match" in message and "trajectory_match" in message
    assert isinstance(info.value, ConfigError) and isinstance(info.value, KeyError)
    assert info.value.known == sorted(info.value.known)


def test_unknown_parameter_lists_the_accepted_ones():
    with pytest.raises(ConfigError) as info:
        build_evaluator("exact_match", {"case_sensitiv": False})
    assert "evaluator 'exact_match' has no parameter 'case_sensitiv'; accepted: " \
           "case_sensitive, strip, key" in str(info.value)


def test_bad_parameter_value_is_a_config_error():
    with pytest.raises(ConfigError, match="evaluator 'trajectory_match': mode must be one of"):
        build_evaluator("trajectory_match", {"mode": "fuzzy"})
    with pytest.raises(ConfigError, match="regex '\\[' does not compile"):
        build_evaluator("regex_match", {"pattern": "["})
    with pytest.raises(ConfigError, match="params of evaluator 'exact_match' must be a mapping"):
        build_evaluator("exact_match", ["case_sensitive"])
    with pytest.raises(ConfigError, match="evaluator name must be text such as 'exact_match'"):
        build_evaluator({"name": "exact_match"})


def test_register_and_unregister_a_custom_evaluator():
    class Shouting(Evaluator):
        key = "shouting"

        def evaluate(self, *, outputs=None, reference_outputs=None, inputs=None, **kwargs):
            return EvaluatorResult.passed(self.key, str(outputs).isupper())

    register_evaluator("shouting", Shouting, "Output is upper case")
    try:
        assert build_evaluator("shouting").evaluate(outputs="HEY").score == 1.0
        assert {"name": "shouting", "description": "Output is upper case"} in list_evaluators()
        with pytest.raises(ValueError, match="'shouting' is already registered; pass replace=True"):
            register_evaluator("shouting", Shouting)
        register_evaluator("shouting", ExactMatch, replace=True)
        assert isinstance(build_evaluator("shouting"), ExactMatch)
    finally:
        unregister_evaluator("shouting")
    with pytest.raises(UnknownEvaluatorError):
        build_evaluator("shouting")
    with pytest.raises(ValueError, match="evaluator name must be non-empty text"):
        register_evaluator("", Shouting)


def test_declarative_yaml_list():
    config = yaml.safe_load("""
evaluators:
  - name: trajectory_match
    params: {mode: unordered, tool_args_match_mode: subset,
             tool_args_match_overrides: {search: ignore}}
  - name: exact_match
    params: {case_sensitive: false}
  - name: json_valid
""")
    built = build_evaluators(config["evaluators"])
    assert [e.key for e in built] == ["trajectory_match", "exact_match", "json_valid"]
    assert built[0].tool_args_match_overrides == {"search": "ignore"}
    with pytest.raises(ConfigError, match=r"evaluators\[1\]: each entry needs a 'name'"):
        build_evaluators([{"name": "json_valid"}, {"params": {}}])


def test_an_evaluator_registers_itself_with_its_kind_and_the_rules_read_it():
    """One module is a whole evaluator: ``@registered`` names it, describes it and says what
    it checks; the rules reflection asks it for its kind (no list of names elsewhere)."""
    from studio.engine.propose.rules import FailedCheck, rule_text
    from studio.evaluators.base import CheckKind, registered
    from studio.evaluators.registry import evaluator_kind

    @registered("yaml_valid", "Output parses as YAML", CheckKind.JSON)
    class YamlValid(Evaluator):
        def evaluate(self, *, outputs=None, reference_outputs=None, inputs=None, **kwargs):
            return EvaluatorResult.passed("yaml_valid", True)

    try:
        assert {"name": "yaml_valid", "description": "Output parses as YAML"} in list_evaluators()
        assert isinstance(build_evaluator("yaml_valid"), YamlValid)
        assert evaluator_kind("yaml_valid") is CheckKind.JSON
        failed = FailedCheck(label="parses", evaluator="yaml_valid", failed=1, seen=2,
                             feedback="")
        assert rule_text(failed, 0) == rule_text(
            FailedCheck("parses", "json_valid", 1, 2, ""), 0)
        assert rule_text(failed, 0).startswith("Reply with valid JSON only")
    finally:
        unregister_evaluator("yaml_valid")
    assert evaluator_kind("yaml_valid") is CheckKind.OTHER
    assert {evaluator_kind(n) for n in ("exact_match", "contains", "regex_match", "json_valid",
                                        "tool_use", "groundedness")} == set(CheckKind)
