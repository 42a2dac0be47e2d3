"""The ``few_shot`` component: demonstrations reach the agent's model as real prior turns, are
evolved by the demo selector (training examples only, rotating, outside the minibatch) and
round-trip through live agents and project files."""

from __future__ import annotations

import json

import pytest

from studio.engine.policies.pool import pool_scores
from studio.engine.propose.demos import DEMO_COUNT, propose_demos
from studio.engine.run.agent_texts import apply_components, extract_components, validate_proposal
from studio.model.errors import ConfigError, ProjectFileError, ProposalError
from studio.model.limits import MAX_DEMOS
from studio.model.records import (
    AgentSpec,
    CriticSpec,
    Demo,
    Example,
    ProposalStatus,
    ReflectionSpec,
    RunSpec,
    Split,
    Trial,
    TrialPhase,
    demos_from_text,
    demos_to_text,
)
from studio.model.workflow import sequential
from studio.projects.files import parse_project
from studio.runtime.agents import build_agent
from studio.runtime.demos import FewShotDemos, demos_of
from studio.runtime.execution import AgentExecutor
from studio.runtime.workflows import build_workflow

CITIES = {"France": "Paris", "Japan": "Tokyo", "Italy": "Rome", "Spain": "Madrid",
          "Peru": "Lima", "Chile": "Santiago", "Egypt": "Cairo", "Kenya": "Nairobi"}
DEMOS = [Demo(input="What is the capital of Italy?", output="Rome"),
         Demo(input="What is the capital of Spain?", output="Madrid")]
CITY_CHECKS = {"name": "city_check", "evaluators": [
    {"name": "contains", "label": "correct city", "weight": 1},
    {"name": "regex_match", "label": "just the city", "weight": 1,
     "params": {"pattern": r"^\W*[A-Za-z]+(?:[ -][A-Za-z]+)?\W*$"}}]}


def city_of(text: str) -> str:
    return CITIES[text.rsplit(" ", 1)[-1].rstrip("?")]


def terse_after_demos(request) -> str:
    """Answers with the bare city only when earlier assistant turns show that form: the
    scripted stand-in of SmolLM2, which copies demonstrated turns but ignores instructions."""
    shown = any(m["role"] == "assistant" for m in request.messages)
    city = city_of(request.last_user)
    return city if shown else f"The capital of that country is {city}."


def roles(request) -> list[tuple[str, str]]:
    return [(m["role"], m["content"]) for m in request.messages if m["role"] != "system"]


def ask(agent, question: str) -> str:
    return AgentExecutor().execute_sync(agent, question).output


# --------------------------------------------------------------------------- at run time


def test_demos_reach_the_model_as_prior_user_and_assistant_turns(script):
    model = script(terse_after_demos)
    agent = build_agent(AgentSpec(name="answerer", model=model, instruction="Answer.",
                                  few_shot=DEMOS))
    assert ask(agent, "What is the capital of Japan?") == "Tokyo"
    [request] = script.requests(model)
    assert roles(request) == [("user", "What is the capital of Italy?"), ("assistant", "Rome"),
                              ("user", "What is the capital of Spain?"), ("assistant", "Madrid"),
                              ("user", "What is the capital of Japan?")]
    assert "Rome" not in request.system  # turns, not instruction text
    plain = build_agent(AgentSpec(name="answerer", model=model, instruction="Answer."))
    assert plain.before_model_callback is None
    assert ask(plain, "What is the capital of Japan?") == "The capital of that country is Tokyo."


def test_in_a_workflow_only_that_agent_sees_its_demos(script):
    drafter, writer = script(lambda r: f"Draft: {r.last_user}"), script(terse_after_demos)
    flow = build_workflow([AgentSpec(name="drafter", model=drafter, instruction="Draft."),
                           AgentSpec(name="writer", model=writer, instruction="Answer.",
                                     few_shot=DEMOS[:1])],
                          sequential(["drafter", "writer"]))
    AgentExecutor().execute_sync(flow, "What is the capital of Japan?")
    [drafted], [written] = script.requests(drafter), script.requests(writer)
    assert [role for role, _ in roles(drafted)] == ["user"]
    assert roles(written)[:2] == [("user", "What is the capital of Italy?"),
                                  ("assistant", "Rome")]


