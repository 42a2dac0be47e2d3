"""The store as each part of the engine, and each service, sees it: one small protocol per part,
of the methods it uses, so a part's signature says what it reads and writes, and a test double
or another store needs only those.

Each method is its own one-method protocol (``HasGetRun``: a store with ``get_run``), with the
repository's signature (:mod:`studio.store.repos`), written once here; a part's protocol is the
list of those it uses. They live beside the facade rather than in each engine folder so the
facade's maintainer sees in one file everything the engine and the services depend on, and mypy
proves here (:func:`_the_facade_is_every_seam`, :func:`_the_facade_is_every_service_seam`) that
:class:`~studio.store.repository.Store` satisfies each one: a repository's signature that
changes breaks this file, not a run.

mypy holds a function that takes a part's store to those methods; a part's code that reaches
the store through the run's context (``ctx.store``, an :class:`EngineStore`) is held to its
part's list by ``tests/store/test_seams.py``, which also keeps each list equal to what the part
calls. A service's protocol (:mod:`studio.projects`, and the hosting folder's parts that only
read and write) is what its functions call plus the store of each function they hand it to:
the engine's parts as bases, every other method as its own ``Has...`` base, each named once
(a service composed of another service would repeat methods in an order Python cannot
linearize). What opens stores, builds an engine or starts a run keeps the whole :class:`Store`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from studio.model.feedback import Feedback
from studio.model.records import (
    Candidate,
    Decision,
    EventKind,
    Example,
    Override,
    Project,
    Proposal,
    ProposalKind,
    ProposalStatus,
    Run,
    RunEvent,
    RunRequest,
    Split,
    Trial,
    WorkerInfo,
)
from studio.model.team import ReviewSettings, Role, User

if TYPE_CHECKING:
    from studio.store.repos import EvalRun, OverridePair
    from studio.store.repository import Store

# One protocol per store method the engine or a service calls (the repository's signature).


class HasAddCandidate(Protocol):
    def add_candidate(self, candidate: Candidate) -> Candidate: ...


class HasAddDecision(Protocol):
    def add_decision(self, decision: Decision) -> Decision: ...


class HasAddEvalRun(Protocol):
    def add_eval_run(self, name: str, kind: str, summary: Mapping[str, object],
                     cases: Sequence[Mapping[str, object]]) -> int: ...


class HasAddEvent(Protocol):
    def add_event(
        self,
        run_id: str,
        kind: EventKind,
        iteration: int = 0,
        payload: dict[str, Any] | None = None,
    ) -> RunEvent: ...


class HasAddExamples(Protocol):
    def add_examples(self, run_id: str, split: Split, rows: Iterable[dict]) -> int: ...


class HasAddOverride(Protocol):
    def add_override(
        self,
        trial_id: int,
        *,
        score: float | None,
        feedback: str | None,
        author: str,
        corrected_output: str | None = None,
        reviewer: str | None = None,
        adjudicated: bool = False,
        dimensions: dict[str, float] | None = None,
    ) -> Override: ...


class HasAddProposal(Protocol):
    def add_proposal(self, proposal: Proposal) -> Proposal: ...


class HasAddTrials(Protocol):
    def add_trials(self, trials: Sequence[Trial]) -> list[Trial]: ...


class HasAlignRunsOf(Protocol):
    def align_runs_of(self, run_id: str) -> list[Run]: ...


class HasAlreadyDecided(Protocol):
    def already_decided(self, proposal: Proposal) -> str: ...


class HasCancelQueued(Protocol):
    def cancel_queued(self, run_id: str) -> bool: ...


class HasCandidateCosts(Protocol):
    def candidate_costs(self, run_id: str) -> dict[int, float]: ...


class HasCandidateIndexes(Protocol):
    def candidate_indexes(self, run_id: str, *, after_id: int = 0) -> dict[int, int]: ...


class HasCandidates(Protocol):
    def candidates(self, run_id: str) -> list[Candidate]: ...


class HasClearControl(Protocol):
    def clear_control(self, run_id: str, seen_seq: int) -> bool: ...


class HasCountTrials(Protocol):
    def count_trials(self, run_id: str, *, loop_only: bool = False) -> int: ...


class HasCreateRun(Protocol):
    def create_run(self, run: Run) -> Run: ...


class HasDecisions(Protocol):
    def decisions(
        self,
        run_id: str | None = None,
        *,
        proposal_id: int | None = None,
        after_id: int | None = None,
    ) -> list[Decision]: ...


class HasEffectiveScores(Protocol):
    def effective_scores(
        self,
        run_id: str,
        *,
        example_ids: Iterable[int] | None = None,
        candidate_ids: Iterable[int] | None = None,
        pooled_only: bool = False,
    ) -> dict[tuple[int, int], float | None]: ...


class HasEnqueueRun(Protocol):
    def enqueue_run(self, run_id: str, queue: str) -> bool: ...


class HasEvents(Protocol):
    def events(
        self, run_id: str, *, after_id: int = 0, kind: EventKind | None = None
    ) -> list[RunEvent]: ...


class HasExampleIds(Protocol):
    def example_ids(self, run_id: str) -> dict[Split, list[int]]: ...


class HasExampleKeys(Protocol):
    def example_keys(self, run_id: str) -> set[str]: ...


class HasExamples(Protocol):
    def examples(self, run_id: str, split: Split | None = None) -> list[Example]: ...


class HasExamplesById(Protocol):
    def examples_by_id(self, example_ids: list[int]) -> list[Example]: ...


class HasFindCandidate(Protocol):
    def find_candidate(self, run_id: str, content_hash: str) -> Candidate | None: ...


class HasFindProject(Protocol):
    def find_project(self, name: str) -> Project | None: ...


class HasFirstScores(Protocol):
    def first_scores(
        self, run_id: str, *, example_ids: Iterable[int], candidate_ids: Iterable[int] | None = None
    ) -> dict[tuple[int, int], tuple[float | None, float | None]]: ...


class HasFirstTrials(Protocol):
    def first_trials(self, candidate_id: int, example_ids: list[int]) -> dict[int, Trial]: ...


class HasForksOf(Protocol):
    def forks_of(self, run_id: str) -> list[Run]: ...


class HasGetCandidate(Protocol):
    def get_candidate(self, candidate_id: int) -> Candidate: ...


class HasGetExample(Protocol):
    def get_example(self, example_id: int) -> Example: ...


class HasGetProject(Protocol):
    def get_project(self, project_id: int) -> Project: ...


class HasGetProposal(Protocol):
    def get_proposal(self, proposal_id: int) -> Proposal: ...


class HasGetRun(Protocol):
    def get_run(self, run_id: str) -> Run: ...


class HasGetTrial(Protocol):
    def get_trial(self, trial_id: int) -> Trial: ...


class HasGetUser(Protocol):
    def get_user(self, name: str) -> User | None: ...


class HasIterCandidates(Protocol):
    def iter_candidates(self, run_id: str, *, batch_size: int = 200) -> Iterator[Candidate]: ...


class HasIterExamples(Protocol):
    def iter_examples(self, run_id: str, split: Split | None = None) -> Iterator[Example]: ...


class HasIterTrials(Protocol):
    def iter_trials(
        self,
        run_id: str,
        *,
        batch_size: int = 1000,
        with_trace: bool = True,
        candidate_id: int | None = None,
        phase: str | None = None,
        offset: int = 0,
        limit: int | None = None,
    ) -> Iterator[Trial]: ...


class HasLatestEvent(Protocol):
    def latest_event(self, run_id: str, kind: EventKind) -> RunEvent | None: ...


class HasListEvalRuns(Protocol):
    def list_eval_runs(self, name: str | None = None, limit: int = 100) -> list[EvalRun]: ...


class HasListProjects(Protocol):
    def list_projects(self) -> list[Project]: ...


class HasListUsers(Protocol):
    def list_users(self) -> list[User]: ...


class HasLiveWorkers(Protocol):
    def live_workers(self, stale_after_s: float, queue: str | None = None
                     ) -> list[WorkerInfo]: ...


class HasLoadCheckpoint(Protocol):
    def load_checkpoint(self, run_id: str) -> tuple[int, dict[str, Any]] | None: ...


class HasNextCandidateIndex(Protocol):
    def next_candidate_index(self, run_id: str) -> int: ...


class HasOverrideMarker(Protocol):
    def override_marker(self, run_id: str) -> tuple[int, ...]: ...


class HasOverridePairs(Protocol):
    def override_pairs(self, run_id: str | None = None) -> list[OverridePair]: ...


class HasOverrides(Protocol):
    def overrides(self, run_id: str | None = None, *, trial_id: int | None = None,
                  include_undone: bool = True) -> list[Override]: ...


class HasPooledIds(Protocol):
    def pooled_ids(self, run_id: str, *, through: int | None = None) -> list[int]: ...


class HasProposals(Protocol):
    def proposals(
        self,
        run_id: str,
        *,
        status: ProposalStatus | None = None,
        iteration: int | None = None,
        kind: ProposalKind | None = None,
    ) -> list[Proposal]: ...


class HasProposalsSince(Protocol):
    def proposals_since(
        self, run_id: str, after_id: int, ids: Iterable[int] = ()
    ) -> list[Proposal]: ...


class HasRejudgeTrial(Protocol):
    def rejudge_trial(self, trial_id: int, feedback: Feedback, error: str | None) -> None: ...


class HasRemoveUser(Protocol):
    def remove_user(self, name: str) -> None: ...


class HasRequestControl(Protocol):
    def request_control(self, run_id: str, request: RunRequest | None) -> None: ...


class HasReviewSettings(Protocol):
    def review_settings(self, project: str) -> ReviewSettings: ...


class HasSaveCheckpoint(Protocol):
    def save_checkpoint(self, run_id: str, iteration: int, state: Mapping[str, object]
                        ) -> None: ...


class HasSaveProject(Protocol):
    def save_project(self, name: str, yaml_text: str, project_id: int | None = None) -> Project: ...


class HasSaveReviewSettings(Protocol):
    def save_review_settings(self, settings: ReviewSettings) -> ReviewSettings: ...


class HasSaveUser(Protocol):
    def save_user(self, name: str, role: Role) -> User: ...


class HasSetExampleData(Protocol):
    def set_example_data(self, example_id: int, data: Mapping[str, object]) -> None: ...


class HasSetPooled(Protocol):
    def set_pooled(self, candidate_id: int, pooled: bool = True) -> None: ...


class HasSetTokenHash(Protocol):
    def set_token_hash(self, name: str, token_hash: str | None) -> User: ...


class HasTrialNumbers(Protocol):
    def trial_numbers(self, run_id: str, trial_ids: Iterable[int]) -> dict[int, int]: ...


class HasTrials(Protocol):
    def trials(
        self,
        run_id: str,
        *,
        after_id: int = 0,
        candidate_id: int | None = None,
        phase: str | None = None,
        proposal_id: int | None = None,
        ids: Iterable[int] | None = None,
        phases: Iterable[str] | None = None,
        iteration: int | None = None,
        with_trace: bool = True,
        newest_first: bool = False,
        limit: int | None = None,
    ) -> list[Trial]: ...


class HasUndoOverride(Protocol):
    def undo_override(self, override_id: int) -> Override: ...


class HasUpdateProposal(Protocol):
    def update_proposal(self, proposal_id: int, **fields: Any) -> Proposal: ...


class HasUpdateRun(Protocol):
    def update_run(self, run_id: str, **fields: Any) -> None: ...


class HasUserCount(Protocol):
    def user_count(self) -> int: ...


class HasWaitingProposals(Protocol):
    def waiting_proposals(self) -> dict[str, Proposal]: ...


class HasWhatBecameOf(Protocol):
    def what_became_of(self, proposal_id: int) -> str: ...


# One protocol per part of the engine: the methods it calls, bottom layer first (pyproject.toml's
# contract); a part that hands its store to a part below it asks for that part's store too.


class RunPartsStore(
    HasAddEvent,
    HasCandidateIndexes,
    HasCountTrials,
    HasDecisions,
    HasExampleIds,
    HasExampleKeys,
    HasExamplesById,
    HasGetProposal,
    HasIterExamples,
    HasProposalsSince,
    Protocol,
):
    """What a run's parts (:mod:`studio.engine.run`: context, events, examples,
    texts tried) ask of the store."""


class PolicyStore(
    HasCandidates,
    HasCountTrials,
    HasEffectiveScores,
    HasExamples,
    HasFirstScores,
    HasFirstTrials,
    HasGetRun,
    HasOverrideMarker,
    HasPooledIds,
    HasProposals,
    Protocol,
):
    """What GEPA's policies (:mod:`studio.engine.policies`) read: the pool's
    scores, trials counted for the limits, the proposals a policy weighs."""


class PeopleStore(
    PolicyStore,
    HasAddDecision,
    HasAddOverride,
    HasAddProposal,
    HasAlignRunsOf,
    HasAlreadyDecided,
    HasCancelQueued,
    HasCandidateIndexes,
    HasCandidates,
    HasClearControl,
    HasDecisions,
    HasExampleKeys,
    HasExamples,
    HasFindCandidate,
    HasGetCandidate,
    HasGetProposal,
    HasGetRun,
    HasGetTrial,
    HasIterTrials,
    HasOverridePairs,
    HasProposals,
    HasRejudgeTrial,
    HasRequestControl,
    HasSetExampleData,
    HasTrials,
    HasUndoOverride,
    HasUpdateProposal,
    HasUpdateRun,
    HasWhatBecameOf,
    Protocol,
):
    """What people's part (:mod:`studio.engine.people`: gates, labels, history,
    steering) asks of the store: proposals and their decisions, overrides, a person's requests."""


