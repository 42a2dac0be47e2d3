"""Every store read of the studio, in one place.

One convention: a caller passes ids, and gets a typed record. Each loader owns its cache key:

- reads that may be a little stale are cached with a short TTL (``st.cache_data``);
- reads that feed live panels (run status, the page of trials) are not cached, or are shared
  for a fraction of a second (:func:`live_run`);
- whole-run analyses are cached per *marker* of the run (:func:`run_marker`: trial count,
  newest ids and override signature from one cheap query), which the loader reads itself, so a
  100,000-trial run is read once and re-read only when something changed. A loader that also
  depends on something the run's marker does not count (a recorded review, a held-out
  measurement, the pending proposal) adds that to its key in the same place.

Records are stored raw (the loop reads them back); what a loader hands a page is
:func:`~studio.model.redaction.redacted`, so a secret in a trial, a proposal or a dataset row is
shown as ``***``.

Nothing here writes. Writes go through :mod:`studio.projects` and :mod:`studio.engine` with
:func:`store`; after one, the page clears the TTL-cached reads it changed (e.g.
``loaders.projects.clear()``); marker-keyed reads see the change by themselves.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import streamlit as st

from studio.critics.agreement import AgreementSummary, agreement_from_store
from studio.engine.people.history import ProposalRow, numbered, proposal_numbers
from studio.engine.people.history import proposal_rows as _proposal_rows
from studio.engine.policies.evidence import EvidenceTrials, evidence_trials
from studio.engine.policies.pool import RunView, load_view
from studio.engine.scoring.guard import HoldoutReport
from studio.engine.scoring.holdout import load_holdout, test_problem
from studio.model.applied import Applied
from studio.model.config import EvolutionConfig
from studio.model.errors import NotFoundError
from studio.model.records import (
    Candidate,
    Decision,
    EventKind,
    Example,
    Override,
    Project,
    Proposal,
    Run,
    RunEvent,
    RunSpec,
    Trial,
    TrialPhase,
    example_expected,
    stored_id,
)
from studio.model.redaction import redacted
from studio.model.team import Actor, ReviewSettings, User
from studio.projects.aligning import AlignReport, LabelStatus, RescorePass
from studio.projects.aligning import active_label_count as _active_label_count
from studio.projects.aligning import align_report as _align_report
from studio.projects.aligning import align_runs as _align_runs
from studio.projects.aligning import label_status as _label_status
from studio.projects.aligning import measure_marker as _measure_marker
from studio.projects.aligning import rescore_passes as _rescore_passes
from studio.projects.applying import ApplyPlan, plan_served_apply, served_run_folder
from studio.projects.applying import applications as _applications
from studio.projects.applying import best_bundle as _best_bundle
from studio.projects.export import Download, spooled_download
from studio.projects.forking import RunTree, ancestry, forks_of
from studio.projects.inbox import RunSummary, waiting_proposals
from studio.projects.inbox import run_summaries as _summaries
from studio.projects.inbox import run_to_open as _run_to_open
from studio.projects.provenance import Provenance, load_provenance
from studio.projects.reviewing import (
    ReviewRecord,
    queue_inputs,
    review_records,
    reviewed_seconds,
)
from studio.projects.served_agents import ServedAgent, list_served_agents
from studio.projects.served_agents import served_agent_graph as load_served_agent_graph
from studio.projects.session_import import session_sources as _session_sources
from studio.projects.team import Comment
from studio.projects.team import blinded as _blinded
from studio.projects.team import has_users as _has_users
from studio.projects.team import proposal_comments as _comments
from studio.projects.team import review_settings as _review_settings
from studio.projects.team import signed_in_actor as _signed_in_actor
from studio.projects.team_review import PeopleDisagreement, PeopleSummary, ReviewerProgress
from studio.projects.team_review import disagreements as _find_disagreements
from studio.projects.team_review import people_summary as _people
from studio.projects.team_review import reviewer_progress as _reviewer_progress
from studio.projects.testsets import scoring_under_way
from studio.projects.workspace import (
    ExampleProject,
    RunEffect,
    list_examples,
    run_effect,
    stored_project,
)
from studio.projects.workspace import pending_proposal as _pending_proposal
from studio.projects.workspace import recover_orphans as recover
from studio.store import Store, open_store, safe_url
from studio.views.media import Thumbnail, example_thumbnails
from studio.views.review_queue import (
    QueueItem,
    ReviewEstimate,
    build_queue,
    expected_review_trials,
    review_estimate,
)
from studio.views.run_notes import NOTE_KINDS
from studio.views.tables import override_signature


@st.cache_resource(show_spinner="Opening the database…")
def store() -> Store:
    """The studio's database (``STUDIO_DB_URL``, or the default SQLite file)."""
    return open_store()