def test_apply_and_extract_round_trip_on_live_agents_keeping_user_callbacks(script):
    def guard(callback_context, llm_request):
        return None

    agent = build_agent(AgentSpec(name="answerer", model=script("x"), instruction="Answer."))
    agent.before_model_callback = guard
    seed = extract_components(agent, ["few_shot", "instruction"])
    assert json.loads(seed["few_shot"]) == []
    child = apply_components(agent, {**seed, "few_shot": demos_to_text(DEMOS)})
    assert agent.before_model_callback is guard  # the original is never mutated
    assert child.before_model_callback == [FewShotDemos(DEMOS), guard]
    assert extract_components(child, ["few_shot"])["few_shot"] == demos_to_text(DEMOS)
    grandchild = apply_components(child, {"few_shot": demos_to_text(DEMOS[1:])})
    assert demos_of(grandchild) == DEMOS[1:]
    assert grandchild.before_model_callback[1] is guard
    assert apply_components(child, {"few_shot": "[]"}).before_model_callback is guard


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize("text, where, words", [
    ("not json", "writer.few_shot", "not valid JSON"),
    ('{"input": "q", "output": "a"}', "writer.few_shot", "must be a list"),
    (json.dumps([{"input": "q", "output": "a"}] * (MAX_DEMOS + 1)), "writer.few_shot",
     f"the limit is {MAX_DEMOS}"),
    (json.dumps([{"input": "q", "output": "a"}, {"input": "q", "output": "a" * 1001}]),
     "writer.few_shot[1]", "output"),
    (json.dumps([{"input": "q"}]), "writer.few_shot[0]", "output"),
    (json.dumps([{"input": "q", "output": "a", "html": "<b>"}]), "writer.few_shot[0]", "html"),
])
def test_bad_demos_are_refused_naming_what_and_where(text, where, words):
    with pytest.raises(ConfigError) as caught:
        demos_from_text(text, where="writer.few_shot")
    assert caught.value.where == where and words in caught.value.message
    with pytest.raises(ProposalError) as refused:
        validate_proposal("writer.few_shot", text, "[]", set())
    assert refused.value.reason == "invalid_demos" and where in str(refused.value)


def test_a_proposal_is_canonical_and_the_parents_demos_are_unchanged():
    compact = json.dumps([d.model_dump() for d in DEMOS])
    assert validate_proposal("few_shot", compact, "[]", set()) == demos_to_text(DEMOS)
    with pytest.raises(ProposalError) as caught:
        validate_proposal("few_shot", compact, demos_to_text(DEMOS), set())
    assert caught.value.reason == "unchanged"


# --------------------------------------------------------------------------- the selector

ROWS = [("France", Split.TRAIN), ("Japan", Split.TRAIN), ("Italy", Split.TRAIN),
        ("Spain", Split.TRAIN), ("Peru", Split.VAL), ("Chile", Split.TEST),
        ("Egypt", Split.TRAIN), ("Kenya", Split.TRAIN)]
EXAMPLES = {i: Example(id=i, run_id="r", split=split, index=i,
                       data={"question": f"What is the capital of {country}?",
                             "expected": CITIES[country]})
            for i, (country, split) in enumerate(ROWS)}


def trial(example_id: int) -> Trial:
    example = EXAMPLES[example_id]
    return Trial(run_id="r", candidate_id=1, example_id=example_id, split=example.split,
                 example_index=example.index, phase=TrialPhase.PARENT,
                 input_text=example.data["question"], output="The capital is ...", score=0.5)


def shown(proposal) -> list[str]:
    return [d.output for d in demos_from_text(proposal.text)]


def test_the_selector_shows_training_examples_outside_the_minibatch_and_says_which():
    minibatch = [trial(0), trial(1)]
    first = propose_demos([], minibatch, EXAMPLES, input_key="question", iteration=1)
    assert shown(first) == ["Rome", "Madrid"]  # France and Japan are in the minibatch
    assert "training example #2: 'What is the capital of Italy?' -> 'Rome'" in first.reasoning
    assert "outside this minibatch" in first.reasoning
    for iteration in range(1, 9):
        outputs = shown(propose_demos([], minibatch, EXAMPLES, input_key="question",
                                      iteration=iteration))
        assert len(outputs) == DEMO_COUNT
        assert not {"Lima", "Santiago", "Paris", "Tokyo"} & set(outputs)  # val, test, minibatch