class ProposeStore(
    HasAddCandidate,
    HasAddProposal,
    HasCandidateIndexes,
    HasCandidates,
    HasEvents,
    HasFindCandidate,
    HasGetCandidate,
    HasNextCandidateIndex,
    HasProposals,
    HasTrials,
    HasUpdateProposal,
    Protocol,
):
    """What the proposers (:mod:`studio.engine.propose`) ask of the store: the
    candidates they add, the proposals they write, the trials and events reflection reads, and
    the run's parts they hand it to (the texts tried). Every proposer reaches it through
    :func:`studio.engine.propose.proposer.propose_store`, so mypy holds them to this list."""


class ScoringStore(
    PolicyStore,
    HasAddTrials,
    HasEffectiveScores,
    HasExamples,
    HasFirstTrials,
    HasGetRun,
    HasLatestEvent,
    HasPooledIds,
    Protocol,
):
    """What scoring (:mod:`studio.engine.scoring`) asks of the store: examples
    to judge, the trials it commits, the scores the held-out set and the guard read."""


class LoopStore(
    HasAddCandidate,
    HasCandidates,
    HasFirstTrials,
    HasGetCandidate,
    HasGetProposal,
    HasGetRun,
    HasLoadCheckpoint,
    HasSaveCheckpoint,
    HasSetPooled,
    HasUpdateProposal,
    HasUpdateRun,
    Protocol,
):
    """What the loop (:mod:`studio.engine.loop`) asks of the store itself: the run's
    status and checkpoint, the pool, the candidates and proposals it settles."""


