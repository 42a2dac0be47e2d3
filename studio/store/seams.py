"""The store as each part of the engine sees it: one small protocol per part, of the methods it
calls, so a part's signature says what it reads and writes, and a test double or another store
needs only those.

Each method is its own one-method protocol (``HasGetRun``: a store with ``get_run``), with the
repository's signature (:mod:`studio.store.repos`), written once here; a part's protocol is the
list of those it uses. They live beside the facade rather than in each engine folder so the
facade's maintainer sees in one file everything the engine depends on, and mypy proves here
(:func:`_the_facade_is_every_seam`) that :class:`~studio.store.repository.Store` satisfies each
one: a repository's signature that changes breaks this file, not a run.

mypy holds a function that takes a part's store to those methods; a part's code that reaches
the store through the run's context (``ctx.store``, an :class:`EngineStore`) is held to its
part's list by ``tests/store/test_seams.py``, which also keeps each list equal to what the part
calls. The hosting folder (:mod:`studio.engine.hosting`) opens stores, queues runs and wires the
parts together, so it keeps the whole :class:`Store`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from studio.model.feedback import Feedback
from studio.model.records import (
    Candidate,
    Decision,
    EventKind,
    Example,
    Override,
    Proposal,
    ProposalKind,
    ProposalStatus,
    Run,
    RunEvent,
    RunRequest,
    Split,
    Trial,
)

if TYPE_CHECKING:
    from studio.store.repos import OverridePair
    from studio.store.repository import Store

# One protocol per method the engine calls (the repository's signature).


class HasAddCandidate(Protocol):
    def add_candidate(self, candidate: Candidate) -> Candidate: ...


class HasAddDecision(Protocol):
    def add_decision(self, decision: Decision) -> Decision: ...


class HasAddEvent(Protocol):
    def add_event(
        self,
        run_id: str,
        kind: EventKind,
        iteration: int = 0,
        payload: dict[str, Any] | None = None,
    ) -> RunEvent: ...


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


class HasCandidateIndexes(Protocol):
    def candidate_indexes(self, run_id: str, *, after_id: int = 0) -> dict[int, int]: ...


class HasCandidates(Protocol):
    def candidates(self, run_id: str) -> list[Candidate]: ...


class HasClearControl(Protocol):
    def clear_control(self, run_id: str, seen_seq: int) -> bool: ...


class HasCountTrials(Protocol):
    def count_trials(self, run_id: str, *, loop_only: bool = False) -> int: ...


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


class HasFirstScores(Protocol):
    def first_scores(
        self, run_id: str, *, example_ids: Iterable[int], candidate_ids: Iterable[int] | None = None
    ) -> dict[tuple[int, int], tuple[float | None, float | None]]: ...


class HasFirstTrials(Protocol):
    def first_trials(self, candidate_id: int, example_ids: list[int]) -> dict[int, Trial]: ...


class HasGetCandidate(Protocol):
    def get_candidate(self, candidate_id: int) -> Candidate: ...


class HasGetProposal(Protocol):
    def get_proposal(self, proposal_id: int) -> Proposal: ...


class HasGetRun(Protocol):
    def get_run(self, run_id: str) -> Run: ...


class HasGetTrial(Protocol):
    def get_trial(self, trial_id: int) -> Trial: ...


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


class HasLoadCheckpoint(Protocol):
    def load_checkpoint(self, run_id: str) -> tuple[int, dict[str, Any]] | None: ...


class HasNextCandidateIndex(Protocol):
    def next_candidate_index(self, run_id: str) -> int: ...


class HasOverrideMarker(Protocol):
    def override_marker(self, run_id: str) -> tuple[int, ...]: ...


class HasOverridePairs(Protocol):
    def override_pairs(self, run_id: str | None = None) -> list[OverridePair]: ...


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


class HasRequestControl(Protocol):
    def request_control(self, run_id: str, request: RunRequest | None) -> None: ...


class HasSaveCheckpoint(Protocol):
    def save_checkpoint(self, run_id: str, iteration: int, state: dict[str, Any]) -> None: ...


class HasSetExampleData(Protocol):
    def set_example_data(self, example_id: int, data: dict[str, Any]) -> None: ...


class HasSetPooled(Protocol):
    def set_pooled(self, candidate_id: int, pooled: bool = True) -> None: ...


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
    candidates they add, the proposals they write, the trials and events reflection reads."""


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


def _the_facade_is_every_seam(
    store: Store,
) -> tuple[
    LoopStore, PeopleStore, ProposeStore, ScoringStore, PolicyStore, RunPartsStore, EngineStore
]:
    """Never called: mypy checks that the facade satisfies each part's protocol."""
    return store, store, store, store, store, store, store