def database_label() -> str:
    """The database URL without its password, for the sidebar."""
    return safe_url(store().url)


# --------------------------------------------------------------------------- projects


@st.cache_data(ttl=2, show_spinner=False)
def projects() -> list[Project]:
    return store().list_projects()


def project(project_id: int | None) -> Project | None:
    if project_id is None:
        return None
    return next((p for p in projects() if p.id == project_id), None) or _project(project_id)


def project_run_settings(project_id: int) -> EvolutionConfig:
    """The run settings a stored project file declares (raises a StudioError if it does not
    load)."""
    return stored_project(store(), project_id).run


def _project(project_id: int) -> Project | None:
    try:
        return store().get_project(project_id)
    except NotFoundError:
        return None


@st.cache_data(ttl=30, show_spinner=False)
def examples_available() -> list[ExampleProject]:
    return list_examples()


@st.cache_data(ttl=5, show_spinner=False)
def served_agents() -> list[ServedAgent]:
    """The agent folders ``studio ui --agents DIR`` serves (read from disk, never imported)."""
    return list_served_agents()


@st.cache_data(ttl=5, show_spinner=False)
def session_sources() -> list[str]:
    """The session databases the Projects page may import from, by name (never their paths
    or URLs: :func:`studio.projects.session_import.session_sources`)."""
    return list(_session_sources())


@st.cache_data(ttl=60, max_entries=8, show_spinner="Loading the agent's graph…")
def served_agent_graph(name: str) -> RunSpec | None:
    """A served agent's graph workflow, if it is one (its folder is imported: trusted, as the
    server's --agents chose it); a minute, so an edit of its agent.py shows without a restart."""
    return load_served_agent_graph(name)


# --------------------------------------------------------------------------- runs


@st.cache_data(ttl=2, show_spinner=False)
def runs(limit: int = 50) -> list[Run]:
    return store().list_runs(limit=limit)


INBOX_TTL_SECONDS = 2


def waiting() -> dict[str, Proposal]:
    """Run id -> its proposal waiting for a person's decision (the sidebar's inbox): one cheap
    read per listed run that can wait, shared for :data:`INBOX_TTL_SECONDS`; a decision made
    here clears it (:func:`decided`)."""
    return _waiting(safe_url(store().url))


@st.cache_data(ttl=INBOX_TTL_SECONDS, show_spinner=False)
def _waiting(database: str) -> dict[str, Proposal]:
    return waiting_proposals(store(), runs())


def download(run_id: str, what: Download) -> Callable[[], bytes]:
    """What a download button hands Streamlit: a function that makes the file when clicked
    (on Streamlit's thread, so the database is taken here) from the export's stream, held once
    as the bytes Streamlit serves."""
    database = store()

    def made() -> bytes:
        with spooled_download(database, run_id, what) as spool:
            return spool.read()

    return made


def best_bundle(run_id: str) -> Callable[[], bytes]:
    """*Download the best* (:func:`studio.projects.applying.best_bundle`), made when clicked."""
    database = store()
    return lambda: _best_bundle(database, run_id)[1]


