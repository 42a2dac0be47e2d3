"""What the studio's buttons do, without Streamlit: projects (examples, import, duplicate, save),
starting and steering runs, and the effect of human corrections on a run.

Every function takes the store explicitly and raises the typed errors of :mod:`studio.model.errors`
with messages the studio shows next to the control that was used.

Each function asks for a :class:`~studio.store.seams.WorkspaceStore` (or one method's
protocol), except those that start or resume a run (:func:`start_project_run`,
:func:`resume_run`, :func:`recover_orphans`): they dispatch it or reach the run manager, which
build engines, so they take the whole :class:`~studio.store.Store`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

import studio.engine.people.steering as steering
from studio.engine.hosting.dispatch import dispatch
from studio.engine.hosting.queue import DEFAULT_QUEUE, live_workers
from studio.engine.hosting.worker import get_manager
from studio.engine.people.gates import pending_in_order
from studio.engine.people.history import proposal_numbers
from studio.engine.people.steering import Steered
from studio.engine.policies.evidence import proposal_evidence
from studio.engine.policies.pool import load_view
from studio.model.agent_models import LOCAL_MODEL
from studio.model.config import EvolutionConfig
from studio.model.errors import ConfigError, ProjectFileError
from studio.model.records import (
    Project,
    Proposal,
    ProposalStatus,
    Run,
    RunStatus,
    Trial,
    TrialPhase,
    stored_id,
)
from studio.model.redaction import redact
from studio.projects.files import (
    MAX_PROJECT_BYTES,
    Origin,
    ProjectFile,
    check_spec_trust,
    check_trust,
    create_project_run,
    decode_text,
    dump_project,
    inline_datasets,
    load_project,
    parse_project,
    resolve_datasets,
    resolve_testset,
)
from studio.projects.serving import ui_root
from studio.store import Store
from studio.store.seams import HasFindProject, HasProposals, WorkspaceStore

EXAMPLES_DIR = ui_root() / "examples"


class ExampleKind(StrEnum):
    """What an example's models make of a first run: the offer beside its Load button."""

    SCRIPTED = "scripted"
    EMBEDDED = "embedded"
    HOSTED = "hosted"

    @property
    def note(self) -> str:
        return {
            "scripted": "Instant and deterministic, no API key: the first run to try.",
            "embedded": "Embedded SmolLM2 model: slow, weak: shows the machinery, not a gain "
                        "(minutes per iteration on a laptop; scores stay low).",
            "hosted": "Hosted models: needs their API key.",
        }[self.value]


def example_kind(project: ProjectFile) -> ExampleKind:
    """Scripted when every model is the scripted test model, embedded when any is the local
    one (it sets the pace), else hosted."""
    models: list[str | None] = [agent.model for agent in ([project.agent] if project.agent
                                                          else project.agents)]
    models += [project.critic.model, project.reflection.model]  # no reflection: the agent's
    providers = {str(model).split("/", 1)[0] for model in models if model}
    if providers <= {"scripted"}:
        return ExampleKind.SCRIPTED
    return ExampleKind.EMBEDDED if "local" in providers else ExampleKind.HOSTED


@dataclass(frozen=True)
class ExampleProject:
    path: Path
    name: str
    description: str
    kind: ExampleKind = ExampleKind.SCRIPTED


def list_examples(folder: Path = EXAMPLES_DIR) -> list[ExampleProject]:
    """The example project files shipped with the studio (``examples/*.yaml``), the scripted
    ones (instant, the first run to try) first."""
    found = []
    for path in sorted(folder.glob("*.yaml")):
        try:
            project, _ = load_project(path)
        except ConfigError:
            continue  # a broken example must not hide the others
        found.append(ExampleProject(path, project.name, project.description,
                                    example_kind(project)))
    order = list(ExampleKind)
    return sorted(found, key=lambda example: order.index(example.kind))


