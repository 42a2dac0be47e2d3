"""Human gates and overrides: the library API the studio's pages call.

- :func:`decide` answers a pending proposal: accept, reject (with a reason the next reflection
  reads) or edit (the edited text is scored on the same minibatch and comes back). ``stop`` is
  no decision: it ends the run and the proposal waits again when the run resumes. A decision on
  a run that is not live is applied when it resumes (:func:`when_applied` says so). A page
  passes the proposal it showed (``shown_id``): a click that arrives after the page swapped in
  another proposal is refused (:class:`PageChangedError`), never applied to the new one.
- :func:`override` corrects a trial's score and/or feedback at any time; the judge's values are
  kept, and the effective score changes acceptance evidence, the front and the next reflection.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable

from studio.critics.adapters import metric_calls_per_trial
from studio.engine.people.labels import relabel_align_runs
from studio.engine.people.steering import stop_run
from studio.engine.policies.evidence import proposal_evidence
from studio.engine.policies.limits import spent_metric_calls
from studio.engine.policies.pool import val_example_ids
from studio.engine.run.agent_texts import validate_proposal
from studio.engine.run.context import RunContext, wake_run
from studio.model.errors import (
    ConfigError,
    PageChangedError,
    ProposalError,
    ProposalProblem,
    RunStateError,
)
from studio.model.limits import (
    MAX_DIMENSIONS,
    MAX_FEEDBACK_CHARS,
    MAX_NAME_CHARS,
    MAX_OUTPUT_CHARS,
    too_long,
)
from studio.model.records import (
    Candidate,
    Decision,
    DecisionAction,
    Override,
    Proposal,
    ProposalStatus,
    Run,
    RunStatus,
    TrialPhase,
    content_hash,
    instruction_placeholders,
)
from studio.model.workflow import split_component, state_before
from studio.runtime.agents import load_agent
from studio.runtime.workflows import is_workflow, state_keys
from studio.store import open_store
from studio.store.seams import PeopleStore

logger = logging.getLogger(__name__)


def decide(
    proposal_id: int,
    action: DecisionAction | str,
    *,
    reason: str = "",
    edited_text: str | None = None,
    author: str = "anonymous",
    store: PeopleStore | None = None,
    shown_id: int | None = None,
) -> Decision | None:
    """Record a person's decision on a pending proposal; the engine acts on it, at once when
    the run is live, else when it resumes (:func:`when_applied` says which).

    ``stop`` records nothing and returns None: it asks the run to stop, and the proposal stays
    pending and comes back to the gate, with its evidence, when the run resumes.

    ``shown_id`` is the proposal the person's page showed them to decide (None from the CLI,
    which names its proposal): a decision whose page showed another proposal is refused.

    Raises:
        PageChangedError: ``shown_id`` is not ``proposal_id``: the page changed under the
            click (it says which proposal is shown now and what became of the one shown).
        RunStateError: the proposal is not waiting for a decision, its run completed (no
            decision on it could ever be applied), or the budget cannot pay for an edit.
        ConfigError: unknown action, an edit without text, or an edit of a merge.
        ProposalError: the edited text is invalid (empty, unchanged, bad schema or YAML) or
            makes a candidate the run already has.
    """
    store = store or open_store()
    try:
        action = DecisionAction(action)
    except ValueError:
        allowed = ", ".join(a.value for a in DecisionAction)
        raise ConfigError(f"decision {action!r} is not one of: {allowed}", where="action") from None
    proposal = store.get_proposal(proposal_id)
    if shown_id is not None and shown_id != proposal_id:
        raise PageChangedError(page_changed(store, shown_id, proposal_id), shown_id=shown_id,
                               proposal_id=proposal_id)
    if proposal.decided_at is not None:
        raise RunStateError(store.already_decided(proposal))
    if proposal.status is not ProposalStatus.PENDING:
        raise RunStateError(f"proposal {proposal_id} is {proposal.status.value}, not pending: "
                            "only a proposal waiting at the gate can be decided")
    run = store.get_run(proposal.run_id)
    if action is DecisionAction.STOP:  # the Run page's Stop, as `studio stop` is
        stop_run(store, run.id)
        return None
    if run.status is RunStatus.COMPLETED:
        raise RunStateError(never_applied(run, proposal))
    if action is DecisionAction.EDIT and proposal.is_merge:
        raise ConfigError(f"proposal {proposal_id} is a merge: it takes whole components from "
                          "its two parents, so there is no text to edit; accept or reject it",
                          where="action")
    if action is DecisionAction.EDIT:
        edited_text = _checked_edit(store, proposal, edited_text)
        check_edit_budget(store, run, proposal)
    decision = store.add_decision(Decision(
        proposal_id=proposal_id, action=action, reason=reason.strip(), edited_text=edited_text,
        author=author or "anonymous", evidence=proposal_evidence(store, proposal)))
    wake_run(proposal.run_id)
    later = applied_later(run)
    if later:  # the CLI prints it too; a library caller sees it in the log
        logger.warning(later)
    return decision


EDIT_WAIT_SECONDS = 15.0
"""How long :func:`wait_for_edit` waits for a live run to turn an edit into its proposal: a
run in another process reads a decision within a heartbeat."""


def wait_for_edit(store: PeopleStore, proposal_id: int, timeout: float = EDIT_WAIT_SECONDS
                  ) -> Proposal | None:
    """The proposal a live run made of a person's edit of ``proposal_id`` (it makes it when it
    reads the decision), or None when none appeared within ``timeout`` seconds."""
    run_id = store.get_proposal(proposal_id).run_id
    deadline = time.monotonic() + timeout
    while True:
        edits = [p for p in store.proposals(run_id) if p.edited_from == proposal_id]
        if edits or time.monotonic() > deadline:
            return edits[0] if edits else None
        time.sleep(0.1)


def page_changed(store: PeopleStore, shown_id: int, proposal_id: int) -> str:
    """Why a click on ``proposal_id`` is refused when the person's page showed ``shown_id``:
    which proposal is shown now, and who decided the one they saw, and when."""
    return (f"the page changed: proposal {proposal_id} is now shown, and proposal {shown_id}, "
            f"which it showed before, {store.what_became_of(shown_id)}. Nothing was decided: "
            f"read proposal {proposal_id}, then decide again")


def when_applied(store: PeopleStore, run_id: str) -> str | None:
    """When a decision on ``run_id``'s gate takes effect, if not at once: a run that is not
    live applies it when it resumes (its iteration replays and finds the decision)."""
    return applied_later(store.get_run(run_id))


def applied_later(run: Run) -> str | None:
    """:func:`when_applied` for a run already read."""
    run_id = run.id
    if run.status is RunStatus.QUEUED:
        return f"run {run_id} is queued: the decision is applied when a worker takes it"
    if run.status.is_active:
        return None
    return (f"run {run_id} is {run.status.value}: the decision is applied when it resumes: "
            f"`studio resume {run_id}`")


def never_applied(run: Run, proposal: Proposal) -> str:
    """Why a decision on a completed run's proposal is refused (only an older studio completed
    a run while a proposal waited: a completed run is never resumed)."""
    return (f"proposal {proposal.id} still waits, but run {run.id} completed "
            f"({run.stop_reason}) and a completed run is not resumed, so no decision on it "
            f"could be applied. Start a new run, or fork this one (`studio fork {run.id}`)")


def check_edit_budget(store: PeopleStore, run: Run, proposal: Proposal) -> None:
    """An edit is charged before it is scored: the edited text on the proposal's minibatch, and
    the validation set should it be accepted. Refused when the budget cannot pay for both, so
    an edited proposal is never left unscored and an accepted child never unvalidated."""
    budget = run.config.max_metric_calls
    if budget is None:
        return
    minibatch = len({t.example_id for t in store.trials(
        run.id, proposal_id=proposal.id, phase=TrialPhase.CHILD)}) or run.config.minibatch_size
    validation = len(val_example_ids(store, run))
    cost = (minibatch + validation) * metric_calls_per_trial(run.spec.critic)
    left = budget - spent_metric_calls(store, run)
    if cost > left:
        raise RunStateError(
            f"an edit of proposal {proposal.id} costs up to {cost} metric calls "
            f"(the edited text on its minibatch of {minibatch}, then the validation set of "
            f"{validation} should it be accepted), and run {run.id} has {max(left, 0)} of its "
            f"max_metric_calls {budget} left. Accept or reject the proposal as it stands, or "
            f"stop the run and resume it with a larger budget: "
            f"`studio resume {run.id} --max-metric-calls N`")


def _checked_edit(store: PeopleStore, proposal: Proposal, edited_text: str | None) -> str:
    """The edited text, cleaned, or the reason it is refused, in the person's words: empty,
    the proposal's own text, invalid, or a candidate the run already has or is about to have
    (a text pooled or tried, the parent's included, or one another proposal or edit in flight
    makes: two lanes, two people), named."""
    if not edited_text or not edited_text.strip():
        raise ConfigError("an edit needs the edited text", where="edited_text")
    parent = store.get_candidate(proposal.parent_id)
    if edited_text.strip() == proposal.text.strip():
        raise ProposalError("the edited text is the same as the proposal; accept it instead",
                            reason=ProposalProblem.UNCHANGED)
    parent_text = parent.components[proposal.component]
    if edited_text.strip() == parent_text.strip():
        raise _already(f"candidate #{parent.index} ({_parent_words(parent, proposal)})")
    keys = _readable_keys(store, proposal.run_id, proposal.component, parent_text)
    text = validate_proposal(proposal.component, edited_text, parent_text, keys, edit=True)
    wanted = content_hash({**parent.components, proposal.component: text})
    duplicate = store.find_candidate(proposal.run_id, wanted)
    if duplicate is not None:  # it would be pooled twice and judged again
        raise _already(f"candidate #{duplicate.index}" + (" (the seed)" if duplicate.index == 0
                                                          else " (in the pool)" if
                                                          duplicate.pooled else ""))
    in_flight = _in_flight(store, proposal, wanted)
    if in_flight is not None:
        raise _already(in_flight)
    return text


def _already(what: str) -> ProposalError:
    return ProposalError(f"{what} already has this text: edit it into a text the run has not "
                         "tried, or accept or reject the proposal",
                         reason=ProposalProblem.DUPLICATE)


def _parent_words(parent: Candidate, proposal: Proposal) -> str:
    seed = "the seed, " if parent.index == 0 else ""
    return f"{seed}the parent proposal {proposal.id} was made from"


def _in_flight(store: PeopleStore, proposal: Proposal, wanted: str) -> str | None:
    """What in the run is about to make the candidate ``wanted`` (its content hash) before
    this edit would: a proposal whose child is not made yet, or another person's edit the
    engine has not applied yet (parallel proposals: one text edited on two lanes)."""
    proposals = {p.id: p for p in store.proposals(proposal.run_id)}
    parents = {c.id: c for c in store.candidates(proposal.run_id)}

    def makes(parent_id: int, component: str, text: str) -> bool:
        parent = parents.get(parent_id)
        return parent is not None and content_hash(
            {**parent.components, component: text.strip()}) == wanted

    edits = {d.proposal_id: d for d in store.decisions(proposal.run_id)
             if d.action is DecisionAction.EDIT}
    for other in proposals.values():
        if other.id != proposal.id and other.child_id is None and not other.is_merge and \
                other.status in (ProposalStatus.EVALUATING, ProposalStatus.PENDING) and \
                makes(other.parent_id, other.component, other.text):
            edit = edits.get(other.edited_from) if other.edited_from is not None else None
            return f"proposal {other.id}" + (
                f" ({edit.author}'s edit of proposal {edit.proposal_id}, not scored yet)"
                if edit is not None else "")
    applied = {p.edited_from for p in proposals.values() if p.edited_from is not None}
    for decision in edits.values():
        edited = proposals.get(decision.proposal_id)
        if edited is not None and edited.id not in applied and edited.id != proposal.id and \
                makes(edited.parent_id, edited.component, decision.edited_text or ""):
            return f"{decision.author}'s edit of proposal {edited.id} (not scored yet)"
    return None


def _readable_keys(store: PeopleStore, run_id: str, component: str, parent_text: str) -> set[str]:
    """What an edit of ``component`` may name, as the engine's state guard has it: example
    fields and, in a workflow run, the state earlier agents write: from the agents themselves
    for a workflow loaded by reference (as the engine builds it), else from the stored workflow
    and ``output_key``s, plus what the parent's text already names (it ran: a workflow of live
    Python objects stores no ``output_key``s)."""
    keys = store.example_keys(run_id)
    agent, _ = split_component(component)
    spec = store.get_run(run_id).spec
    if agent is None:
        return keys
    if spec.agent_ref and not spec.agents:
        try:
            root = load_agent(spec.agent_ref, folder=spec.agent_folder)  # trusted, as in the engine
        except ConfigError:  # not importable here (it runs on a worker): what the parent reads
            return keys | instruction_placeholders(parent_text)
        return keys | (state_keys(root).get(agent, set()) if is_workflow(root) else set())
    if spec.workflow is None:
        return keys
    output_keys = {a.name: a.output_key for a in spec.agents}
    return (keys | state_before(spec.workflow, output_keys).get(agent, set())
            | instruction_placeholders(parent_text))


def override(
    trial_id: int,
    *,
    score: float | None = None,
    feedback: str | None = None,
    author: str = "anonymous",
    store: PeopleStore | None = None,
    corrected_output: str | None = None,
    reviewer: str | None = None,
    dimensions: dict[str, float] | None = None,
) -> Override:
    """Correct a critic: set the trial's effective score and/or feedback, and optionally what
    the answer should have been (``corrected_output``: the next reflection reads it).

    ``reviewer`` is the verified person labelling (a signed-in or token user): on a trial
    several people label, each one's label counts once in the consensus
    (:mod:`studio.model.consensus`); None (the local studio) is one person, whose latest
    correction of each field stands. ``dimensions``: their score per critic dimension.

    Raises:
        ConfigError: none of score, feedback, corrected output or dimension scores given, a
            score outside [0, 1], a feedback longer than ``MAX_FEEDBACK_CHARS`` or a corrected
            output longer than ``MAX_OUTPUT_CHARS``.
    """
    store = store or open_store()
    label = _checked_label(score, feedback, corrected_output, dimensions, "override")
    record = store.add_override(trial_id, author=author, reviewer=reviewer, **label)
    relabel_align_runs(store, trial_id)  # an align run's label is this correction as it is now
    return record


def adjudicate(
    trial_id: int,
    *,
    score: float | None = None,
    feedback: str | None = None,
    author: str = "anonymous",
    store: PeopleStore | None = None,
    corrected_output: str | None = None,
) -> Override:
    """Settle a trial the reviewers disagree on: its effective values become these (the fields
    given), everyone's labels are kept beside them. Withdraw it with :func:`undo_override`.
    (Who may adjudicate is the caller's check: an owner, :mod:`studio.projects.team`.)

    Raises:
        ConfigError: as :func:`override`.
    """
    store = store or open_store()
    label = _checked_label(score, feedback, corrected_output, None, "adjudication")
    record = store.add_override(trial_id, author=author, reviewer=None, adjudicated=True,
                                **label)
    relabel_align_runs(store, trial_id)
    return record


def _checked_label(score: float | None, feedback: str | None, corrected_output: str | None,
                   dimensions: dict[str, float] | None, where: str) -> dict:
    """The label's fields as stored, after the checks :func:`override` documents."""
    corrected_output = (corrected_output or "").strip() or None
    if score is None and (feedback is None or not feedback.strip()) and \
            corrected_output is None and not dimensions:
        raise ConfigError(f"an {where} needs a score, a feedback text, or both (or a "
                          "corrected output)", where=where)
    for name, value in {"score": score, **{f"dimensions.{k}": v for k, v in
                                           (dimensions or {}).items()}}.items():
        if value is not None and not (isinstance(value, int | float) and
                                      not isinstance(value, bool) and 0.0 <= value <= 1.0):
            raise ConfigError(f"{name} {value!r} is outside [0, 1]", where=f"{where}.{name}",
                              value=value)
    if len(dimensions or {}) > MAX_DIMENSIONS or any(
            len(name) > MAX_NAME_CHARS for name in dimensions or {}):
        raise ConfigError(f"at most {MAX_DIMENSIONS} dimension scores, each named in at most "
                          f"{MAX_NAME_CHARS} characters", where=f"{where}.dimensions")
    oversize = too_long(feedback or "", MAX_FEEDBACK_CHARS, "the feedback")
    if oversize:
        raise ConfigError(oversize, where=f"{where}.feedback")
    oversize = too_long(corrected_output or "", MAX_OUTPUT_CHARS, "the corrected output")
    if oversize:
        raise ConfigError(oversize, where=f"{where}.corrected_output")
    return {"score": None if score is None else float(score), "feedback": feedback,
            "corrected_output": corrected_output,
            "dimensions": {k: float(v) for k, v in dimensions.items()} if dimensions else None}


def merge_correction(active: Override | None, score: float | None,
                     feedback: str | None) -> tuple[float | None, str | None]:
    """A new correction replaces the trial's active one: what the person leaves empty keeps the
    active correction's value, so correcting only the feedback does not drop a corrected score."""
    if active is not None:
        score = active.score if score is None else score
        feedback = feedback or active.feedback
    return score, feedback or None


def latest_pending(proposals: Iterable[Proposal]) -> Proposal | None:
    """The proposal waiting at the gate for a person's decision (the latest, should there be
    several), or None. A decided proposal the engine has not finished acting on (an accepted
    child still being validated) waits for no one."""
    pending = [p for p in proposals if p.status is ProposalStatus.PENDING and p.decided_at is None]
    return pending[-1] if pending else None


def pending_in_order(proposals: Iterable[Proposal]) -> list[Proposal]:
    """Every proposal waiting at the gate, in the order a person should decide them: by
    iteration (with parallel proposals, lane order, which is the order their children are
    pooled in), then as stored (an edit after the text it replaces)."""
    return sorted((p for p in proposals
                   if p.status is ProposalStatus.PENDING and p.decided_at is None),
                  key=lambda p: (p.iteration, p.id or 0))


def undo_override(override_id: int, *, store: PeopleStore | None = None) -> Override:
    """Withdraw an override; the previous one (or the judge's value) applies again."""
    store = store or open_store()
    record = store.undo_override(override_id)
    relabel_align_runs(store, record.trial_id)
    return record


async def await_decision(ctx: RunContext, proposal_id: int) -> Decision:
    """Wait for a person's decision, honouring a person's stop and a worker's shutdown (the
    run's limits are checked between iterations; the time waited here is not timed).

    Woken at once by a decision made in this process and by each heartbeat; a decision from
    another process is seen within a heartbeat (or the control's fallback timeout)."""
    def first_decision() -> Decision | None:  # the first wins (the store refuses a second)
        decisions = deciding(ctx.store.decisions(proposal_id=proposal_id))
        return decisions[0] if decisions else None

    return await ctx.control.until(first_decision)


def deciding(decisions: list[Decision]) -> list[Decision]:
    """The decisions that decide (accept, edit, reject): an older store's ``stop`` rows are
    not one, since a stop only ends the run."""
    return [d for d in decisions if d.action is not DecisionAction.STOP]