@st.cache_data(ttl=2, show_spinner=False)
def applications(run_id: str) -> list[Applied]:
    """The run's write-backs into its agent folder, oldest first."""
    return _applications(store(), run_id)


def served_folder(run_id: str) -> Path | None:
    """The run's agent folder when ``studio ui --agents`` serves it (only then may the browser
    apply a candidate there), else None."""
    found = run(run_id)
    return served_run_folder(found) if found is not None else None


def apply_plan(run_id: str) -> ApplyPlan:
    """What *Apply to the folder* would write, read now (the folder's files as they are)."""
    return plan_served_apply(store(), run_id)


def run_to_open() -> str | None:
    """The run a new session opens (:func:`studio.projects.inbox.run_to_open`)."""
    return _run_to_open(runs(), waiting())


def decided() -> None:
    """Forget the inbox and the run lists after a decision, so the badge clears at once."""
    _waiting.clear()
    _run_summaries.clear()


def run_summaries(limit: int = 20) -> list[RunSummary]:
    """The run lists' lines: status, waiting proposal, best and gain over the seed."""
    listed = runs()[:limit]
    return _run_summaries(tuple((r.id, r.status.value, r.stop_reason or "") for r in listed))


@st.cache_data(ttl=INBOX_TTL_SECONDS, show_spinner=False)
def _run_summaries(key: tuple[tuple[str, str, str], ...]) -> list[RunSummary]:
    wanted = {run_id for run_id, _, _ in key}
    return _summaries(store(), [r for r in runs() if r.id in wanted])


def run(run_id: str | None) -> Run | None:
    """The run as it is now (not cached: its status drives the controls)."""
    if not run_id:
        return None
    try:
        return store().get_run(run_id)
    except NotFoundError:
        return None


@st.cache_data(ttl=10, show_spinner=False)
def recover_orphans() -> list[str]:
    """Mark runs whose worker died as orphaned (at most every 10 s)."""

    return recover(store())


LIVE_TTL_SECONDS = 0.25
"""How stale a live panel's view of a run may be: every tab watching the run shares one read of
it per this long (a quarter of the live panel's refresh), so ten tabs cost the store what one
does."""


@dataclass(frozen=True)
class LiveRun:
    """What a live panel polls: the run, its change marker (:func:`run_marker`) and its latest
    progress event."""

    run: Run | None
    marker: tuple[int, ...]
    progress: RunEvent | None
    phase: RunEvent | None = None
    """Its latest ``phase_started`` event: what it is doing now."""


@st.cache_resource(ttl=LIVE_TTL_SECONDS, max_entries=64, show_spinner=False)
def live_run(run_id: str, database: str) -> LiveRun:
    """Read at most once per :data:`LIVE_TTL_SECONDS` for all the sessions watching the run
    (``cache_resource``: shared, not copied; callers must not change it). ``database`` (the
    store's URL) keeps runs of two databases apart."""
    return read_live_run(run_id)


def read_live_run(run_id: str) -> LiveRun:
    """:class:`LiveRun` as it is now (the page's own, uncached)."""
    return LiveRun(run(run_id), run_marker(run_id), latest_progress(run_id),
                   store().latest_event(run_id, EventKind.PHASE_STARTED))


def latest_progress(run_id: str) -> RunEvent | None:
    return store().latest_event(run_id, EventKind.PROGRESS)


def count_trials(run_id: str) -> int:
    return store().count_trials(run_id)


# --------------------------------------------------------------------------- trials


def trial_page(run_id: str, offset: int, limit: int, **filters: Any) -> tuple[list[Trial], int]:
    """One page of the trials table (filtered, counted and paged in SQL) and the number of
    trials passing the filters (not cached: the live table polls it only when the run's marker
    changed)."""
    rows, total = store().trial_page(run_id, offset=offset, limit=limit, **filters)
    return redacted(rows), total


def loop_trial_count(run_id: str) -> int:
    """The loop's trials (its metric calls; the test set's are outside its budget)."""
    return _loop_trial_count(run_id, _trials_marker(run_id))


