"""Provenance of every sentence: scripted runs through the real engine (each accepted demo
proposal adds one "Rule:" sentence, so sentences map to iterations exactly), a person's edit,
a rejected proposal, a merge, and the pure walk on constructed records."""

from __future__ import annotations

import pytest

from studio.engine import decide
from studio.engine.policies.evidence import proposal_evidence
from studio.model.errors import ConfigError
from studio.model.records import Candidate, Proposal, ProposalStatus, content_hash
from studio.projects.provenance import (
    EDIT,
    REFLECTION,
    SEED,
    RunLineage,
    UnitOrigin,
    attribute,
    carry,
    load_provenance,
    split_units,
    unit_kind,
)
from studio.views.provenance import blame_frame, blame_lines, blame_summary, printable
from tests.engine import merge_world as world
from tests.engine.conftest import Runner
from tests.helpers import BASE_INSTRUCTION, demo_spec, trainset

THREE_LINES = "Rule: Write exactly three lines (three lines)."
NAME_TOPIC = "Rule: Name the topic in the poem (name the topic)."


@pytest.fixture
def runner(store):
    return Runner(store)


def new_sentences(proposal: Proposal, parent_text: str) -> list[str]:
    old = set(split_units(parent_text, "sentence"))
    return [s for s in split_units(proposal.text, "sentence") if s not in old]


# --------------------------------------------------------------------------- engine runs


def test_each_rule_is_attributed_to_the_iteration_that_added_it(runner, store):
    run_id, _ = runner.run(demo_spec(), trainset(), max_iterations=4, seed=1)
    provenance = load_provenance(store, run_id)
    units = provenance.components["instruction"]
    assert units[0].text == BASE_INSTRUCTION
    assert units[0].origin.kind == SEED and units[0].origin.label(run_id) == "seed (candidate #0)"
    by_text = {u.text: u.origin for u in units}
    candidates = {c.id: c for c in store.candidates(run_id)}
    accepted = store.proposals(run_id, status=ProposalStatus.ACCEPTED)
    assert len(accepted) == 4 and len(units) == 5
    for proposal in accepted:
        [added] = new_sentences(proposal, candidates[proposal.parent_id].components["instruction"])
        origin = by_text[added]
        assert added.startswith("Rule:")
        assert (origin.kind, origin.iteration, origin.proposal_id) == \
            (REFLECTION, proposal.iteration, proposal.id)
        evidence = proposal_evidence(store, proposal)
        assert origin.score.change == pytest.approx(
            (evidence.child_sum - evidence.parent_sum) / evidence.compared)
        assert origin.score.change > 0
        assert origin.label(run_id).startswith(f"it {proposal.iteration} · p{proposal.id} · "
                                               "reflection · +")


@pytest.mark.slow
def test_an_older_candidate_keeps_only_its_own_lineage(runner, store):
    run_id, _ = runner.run(demo_spec(), trainset(), max_iterations=4, seed=1)
    provenance = load_provenance(store, run_id, candidate_index=2)
    texts = [u.text for u in provenance.components["instruction"]]
    assert texts == [BASE_INSTRUCTION, THREE_LINES, NAME_TOPIC]
    assert [u.origin.iteration for u in provenance.components["instruction"]] == [0, 1, 2]
    with pytest.raises(ConfigError, match="has no candidate #9 .it has #0 to #4."):
        load_provenance(store, run_id, candidate_index=9)


def test_a_persons_edit_is_attributed_to_the_person(runner, store):
    run_id, handle = runner.start(demo_spec(), trainset(4), max_iterations=1, review="review")
    seen: set[int] = set()
    first = runner.wait_for_pending(run_id, seen)
    assert first.text.endswith(THREE_LINES)
    edited_text = first.text + "\nAlso use a sensory image. Keep it calm."
    decide(first.id, "edit", edited_text=edited_text, author="ana", store=store)
    edited = runner.wait_for_pending(run_id, seen)
    decide(edited.id, "accept", author="bob", store=store)
    assert handle.wait(30) == "max_iterations"

    provenance = load_provenance(store, run_id)
    origins = {u.text: u.origin for u in provenance.components["instruction"]}
    assert list(origins) == [BASE_INSTRUCTION, THREE_LINES, "Also use a sensory image.",
                             "Keep it calm."]
    reflection, person = origins[THREE_LINES], origins["Keep it calm."]
    assert (reflection.kind, reflection.proposal_id, reflection.by) == \
        (REFLECTION, first.id, "reflection")
    assert (person.kind, person.proposal_id, person.author, person.iteration) == \
        (EDIT, edited.id, "ana", 1)
    assert person.score is not None and person.score.compared == 3
    assert f"p{edited.id} · edited by ana · " in person.label(run_id)
    assert "1 from the seed, 1 from reflections, 2 edited by ana" in \
        blame_summary(provenance, "instruction")