def unique_name(store: HasFindProject, name: str) -> str:
    """``name``, or ``name (2)``, ``name (3)``... if a project already uses it."""
    base = re.sub(r" \(\d+\)$", "", name.strip()) or "project"
    candidate, n = base, 1
    while store.find_project(candidate) is not None:
        n += 1
        candidate = f"{base} ({n})"
    return candidate


def import_example(store: WorkspaceStore, path: Path) -> Project:
    """Store an example project with its datasets inlined; an identical one is reused."""
    project, base_dir = load_project(path)
    project = inline_datasets(project, base_dir)
    text = dump_project(project)
    if len(text) > MAX_PROJECT_BYTES:  # it could be stored, but never read back
        raise ProjectFileError(f"with its datasets inlined (images as data URIs) the project is "
                               f"{len(text):,} characters; the limit is {MAX_PROJECT_BYTES:,}: "
                               "run it from the command line (`studio run`) instead",
                               where=str(path))
    existing = store.find_project(project.name)
    if existing is not None and existing.yaml == text:
        return existing
    name = unique_name(store, project.name)
    return store.save_project(name, dump_project(project.model_copy(update={"name": name})))


def import_yaml(store: WorkspaceStore, text: str, filename: str = "<upload>") -> Project:
    """Store an uploaded project file (validated first; the name is made unique).

    An upload is untrusted: it may not load Python code (unless the server opted in) nor read
    files on the server (its datasets are inline).

    Raises:
        ProjectFileError: the YAML does not parse or does not fit the project format.
        DatasetError: a dataset names a file, or a row is unusable.
    """
    project = parse_project(text, source=filename)
    check_browser_project(project, filename)
    name = unique_name(store, project.name)
    return store.save_project(name, dump_project(project.model_copy(update={"name": name})))


def import_upload(store: WorkspaceStore, data: bytes, filename: str) -> Project:
    """Store a project file uploaded in the browser: size checked before it is decoded, UTF-8
    only (a Latin-1 or UTF-16 file is refused with the line, never garbled), then
    :func:`import_yaml`."""
    if len(data) > MAX_PROJECT_BYTES:
        raise ProjectFileError(f"the file is {len(data):,} bytes; the limit is "
                               f"{MAX_PROJECT_BYTES:,}", where=filename)
    return import_yaml(store, decode_text(data, filename, ProjectFileError), filename)


def new_project(store: WorkspaceStore, name: str = "new project") -> Project:
    """A minimal valid project on the embedded model, ready to edit."""
    name = unique_name(store, name)
    project = ProjectFile.model_validate({
        "name": name,
        "agent": {"name": "agent", "model": LOCAL_MODEL,
                  "instruction": "Answer the question in one sentence."},
        "dataset": {"train": [{"input": "What is the capital of France?",
                               "expected": "Paris"}]},
    })
    return store.save_project(name, dump_project(project))


def duplicate_project(store: WorkspaceStore, project_id: int) -> Project:
    original = store.get_project(project_id)
    project = parse_project(original.yaml, source=original.name)
    name = unique_name(store, f"{original.name} copy")
    return store.save_project(name, dump_project(project.model_copy(update={"name": name})))


def check_browser_project(project: ProjectFile, source: str) -> None:
    """What a project from the browser may not do: load code, read server files, bad rows."""
    check_trust(project, Origin.BROWSER, source)
    resolve_datasets(project, Path("."), source=source, origin=Origin.BROWSER)
    resolve_testset(project, Path("."), source=source, origin=Origin.BROWSER)


def save_project(store: WorkspaceStore, project: ProjectFile, project_id: int | None) -> Project:
    """Create or replace a stored project from the studio's editor (its name must be unique;
    checked as an upload is)."""
    check_browser_project(project, f"project {project.name!r}")
    return store.save_project(project.name, dump_project(project), project_id)


def stored_project(store: WorkspaceStore, project_id: int) -> ProjectFile:
    record = store.get_project(project_id)
    return parse_project(record.yaml, source=f"project {record.name!r}")