@st.cache_data(ttl=600, max_entries=16, show_spinner=False)
def _loop_trial_count(run_id: str, marker: tuple[int, ...]) -> int:
    return store().count_trials(run_id, loop_only=True)


def candidate_indexes(run_id: str) -> dict[int, int]:
    """``candidate id -> index`` (#0 is the seed), re-read when trials are added."""
    return _candidate_indexes(run_id, _trials_marker(run_id))


@st.cache_data(ttl=600, max_entries=16, show_spinner=False)
def _candidate_indexes(run_id: str, marker: tuple[int, ...]) -> dict[int, int]:
    return store().candidate_indexes(run_id)


def _trials_marker(run_id: str) -> tuple[int, ...]:
    """The part of the run's marker that trials change (count, newest id): corrections and
    decisions add no trial and no candidate."""
    return run_marker(run_id)[:2]


def trials_by_id(run_id: str, ids: list[int]) -> list[Trial]:
    if not ids:
        return []
    return redacted(store().trials(run_id, ids=ids, with_trace=False))


def trial(run_id: str, trial_id: int) -> Trial | None:
    """One trial of the run with its trace (None if there is none), read again when the run
    changes (a correction changes the trial's effective score and feedback)."""
    return _trial(trial_id, run_marker(run_id))


@st.cache_data(ttl=300, max_entries=256, show_spinner=False)
def _trial(trial_id: int, marker: tuple[int, ...]) -> Trial | None:
    try:
        return redacted(store().get_trial(trial_id))
    except NotFoundError:
        return None


@st.cache_data(ttl=600, max_entries=256, show_spinner=False)
def thumbnails(example_id: int) -> list[Thumbnail]:
    """Small PNGs of an example's images (an example never changes once stored)."""
    try:
        return example_thumbnails(store().get_example(example_id).data)
    except NotFoundError:
        return []


def overrides(run_id: str | None, include_undone: bool = True) -> list[Override]:
    """The run's corrections, read again when one is added or undone (the run's marker counts
    them), so the list shows a correction on the rerun right after it was saved."""
    if run_id is None:
        return redacted(store().overrides(None, include_undone=include_undone))
    return _overrides(run_id, include_undone, run_marker(run_id))


@st.cache_data(ttl=600, max_entries=32, show_spinner=False)
def _overrides(run_id: str, include_undone: bool, marker: tuple[int, ...]) -> list[Override]:
    return redacted(store().overrides(run_id, include_undone=include_undone))


@st.cache_data(ttl=600, max_entries=256, show_spinner=False)
def expected_answer(example_id: int) -> str | None:
    """The example's reference answer (``expected``), or None (an example never changes once
    stored)."""
    try:
        return example_expected(store().get_example(example_id).data)
    except NotFoundError:
        return None


def recent_trials(run_id: str, limit: int, phases: tuple[TrialPhase, ...] = (),
                  iteration: int | None = None) -> list[Trial]:
    """The newest ``limit`` trials (optionally of some phases or one iteration), oldest first."""
    rows = store().trials(run_id, with_trace=False, phases=phases or None, iteration=iteration,
                          newest_first=True, limit=limit)
    return redacted(rows[::-1])


# --------------------------------------------------------------------------- proposals


def proposals(run_id: str) -> list[Proposal]:
    return redacted(store().proposals(run_id))


def proposal_title(proposal: Proposal) -> str:
    """``Proposal 3 (id 26)``: its number in its run (what people follow) and the database id
    (what ``studio decide`` takes)."""
    numbers = proposal_numbers(store().proposals(proposal.run_id))
    return numbered("Proposal", numbers.get(stored_id(proposal)), proposal.id)


def trial_numbers(run_id: str, trial_ids: list[int]) -> dict[int, int]:
    """``trial id -> its number in the run`` (1, 2, 3 … as the run stored them)."""
    return store().trial_numbers(run_id, trial_ids)


