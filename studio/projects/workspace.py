"""What the studio's buttons do, without Streamlit: projects (examples, import, duplicate, save),
starting and steering runs, and the effect of human corrections on a run.

Every function takes the store explicitly and raises the typed errors of :mod:`studio.model.errors`
with messages the studio shows next to the control that was used.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from studio.engine.build import build_engine
from studio.engine.gates import latest_pending
from studio.engine.merge import stored_evidence
from studio.engine.pool import Evidence, load_view, minibatch_evidence, score_evidence
from studio.engine.queue import DEFAULT_QUEUE, live_workers, queue_run
from studio.engine.worker import get_manager
from studio.model.config import EvolutionConfig
from studio.model.errors import ConfigError, ProjectFileError
from studio.model.records import (
    EventKind,
    Project,
    Proposal,
    ProposalStatus,
    Run,
    RunStatus,
    Trial,
    TrialPhase,
    utcnow,
)
from studio.model.redaction import redact
from studio.projects.files import (
    MAX_PROJECT_BYTES,
    Origin,
    ProjectFile,
    check_spec_trust,
    check_trust,
    decode_text,
    dump_project,
    inline_datasets,
    load_project,
    parse_project,
    resolve_datasets,
    resolve_testset,
    start_run,
)
from studio.store import Store

EXAMPLES_DIR = Path(__file__).resolve().parents[2] / "examples"


@dataclass(frozen=True)
class ExampleProject:
    path: Path
    name: str
    description: str


def list_examples(folder: Path = EXAMPLES_DIR) -> list[ExampleProject]:
    """The example project files shipped with the studio (``examples/*.yaml``)."""
    found = []
    for path in sorted(folder.glob("*.yaml")):
        try:
            project, _ = load_project(path)
        except ConfigError:
            continue  # a broken example must not hide the others
        found.append(ExampleProject(path, project.name, project.description))
    return found


def unique_name(store: Store, name: str) -> str:
    """``name``, or ``name (2)``, ``name (3)``... if a project already uses it."""
    base = re.sub(r" \(\d+\)$", "", name.strip()) or "project"
    candidate, n = base, 1
    while store.find_project(candidate) is not None:
        n += 1
        candidate = f"{base} ({n})"
    return candidate


def import_example(store: Store, path: Path) -> Project:
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


def import_yaml(store: Store, text: str, filename: str = "<upload>") -> Project:
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


def import_upload(store: Store, data: bytes, filename: str) -> Project:
    """Store a project file uploaded in the browser: size checked before it is decoded, UTF-8
    only (a Latin-1 or UTF-16 file is refused with the line, never garbled), then
    :func:`import_yaml`."""
    if len(data) > MAX_PROJECT_BYTES:
        raise ProjectFileError(f"the file is {len(data):,} bytes; the limit is "
                               f"{MAX_PROJECT_BYTES:,}", where=filename)
    return import_yaml(store, decode_text(data, filename, ProjectFileError), filename)


def new_project(store: Store, name: str = "new project") -> Project:
    """A minimal valid project on the embedded model, ready to edit."""
    name = unique_name(store, name)
    project = ProjectFile.model_validate({
        "name": name,
        "agent": {"name": "agent", "model": "local/smollm2",
                  "instruction": "Answer the question in one sentence."},
        "dataset": {"train": [{"input": "What is the capital of France?",
                               "expected": "Paris"}]},
    })
    return store.save_project(name, dump_project(project))


def duplicate_project(store: Store, project_id: int) -> Project:
    original = store.get_project(project_id)
    project = parse_project(original.yaml, source=original.name)
    name = unique_name(store, f"{original.name} copy")
    return store.save_project(name, dump_project(project.model_copy(update={"name": name})))


def check_browser_project(project: ProjectFile, source: str) -> None:
    """What a project from the browser may not do: load code, read server files, bad rows."""
    check_trust(project, Origin.BROWSER, source)
    resolve_datasets(project, Path("."), source=source, origin=Origin.BROWSER)
    resolve_testset(project, Path("."), source=source, origin=Origin.BROWSER)


def save_project(store: Store, project: ProjectFile, project_id: int | None) -> Project:
    """Create or replace a stored project from the studio's editor (its name must be unique;
    checked as an upload is)."""
    check_browser_project(project, f"project {project.name!r}")
    return store.save_project(project.name, dump_project(project), project_id)


def stored_project(store: Store, project_id: int) -> ProjectFile:
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
    run = start_run(store, project, Path("."), name=name or record.name, project_id=project_id,
                    config=config, source=f"project {record.name!r}", origin=Origin.BROWSER)
    if live_workers(store, DEFAULT_QUEUE):
        return queue_run(store, run.id, DEFAULT_QUEUE)
    launch(store, run.id)
    return run


def launch(store: Store, run_id: str, listeners: list | None = None):
    """Start a created run in this process's run manager; if it cannot start, the run is marked
    failed with the reason (never left ``pending``) and the error is raised."""
    try:
        return get_manager(store).start(build_engine(store, run_id, listeners=listeners))
    except BaseException as exc:
        mark_not_started(store, run_id, exc)
        raise


def mark_not_started(store: Store, run_id: str, exc: BaseException) -> None:
    """Record why a created run never started."""
    reason = redact(f"{type(exc).__name__}: {exc}")[:2000]
    store.update_run(run_id, status=RunStatus.FAILED, stop_reason="not_started",
                     error=f"the run could not start: {reason}", finished_at=utcnow())


def pause_run(store: Store, run_id: str) -> None:

    get_manager(store).pause(run_id)


def resume_run(store: Store, run_id: str) -> str:
    """Unpause a paused run, or continue a stopped, failed or orphaned one from its last commit:
    through the queue when a worker is live, else in this process.

    Returns what was done: ``"unpaused"``, ``"queued"`` or ``"resumed"``.
    """

    manager = get_manager(store)
    run = store.get_run(run_id)
    check_spec_trust(run.spec, Origin.BROWSER, f"run {run_id}")
    if run.status in (RunStatus.PAUSED, RunStatus.RUNNING, RunStatus.PENDING) and \
            run.worker is not None:
        manager.unpause(run_id)
        return "unpaused"
    queue = run.queue or DEFAULT_QUEUE
    if live_workers(store, queue) and store.requeue_run(run_id, queue):
        return "queued"
    manager.resume(run_id)
    return "resumed"


def stop_run(store: Store, run_id: str) -> None:

    get_manager(store).stop(run_id)


def recover_orphans(store: Store) -> list[str]:

    return get_manager(store).recover_orphans()


# --------------------------------------------------------------------------- proposals & effect


@dataclass
class ProposalEvidence:
    """A proposal's minibatch: the parent's and the child's trials, and the rule's live verdict
    (effective scores, so overrides made since the proposal was scored count)."""

    proposal: Proposal
    parent: list[Trial]
    child: list[Trial]
    parent_sum: float
    child_sum: float
    compared: int
    rule_accepts: bool
    parent_sums: dict[int, float] = field(default_factory=dict)
    """A merge's two parents' sums (``parent`` holds the better one's trials)."""


def proposal_evidence(store: Store, proposal: Proposal) -> ProposalEvidence:
    """The evidence a person decides on; for a merge, the better parent against the child on
    the merge's validation subsample."""
    if proposal.is_merge:
        return _merge_evidence(store, proposal)

    child = [t for t in store.trials(proposal.run_id, proposal_id=proposal.id)
             if t.phase is TrialPhase.CHILD]
    minibatch = _minibatch(store, proposal) or [t.example_id for t in child]
    parents = store.first_trials(proposal.parent_id, minibatch)
    parent = [parents[e] for e in minibatch if e in parents]
    if proposal.child_id is not None:
        found = {t.example_id for t in child}
        missing = [e for e in minibatch if e not in found]
        if missing:
            extra = store.first_trials(proposal.child_id, missing)
            child += [extra[e] for e in missing if e in extra]
    evidence = minibatch_evidence(parent, child)
    return ProposalEvidence(proposal, parent, child, evidence.parent_sum, evidence.child_sum,
                            evidence.compared, evidence.rule_accepts)


def _merge_evidence(store: Store, proposal: Proposal) -> ProposalEvidence:
    examples = proposal.merge.subsample
    found = stored_evidence(store, proposal)
    better = store.first_trials(found.better_parent, examples)
    child = store.first_trials(proposal.child_id, examples) if proposal.child_id else {}
    return ProposalEvidence(proposal, [better[e] for e in examples if e in better],
                            [child[e] for e in examples if e in child], found.parent_sum,
                            found.child_sum, found.compared, found.rule_accepts,
                            found.parent_sums)


def _minibatch(store: Store, proposal: Proposal) -> list[int]:
    for event in reversed(store.events(proposal.run_id, kind=EventKind.ITERATION_STARTED)):
        if event.iteration == proposal.iteration:
            return list(event.payload.get("minibatch") or [])
    return []


def pending_proposal(store: Store, run_id: str) -> Proposal | None:
    """The run's proposal waiting for a person's decision, or None."""
    return latest_pending(store.proposals(run_id, status=ProposalStatus.PENDING))


@dataclass
class RunEffect:
    """What a correction changes: the best candidate and the pending proposal's verdict."""

    best_index: int | None
    best_score: float | None
    pending_id: int | None = None
    parent_sum: float | None = None
    child_sum: float | None = None
    rule_accepts: bool | None = None
    pending_is_merge: bool = False
    """Then ``parent_sum`` is the better parent's and the rule accepts at or above it."""


def run_effect(store: Store, run_id: str) -> RunEffect:

    view = load_view(store, run_id)
    best = view.candidate(view.best_id) if view.best_id is not None else None
    effect = RunEffect(best.index if best else None, view.best_score)
    proposal = pending_proposal(store, run_id)
    if proposal is not None:
        evidence = proposal_evidence(store, proposal)
        effect.pending_id = proposal.id
        effect.parent_sum = evidence.parent_sum
        effect.child_sum = evidence.child_sum
        effect.rule_accepts = evidence.rule_accepts
        effect.pending_is_merge = proposal.is_merge
    return effect


# --------------------------------------------------------------------------- listings (CLI)


def proposal_rows(store: Store, run_id: str, *, pending_only: bool = False) -> list[dict]:
    """What waits for a person and what was decided, one row per proposal: the live evidence
    sums (effective scores) and the decision that was applied, with who made it and when.
    A fixed number of queries however many reflection proposals the run has (plus a few per
    merge, of which a run has at most ``max_merge_invocations``)."""
    store.get_run(run_id)  # a clear error for an unknown run
    proposals = store.proposals(run_id)
    waiting = latest_pending(proposals)
    if pending_only:
        proposals = [waiting] if waiting is not None else []
    decisions = {d.proposal_id: d for d in reversed(store.decisions(run_id))}
    index = store.candidate_indexes(run_id)
    verdicts = proposal_verdicts(store, run_id, [p for p in proposals if p.merge is None])
    rows = []
    for proposal in proposals:
        evidence = verdicts.get(proposal.id) or proposal_evidence(store, proposal)  # a merge
        decision = decisions.get(proposal.id)
        rows.append({
            "id": proposal.id, "iteration": proposal.iteration, "kind": proposal.kind.value,
            "component": proposal.component, "merge": _merge_row(proposal, index),
            "status": proposal.status.value, "waiting_for_you": proposal is waiting,
            "parent_sum": round(evidence.parent_sum, 4),
            "child_sum": round(evidence.child_sum, 4), "rule_accepts": evidence.rule_accepts,
            "decision": decision.action.value if decision else None,
            "decided_by": ("rule" if decision.automatic else decision.author) if decision
            else None,
            "decided_at": decision.created_at.isoformat() if decision else None,
            "note": proposal.invalid_reason})
    return rows


def _merge_row(proposal: Proposal, index: dict[int, int]) -> dict | None:
    """A merge's parents and each component's source, as candidate indexes (``#n`` in the
    studio)."""
    if proposal.merge is None:
        return None
    return {"parents": [index.get(p) for p in proposal.merge.parents],
            "ancestor": index.get(proposal.merge.ancestor),
            "sources": {key: index.get(source)
                        for key, source in proposal.merge.sources.items()}}


# Few proposals (--pending) read only their own candidates' pairs; a whole run's listing
# involves nearly every candidate, so its pairs are narrowed by example only.
_FEW_CANDIDATES = 500


def proposal_verdicts(store: Store, run_id: str, proposals: list[Proposal]
                      ) -> dict[int, Evidence]:
    """:func:`proposal_evidence`'s sums and verdict for many proposals in three queries (the
    minibatches, the children's trials, the first trial of each pair involved), not per
    proposal. Same rules: the iteration's minibatch (else the child's examples), the parent's
    first trial per example, the child's own trials completed by its first trial elsewhere."""
    if not proposals:
        return {}
    minibatches = _minibatches(store, run_id)
    children = store.child_scores(run_id, [p.id for p in proposals]
                                  if len(proposals) <= _FEW_CANDIDATES else None)
    batches = {p.id: minibatches.get(p.iteration) or [e for e, _ in children.get(p.id, [])]
               for p in proposals}
    involved = {c for p in proposals for c in (p.parent_id, p.child_id) if c is not None}
    firsts = store.effective_scores(
        run_id, example_ids={e for batch in batches.values() for e in batch},
        candidate_ids=involved if len(involved) <= _FEW_CANDIDATES else None)
    verdicts = {}
    for p in proposals:
        child = list(children.get(p.id, []))
        parent = [(e, firsts[(p.parent_id, e)]) for e in batches[p.id]
                  if (p.parent_id, e) in firsts]
        if p.child_id is not None:
            found = {e for e, _ in child}
            child += [(e, firsts[(p.child_id, e)]) for e in batches[p.id]
                      if e not in found and (p.child_id, e) in firsts]
        verdicts[p.id] = score_evidence(parent, child)
    return verdicts


def _minibatches(store: Store, run_id: str) -> dict[int, list[int]]:
    """Iteration -> its minibatch's example ids, from the latest "iteration started" event."""
    return {event.iteration: list(event.payload.get("minibatch") or [])
            for event in store.events(run_id, kind=EventKind.ITERATION_STARTED)}


def trial_rows(store: Store, run_id: str, *, candidate_id: int | None = None,
               phase: str | None = None, offset: int = 0, limit: int | None = None
               ) -> Iterator[dict]:
    """A run's trials with the judge's and the effective (corrected) score and feedback, oldest
    first, streamed from the store in pages (a 100,000-trial run is never held in memory).
    The run and the phase are checked before the first row is read."""
    store.get_run(run_id)
    if phase is not None and phase not in {p.value for p in TrialPhase}:
        allowed = ", ".join(p.value for p in TrialPhase)
        raise ConfigError(f"phase {phase!r} is not one of: {allowed}", where="--phase",
                          value=phase)
    trials = store.iter_trials(run_id, candidate_id=candidate_id, phase=phase, offset=offset,
                               limit=limit, with_trace=False)
    return (_trial_row(t) for t in trials)


def _trial_row(t: Trial) -> dict:
    return {"id": t.id, "iteration": t.iteration, "phase": t.phase.value,
            "candidate": t.candidate_id, "example": t.example_id, "score": t.score,
            "effective_score": t.effective_score, "feedback": t.effective_feedback,
            "overridden": t.overridden, "error": t.error}


def require_reason(action: str, reason: str) -> None:
    """A rejection must say why: the next reflection reads the reason."""
    if action == "reject" and not (reason or "").strip():
        raise ConfigError("say why you reject it: the next reflection reads your reason",
                          where="reason")


