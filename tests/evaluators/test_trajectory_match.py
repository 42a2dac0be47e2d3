"""TrajectoryMatchEvaluator: modes, argument modes, overrides, matching, edge cases."""

from __future__ import annotations

import pytest

from studio.evaluators import TrajectoryMatchEvaluator
from studio.evaluators._matching import args_match, maximum_matching


def call(name, **args):
    return {"name": name, "args": args}


def openai(*calls):
    """An OpenAI-style message list with one tool call per assistant message."""
    import json

    return [{"role": "assistant", "content": None, "tool_calls": [
        {"id": str(i), "type": "function",
         "function": {"name": c["name"], "arguments": json.dumps(c["args"])}}]}
        for i, c in enumerate(calls)]


def score(mode, agent, reference, **options):
    return TrajectoryMatchEvaluator(mode=mode, **options).evaluate(
        outputs=agent, reference_outputs=reference)


def test_seed_example_unordered_subset_with_override():
    agent_trace = openai(call("lookup", id=1), call("search", query="cats", page=2))
    gold_trace = [
        {"speaker": "Agent (Action)", "text": 'search(query="dogs")'},
        {"speaker": "Agent (Action)", "text": 'lookup(id=1, verbose=true)'},
    ]
    ev = TrajectoryMatchEvaluator(
        mode="unordered",
        tool_args_match_mode="subset",
        tool_args_match_overrides={"search": "ignore"},
    )
    result = ev.evaluate(outputs=agent_trace, reference_outputs=gold_trace)
    assert result.score == 1.0
    assert result.value is True
    assert result.metadata["agent_tools"] == ["lookup", "search"]
    assert result.metadata["reference_tools"] == ["search", "lookup"]
    # Without the override, search's arguments must fit the reference's and do not.
    strict_args = TrajectoryMatchEvaluator(mode="unordered", tool_args_match_mode="subset")
    assert strict_args.evaluate(outputs=agent_trace, reference_outputs=gold_trace).score == 0.0


def test_strict_requires_same_calls_in_same_order():
    a, b = call("search", q="x"), call("book", id=1)
    assert score("strict", [a, b], [a, b]).score == 1.0
    swapped = score("strict", [b, a], [a, b])
    assert swapped.score == 0.0
    assert swapped.metadata["first_mismatch"] == 0
    assert "call 1 is book(id=1), expected search(q='x')" in swapped.comment
    shorter = score("strict", [a], [a, b])
    assert shorter.score == 0.0
    assert shorter.metadata["first_mismatch"] == 1
    assert "1 agent tool calls vs 2 in the reference" in shorter.comment


def test_unordered_accepts_any_order_but_not_extra_or_missing_calls():
    a, b, c = call("search", q="x"), call("book", id=1), call("email", to="me")
    assert score("unordered", [b, a], [a, b]).score == 1.0
    extra = score("unordered", [a, b, c], [a, b])
    assert extra.score == 0.0
    assert "3 agent tool calls vs 2" in extra.comment
    different = score("unordered", [a, c], [a, b])
    assert different.score == 0.0
    assert different.metadata["unmatched_reference_calls"] == ["book(id=1)"]
    assert different.metadata["unmatched_agent_calls"] == ["email(to='me')"]


def test_subset_allows_fewer_calls_but_no_tool_outside_the_reference():
    a, b, c = call("search", q="x"), call("book", id=1), call("email", to="me")
    assert score("subset", [b], [a, b]).score == 1.0
    assert score("subset", [], [a, b]).score == 1.0
    outside = score("subset", [a, c], [a, b])
    assert outside.score == 0.0
    assert "agent calls not in the reference: email(to='me')" in outside.comment


def test_superset_requires_every_reference_call_and_allows_extras():
    a, b, c = call("search", q="x"), call("book", id=1), call("email", to="me")
    assert score("superset", [c, b, a], [a, b]).score == 1.0
    missing = score("superset", [a, c], [a, b])
    assert missing.score == 0.0
    assert "reference calls not made: book(id=1)" in missing.comment


def test_duplicate_calls_count_as_a_multiset():
    a = call("search", q="x")
    assert score("unordered", [a, a], [a]).score == 0.0
    assert score("superset", [a, a], [a]).score == 1.0
    assert score("subset", [a, a], [a]).score == 0.0
    assert score("unordered", [a, a], [a, a]).score == 1.0


@pytest.mark.parametrize(("mode", "agent_args", "ref_args", "expected"), [
    ("exact", {"q": "x"}, {"q": "x"}, True),
    ("exact", {"q": "x"}, {"q": "x", "k": 1}, False),
    ("ignore", {"q": "x"}, {"totally": "different"}, True),
    ("subset", {"q": "x"}, {"q": "x", "k": 1}, True),
    ("subset", {"q": "x", "k": 2}, {"q": "x", "k": 1}, False),
    ("superset", {"q": "x", "k": 1}, {"q": "x"}, True),
    ("superset", {"q": "x"}, {"q": "x", "k": 1}, False),
    ("subset", {}, {"q": "x"}, True),
    ("superset", {"q": ["a", "b"], "f": {"x": 1}}, {"q": ["a", "b"]}, True),
])
def test_argument_modes(mode, agent_args, ref_args, expected):
    assert args_match(agent_args, ref_args, mode) is expected
    result = score("strict", [call("t", **agent_args)], [call("t", **ref_args)],
                   tool_args_match_mode=mode)
    assert result.value is expected