def trial_title(run_id: str, trial_id: int) -> str:
    """``Trial 12 (id 481)``: its number in its run and the id ``studio override`` takes."""
    return numbered("Trial", store().trial_numbers(run_id, [trial_id]).get(trial_id), trial_id)


def proposal_decisions(proposal_id: int) -> list[Decision]:
    return store().decisions(proposal_id=proposal_id)


def what_became_of(proposal_id: int) -> str:
    """Who decided a proposal and when, or that it still waits (words after its name)."""
    return store().what_became_of(proposal_id)


def pending_proposal(run_id: str) -> Proposal | None:
    """The run's proposal waiting for a person's decision, or None."""
    return redacted(_pending_proposal(store(), run_id))


def proposal_rows(run_id: str) -> list[ProposalRow]:
    """The run's proposals as history rows, each with its evidence at decision and now (a few
    queries, whatever the number of proposals)."""
    return redacted(_proposal_rows(store(), run_id))


def proposal_history(run_id: str) -> list[ProposalRow]:
    """:func:`proposal_rows`, read once per marker of the run (the Compare page's charts read
    the rows on every click)."""
    return _proposal_history(run_id, run_marker(run_id))


@st.cache_data(ttl=600, max_entries=8, show_spinner=False)
def _proposal_history(run_id: str, marker: tuple[int, ...]) -> list[ProposalRow]:
    return redacted(_proposal_rows(store(), run_id))


def run_note_events(run_id: str) -> list[RunEvent]:
    """The events the Run page's notes are made from (:mod:`studio.views.run_notes`)."""
    return [event for kind in NOTE_KINDS for event in store().events(run_id, kind=kind)]


def skipped_iterations(run_id: str) -> list[RunEvent]:
    """The run's iterations that ended without a proposal to decide on, with why."""
    return store().events(run_id, kind=EventKind.ITERATION_SKIPPED)


def proposal_evidence(proposal: Proposal) -> EvidenceTrials:
    """The proposal's evidence with the trials behind it."""
    return redacted(evidence_trials(store(), proposal))


def candidate(candidate_id: int) -> Candidate:
    return redacted(store().get_candidate(candidate_id))


@st.cache_data(ttl=2, show_spinner=False)
def candidates(run_id: str) -> list[Candidate]:
    return redacted(store().candidates(run_id))


# --------------------------------------------------------------------------- analyses


def run_marker(run_id: str) -> tuple[int, ...]:
    """The cache key of everything read for one run: it changes when a trial, an override
    (added or undone) or a proposal decision is added (counts and newest ids from the store in
    one cheap read, never the rows themselves)."""
    return store().run_marker(run_id)


def candidate_costs(run_id: str) -> dict[int, float]:
    """Candidate id -> the price of its trials (US dollars), read once per marker of the run."""
    return _candidate_costs(run_id, run_marker(run_id))


@st.cache_data(ttl=600, max_entries=16, show_spinner=False)
def _candidate_costs(run_id: str, marker: tuple[int, ...]) -> dict[int, float]:
    return store().candidate_costs(run_id)


def run_cost(run_id: str) -> float:
    """The run's price so far (its trials' and its reflection calls', US dollars), read once
    per marker of the run (a proposal's price shows with its child's first trial)."""
    return _run_cost(run_id, run_marker(run_id))


@st.cache_data(ttl=600, max_entries=16, show_spinner=False)
def _run_cost(run_id: str, marker: tuple[int, ...]) -> float:
    return store().run_costs([run_id])[run_id]


@dataclass
class Analysis:
    """Everything the Compare page draws, for one marker of a run."""

    view: RunView
    examples: list[Example]
    proposals: list[Proposal]
    child_means: dict[int, dict[str, float]]
    last_iteration: int


def analysis(run_id: str) -> Analysis:
    """Read once per marker of the run and shared, not copied (``cache_resource``: a cache hit
    does not unpickle thousands of candidates); callers must not change it."""
    return _analysis(run_id, run_marker(run_id))