def test_the_selector_rotates_deterministically_and_skips_what_was_tried():
    minibatch = [trial(0)]
    windows = [shown(propose_demos([], minibatch, EXAMPLES, input_key="question", iteration=i))
               for i in (1, 2, 3)]
    assert windows == [["Tokyo", "Rome"], ["Madrid", "Cairo"], ["Nairobi", "Tokyo"]]
    assert windows[0] == shown(propose_demos([], minibatch, EXAMPLES, input_key="question"))
    parents = demos_from_text(propose_demos([], minibatch, EXAMPLES, input_key="question").text)
    again = propose_demos(parents, minibatch, EXAMPLES, input_key="question", iteration=1)
    assert shown(again) == ["Rome", "Madrid"] and "moved 1 on" in again.reasoning
    assert propose_demos([], minibatch, EXAMPLES, input_key="question",
                         tried=lambda _text: True) is None


def test_minibatch_examples_fill_in_only_when_too_few_others_remain():
    small = {i: EXAMPLES[i] for i in (0, 1, 4)}
    proposal = propose_demos([], [trial(0)], small, input_key="question")
    assert shown(proposal) == ["Tokyo", "Paris"]
    assert "in this minibatch: too few others" in proposal.reasoning
    assert propose_demos([], [], {4: EXAMPLES[4], 5: EXAMPLES[5]}, input_key="question") is None


# --------------------------------------------------------------------------- in a run

CAPITALS = [{"question": f"What is the capital of {c}?", "expected": CITIES[c]}
            for c in ("France", "Japan", "Italy", "Spain")]
VALSET = [{"question": f"What is the capital of {c}?", "expected": CITIES[c]}
          for c in ("Egypt", "Kenya")]


def test_a_run_evolving_few_shot_accepts_demos_and_the_val_mean_rises(runner, store, script):
    writer, reflector = script(terse_after_demos), script("Ignored.")
    spec = RunSpec(agent=AgentSpec(name="answerer", model=writer, instruction="Answer."),
                   critic=CriticSpec(type="evaluator", name="city_check",
                                     evaluator=CITY_CHECKS),
                   reflection=ReflectionSpec(model=reflector, strategy="llm"),
                   components=["few_shot"], input_key="question")
    run_id, _ = runner.run(spec, CAPITALS, VALSET, max_iterations=1, minibatch_size=2)
    [proposal] = store.proposals(run_id)
    assert proposal.status is ProposalStatus.ACCEPTED
    assert "Demo selector (no model)" in proposal.reasoning
    minibatch = {t.input_text for t in store.trials(run_id) if t.phase is TrialPhase.CHILD}
    assert not minibatch & {d.input for d in demos_from_text(proposal.text)}
    assert not {d.input for d in demos_from_text(proposal.text)} & {v["question"]
                                                                     for v in VALSET}
    pool = pool_scores(store, store.get_run(run_id))
    assert pool.means[pool.pooled_ids[0]] == 0.5 and pool.best_score == 1.0
    assert script.requests(reflector) == []  # no model wrote the demos


# --------------------------------------------------------------------------- project files

PROJECT = """name: p
agent:
  name: answerer
  instruction: Answer.
  few_shot:
    - {input: "What is the capital of Italy?", output: Rome}
components: [few_shot, instruction]
dataset: {train: [{question: q, expected: a}], input_column: question}
"""


def test_a_project_file_declares_demos_and_evolves_them():
    project = parse_project(PROJECT)
    spec = project.run_spec()
    assert spec.components == ["few_shot", "instruction"]
    assert spec.agent.few_shot == DEMOS[:1]
    agent = build_agent(spec.agent)
    assert demos_of(agent) == DEMOS[:1]
    assert json.loads(extract_components(agent, ["few_shot"])["few_shot"]) == [
        {"input": "What is the capital of Italy?", "output": "Rome"}]


def test_a_project_file_with_bad_demos_names_the_field():
    bad = PROJECT.replace("output: Rome", "reply: Rome")
    with pytest.raises(ProjectFileError) as caught:
        parse_project(bad, source="p.yaml")
    assert "few_shot" in str(caught.value)
    too_many = PROJECT.replace(PROJECT.splitlines()[5] + "\n",
                               "    - {input: q, output: a}\n" * (MAX_DEMOS + 1))
    with pytest.raises(ProjectFileError) as caught:
        parse_project(too_many, source="p.yaml")
    assert "few_shot" in str(caught.value)