def test_a_rejected_proposals_text_never_appears(runner, store):
    run_id, handle = runner.start(demo_spec(), trainset(4), max_iterations=2, review="review")
    seen: set[int] = set()
    rejected = runner.wait_for_pending(run_id, seen)
    decide(rejected.id, "reject", reason="do not force three lines", store=store)
    accepted = runner.wait_for_pending(run_id, seen)
    decide(accepted.id, "accept", author="ana", store=store)
    assert handle.wait(30) == "max_iterations"

    [rejected_sentence] = new_sentences(rejected, BASE_INSTRUCTION)
    units = load_provenance(store, run_id).components["instruction"]
    assert rejected_sentence not in [u.text for u in units]
    assert rejected.id not in {u.origin.proposal_id for u in units}
    assert [(u.origin.kind, u.origin.proposal_id) for u in units] == \
        [(SEED, None), (REFLECTION, accepted.id)]


def test_a_merge_child_takes_each_components_history_from_its_source(runner, store, script):
    script(world.WORLD, world.reply)
    run_id, _ = runner.run(world.spec(), world.TRAINSET, **world.config())
    first, second = (store.proposals(run_id, iteration=i)[0] for i in (1, 2))
    merge = store.proposals(run_id, iteration=3)[0]
    assert merge.is_merge and merge.status is ProposalStatus.ACCEPTED
    child = store.get_candidate(merge.child_id)
    provenance = load_provenance(store, run_id, child.index)
    instruction = provenance.components["instruction"]
    config = provenance.components["generate_content_config"]
    assert [(u.text, u.origin.kind) for u in instruction] == \
        [("Write one line about the topic.", SEED), ("Always name the topic.", REFLECTION)]
    assert instruction[1].origin.proposal_id == first.id
    assert unit_kind("generate_content_config") == "line"
    assert [(u.text, u.origin.proposal_id) for u in config] == [("temperature: 0.1", second.id)]


# --------------------------------------------------------------------------- the CLI