def test_overrides_loosen_one_tool_while_others_stay_exact():
    agent = [call("search", q="anything"), call("book", id=2)]
    reference = [call("search", q="x"), call("book", id=1)]
    ev = TrajectoryMatchEvaluator(tool_args_match_overrides={"search": "ignore"})
    result = ev.evaluate(outputs=agent, reference_outputs=reference)
    assert result.score == 0.0
    assert "book(id=2), expected book(id=1)" in result.comment
    agent[1] = call("book", id=1)
    assert ev.evaluate(outputs=agent, reference_outputs=reference).score == 1.0


def _greedy_matches(agent, reference, mode):
    """What a greedy matcher (Potato's) does: take the first compatible unused call."""
    free = list(range(len(reference)))
    for a in agent:
        hit = next((j for j in free if reference[j]["name"] == a["name"]
                    and args_match(a["args"], reference[j]["args"], mode)), None)
        if hit is None:
            return False
        free.remove(hit)
    return True


def test_unordered_finds_a_matching_where_greedy_fails():
    reference = [call("search", q="x", lang="en"), call("search", q="x")]
    agent = [call("search", q="x"), call("search", q="x", lang="en")]
    # The first agent call fits both reference calls; greedy hands it the one the second needs.
    assert _greedy_matches(agent, reference, "subset") is False
    result = score("unordered", agent, reference, tool_args_match_mode="subset")
    assert result.score == 1.0
    assert result.metadata["matched"] == 2


def test_superset_finds_a_matching_where_greedy_fails():
    reference = [call("search", q="x"), call("search", q="x", lang="en")]
    agent = [call("search", q="x", lang="en", page=1), call("search", q="x")]
    assert score("superset", agent, reference, tool_args_match_mode="superset").score == 1.0


def test_maximum_matching_on_a_chain_of_augmenting_paths():
    # left i fits right i and i+1; seeded greedily, left 0 takes right 0 ... a perfect matching
    # exists only by shifting everyone: left 3 fits right 0 only.
    adjacency = [[0, 1], [1, 2], [2, 3], [0]]
    partners = maximum_matching(adjacency, 4)
    assert sorted(partners) == [0, 1, 2, 3]
    assert all(partners[i] in adjacency[i] for i in range(4))


def test_maximum_matching_reports_unmatchable_vertices():
    assert maximum_matching([[0], [0], []], 1).count(None) == 2


def test_empty_trajectories():
    assert score("strict", [], []).score == 1.0
    assert "neither trajectory has tool calls" in score("unordered", [], []).comment
    assert score("strict", [], [call("a")]).score == 0.0
    assert score("superset", [], [call("a")]).score == 0.0
    assert score("subset", [], [call("a")]).score == 1.0
    assert score("superset", [call("a")], []).score == 1.0


def test_text_only_trajectories_have_no_tool_calls():
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    assert score("strict", messages, []).score == 1.0


def test_none_outputs_or_reference_cannot_be_evaluated():
    none_output = score("strict", None, [call("a")])
    assert none_output.score is None
    assert none_output.comment == "no agent trajectory (it is None)"
    none_reference = score("strict", [call("a")], None)
    assert none_reference.score is None
    assert none_reference.comment == "no reference trajectory (it is None)"


def test_unknown_shape_is_none_with_a_comment():
    result = score("strict", {"weird": True}, [call("a")])
    assert result.score is None
    assert result.comment.startswith("agent trajectory: unknown trajectory shape: a dict with keys")
    assert result.metadata["error_kind"] == "trajectory_shape"


def test_studio_trace_against_gold_rows():
    trace = {"events": [
        {"author": "agent", "type": "tool_call", "id": "1", "name": "search", "args": {"q": "x"}},
        {"author": "agent", "type": "tool_result", "id": "1", "name": "search", "result": "ok"},
        {"author": "agent", "type": "text", "text": "done"},
    ], "tool_calls": [], "state_delta": {}, "usage": {}}
    assert score("strict", trace, ['search(q="x")']).score == 1.0


def test_bad_modes_name_the_allowed_values():
    with pytest.raises(ValueError, match="mode must be one of strict, unordered, subset, "
                                         "superset; got 'fuzzy'"):
        TrajectoryMatchEvaluator(mode="fuzzy")
    with pytest.raises(ValueError, match="tool_args_match_mode must be one of exact, ignore, "
                                         "subset, superset; got 'loose'"):
        TrajectoryMatchEvaluator(tool_args_match_mode="loose")
    with pytest.raises(ValueError, match=r"tool_args_match_overrides\['search'\] must be one of"):
        TrajectoryMatchEvaluator(tool_args_match_overrides={"search": "nope"})


def test_evaluators_are_callable():
    ev = TrajectoryMatchEvaluator()
    assert ev(outputs=[call("a")], reference_outputs=[call("a")]).score == 1.0