@st.cache_resource(ttl=600, max_entries=8, show_spinner="Reading the run…")
def _analysis(run_id: str, marker: tuple[int, ...]) -> Analysis:

    view = load_view(store(), run_id)
    proposals_ = store().proposals(run_id)
    progress = store().latest_event(run_id, EventKind.PROGRESS)
    last = max([p.iteration for p in proposals_] + [progress.iteration if progress else 0])
    child_means = {pid: {"child": mean} for pid, mean in store().child_means(run_id).items()}
    return Analysis(view=view, examples=redacted(store().examples(run_id)),
                    proposals=redacted(proposals_),
                    child_means=child_means, last_iteration=last)


def validation_trials(run_id: str, candidate_ids: tuple[int, ...]) -> dict[int, list[Trial]]:
    """Each candidate's validation trials (no traces: the matrix shows outputs; a cell opened
    reads its trial in full with :func:`trial`), re-read when the run changes (a correction
    changes a cell's score)."""
    return _validation_trials(run_id, tuple(candidate_ids), run_marker(run_id))


@st.cache_data(ttl=600, max_entries=16, show_spinner="Reading the outputs…")
def _validation_trials(run_id: str, candidate_ids: tuple[int, ...], marker: tuple[int, ...]
                       ) -> dict[int, list[Trial]]:
    return {cid: store().trials(run_id, candidate_id=cid, phase=TrialPhase.VALSET.value,
                                with_trace=False)
            for cid in candidate_ids}


def provenance(run_id: str, candidate_index: int) -> Provenance:
    """Where each sentence of candidate ``#candidate_index`` came from (an edit or a correction
    changes the labels' score changes, and the run's marker with them)."""
    return _provenance(run_id, candidate_index, run_marker(run_id))


@st.cache_data(ttl=600, max_entries=16, show_spinner=False)
def _provenance(run_id: str, candidate_index: int, marker: tuple[int, ...]) -> Provenance:
    return redacted(load_provenance(store(), run_id, candidate_index))


def effect(run_id: str) -> RunEffect:
    """The run's state a correction can change (front, best, pending decisions)."""
    return _effect(run_id, run_marker(run_id))


@st.cache_data(ttl=600, max_entries=8, show_spinner="Computing the run's state…")
def _effect(run_id: str, marker: tuple[int, ...]) -> RunEffect:
    return run_effect(store(), run_id)


def agreement(run_id: str | None, threshold: float) -> AgreementSummary:
    """Judge vs human from the overrides of one run, or of all runs (``run_id`` None):
    re-computed when an override is added or undone."""
    return _agreement(run_id, threshold, override_signature(overrides(run_id)))


@st.cache_data(ttl=600, max_entries=32, show_spinner=False)
def _agreement(run_id: str | None, threshold: float, marker: tuple[int, ...]
               ) -> AgreementSummary:
    return agreement_from_store(store(), run_id=run_id, threshold=threshold)


# --------------------------------------------------------------------------- aligning the critic


def label_status(run_id: str) -> LabelStatus:
    """How many corrections the run has as labels, and how many more aligning needs."""
    return _label_status_cached(run_id, run_marker(run_id))


@st.cache_data(ttl=600, max_entries=32, show_spinner=False)
def _label_status_cached(run_id: str, marker: tuple[int, ...]) -> LabelStatus:
    return _label_status(store(), run_id)


@st.cache_data(ttl=2, show_spinner=False)
def align_runs(run_id: str) -> list[Run]:
    return _align_runs(store(), run_id)


@st.cache_data(ttl=2, show_spinner=False)
def align_active_labels(align_run_id: str) -> tuple[int, int]:
    """(labels active now, labels the align run started with)."""
    return _active_label_count(store(), align_run_id)


