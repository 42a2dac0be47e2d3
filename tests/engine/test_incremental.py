"""What an iteration reads does not grow with the run (issue 32): the texts already tried and
the pool's scores are kept up to date from what is new (proposals, decisions and candidates
newer than the last seen, the rows of newly pooled candidates), and the examples are read by
id as a batch needs them. A person's correction and decision still count at once: they are
read from the store like everything else, by whoever made them."""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import re
from collections import Counter

import pytest

from studio.engine import EvolutionConfig, build_engine, create_run
from studio.engine.people.gates import override, undo_override
from studio.engine.run.events import IterationStarted
from studio.model import records
from studio.model.records import Split, TrialPhase
from studio.runtime.providers.demo import REFLECTION_MARKER
from studio.store import Store, open_store
from tests.helpers import demo_spec

TRAIN = [{"topic": f"topic {n}"} for n in range(6)]
VAL = [{"topic": f"check {n}"} for n in range(3)]


def digest(*parts: str) -> int:
    return int(hashlib.sha256("|".join(parts).encode()).hexdigest()[:8], 16)


def endless_world():
    """A world whose run grows all run long, the same on every run: the reflection adds a new
    numbered tip to the instruction every time, the writer's reply says how many tips its
    instruction has and the last one's number, and the critic likes more tips better but
    scores a reply whose last tip is even low. So every odd tip's child beats its parent and
    is pooled, every even one's is rejected by the rule, and no score is perfect (no
    iteration is skipped)."""
    tips = itertools.count(1)

    def reply(request) -> str | dict:
        if REFLECTION_MARKER in request.prompt_text:
            component = request.prompt_text.split(REFLECTION_MARKER, 1)[1]
            return f"{component.split('## Trials', 1)[0].strip()}\nTip {next(tips)}."
        if request.json_schema:
            count, last = map(int, re.findall(r"\(tips (\d+), last (\d+)\)",
                                              request.last_user)[-1])
            score = 0.25 if count == 0 else 0.1 if last % 2 == 0 else count / (count + 1)
            return {"score": score, "feedback": "Be more vivid."}
        numbers = re.findall(r"Tip (\d+)\.", request.system)
        return (f"a poem {digest(request.system, request.last_user)} "
                f"(tips {len(numbers)}, last {numbers[-1] if numbers else 0})")

    return reply


def rows_read_per_iteration(monkeypatch, methods: dict[str, callable]) -> list[Counter]:
    """Spies on ``Store`` methods: per iteration (from each :class:`IterationStarted`), how
    many rows (or pairs) each returned."""
    counts: list[Counter] = [Counter()]
    for name, size in methods.items():
        original = getattr(Store, name, None)
        if original is None:  # a store without it (before issue 32) reads otherwise
            continue

        def spy(self, *args, _original=original, _name=name, _size=size, **kwargs):
            found = _original(self, *args, **kwargs)
            counts[-1][_name] += _size(found)
            return found

        monkeypatch.setattr(Store, name, spy)
    return counts


def run_endless(store, script, counts: list[Counter], **config) -> str:
    model = script("endless", endless_world())
    run = create_run(store, spec=demo_spec(model), trainset=TRAIN, valset=VAL,
                     config=EvolutionConfig(seed=1, minibatch_size=2, parallel_proposals=1,
                                            **config))

    def iteration_started(event) -> None:
        if isinstance(event, IterationStarted):
            counts.append(Counter())

    asyncio.run(build_engine(store, run.id, listeners=[iteration_started]).run())
    return run.id


@pytest.mark.slow
def test_an_iteration_reads_only_the_proposals_and_decisions_new_since_the_last(
        store, script, monkeypatch):
    counts = rows_read_per_iteration(monkeypatch, {
        "proposals": len, "proposals_since": len, "decisions": len})
    run_id = run_endless(store, script, counts, max_iterations=16)
    made = len(store.proposals(run_id))
    assert made == 16 and len(store.decisions(run_id)) == 16  # the history grew
    read = [sum(iteration.values()) for iteration in counts[2:-1]]  # iterations 2 to 16
    assert max(read[-5:]) <= 8, read  # each: its own proposal, decision and a few re-reads


@pytest.mark.slow
def test_an_iteration_reads_the_scores_of_newly_pooled_candidates_only(
        store, script, monkeypatch):
    counts = rows_read_per_iteration(monkeypatch, {"effective_scores": len})
    run_id = run_endless(store, script, counts, max_iterations=16)
    pooled = len(store.pooled_ids(run_id))
    assert pooled == 9  # the seed and the eight odd tips: the pool grew
    late = [iteration["effective_scores"] for iteration in counts[-6:-1]]
    assert max(late) <= len(VAL), late  # a child pooled in the iteration: its row, once


def test_a_correction_made_elsewhere_counts_at_the_engines_next_pool_read(store, script):
    model = script("endless_pool", endless_world())
    run = create_run(store, spec=demo_spec(model), trainset=TRAIN, valset=VAL,
                     config=EvolutionConfig(max_iterations=0))
    engine = build_engine(store, run.id)
    asyncio.run(engine.run())  # the baseline: the seed pooled
    [seed] = store.pooled_ids(run.id)
    before = engine.pools.read().means[seed]
    elsewhere = open_store(store.url, cached=False)  # another process's handle on the store
    trials = store.trials(run.id, phase=TrialPhase.VALSET)
    corrections = [override(t.id, score=0.0, author="ann", store=elsewhere) for t in trials]
    assert engine.pools.read().means[seed] == 0.0 != before
    undo_override(corrections[0].id, store=elsewhere)
    assert engine.pools.read().means[seed] == pytest.approx(trials[0].score / len(VAL))
    elsewhere.close()


@pytest.mark.slow
def test_the_engine_reads_examples_by_id_as_its_batches_need_them(store, script, monkeypatch):
    counts = rows_read_per_iteration(monkeypatch, {
        "examples": len, "iter_examples": lambda found: 1, "examples_by_id": len})
    run_id = run_endless(store, script, counts, max_iterations=6)
    read = sum(counts, Counter())
    assert read["examples"] == 0 and read["iter_examples"] == 0  # never the whole dataset
    assert read["examples_by_id"] <= len(TRAIN) + len(VAL)  # each example once, if used
    assert store.count_trials(run_id) > read["examples_by_id"]


def test_a_projects_examples_are_checked_once_on_their_way_to_the_store(
        store, tmp_path, monkeypatch):
    from studio.projects.files import create_project_run, load_project

    checked = Counter()
    original = records._checked_example

    def spy(row, *, where):
        checked[where] += 1
        return original(row, where=where)

    monkeypatch.setattr(records, "_checked_example", spy)
    (tmp_path / "p.yaml").write_text(
        "name: once\nagent: {name: writer, model: scripted/demo, instruction: Write.}\n"
        "critic: {type: agent, model: scripted/demo}\nreflection: {model: scripted/demo}\n"
        "dataset:\n  train: [{topic: a}, {topic: b}, {topic: c}]\n"
        "  val: [{topic: d}, {topic: e}]\n")
    project, base = load_project(tmp_path / "p.yaml")
    run = create_project_run(store, project, base)
    assert len(store.examples(run.id, Split.TRAIN)) == 3
    assert sorted(checked.values()) == [1] * 5, checked