class EngineStore(
    LoopStore, PeopleStore, ProposeStore, ScoringStore, PolicyStore, RunPartsStore, Protocol
):
    """Every part's store at once: what a run's context carries
    (:attr:`studio.engine.run.context.RunContext.store`) and hands to each part."""


# One protocol per service (:mod:`studio.engine.hosting`'s parts that only read and write, and
# :mod:`studio.projects`): what its functions call, and the store of each function they hand it
# to. Functions that open stores, build an engine or start a run keep the whole Store (their
# module's docstring says which and why). A helper another service calls may ask for one
# method's protocol alone (``unique_name(store: HasFindProject, ...)``), so its callers do not
# inherit everything its module uses. An engine part a service hands its store to is a base;
# another service's methods are listed one by one (see the module's docstring for why).


class BuildStore(HasAddExamples, HasCreateRun, Protocol):
    """What creating a run asks of the store (:mod:`studio.engine.hosting.build`: the run and
    its examples); building its engine takes the whole store."""


class QueueStore(
    HasAddExamples,
    HasCreateRun,
    HasEnqueueRun,
    HasExamples,
    HasGetRun,
    HasLiveWorkers,
    Protocol,
):
    """What queueing a run asks of the store (:mod:`studio.engine.hosting.queue`)."""


class ForksStore(HasAddExamples, HasCandidates, HasCreateRun, HasExamples, HasGetRun, Protocol):
    """What forking a run asks of the store (:mod:`studio.engine.hosting.forks`): the parent's
    candidate and examples, the fork it creates."""


