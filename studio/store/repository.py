"""The store: every record a run produces, committed as it happens.

It is the only channel between a run (engine in a worker thread or another process) and the UI.
:class:`Store` is a facade over one repository per aggregate (:mod:`studio.store.repos`): each
method below is the repository's own method, with its signature and docstring. All methods are
thread-safe (one short transaction each) and return domain records.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Concatenate, ParamSpec, TypeVar

from sqlalchemy.engine import Engine

from studio.store.repos import (
    CandidateRepository,
    CheckpointRepository,
    Database,
    EvalRun,
    EvalRunRepository,
    EventRepository,
    ExampleRepository,
    OverridePair,
    OverrideRepository,
    ProjectRepository,
    ProposalRepository,
    QueueRepository,
    RunRepository,
    ScoreRepository,
    TeamRepository,
    TrialRepository,
)

__all__ = ["EvalRun", "OverridePair", "Store"]

P = ParamSpec("P")
R = TypeVar("R")


def _forward(repository: str, method: Callable[Concatenate[Any, P], R]
             ) -> Callable[Concatenate[Store, P], R]:
    """``Store.<method name>``: ``method`` called on the store's ``repository`` attribute.

    Written once per method (not as a ``def`` repeating its signature) so a repository's
    signature and docstring stay in one place; ``help()`` and editors show them through
    ``functools.wraps``. A plain function on the class, so a test may still replace
    ``Store.trials`` to check that a caller does not read a whole run."""
    name = method.__name__

    @functools.wraps(method)
    def call(self: Store, *args: P.args, **kwargs: P.kwargs) -> R:
        return getattr(getattr(self, repository), name)(*args, **kwargs)

    return call


class Store:
    """Repository over the studio database. Create it with :func:`studio.store.open_store`."""

    def __init__(self, engine: Engine, url: str) -> None:
        self.db = Database(engine, url)
        self.engine = engine
        self.url = url
        self.path = self.db.path
        self.projects_repo = ProjectRepository(self.db)
        self.runs_repo = RunRepository(self.db)
        self.queue_repo = QueueRepository(self.db, self.runs_repo)
        self.examples_repo = ExampleRepository(self.db)
        self.candidates_repo = CandidateRepository(self.db)
        self.trials_repo = TrialRepository(self.db)
        self.scores_repo = ScoreRepository(self.db)
        self.overrides_repo = OverrideRepository(self.db, self.trials_repo)
        self.proposals_repo = ProposalRepository(self.db)
        self.events_repo = EventRepository(self.db)
        self.checkpoints_repo = CheckpointRepository(self.db)
        self.eval_runs_repo = EvalRunRepository(self.db)
        self.team_repo = TeamRepository(self.db)

    def file_intact(self) -> bool:
        """False when the SQLite file this store opened was deleted or replaced (another file,
        or none, at its path): writes would go to a file nobody can see any more."""
        return self.db.file_intact()

    def check_file(self) -> None:
        """Raise StoreError when :meth:`file_intact` is False, so a run stops with an error
        instead of reporting as done what is not stored."""
        self.db.check_file()

    def close(self) -> None:
        self.engine.dispose()

    # projects (repos/projects.py)
    save_project = _forward("projects_repo", ProjectRepository.save_project)
    get_project = _forward("projects_repo", ProjectRepository.get_project)
    find_project = _forward("projects_repo", ProjectRepository.find_project)
    list_projects = _forward("projects_repo", ProjectRepository.list_projects)
    delete_project = _forward("projects_repo", ProjectRepository.delete_project)

    # runs and their leases (repos/runs_and_leases.py)
    create_run = _forward("runs_repo", RunRepository.create_run)
    get_run = _forward("runs_repo", RunRepository.get_run)
    list_runs = _forward("runs_repo", RunRepository.list_runs)
    forks_of = _forward("runs_repo", RunRepository.forks_of)
    align_runs_of = _forward("runs_repo", RunRepository.align_runs_of)
    update_run = _forward("runs_repo", RunRepository.update_run)
    request_control = _forward("runs_repo", RunRepository.request_control)
    clear_control = _forward("runs_repo", RunRepository.clear_control)
    claim_run = _forward("runs_repo", RunRepository.claim_run)
    heartbeat = _forward("runs_repo", RunRepository.heartbeat)
    release_lease = _forward("runs_repo", RunRepository.release_lease)
    mark_orphans = _forward("runs_repo", RunRepository.mark_orphans)

    # the queue and the workers (repos/queue_workers.py)
    enqueue_run = _forward("queue_repo", QueueRepository.enqueue_run)
    claim_next_run = _forward("queue_repo", QueueRepository.claim_next_run)
    requeue_run = _forward("queue_repo", QueueRepository.requeue_run)
    requeue_unbuilt = _forward("queue_repo", QueueRepository.requeue_unbuilt)
    cancel_queued = _forward("queue_repo", QueueRepository.cancel_queued)
    beat_worker = _forward("queue_repo", QueueRepository.beat_worker)
    remove_worker = _forward("queue_repo", QueueRepository.remove_worker)
    live_workers = _forward("queue_repo", QueueRepository.live_workers)
    forget_workers = _forward("queue_repo", QueueRepository.forget_workers)

    # examples (repos/examples.py)
    add_examples = _forward("examples_repo", ExampleRepository.add_examples)
    examples = _forward("examples_repo", ExampleRepository.examples)
    example_ids = _forward("examples_repo", ExampleRepository.example_ids)
    example_keys = _forward("examples_repo", ExampleRepository.example_keys)
    examples_by_id = _forward("examples_repo", ExampleRepository.examples_by_id)
    iter_examples = _forward("examples_repo", ExampleRepository.iter_examples)
    set_example_data = _forward("examples_repo", ExampleRepository.set_example_data)
    get_example = _forward("examples_repo", ExampleRepository.get_example)

    # candidates (repos/candidates.py)
    add_candidate = _forward("candidates_repo", CandidateRepository.add_candidate)
    candidates = _forward("candidates_repo", CandidateRepository.candidates)
    find_candidate = _forward("candidates_repo", CandidateRepository.find_candidate)
    pooled_ids = _forward("candidates_repo", CandidateRepository.pooled_ids)
    iter_candidates = _forward("candidates_repo", CandidateRepository.iter_candidates)
    get_candidate = _forward("candidates_repo", CandidateRepository.get_candidate)
    set_pooled = _forward("candidates_repo", CandidateRepository.set_pooled)
    candidate_indexes = _forward("candidates_repo", CandidateRepository.candidate_indexes)
    next_candidate_index = _forward("candidates_repo", CandidateRepository.next_candidate_index)

    # trials (repos/trials.py)
    add_trial = _forward("trials_repo", TrialRepository.add_trial)
    add_trials = _forward("trials_repo", TrialRepository.add_trials)
    rejudge_trial = _forward("trials_repo", TrialRepository.rejudge_trial)
    trials = _forward("trials_repo", TrialRepository.trials)
    candidate_costs = _forward("trials_repo", TrialRepository.candidate_costs)
    run_costs = _forward("trials_repo", TrialRepository.run_costs)
    get_trial = _forward("trials_repo", TrialRepository.get_trial)
    first_trials = _forward("trials_repo", TrialRepository.first_trials)
    trial_page = _forward("trials_repo", TrialRepository.trial_page)
    iter_trials = _forward("trials_repo", TrialRepository.iter_trials)
    count_trials = _forward("trials_repo", TrialRepository.count_trials)
    trial_numbers = _forward("trials_repo", TrialRepository.trial_numbers)

    # trial scores straight from SQL (repos/scores.py)
    effective_scores = _forward("scores_repo", ScoreRepository.effective_scores)
    first_scores = _forward("scores_repo", ScoreRepository.first_scores)
    child_means = _forward("scores_repo", ScoreRepository.child_means)
    run_marker = _forward("scores_repo", ScoreRepository.run_marker)
    override_marker = _forward("scores_repo", ScoreRepository.override_marker)

    # overrides (repos/overrides.py)
    add_override = _forward("overrides_repo", OverrideRepository.add_override)
    undo_override = _forward("overrides_repo", OverrideRepository.undo_override)
    overrides = _forward("overrides_repo", OverrideRepository.overrides)
    override_pairs = _forward("overrides_repo", OverrideRepository.override_pairs)

    # proposals and decisions (repos/proposals.py)
    add_proposal = _forward("proposals_repo", ProposalRepository.add_proposal)
    update_proposal = _forward("proposals_repo", ProposalRepository.update_proposal)
    get_proposal = _forward("proposals_repo", ProposalRepository.get_proposal)
    proposals = _forward("proposals_repo", ProposalRepository.proposals)
    proposals_since = _forward("proposals_repo", ProposalRepository.proposals_since)
    waiting_proposals = _forward("proposals_repo", ProposalRepository.waiting_proposals)
    add_decision = _forward("proposals_repo", ProposalRepository.add_decision)
    already_decided = _forward("proposals_repo", ProposalRepository.already_decided)
    what_became_of = _forward("proposals_repo", ProposalRepository.what_became_of)
    decisions = _forward("proposals_repo", ProposalRepository.decisions)

    # events (repos/events.py)
    add_event = _forward("events_repo", EventRepository.add_event)
    events = _forward("events_repo", EventRepository.events)
    latest_event = _forward("events_repo", EventRepository.latest_event)

    # checkpoints (repos/checkpoints.py)
    save_checkpoint = _forward("checkpoints_repo", CheckpointRepository.save_checkpoint)
    load_checkpoint = _forward("checkpoints_repo", CheckpointRepository.load_checkpoint)

    # eval runs of judges (repos/eval_runs.py)
    add_eval_run = _forward("eval_runs_repo", EvalRunRepository.add_eval_run)
    list_eval_runs = _forward("eval_runs_repo", EvalRunRepository.list_eval_runs)
    get_eval_runs = _forward("eval_runs_repo", EvalRunRepository.get_eval_runs)

    # users, roles and review settings (repos/team.py)
    user_count = _forward("team_repo", TeamRepository.user_count)
    get_user = _forward("team_repo", TeamRepository.get_user)
    list_users = _forward("team_repo", TeamRepository.list_users)
    save_user = _forward("team_repo", TeamRepository.save_user)
    set_token_hash = _forward("team_repo", TeamRepository.set_token_hash)
    remove_user = _forward("team_repo", TeamRepository.remove_user)
    review_settings = _forward("team_repo", TeamRepository.review_settings)
    save_review_settings = _forward("team_repo", TeamRepository.save_review_settings)
    all_review_settings = _forward("team_repo", TeamRepository.all_review_settings)