# --------------------------------------------------------------------------- runs


def start_project_run(store: Store, project_id: int, config: EvolutionConfig,
                      name: str = "") -> Run:
    """Create a run of a stored project and queue it when a ``studio worker`` is live (the
    team setup: any worker sharing the database takes it); with none, start it in this
    process's run manager as a single-user studio always has.

    Raises:
        ConfigError (and subclasses): the project, its datasets or a model is not usable; the
            message names the field.
    """

    record = store.get_project(project_id)
    project = parse_project(record.yaml, source=f"project {record.name!r}")
    run = create_project_run(store, project, Path("."), name=name or record.name,
                             project_id=project_id, config=config,
                             source=f"project {record.name!r}", origin=Origin.BROWSER)
    return dispatch(store, run.id).run


def pause_run(store: WorkspaceStore, run_id: str) -> Steered:
    """The Run page's Pause, as ``studio pause``
    (:func:`studio.engine.people.steering.pause_run`)."""
    return steering.pause_run(store, run_id)


def unpause_run(store: WorkspaceStore, run_id: str) -> Steered:
    """The Run page's Resume on a paused run, as ``studio unpause``."""
    return steering.unpause_run(store, run_id)


def resume_run(store: Store, run_id: str) -> str:
    """Unpause a paused run, or continue a stopped, failed or orphaned one from its last commit:
    through the queue when a worker is live, else in this process. Either way it starts from
    the state the person left: a Pause or Stop made before they pressed Resume is withdrawn
    (:func:`studio.engine.people.steering.withdraw_requests`).

    Returns what was done: ``"unpaused"``, ``"queued"`` or ``"resumed"``.
    """

    manager = get_manager(store)
    run = store.get_run(run_id)
    check_spec_trust(run.spec, Origin.BROWSER, f"run {run_id}")
    if run.status in (RunStatus.PAUSED, RunStatus.RUNNING, RunStatus.PENDING) and \
            run.worker is not None:
        unpause_run(store, run_id)
        return "unpaused"
    queue = run.queue or DEFAULT_QUEUE
    if live_workers(store, queue) and store.requeue_run(run_id, queue,
                                                        withdraw_seq=run.control_seq):
        return "queued"
    manager.resume(run_id)
    return "resumed"


def stop_run(store: WorkspaceStore, run_id: str) -> Steered:
    """The Run page's Stop, as ``studio stop`` (:func:`studio.engine.people.steering.stop_run`)."""
    return steering.stop_run(store, run_id)


def recover_orphans(store: Store) -> list[str]:

    return get_manager(store).recover_orphans()


# --------------------------------------------------------------------------- proposals & effect


def pending_proposal(store: HasProposals, run_id: str) -> Proposal | None:
    """The run's proposal waiting for a person's decision (with parallel proposals, the first
    of them in the order to decide them), or None."""
    waiting = pending_in_order(store.proposals(run_id, status=ProposalStatus.PENDING))
    return waiting[0] if waiting else None


@dataclass
class RunEffect:
    """What a correction changes: the best candidate and the pending proposal's verdict."""

    best_index: int | None
    best_score: float | None
    pending_id: int | None = None
    pending_number: int | None = None
    """The pending proposal's number in the run (what the pages show beside its id)."""
    parent_sum: float | None = None
    child_sum: float | None = None
    rule_accepts: bool | None = None
    pending_is_merge: bool = False
    """Then ``parent_sum`` is the better parent's and the rule accepts at or above it."""


def run_effect(store: WorkspaceStore, run_id: str) -> RunEffect:

    view = load_view(store, run_id)
    best = view.candidate(view.best_id) if view.best_id is not None else None
    effect = RunEffect(best.index if best else None, view.best_score)
    proposal = pending_proposal(store, run_id)
    if proposal is not None:
        evidence = proposal_evidence(store, proposal)
        effect.pending_id = proposal.id
        effect.pending_number = proposal_numbers(store.proposals(run_id)).get(stored_id(proposal))
        effect.parent_sum = evidence.parent_sum
        effect.child_sum = evidence.child_sum
        effect.rule_accepts = evidence.rule_accepts
        effect.pending_is_merge = proposal.is_merge
    return effect


