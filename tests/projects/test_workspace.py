"""The studio's actions on the store: projects, runs, evidence, the effect of corrections."""

from __future__ import annotations

import pytest

from studio.engine import EvolutionConfig, decide, override
from studio.engine.hosting.worker import get_manager
from studio.engine.policies.evidence import evidence_trials
from studio.model.errors import ConfigError, ProjectFileError
from studio.model.records import ProposalStatus, RunStatus
from studio.projects.files import parse_project
from studio.projects.workspace import (
    EXAMPLES_DIR,
    ExampleKind,
    duplicate_project,
    import_example,
    import_yaml,
    list_examples,
    new_project,
    pending_proposal,
    require_reason,
    run_effect,
    start_project_run,
    stop_run,
    unique_name,
)
from tests.helpers import wait_until


def test_examples_are_listed_and_imported_once(store):
    names = [e.name for e in list_examples()]
    assert {"haiku", "haiku-scripted"} <= set(names)
    path = EXAMPLES_DIR / "haiku_scripted.yaml"
    first = import_example(store, path)
    assert import_example(store, path).id == first.id
    project = parse_project(first.yaml)
    assert isinstance(project.dataset.train, list)  # datasets inlined


def test_names_are_made_unique(store):
    new_project(store)
    assert unique_name(store, "new project") == "new project (2)"
    copy = duplicate_project(store, store.find_project("new project").id)
    assert copy.name == "new project copy"


def test_import_yaml_validates(store):
    with pytest.raises(ProjectFileError, match="agent"):
        import_yaml(store, "name: x\ndataset: {train: [{a: 1}]}\n", "x.yaml")
    record = import_yaml(store, "name: x\nagent: {model: scripted/demo}\n"
                                "dataset: {train: [{a: 1}]}\n", "x.yaml")
    assert record.name == "x"


def test_reject_needs_a_reason():
    with pytest.raises(ConfigError, match="say why"):
        require_reason("reject", "  ")
    require_reason("accept", "")


@pytest.mark.slow
def test_review_run_evidence_and_effect(store):
    project = import_example(store, EXAMPLES_DIR / "haiku_scripted.yaml")
    run = start_project_run(store, project.id, EvolutionConfig(
        max_iterations=3, minibatch_size=3, review="review", seed=7))
    try:
        proposal = wait_until(lambda: pending_proposal(store, run.id))
        evidence = evidence_trials(store, proposal)
        assert len(evidence.parent) == len(evidence.child) == 3 == evidence.compared
        effect = run_effect(store, run.id)
        assert effect.pending_id == proposal.id
        assert effect.rule_accepts == evidence.rule_accepts
        assert effect.best_index == 0
        # a correction changes the verdict at once
        for trial in evidence.parent:
            override(trial.id, score=1.0, author="t", store=store)
        assert run_effect(store, run.id).rule_accepts is False
        decide(proposal.id, "reject", reason="no", author="t", store=store)
        wait_until(lambda: store.get_proposal(proposal.id).status is ProposalStatus.REJECTED)
    finally:
        stop_run(store, run.id)
        handle = get_manager(store).handle(run.id)
        if handle is not None:
            handle.wait(timeout=30)
    assert store.get_run(run.id).status in (RunStatus.STOPPED, RunStatus.COMPLETED)


def test_with_a_live_worker_the_studio_queues_runs_instead_of_running_them(store):
    from studio.model.records import WorkerInfo, utcnow
    from studio.projects.workspace import resume_run

    now = utcnow()
    store.beat_worker(WorkerInfo(id="elsewhere:1:a", queue="default", host="elsewhere", pid=1,
                                 started_at=now, last_seen=now))
    project = import_example(store, EXAMPLES_DIR / "haiku_scripted.yaml")
    run = start_project_run(store, project.id, EvolutionConfig(max_iterations=1))
    assert run.status is RunStatus.QUEUED and run.queue == "default"
    assert get_manager(store).handle(run.id) is None  # nothing runs in this process
    stop_run(store, run.id)  # never claimed: stopped at once
    assert store.get_run(run.id).status is RunStatus.STOPPED
    assert resume_run(store, run.id) == "queued"  # back to the workers, not run here
    assert store.get_run(run.id).status is RunStatus.QUEUED
    store.remove_worker("elsewhere:1:a")
    assert store.claim_next_run("w", "default", stale_after_s=10).id == run.id


def test_examples_say_which_is_the_first_run_and_which_is_slow():
    examples = list_examples()
    kinds = {e.name: e.kind for e in examples}
    assert kinds["haiku-scripted"] is ExampleKind.SCRIPTED
    assert kinds["haiku"] is ExampleKind.EMBEDDED
    assert "slow, weak: shows the machinery, not a gain" in ExampleKind.EMBEDDED.note
    order = [e.kind for e in examples]
    assert order == sorted(order, key=list(ExampleKind).index)  # scripted ones first