class ApiStore(PeopleStore, ScoringStore, Protocol):
    """What the library's results ask of the store (:mod:`studio.engine.hosting.api`): the
    pool, the history of proposals, the test set's report."""


class TeamStore(
    HasAddEvent,
    HasEvents,
    HasGetProject,
    HasGetProposal,
    HasGetRun,
    HasGetUser,
    HasListUsers,
    HasRemoveUser,
    HasReviewSettings,
    HasSaveReviewSettings,
    HasSaveUser,
    HasSetTokenHash,
    HasUserCount,
    Protocol,
):
    """What the team's service asks of the store (:mod:`studio.projects.team`): users and
    tokens, a project's review settings, comments on proposals."""


class WorkspaceStore(
    PeopleStore,
    HasFindProject,
    HasGetProject,
    HasSaveProject,
    HasTrialNumbers,
    Protocol,
):
    """What the workspace asks of the store (:mod:`studio.projects.workspace`): projects,
    steering (people's part), a run's trial rows and the effect of corrections."""


class ReviewingStore(PolicyStore, HasAddEvent, HasEvents, HasOverrides, HasTrials, Protocol):
    """What the review queue asks of the store (:mod:`studio.projects.reviewing`)."""


class TeamReviewStore(HasEvents, HasGetProject, HasGetRun, HasListUsers, HasOverrides, Protocol):
    """What the team's review summaries ask of the store (:mod:`studio.projects.team_review`)."""