# --------------------------------------------------------------------------- listings (CLI)


def trial_rows(store: WorkspaceStore, run_id: str, *, candidate: int | None = None,
               phase: str | None = None, offset: int = 0, limit: int | None = None
               ) -> Iterator[dict]:
    """A run's trials with the judge's and the effective (corrected) score and feedback, oldest
    first, streamed from the store in pages (a 100,000-trial run is never held in memory).
    Each row speaks the run's own numbers (``number``: the trial's place in the run,
    ``candidate``: the candidate's #N, ``candidate`` takes one too) with the database ids beside
    them (``id``, ``candidate_id``: what ``studio override`` takes). The run, the candidate and
    the phase are checked before the first row is read."""
    store.get_run(run_id)
    if phase is not None and phase not in {p.value for p in TrialPhase}:
        allowed = ", ".join(p.value for p in TrialPhase)
        raise ConfigError(f"phase {phase!r} is not one of: {allowed}", where="--phase",
                          value=phase)
    indexes = store.candidate_indexes(run_id)
    candidate_id = None if candidate is None else _candidate_id(indexes, candidate)
    trials = store.iter_trials(run_id, candidate_id=candidate_id, phase=phase, offset=offset,
                               limit=limit, with_trace=False)
    if candidate_id is None and phase is None:  # every trial: its number is its place
        return (_trial_row(t, n, indexes) for n, t in enumerate(trials, start=offset + 1))
    return _numbered_rows(store, run_id, trials, indexes)


def _candidate_id(indexes: dict[int, int], candidate: int) -> int:
    found = next((cid for cid, index in indexes.items() if index == candidate), None)
    if found is None:
        known = ", ".join(f"#{i}" for i in sorted(indexes.values())) or "none yet"
        raise ConfigError(f"the run has no candidate #{candidate} (it has: {known})",
                          where="--candidate", value=candidate)
    return found


def _numbered_rows(store: WorkspaceStore, run_id: str, trials: Iterator[Trial],
                   indexes: dict[int, int], page: int = 500) -> Iterator[dict]:
    """A filtered listing's rows: each page's numbers in the run read in one query."""
    batch: list[Trial] = []
    for trial in trials:
        batch.append(trial)
        if len(batch) == page:
            yield from _page_rows(store, run_id, batch, indexes)
            batch = []
    yield from _page_rows(store, run_id, batch, indexes)


def _page_rows(store: WorkspaceStore, run_id: str, batch: list[Trial], indexes: dict[int, int]
               ) -> Iterator[dict]:
    numbers = store.trial_numbers(run_id, [stored_id(t) for t in batch])
    return (_trial_row(t, numbers.get(stored_id(t)), indexes) for t in batch)


def _trial_row(t: Trial, number: int | None, indexes: dict[int, int]) -> dict:
    """A row to show: secrets redacted here, before a caller clips the text (a clipped key
    would no longer be recognised)."""
    return {"id": t.id, "number": number, "iteration": t.iteration, "phase": t.phase.value,
            "candidate": indexes.get(t.candidate_id), "candidate_id": t.candidate_id,
            "example": t.example_id, "split": t.split.value, "example_index": t.example_index,
            "score": t.score,
            "effective_score": t.effective_score,
            "feedback": None if t.effective_feedback is None else redact(t.effective_feedback),
            "overridden": t.overridden, "error": t.error}


def require_reason(action: str, reason: str) -> None:
    """A rejection must say why: the next reflection reads the reason."""
    if action == "reject" and not (reason or "").strip():
        raise ConfigError("say why you reject it: the next reflection reads your reason",
                          where="reason")


