"""A run's proposals as history rows: one record, :class:`ProposalRow`, built one way
(:func:`proposal_rows`) for the CLI (``studio proposals``), the library's
``EvolutionResult.iteration_history``, the Proposals page and exports.

Each row carries the evidence twice: as it stood when the proposal was decided (the copy the
decision keeps) and as it holds now (corrections made since count), so the audit trail shows
both what a person decided on and what is true now.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from pydantic import BaseModel, Field

from studio.engine.people.gates import deciding, pending_in_order
from studio.engine.policies.evidence import evidence_for
from studio.model.evidence import Evidence
from studio.model.records import (
    Decision,
    DecisionAction,
    Proposal,
    ProposalKind,
    ProposalStatus,
    stored_id,
)
from studio.model.workflow import split_component
from studio.store.seams import PeopleStore


class MergeRow(BaseModel):
    """A merge's parents, ancestor and each component's source, as candidate indexes (``#n``)."""

    parents: list[int | None]
    ancestor: int | None
    sources: dict[str, int | None]


class ProposalRow(BaseModel):
    """One proposal of a run: what it changed, how it ended, who decided and on what evidence."""

    id: int
    """The database id (``studio decide ID`` takes it)."""
    number: int = 0
    """Its number in the run: 1, 2, 3 … in the order the run made its proposals (what people
    read; 0 for a row built without its run's order)."""
    iteration: int
    kind: ProposalKind
    component: str
    """The component key (``instruction``, ``writer.instruction``); empty for a merge."""
    label: str
    """What it changes, for people: the component, or ``merge of #1 and #2``."""
    parent_id: int
    parent_ids: list[int]
    """The candidates the child is compared with: the parent, or a merge's two parents."""
    parent_index: int | None = None
    child_id: int | None = None
    child_index: int | None = None
    sources: dict[str, int] | None = None
    """A merge's component key -> id of the candidate it is taken from."""
    merge: MergeRow | None = None
    edited_from: int | None = None
    """The proposal this one is a person's edit of (its database id)."""
    edited_from_number: int | None = None
    """That proposal's number in the run."""
    edited_by: str | None = None
    """For a person's edit: who wrote it (the author of the decision that edited the original)."""
    text: str | None = None
    """The proposed text (a merge's one-line summary); filled when the rows are built
    ``with_text`` (``studio proposals --json``, the shell's gate), else None."""
    parent_text: str | None = None
    """The parent's text of the same component, what the proposal is diffed against (None for a
    merge, and when built without texts)."""
    status: ProposalStatus
    invalid_reason: str | None = None
    """Why it ended other than by its decision's own words: an invalid or repeated text (an
    attempt of a skipped iteration reads here), a stop at the gate, a budget too small."""
    waiting_for_you: bool = False
    """The proposal the run waits on for a person's decision."""
    minibatch: list[int] = Field(default_factory=list)
    now: Evidence | None = None
    """The evidence from the scores as they are now; None when there is no child to compare."""
    at_decision: Evidence | None = None
    """The evidence the decision was made on; None before a decision (or for decisions recorded
    before the studio kept it)."""
    decision: DecisionAction | None = None
    automatic: bool | None = None
    decided_by: str | None = None
    """``rule`` for the acceptance rule, else the person's name."""
    decided_at: datetime | None = None
    reason: str = ""
    """The decision's reason (a rejection's, the rule's verdict), else the invalid reason."""

    @property
    def title(self) -> str:
        """``Proposal 3 (id 26)``: the run's own number first, the database id beside it for
        the CLI's ``decide``."""
        return numbered("Proposal", self.number, self.id)

    @property
    def accepted(self) -> bool:
        """Accepted and applied (its child pooled), not just asked for."""
        return self.status is ProposalStatus.ACCEPTED

    @property
    def changed_since_decision(self) -> bool:
        """Whether the sums a person sees now differ from those the decision was made on."""
        return self.at_decision is not None and self.now is not None and \
            not self.now.same_sums(self.at_decision)

    def sums_text(self) -> str:
        """The evidence in one line, both moments labelled where they differ:
        ``at decision 0.000 → 0.750 · now 0.800 → 0.750 (corrected since)``."""
        if self.now is None:
            return ""
        if self.now.compared == 0 and not self.changed_since_decision:
            return "no example compared"  # nothing scored yet, or nothing could be evaluated
        now = self.now.effective.arrow()
        if self.at_decision is not None and self.changed_since_decision:
            return (f"at decision {self.at_decision.effective.arrow()} · now {now} "
                    "(corrected since)")
        if self.now.corrected:
            return f"{now} (the judge alone: {self.now.judged.arrow()})"
        return now

    def as_dict(self) -> dict[str, object]:
        """JSON-ready: every field, plus the flat names ``iteration_history`` has always had
        (``proposal_id``, ``parent_sum``/``child_sum``: the effective sums now, ``accepted``,
        ``rule_accepts``, ``note``) so porting code keeps working."""
        now = self.now
        return {**self.model_dump(mode="json"),
                "proposal_id": self.id, "accepted": self.accepted,
                "parent_sum": now.parent_sum if now else None,
                "child_sum": now.child_sum if now else None,
                "compared": now.compared if now else None,
                "rule_accepts": now.rule_accepts if now else None,
                "corrected_since": self.changed_since_decision,
                "evidence": self.sums_text(), "note": self.invalid_reason}

    def flat(self) -> dict[str, object]:
        """One flat record per proposal for a spreadsheet (an export's CSV and JSONL)."""
        row: dict[str, object] = {
               "proposal_id": self.id, "number": self.number, "iteration": self.iteration,
               "kind": self.kind.value,
               "component": self.component, "label": self.label,
               "parent_ids": self.parent_ids, "child_id": self.child_id,
               "edited_from": self.edited_from,
               "edited_from_number": self.edited_from_number, "status": self.status.value,
               "invalid_reason": self.invalid_reason,
               "decision": self.decision.value if self.decision else None,
               "automatic": self.automatic, "decided_by": self.decided_by,
               "decided_at": self.decided_at.isoformat() if self.decided_at else None,
               "reason": self.reason, "minibatch": self.minibatch}
        for moment, evidence in (("now", self.now), ("at_decision", self.at_decision)):
            row |= _flat_evidence(moment, evidence)
        return row | {"corrected_since": self.changed_since_decision,
                      "evidence": self.sums_text()}


def _flat_evidence(moment: str, evidence: Evidence | None) -> dict[str, object]:
    keys = ("parent_sum", "child_sum", "compared")
    effective = evidence.effective.model_dump() if evidence else dict.fromkeys(keys)
    judged = evidence.judged.model_dump() if evidence else dict.fromkeys(keys)
    return {**{f"{moment}_{k}": effective[k] for k in keys},
            **{f"{moment}_judged_{k}": judged[k] for k in keys},
            f"{moment}_rule_accepts": evidence.rule_accepts if evidence else None}


def proposal_rows(store: PeopleStore, run_id: str, *, pending_only: bool = False,
                  with_text: bool = False) -> list[ProposalRow]:
    """Every proposal of the run, oldest first (``pending_only``: those waiting for a
    person, in the order to decide them: several with parallel proposals; ``with_text``: with
    each proposal's text and its parent's, for a diff). A fixed handful of queries however
    many proposals the run has."""
    store.get_run(run_id)  # a clear error for an unknown run
    proposals = store.proposals(run_id)
    numbers = proposal_numbers(proposals)
    waiting = pending_in_order(proposals)  # several with parallel proposals
    waiting_ids = {p.id for p in waiting}
    if pending_only:
        proposals = waiting
    # the first decision that decides (an older store's "stop" rows decide nothing)
    decisions = {d.proposal_id: d for d in reversed(deciding(store.decisions(run_id)))}
    index = store.candidate_indexes(run_id)
    evidence = evidence_for(store, run_id, [p for p in proposals if p.child_id is not None])
    rows = [proposal_row(p, decisions.get(stored_id(p)), evidence.get(stored_id(p)), index,
                         waiting=p.id in waiting_ids, numbers=numbers,
                         edit=decisions.get(p.edited_from) if p.edited_from else None)
            for p in proposals]
    return _with_texts(store, run_id, proposals, rows) if with_text else rows


def _with_texts(store: PeopleStore, run_id: str, proposals: list[Proposal],
                rows: list[ProposalRow]) -> list[ProposalRow]:
    """The rows with each proposal's text and its parent's text of the same component."""
    candidates = {c.id: c for c in store.candidates(run_id)}
    for proposal, row in zip(proposals, rows, strict=True):
        parent = candidates.get(proposal.parent_id)
        row.text = proposal.text
        row.parent_text = None if proposal.is_merge or parent is None else \
            parent.components.get(proposal.component, "")
    return rows


def proposal_numbers(proposals: Iterable[Proposal]) -> dict[int, int]:
    """``proposal id -> its number in the run`` (1, 2, 3 … in the order they were made) for
    all of one run's proposals: computed from the ids' order, never stored."""
    return {pid: n for n, pid in enumerate(sorted(stored_id(p) for p in proposals), start=1)}


def numbered(noun: str, number: int | None, db_id: int | None) -> str:
    """``Proposal 3 (id 26)``, ``Trial 12 (id 481)``: a run's own number for people, the
    database id beside it for the commands that take one (``#26`` alone without a number)."""
    if not number:
        return f"{noun} #{db_id}"
    return f"{noun} {number}" + (f" (id {db_id})" if db_id is not None else "")


def proposal_row(proposal: Proposal, decision: Decision | None, now: Evidence | None,
                 index: dict[int, int], *, waiting: bool = False,
                 numbers: dict[int, int] | None = None, edit: Decision | None = None
                 ) -> ProposalRow:
    """One proposal's row from its records (``index``: candidate id -> index; ``numbers``:
    :func:`proposal_numbers` of the run; ``edit``: for a person's edit, the decision on the
    original that made it)."""
    merge = proposal.merge
    numbers = numbers or {}
    return ProposalRow(
        id=stored_id(proposal), number=numbers.get(stored_id(proposal), 0),
        iteration=proposal.iteration, kind=proposal.kind,
        component=proposal.component, label=_label(proposal, index),
        parent_id=proposal.parent_id,
        parent_ids=list(merge.parents) if merge else [proposal.parent_id],
        parent_index=index.get(proposal.parent_id), child_id=proposal.child_id,
        child_index=index.get(proposal.child_id) if proposal.child_id is not None else None,
        sources=dict(merge.sources) if merge else None,
        merge=MergeRow(parents=[index.get(p) for p in merge.parents],
                       ancestor=index.get(merge.ancestor),
                       sources={k: index.get(s) for k, s in merge.sources.items()})
        if merge else None,
        edited_from=proposal.edited_from,
        edited_from_number=numbers.get(proposal.edited_from)
        if proposal.edited_from is not None else None,
        edited_by=edit.author if edit is not None and edit.action is DecisionAction.EDIT
        else None, status=proposal.status,
        invalid_reason=proposal.invalid_reason, waiting_for_you=waiting,
        minibatch=list(proposal.minibatch), now=now,
        at_decision=decision.evidence if decision else None,
        decision=decision.action if decision else None,
        automatic=decision.automatic if decision else None,
        decided_by=("rule" if decision.automatic else decision.author) if decision else None,
        decided_at=decision.created_at if decision else None,
        reason=(decision.reason if decision and decision.reason
                else proposal.invalid_reason or ""))


def _label(proposal: Proposal, index: dict[int, int]) -> str:
    if proposal.merge is None:
        return proposal.component
    a, b = (index.get(p, "?") for p in proposal.merge.parents)
    return f"merge of #{a} and #{b}"


def agent_of(row: ProposalRow) -> str:
    """The agent a row's component belongs to in a workflow run ("" otherwise, and for a
    merge)."""
    return "" if row.merge is not None else split_component(row.component)[0] or ""
