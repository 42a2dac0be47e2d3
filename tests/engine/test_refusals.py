"""A refusal is a typed value with its words (studio.model.refusals.Refusal): the reflection's
records carry it, a skipped iteration and the demo model read it, none parses a sentence."""

from __future__ import annotations

from studio.engine.propose.reflection import fenced_trials
from studio.engine.run.tried import TriedText, skip_reason
from studio.model.records import Proposal, ProposalStatus
from studio.model.refusals import Refusal
from studio.runtime.providers import demo


def test_a_refusal_owns_its_words_and_the_record_carries_it():
    tried = TriedText(3, "Write.", Refusal.REVIEWER, "too long", "alice")
    assert tried.why == "A reviewer rejected the proposed text: too long"
    assert tried.outcome.value == "rejected"
    record = tried.record()["already_tried"]
    assert (record["refusal"], record["outcome"], record["by"]) == \
        ("reviewer rejected", "rejected", "alice")
    assert TriedText(4, "x", Refusal.EDITED_AWAY).why == \
        "A reviewer replaced this text with an edit of their own"
    assert Refusal.REVIEWER.why(None) == "A reviewer rejected the proposed text: no reason given"


def test_a_skipped_iteration_says_rejected_from_the_typed_refusal_not_the_words():
    attempt = Proposal(id=9, run_id="r", iteration=2, parent_id=1, component="instruction",
                       text="Write.", status=ProposalStatus.INVALID,
                       invalid_reason="duplicate of candidate #3 (edited away by bob: it was "
                                      "(rejected before)): the same components were already tried")
    edited = TriedText(5, "Write.", Refusal.EDITED_AWAY, "it was (rejected before)", "bob")
    assert "a text already tried" in skip_reason([attempt], [edited])
    ruled = TriedText(5, "Write.", Refusal.RULE, "no gain", "the acceptance rule")
    assert "a rejected text" in skip_reason([attempt], [ruled])


def test_the_demo_model_honours_only_a_reviewers_refusal():
    why = "A reviewer rejected the proposed text: no season word please"

    def prompt(refusal: Refusal) -> str:
        record = {"already_tried": {"text": "t", "outcome": refusal.outcome,
                                    "refusal": refusal.value, "why": why}}
        return "## Trials\n" + fenced_trials([record])

    season = next(hint for key, _, hint in demo.RULES if key == "season")
    assert season in demo._rejected_hints(prompt(Refusal.REVIEWER))
    assert demo._rejected_hints(prompt(Refusal.INVALID)) == set()