class InboxStore(HasLatestEvent, HasWaitingProposals, Protocol):
    """What the inbox asks of the store (:mod:`studio.projects.inbox`)."""


class ProvenanceStore(PolicyStore, HasDecisions, HasGetCandidate, Protocol):
    """What a candidate's provenance asks of the store (:mod:`studio.projects.provenance`)."""


class ExportStore(
    PeopleStore,
    ScoringStore,
    HasCandidateCosts,
    HasIterCandidates,
    HasOverrides,
    Protocol,
):
    """What exporting a run asks of the store (:mod:`studio.projects.export`)."""


class ApplyingStore(PolicyStore, HasAddEvent, HasEvents, Protocol):
    """What applying a candidate to the source asks of the store
    (:mod:`studio.projects.applying`)."""


class ForkingStore(PolicyStore, HasAddExamples, HasCreateRun, HasForksOf, Protocol):
    """What the forking service asks of the store (:mod:`studio.projects.forking`)."""


class AdkResultsStore(PolicyStore, HasTrials, Protocol):
    """What ADK eval-set results ask of the store (:mod:`studio.projects.adk_results`)."""


class SessionImportStore(HasFindProject, HasListProjects, HasSaveProject, Protocol):
    """What importing ADK sessions asks of the store (:mod:`studio.projects.session_import`)."""


class AligningStore(
    PeopleStore,
    HasAddEvalRun,
    HasAddExamples,
    HasCreateRun,
    HasFindProject,
    HasGetExample,
    HasGetProject,
    HasListEvalRuns,
    HasOverrides,
    HasSaveProject,
    Protocol,
):
    """What aligning a critic asks of the store (:mod:`studio.projects.aligning`): labels,
    the align run, its measures and rescoring passes."""


def _the_facade_is_every_seam(
    store: Store,
) -> tuple[
    LoopStore, PeopleStore, ProposeStore, ScoringStore, PolicyStore, RunPartsStore, EngineStore
]:
    """Never called: mypy checks that the facade satisfies each part's protocol."""
    return store, store, store, store, store, store, store


def _the_facade_is_every_service_seam(store: Store) -> tuple[
    BuildStore, QueueStore, ForksStore, ApiStore, TeamStore, WorkspaceStore, ReviewingStore,
    TeamReviewStore, InboxStore, ProvenanceStore, ExportStore, ApplyingStore, ForkingStore,
    AdkResultsStore, SessionImportStore, AligningStore,
]:
    """Never called: mypy checks that the facade satisfies each service's protocol."""
    return (store, store, store, store, store, store, store, store, store, store, store, store,
            store, store, store, store)