def align_report(align_run_id: str, source_run_id: str) -> AlignReport:
    """The align run's report: read again when either run changes (the source run's
    corrections are the labels), when the align run's status does, and once a held-out
    measurement lands."""
    align_run = run(align_run_id)
    marker = (run_marker(align_run_id), run_marker(source_run_id),
              align_run.status.value if align_run else None,
              _measure_marker(store(), align_run_id))
    return _align_report_cached(align_run_id, marker)


@st.cache_data(ttl=600, max_entries=16, show_spinner=False)
def _align_report_cached(align_run_id: str, marker: tuple[Any, ...]) -> AlignReport:
    return _align_report(store(), align_run_id)


@st.cache_data(ttl=2, show_spinner=False)
def rescore_passes(run_id: str) -> list[RescorePass]:
    return _rescore_passes(store(), run_id)


# --------------------------------------------------------------------------- test set & forks


def holdout(run_id: str) -> HoldoutReport:
    """The overfitting guard's report (train, validation and test means of seed and best)."""
    return _holdout(run_id, run_marker(run_id))


@st.cache_data(ttl=600, max_entries=16, show_spinner=False)
def _holdout(run_id: str, marker: tuple[int, ...]) -> HoldoutReport:
    return load_holdout(store(), run_id)


def test_scoring_problem(run_id: str) -> str | None:
    """Why the run's test set is not fully scored (failed or stopped), or None: keyed by the
    run's marker, so a scoring that succeeds clears it at once."""
    return _test_scoring_problem(run_id, run_marker(run_id))


@st.cache_data(ttl=5, max_entries=16, show_spinner=False)
def _test_scoring_problem(run_id: str, marker: tuple[int, ...]) -> str | None:
    return test_problem(store(), run_id)


def testing_now(run_id: str) -> bool:
    """Whether the run's test set is being scored right now (not cached: it drives a poll)."""
    run_ = run(run_id)
    return run_ is not None and scoring_under_way(run_)


def lineage_chain(run_id: str) -> list[RunTree]:
    """The run and the runs it was forked from, oldest first, with their candidates' means."""
    return _lineage_chain(run_id, run_marker(run_id))


@st.cache_data(ttl=5, max_entries=16, show_spinner=False)
def _lineage_chain(run_id: str, marker: tuple[int, ...]) -> list[RunTree]:
    return ancestry(store(), run_id)


@st.cache_data(ttl=5, max_entries=16, show_spinner=False)
def forks(run_id: str) -> list[Run]:
    """Runs forked from this one."""
    return forks_of(store(), run_id)


# --------------------------------------------------------------------------- review queue


def review_queue(run_id: str, reviewer: str | None = None) -> list[QueueItem]:
    """The "Review next" queue (of ``reviewer``, a verified person, when several people
    review each trial), re-built when a trial, a correction, a decision, a recorded review or
    the pending proposal changes."""
    pending = _pending_proposal(store(), run_id)
    wanted = review_settings(run_id).reviewers_per_trial
    marker = (run_marker(run_id), _review_marker(run_id),
              pending.id if pending is not None else None,
              pending.status.value if pending is not None else None, wanted)
    return _review_queue(run_id, reviewer, marker)


@st.cache_resource(ttl=600, max_entries=8, show_spinner=False)
def _review_queue(run_id: str, reviewer: str | None, marker: tuple[Any, ...]
                  ) -> list[QueueItem]:
    """Shared, not copied (``cache_resource``); callers must not change it."""
    inputs = queue_inputs(store(), run_id, reviewer=reviewer, wanted=marker[-1])
    evidence = inputs.evidence
    return redacted(build_queue(trials=inputs.trials, reviewed_ids=inputs.reviewed_ids,
                                reviewed_example_ids=inputs.reviewed_example_ids,
                                pending_id=evidence.proposal.id if evidence else None,
                                parent=evidence.parent if evidence else (),
                                child=evidence.child if evidence else (),
                                ties_accept=bool(evidence and evidence.proposal.is_merge),
                                open_ids=inputs.open_ids))