def test_studio_blame_prints_labels_and_json(runner, store, capsys):
    import json

    from studio.cli import main

    run_id, _ = runner.run(demo_spec(), trainset(), max_iterations=2, seed=1)
    assert main(["--db", store.url, "blame", run_id]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "== instruction (candidate #2, by sentence) =="
    assert out[1].startswith("seed (candidate #0)") and out[1].endswith(f"| {BASE_INSTRUCTION}")
    assert "it 2 · p2 · reflection · +" in out[3] and out[3].endswith(NAME_TOPIC)
    assert main(["--db", store.url, "blame", run_id, "--candidate", "1", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["text"], r["origin_kind"], r["origin_iteration"]) for r in rows] == \
        [(BASE_INSTRUCTION, "seed", 0), (THREE_LINES, "reflection", 1)]
    assert main(["--db", store.url, "blame", run_id, "--candidate", "7"]) == 2
    assert "candidate: run" in capsys.readouterr().err


def test_the_export_carries_the_best_candidates_provenance(runner, store, tmp_path):
    import csv
    import json

    from studio.projects.export import export_run

    run_id, _ = runner.run(demo_spec(), trainset(), max_iterations=2, seed=1)
    [path] = export_run(store, run_id, "jsonl", tmp_path / "run.jsonl")
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    blame = [line for line in lines if line["type"] == "provenance"]
    assert [(b["text"], b["origin_iteration"], b["candidate_index"]) for b in blame] == \
        [(BASE_INSTRUCTION, 0, 2), (THREE_LINES, 1, 2), (NAME_TOPIC, 2, 2)]
    paths = export_run(store, run_id, "csv", tmp_path / "run")
    with paths[2].open() as handle:
        rows = list(csv.DictReader(handle))
    assert paths[2].name == "run_provenance.csv"
    assert [r["label"].split(" · ")[:3] for r in rows[1:]] == \
        [["it 1", "p1", "reflection"], ["it 2", "p2", "reflection"]]


# --------------------------------------------------------------------------- pure


def test_instructions_split_into_sentences_and_structured_components_into_lines():
    text = "Be brief. Use e.g. short words! Say 3.5 once?\n\n  Rule: end with a period."
    assert split_units(text, unit_kind("writer.instruction")) == [
        "Be brief.", "Use e.g. short words!", "Say 3.5 once?", "Rule: end with a period."]
    schema = '{\n  "type": "object"\n}\n'
    assert unit_kind("writer.output_schema") == "line"
    assert split_units(schema, "line") == ["{", '  "type": "object"', "}"]


def origin(kind: str, candidate: int, proposal: int | None = None) -> UnitOrigin:
    return UnitOrigin(kind, "r", candidate, candidate, candidate, proposal)


def test_carry_keeps_earlier_origins_of_unchanged_sentences():
    before = carry([], ["A.", "B.", "C."], origin(SEED, 0))
    after = carry(before, ["A.", "B  changed.", "C.", "D."], origin(REFLECTION, 1, 7))
    assert [(a.text, a.origin.proposal_id) for a in after] == \
        [("A.", None), ("B  changed.", 7), ("C.", None), ("D.", 7)]
    spaced = carry(after, ["A.", "B changed.", "C.", "D."], origin(REFLECTION, 2, 9))
    assert [a.origin.proposal_id for a in spaced] == [None, 7, None, 7]


def candidate(cid: int, parents: list[int], text: str, proposal: int | None = None,
              config: str = "{}") -> Candidate:
    components = {"writer.instruction": text, "writer.generate_content_config": config}
    return Candidate(id=cid, run_id="r", index=cid, parent_ids=parents, components=components,
                     content_hash=content_hash(components), iteration=cid, proposal_id=proposal)


def proposal(pid: int, parent: int, text: str, edited_from: int | None = None) -> Proposal:
    return Proposal(id=pid, run_id="r", iteration=pid, parent_id=parent,
                    component="writer.instruction", text=text, edited_from=edited_from)


def test_a_merge_walks_through_the_parent_whose_text_it_took():
    lineage = RunLineage(
        candidates={0: candidate(0, [], "Seed."),
                    1: candidate(1, [0], "Seed. From one.", 11),
                    2: candidate(2, [0], "Seed.", 12, config="temperature: 0.1"),
                    3: candidate(3, [2, 1], "Seed. From one.", 13, config="temperature: 0.1")},
        proposals={11: proposal(11, 0, "Seed. From one."), 12: proposal(12, 0, "Seed.")})
    blamed = attribute(lineage, 3)
    assert [(u.text, u.origin.candidate_index) for u in blamed["writer.instruction"]] == \
        [("Seed.", 0), ("From one.", 1)]
    assert [u.origin.kind for u in blamed["writer.generate_content_config"]] == ["change"]


def test_edit_chains_credit_each_person_and_a_sentence_they_removed_is_gone():
    lineage = RunLineage(
        candidates={0: candidate(0, [], "Seed."), 1: candidate(1, [0], "Seed. Mine. Also.", 22)},
        proposals={20: proposal(20, 0, "Seed. Model says. Kept."),
                   21: proposal(21, 0, "Seed. Mine.", edited_from=20),
                   22: proposal(22, 0, "Seed. Mine. Also.", edited_from=21)},
        edit_authors={21: "ana", 22: "bo"})
    units = attribute(lineage, 1)["writer.instruction"]
    assert [(u.text, u.origin.by) for u in units] == \
        [("Seed.", SEED), ("Mine.", "ana"), ("Also.", "bo")]


def test_the_view_shows_text_cells_and_terminal_escapes(runner, store):
    run_id, _ = runner.run(demo_spec(), trainset(), max_iterations=1, seed=1)
    provenance = load_provenance(store, run_id)
    frame = blame_frame(provenance, "instruction")
    assert list(frame.columns) == ["sentence", "origin"]
    assert frame["origin"].iloc[0] == "seed (candidate #0)"
    assert printable("red \x1b[31m\u202e") == "red \\x1b[31m\\u202e"
    assert all("\x1b" not in line for line in blame_lines(provenance))


def test_a_candidate_grown_from_another_runs_candidate_is_traced_into_that_run(runner, store):
    from studio.engine import create_run

    first, _ = runner.run(demo_spec(), trainset(), max_iterations=2, seed=1)
    best = load_provenance(store, first)
    origin_text = store.get_candidate(best.candidate_id).components["instruction"]
    fork = create_run(store, spec=demo_spec(), trainset=trainset(3))
    text = origin_text + " Be brief."
    store.add_candidate(Candidate(run_id=fork.id, index=1, parent_ids=[best.candidate_id],
                                  components={"instruction": text},
                                  content_hash=content_hash({"instruction": text})))
    units = load_provenance(store, fork.id, candidate_index=1).components["instruction"]
    labels = [u.origin.label(fork.id) for u in units]
    assert labels[0] == f"run {first} · seed (candidate #0)"
    assert labels[2].startswith(f"run {first} · it 2 · p2 · reflection · +")
    assert (units[3].text, units[3].origin.kind, units[3].origin.run_id) == \
        ("Be brief.", "change", fork.id)


def test_a_forks_sentences_are_traced_into_the_run_it_was_forked_from(runner, store):
    import asyncio

    from studio.engine import build_engine
    from studio.projects.forking import fork

    source_id, _ = runner.run(demo_spec(), trainset(), max_iterations=2, seed=1)
    best = load_provenance(store, source_id)
    forked = fork(store, source_id, best.candidate_index, config={"max_iterations": 0})
    asyncio.run(build_engine(store, forked.id).run())
    inherited = load_provenance(store, forked.id, 0).components["instruction"]
    assert [u.text for u in inherited] == [u.text for u in best.components["instruction"]]
    rules = [u for u in inherited if u.text.startswith("Rule:")]
    assert rules and all(u.origin.kind == REFLECTION for u in rules)
    assert all(u.origin.label(forked.id).startswith(f"run {source_id} · it ") for u in rules)
