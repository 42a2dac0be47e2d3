"""Rubric DAG: validation when built, deterministic leaves, path metadata, choice recovery."""

from __future__ import annotations

import copy

import pytest
import yaml

from studio.evaluators import (
    RUBRIC_PRESETS,
    RubricDagError,
    build_evaluator,
    make_rubric_dag,
    validate_rubric_dag,
)
from studio.evaluators.rubric_dag import match_choice
from studio.model.errors import ConfigError

SEED_YAML = """
evaluators:
  - name: rubric_dag
    params:
      dag:
        key: answer_quality
        root: answers
        nodes:
          answers:
            question: "Does the response directly answer the question?"
            choices: [yes, partially, no]
            branches:
              yes: grounded                          # -> next node
              partially: {score: 0.5, label: partial}# -> leaf
              no: {score: 0.0, label: no answer}
          grounded:
            question: "Is the answer well-supported (no fabricated claims)?"
            choices: [yes, no]
            branches:
              yes: {score: 1.0, label: complete}
              no:  {score: 0.7, label: unsourced}
"""


def answers(mapping):
    """A scripted judge answering each rubric question by a phrase of the question."""
    def reply(request):
        for phrase, answer in mapping.items():
            if phrase in request.system:
                return answer
        raise AssertionError(f"unexpected question in {request.system!r}")
    return reply


def test_seed_example_preset_scores_one_and_records_the_path(script):
    model = script(answers({
        "directly and correctly answer": {"choice": "yes", "reasoning": "It says Paris."},
        "well-supported": {"choice": "yes", "reasoning": "Cites gouvernement.fr."},
    }))
    ev = make_rubric_dag({"model": model}, preset="answer_quality")
    result = ev.evaluate(inputs="Capital of France?", outputs="Paris [gouvernement.fr].")
    assert result.score == 1.0
    assert result.value == "correct & grounded"
    assert result.metadata["path"] == [
        {"node": "answers", "question": RUBRIC_PRESETS["answer_quality"]["nodes"]["answers"][
            "question"], "choice": "yes", "reasoning": "It says Paris."},
        {"node": "grounded", "question": RUBRIC_PRESETS["answer_quality"]["nodes"]["grounded"][
            "question"], "choice": "yes", "reasoning": "Cites gouvernement.fr."},
    ]
    assert result.metadata["leaf"] == {"score": 1.0, "label": "correct & grounded"}
    assert result.comment.startswith("correct & grounded (answers=yes -> grounded=yes)")
    first = script.requests(model)[0]
    assert first.json_schema["properties"]["choice"]["enum"] == ["yes", "partially", "no"]
    assert "Capital of France?" in first.last_user
    assert "<output-" in first.last_user


def test_seed_yaml_config_builds_through_the_registry(script):
    config = yaml.safe_load(SEED_YAML)["evaluators"][0]
    # YAML 1.1 reads yes/no as booleans; they must come back as the choices "yes"/"no".
    assert True in config["params"]["dag"]["nodes"]["answers"]["branches"]
    model = script(answers({"directly answer": {"choice": "yes", "reasoning": ""},
                             "well-supported": {"choice": "no", "reasoning": "no source"}}))
    ev = build_evaluator(config["name"], {**config["params"], "model": model})
    result = ev.evaluate(inputs="Capital of France?", outputs="Paris.")
    assert result.score == 0.7
    assert result.value == "unsourced"
    assert [step["choice"] for step in result.metadata["path"]] == ["yes", "no"]


def test_leaf_scores_are_deterministic_whatever_the_reasoning(script):
    model = script(answers({"directly and correctly": {"choice": "partially",
                                                        "reasoning": "I would say 0.93"}}))
    ev = make_rubric_dag(preset="answer_quality", model=model)
    scores = {ev.evaluate(inputs="q", outputs="a").score for _ in range(3)}
    assert scores == {0.5}


def test_choice_recovered_from_a_reply_that_is_not_json(script):
    model = script(answers({"directly and correctly": "Partially. It hedges a lot."}))
    result = make_rubric_dag(preset="answer_quality", model=model).evaluate(
        inputs="q", outputs="a")
    assert result.score == 0.5
    assert result.metadata["path"][0]["choice"] == "partially"


def test_reply_naming_no_valid_choice_is_none_with_the_path_so_far(script):
    model = script(answers({"directly and correctly": {"choice": "yes", "reasoning": "ok"},
                             "well-supported": {"choice": "perhaps", "reasoning": "?"}}))
    result = make_rubric_dag(preset="answer_quality", model=model).evaluate(
        inputs="q", outputs="a")
    assert result.score is None
    assert "judge gave no valid choice at node 'grounded' (allowed: yes, no" in result.comment
    assert [s["node"] for s in result.metadata["path"]] == ["answers"]


def test_ambiguous_plain_text_reply_is_not_guessed(script):
    model = script("Maybe yes, maybe no.")
    result = make_rubric_dag(preset="answer_quality", model=model).evaluate(
        inputs="q", outputs="a")
    assert result.score is None