def _review_marker(run_id: str) -> int:
    """Changes when a review is recorded (in any session): the newest review event's id, one
    row read (the run's marker counts trials, corrections and decisions, not reviews)."""
    latest = store().latest_event(run_id, EventKind.REVIEW_TIME)
    return latest.id if latest is not None and latest.id is not None else 0


def reviews(run_id: str) -> list[ReviewRecord]:
    """The run's recorded reviews, read again only when one is added."""
    return _reviews(run_id, _review_marker(run_id))


@st.cache_data(ttl=600, max_entries=16, show_spinner=False)
def _reviews(run_id: str, marker: int) -> list[ReviewRecord]:
    return review_records(store(), run_id)


def review_time_estimate(run: Run, iterations_done: int) -> ReviewEstimate:
    """The person's time a review-mode run still expects."""
    pending = _pending_proposal(store(), run.id)
    future_gates = run.config.max_iterations - iterations_done - (pending is not None)
    trials = expected_review_trials(_queue_length(run.id, pending.id if pending else None),
                                    future_gates, run.config.minibatch_size)
    return review_estimate(reviewed_seconds(reviews(run.id)), trials)


@st.cache_data(ttl=10, max_entries=16, show_spinner=False)
def _queue_length(run_id: str, pending_id: int | None) -> int:
    """The queue's length for the live Run page: re-counted at most every 10 s (trials arrive
    faster than that), and at once when another proposal comes to the gate."""
    return len(review_queue(run_id))


# --------------------------------------------------------------------------- the team


def signed_in_actor(name: str) -> Actor | None:
    """The signed-in person with their role (read on every full run: an owner's change of a
    role counts at the person's next click); None without one."""
    return _signed_in_actor(store(), name)


def has_users() -> bool:
    return _has_users(store())


@st.cache_data(ttl=5, show_spinner=False)
def users() -> list[User]:
    return store().list_users()


@st.cache_data(ttl=5, show_spinner=False)
def all_review_settings() -> list[ReviewSettings]:
    return store().all_review_settings()


@st.cache_data(ttl=5, max_entries=64, show_spinner=False)
def review_settings(run_id: str) -> ReviewSettings:
    """How the run's trials are reviewed (its project's settings; re-read every few seconds)."""
    return _review_settings(store(), run_id)


def blinded(run_id: str, actor: Actor) -> bool:
    """The acting person reviews this run blind (:func:`studio.projects.team.blinded`)."""
    return _blinded(review_settings(run_id), actor)


def people_summary(run_id: str | None, threshold: float) -> PeopleSummary:
    """Agreement between people, re-computed when a correction is added or undone."""
    return _people_summary(run_id, threshold, override_signature(overrides(run_id)))


@st.cache_data(ttl=600, max_entries=32, show_spinner=False)
def _people_summary(run_id: str | None, threshold: float, marker: tuple[int, ...]
                    ) -> PeopleSummary:
    return _people(store(), run_id, threshold)


def disagreements(run_id: str, threshold: float) -> list[PeopleDisagreement]:
    return redacted(_disagreements(run_id, threshold, override_signature(overrides(run_id))))


@st.cache_data(ttl=600, max_entries=32, show_spinner=False)
def _disagreements(run_id: str, threshold: float, marker: tuple[int, ...]
                   ) -> list[PeopleDisagreement]:
    return _find_disagreements(store(), run_id, threshold)


def reviewer_progress(run_id: str) -> list[ReviewerProgress]:
    return _reviewer_progress_cached(run_id, override_signature(overrides(run_id)),
                                     _review_marker(run_id))


@st.cache_data(ttl=600, max_entries=16, show_spinner=False)
def _reviewer_progress_cached(run_id: str, marker: tuple[int, ...], reviews_marker: int
                              ) -> list[ReviewerProgress]:
    return _reviewer_progress(store(), run_id)


def proposal_comments(run_id: str, proposal_id: int) -> list[Comment]:
    """Comments on a proposal, newest last (re-read on every draw: a few rows)."""
    return redacted(_comments(store(), run_id, proposal_id))
