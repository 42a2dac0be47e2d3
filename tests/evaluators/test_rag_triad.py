"""RAG triad with scripted judges: claim decomposition, relevance scores, missing inputs."""

from __future__ import annotations

import pytest

from studio.evaluators import (
    AnswerRelevanceEvaluator,
    ContextRelevanceEvaluator,
    GroundednessEvaluator,
    rag_triad,
)

QUESTION = "When was the Eiffel Tower built and how tall is it?"
DOCS = ["The Eiffel Tower was built from 1887 to 1889.", "It is located in Paris."]
ANSWER = "It was built in 1889 and is 330 metres tall."


def test_seed_example_groundedness_claims(script):
    model = script({"claims": [
        {"claim": "It was built in 1889.", "supported": True},
        {"claim": "It is 330 metres tall.", "supported": False},
    ], "reasoning": "Height is not in the context."})
    triad = rag_triad({"model": model})
    assert set(triad) == {"context_relevance", "groundedness", "answer_relevance"}
    g = triad["groundedness"].evaluate(inputs={"question": QUESTION, "context": DOCS},
                                       outputs=ANSWER)
    assert g.score == 0.5
    assert g.value == "1/2 claims supported"
    assert g.metadata["claims"] == [
        {"claim": "It was built in 1889.", "supported": True},
        {"claim": "It is 330 metres tall.", "supported": False},
    ]
    assert "unsupported: It is 330 metres tall." in g.comment
    request = script.requests(model)[-1]
    assert "[1] The Eiffel Tower was built from 1887 to 1889." in request.last_user
    assert "<context-" in request.last_user and "<output-" in request.last_user


def test_context_may_come_as_a_keyword(script):
    model = script({"claims": [{"claim": "Built in 1889", "supported": True}],
                     "reasoning": ""})
    g = GroundednessEvaluator(model=model).evaluate(inputs=QUESTION, outputs=ANSWER,
                                                    context="Built 1887-1889.")
    assert g.score == 1.0
    assert "Built 1887-1889." in script.requests(model)[-1].last_user


def test_unreadable_claim_verdicts_are_left_out_not_counted_as_unsupported(script):
    model = script({"claims": [
        {"claim": "A", "supported": True},
        {"claim": "B", "supported": "unclear"},
        {"claim": "C", "supported": "no"},
    ], "reasoning": ""})
    g = GroundednessEvaluator(model=model).evaluate(inputs=QUESTION, outputs=ANSWER,
                                                    context=DOCS)
    assert g.score == 0.5
    assert g.metadata["unjudged"] == 1
    assert g.metadata["claims"][1] == {"claim": "B", "supported": None}


def test_no_claims_is_none_not_zero(script):
    model = script({"claims": [], "reasoning": "nothing to check"})
    g = GroundednessEvaluator(model=model).evaluate(inputs=QUESTION, outputs=ANSWER,
                                                    context=DOCS)
    assert g.score is None
    assert g.comment == "the judge extracted no claims"


def test_groundedness_needs_an_answer_and_context(script):
    model = script({"claims": [], "reasoning": ""})
    ev = GroundednessEvaluator(model=model)
    assert ev.evaluate(inputs=QUESTION, outputs="", context=DOCS).comment == (
        "empty answer: no claims to check")
    assert ev.evaluate(inputs=QUESTION, outputs=None, context=DOCS).score is None
    assert ev.evaluate(inputs=QUESTION, outputs=ANSWER).comment == "no context provided"
    assert script.requests(model) == []


def test_context_relevance(script):
    model = script({"score": 0.8, "reasoning": "Covers the date, not the height."})
    result = ContextRelevanceEvaluator(model=model).evaluate(
        inputs={"question": QUESTION, "context": DOCS})
    assert result.score == 0.8
    assert result.comment == "Covers the date, not the height."
    assert ContextRelevanceEvaluator(model=model).evaluate(inputs=QUESTION).score is None


def test_answer_relevance(script):
    model = script({"score": 1.0, "reasoning": "Answers both parts."})
    result = AnswerRelevanceEvaluator(model=model).evaluate(inputs=QUESTION, outputs=ANSWER)
    assert result.score == 1.0
    assert "Answer:\n<output-" in script.requests(model)[-1].last_user
    assert AnswerRelevanceEvaluator(model=model).evaluate(inputs="", outputs=ANSWER).comment == (
        "no question provided")


@pytest.mark.parametrize(("reply", "comment"), [
    ({"score": 1.5, "reasoning": ""}, "judge score 1.5 is outside [0, 1]"),
    ({"score": "seven", "reasoning": ""}, "judge score 'seven' is not a number from 0 to 1"),
    ({"reasoning": "forgot"}, "judge reply has no 'score'"),
])
def test_bad_relevance_scores_are_none_with_the_reason(script, reply, comment):
    model = script(reply)
    result = AnswerRelevanceEvaluator(model=model).evaluate(inputs=QUESTION, outputs=ANSWER)
    assert result.score is None
    assert result.comment == comment


def test_custom_keys(script):
    model = script({"score": 0.4, "reasoning": ""})
    ev = ContextRelevanceEvaluator(model=model, question_key="q", context_key="docs")
    assert ev.evaluate(inputs={"q": QUESTION, "docs": DOCS}).score == 0.4