def test_judge_failure_and_none_output(script):
    def broken(request):
        raise RuntimeError("down")

    ev = make_rubric_dag(preset="answer_quality", model=script(broken))
    failed = ev.evaluate(inputs="q", outputs="a")
    assert failed.score is None
    assert failed.comment.startswith("judge call failed:")
    assert failed.metadata["path"] == []
    assert ev.evaluate(inputs="q", outputs=None).comment == "no output to judge (it is None)"


@pytest.mark.parametrize(("text", "expected"), [
    ("yes", "yes"), ("  \"No.\" ", "no"), ("PARTIALLY", "partially"),
    ("Yes - the answer is direct.", "yes"), ("Choice: no", "no"),
    ("It partially answers.", "partially"), ("I am not sure", None), ("yes and no", "yes"),
    ("The answer: no, because", "no"), ("", None), ("I know nothing", None),
])
def test_match_choice(text, expected):
    assert match_choice(text, ["yes", "partially", "no"]) == expected


def _dag():
    return copy.deepcopy(RUBRIC_PRESETS["answer_quality"])


def _error(dag) -> RubricDagError:
    with pytest.raises(RubricDagError) as info:
        validate_rubric_dag(dag)
    return info.value


def test_cycle_is_rejected_when_built_naming_the_nodes():
    dag = _dag()
    dag["nodes"]["grounded"]["branches"]["no"] = "answers"
    error = _error(dag)
    assert str(error) == "rubric_dag: the rubric DAG has a cycle: answers -> grounded -> answers"
    assert error.node == "answers"


def test_self_loop_is_a_cycle():
    dag = _dag()
    dag["nodes"]["grounded"]["branches"]["no"] = "grounded"
    assert "cycle: grounded -> grounded" in str(_error(dag))


def test_unknown_node_is_rejected():
    dag = _dag()
    dag["nodes"]["answers"]["branches"]["yes"] = "grounde"
    error = _error(dag)
    assert "node 'answers' branch 'yes' leads to unknown node 'grounde'" in str(error)
    assert error.node == "answers"


def test_node_without_choices():
    dag = _dag()
    dag["nodes"]["grounded"]["choices"] = []
    assert "node 'grounded' has no choices" in str(_error(dag))


def test_choice_without_branch():
    dag = _dag()
    del dag["nodes"]["answers"]["branches"]["partially"]
    assert "choice 'partially' of node 'answers' has no branch" in str(_error(dag))


def test_branch_for_an_unknown_choice():
    dag = _dag()
    dag["nodes"]["grounded"]["branches"]["maybe"] = {"score": 0.5}
    assert "node 'grounded' has a branch for 'maybe', which is not one of its choices (yes, no)" \
        in str(_error(dag))


@pytest.mark.parametrize("bad", [1.5, -0.1, "high", True])
def test_leaf_score_outside_unit_interval(bad):
    dag = _dag()
    dag["nodes"]["grounded"]["branches"]["no"] = {"score": bad, "label": "x"}
    error = _error(dag)
    assert f"leaf 'no' of node 'grounded' has score {bad!r}, outside [0, 1]" in str(error)
    assert error.node == "grounded"


def test_root_missing_question_missing_and_no_nodes():
    dag = _dag()
    dag["root"] = "start"
    assert "root 'start' is not one of the nodes (answers, grounded)" in str(_error(dag))
    dag = _dag()
    dag["nodes"]["grounded"]["question"] = ""
    assert "node 'grounded' has no question" in str(_error(dag))
    assert "has no nodes" in str(_error({"root": "a", "nodes": {}}))
    assert "must be a mapping" in str(_error(["not", "a", "dag"]))
    dag = _dag()
    dag["nodes"]["answers"]["choices"] = ["yes", "yes", "no"]
    assert "lists choice 'yes' twice" in str(_error(dag))


def test_errors_surface_when_building_the_evaluator():
    dag = _dag()
    dag["nodes"]["grounded"]["branches"]["no"] = "answers"
    with pytest.raises(RubricDagError, match="cycle"):
        make_rubric_dag(dag=dag)
    with pytest.raises(RubricDagError, match="cycle"):
        build_evaluator("rubric_dag", {"dag": dag})


def test_unknown_preset_and_missing_dag():
    with pytest.raises(ConfigError, match="unknown rubric preset 'nope'; presets: answer_quality"):
        make_rubric_dag(preset="nope")
    with pytest.raises(ConfigError, match=r"give dag=\.\.\. or preset=\.\.\."):
        make_rubric_dag()


def test_presets_are_valid_and_not_mutated_by_use():
    for name, dag in RUBRIC_PRESETS.items():
        assert validate_rubric_dag(dag).key == name
    before = copy.deepcopy(RUBRIC_PRESETS)
    make_rubric_dag(preset="answer_quality")
    assert before == RUBRIC_PRESETS
