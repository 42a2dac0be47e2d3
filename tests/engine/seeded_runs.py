"""Seeded scripted runs and what they did, for comparing the engine with itself across changes
that must not change what a run does (how it reads its history, its pool or its examples).

``python -m tests.engine.seeded_runs`` writes ``seeded_runs.json`` beside this file: what every
scenario's run did on the code it runs on (made on the commit before the engine kept its
history incrementally and read its examples by id, and compared with since by
``test_seeded_runs.py``).
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from studio.engine import EvolutionConfig, build_engine, create_run
from studio.engine.people.gates import decide
from studio.engine.run.events import AwaitingDecision
from studio.model.records import ReflectionSpec
from studio.store import open_store
from tests.helpers import demo_spec

GOLDEN = Path(__file__).with_name("seeded_runs.json")
TOPICS = ["autumn leaves", "morning coffee", "city rain", "old bridge", "snow owl",
          "harbor fog", "desert wind", "paper lantern", "river stone", "night train"]

SCENARIOS: dict[str, dict[str, Any]] = {
    "reflection, one lane": {"config": {"max_iterations": 8}},
    "reflection, three lanes": {"config": {"max_iterations": 9, "parallel_proposals": 3}},
    "rules and demos": {"config": {"max_iterations": 8},
                        "spec": {"components": ["few_shot", "instruction"],
                                 "reflection": ReflectionSpec(model="scripted/demo",
                                                              strategy="rules")}},
    "a person rejects every other proposal": {"config": {"max_iterations": 8,
                                                         "review": "review"},
                                              "person": True},
    "a validation set larger than a batch's window": {  # window: 8 chains at concurrency 1
        "config": {"max_iterations": 3, "max_concurrency": 1}, "valset": 30},
}


def seeded_run(name: str) -> dict[str, Any]:
    """What scenario ``name``'s run did: its trials, proposals and decisions, by the ids a
    run gives them (indexes, not database ids)."""
    scenario = SCENARIOS[name]
    store = open_store(f"sqlite:///{tempfile.mkdtemp()}/seeded.db", cached=False)
    topics = TOPICS[:6] + [f"{TOPICS[6 + n % 4]} {n}" for n in range(scenario.get("valset", 4))]
    rows = [{"topic": t, "expected": f"a haiku on {t}"} for t in topics]
    run = create_run(store, spec=demo_spec(**scenario.get("spec", {})), trainset=rows[:6],
                     valset=rows[6:], config=EvolutionConfig(seed=3, **scenario["config"]))
    listeners = [person(store)] if scenario.get("person") else []
    reason = asyncio.run(build_engine(store, run.id, listeners=listeners).run())
    done = described(store, run.id)
    store.close()
    return {"stop_reason": str(reason), **done}


def person(store):
    """Decides each proposal as it reaches the gate: rejects every other one, with a reason
    the next reflection reads."""
    seen: list[int] = []

    def on_event(event) -> None:
        if isinstance(event, AwaitingDecision) and event.proposal_id not in seen:
            seen.append(event.proposal_id)
            action = "reject" if len(seen) % 2 else "accept"
            decide(event.proposal_id, action, reason=f"no {len(seen)}", author="ann",
                   store=store)

    return on_event


def described(store, run_id: str) -> dict[str, Any]:
    candidates = {c.id: c.index for c in store.candidates(run_id)}
    examples = {e.id: (e.split.value, e.index) for e in store.examples(run_id)}
    proposals = store.proposals(run_id)
    numbers = {p.id: n for n, p in enumerate(proposals)}
    return {
        "trials": sorted([t.iteration, t.phase.value, candidates[t.candidate_id],
                          *examples[t.example_id], t.output, t.score]
                         for t in store.trials(run_id, with_trace=False)),
        "proposals": [[p.iteration, candidates[p.parent_id], p.component, p.text,
                       p.status.value, p.invalid_reason,
                       candidates.get(p.child_id) if p.child_id else None]
                      for p in proposals],
        "decisions": sorted([numbers[d.proposal_id], d.action.value, d.reason]
                            for d in store.decisions(run_id)),
        "pooled": [candidates[c] for c in store.pooled_ids(run_id)],
    }


if __name__ == "__main__":
    runs = {name: seeded_run(name) for name in SCENARIOS}
    GOLDEN.write_text(json.dumps(runs, indent=1, ensure_ascii=False) + "\n")
    sizes = ", ".join(f"{name}: {len(run['trials'])} trials" for name, run in runs.items())
    print(f"wrote {GOLDEN} ({sizes})", file=sys.stderr)
