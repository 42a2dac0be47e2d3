"""Proposals and the decisions on them."""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any

from sqlalchemy import bindparam, insert, select, update
from sqlalchemy.sql import Executable, Select, Update

import studio.store.schema as t
from studio.model.errors import NotFoundError, RunStateError
from studio.model.records import Decision, Proposal, ProposalKind, ProposalStatus
from studio.store.repos.base import Repository, guard, inserted_id, to_model

_INSERT = insert(t.proposals)
_BY_ID = select(t.proposals).where(t.proposals.c.id == bindparam("proposal_id"))
_INSERT_DECISION = insert(t.decisions)
_CLAIM = (update(t.proposals)
          .where(t.proposals.c.id == bindparam("proposal_id"),
                 t.proposals.c.decided_at.is_(None),
                 t.proposals.c.status.in_([ProposalStatus.EVALUATING.value,
                                           ProposalStatus.PENDING.value]))
          .values(decided_at=bindparam("b_decided_at")))
"""Built once (the engine reads and writes proposals every iteration: building a statement
costs more than running it)."""


@functools.cache
def _update_query(fields: frozenset[str]) -> Update:
    """``UPDATE proposals SET <fields>`` for one proposal, per set of fields (a field that is
    no column is refused when it is compiled, naming it)."""
    return (update(t.proposals).where(t.proposals.c.id == bindparam("proposal_id"))
            .values({name: bindparam(f"b_{name}") for name in sorted(fields)}))


@functools.cache
def _proposals_query(by_status: bool, by_iteration: bool, by_kind: bool) -> Select:
    query = select(t.proposals).where(t.proposals.c.run_id == bindparam("run_id"))
    if by_status:
        query = query.where(t.proposals.c.status == bindparam("status"))
    if by_iteration:
        query = query.where(t.proposals.c.iteration == bindparam("iteration"))
    if by_kind:
        query = query.where(t.proposals.c.kind == bindparam("kind"))
    return query.order_by(t.proposals.c.id)


@functools.cache
def _decisions_query(by_run: bool, by_proposal: bool, after: bool = False) -> Select:
    query = select(*[c for c in t.decisions.c if c.name != "run_id"]).order_by(
        t.decisions.c.id)
    if by_run:
        query = query.where(t.decisions.c.run_id == bindparam("run_id"))
    if after:
        query = query.where(t.decisions.c.id > bindparam("after_id"))
    if by_proposal:
        query = query.where(t.decisions.c.proposal_id == bindparam("proposal_id"))
    return query


class ProposalRepository(Repository):
    """Proposals and the decisions on them."""

    @guard
    def add_proposal(self, proposal: Proposal) -> Proposal:
        """Stored as proposed (a resumed run reads it back); redacted where it is shown."""
        values = proposal.model_dump(exclude={"id"})
        with self.engine.begin() as c:
            new_id = inserted_id(c.execute(_INSERT, values))
        return proposal.model_copy(update={"id": new_id})

    @guard
    def update_proposal(self, proposal_id: int, **fields: Any) -> Proposal:
        if isinstance(fields.get("status"), ProposalStatus):
            fields["status"] = fields["status"].value
        with self.engine.begin() as c:
            c.execute(_update_query(frozenset(fields)),
                      {"proposal_id": proposal_id, **{f"b_{k}": v for k, v in fields.items()}})
        return self.get_proposal(proposal_id)

    @guard
    def get_proposal(self, proposal_id: int) -> Proposal:
        with self.engine.connect() as c:
            row = c.execute(_BY_ID, {"proposal_id": proposal_id}).first()
        if row is None:
            raise NotFoundError(f"proposal {proposal_id} does not exist")
        return to_model(Proposal, row)

    @guard
    def proposals(self, run_id: str, *, status: ProposalStatus | None = None,
                  iteration: int | None = None, kind: ProposalKind | None = None
                  ) -> list[Proposal]:
        values: dict[str, Any] = {"run_id": run_id}
        if status is not None:
            values["status"] = ProposalStatus(status).value
        if iteration is not None:
            values["iteration"] = iteration
        if kind is not None:
            values["kind"] = ProposalKind(kind).value
        query = _proposals_query(status is not None, iteration is not None, kind is not None)
        with self.engine.connect() as c:
            return [to_model(Proposal, r) for r in c.execute(query, values)]

    @guard
    def proposals_since(self, run_id: str, after_id: int, ids: Iterable[int] = ()
                        ) -> list[Proposal]:
        """The run's proposals made after proposal ``after_id``, and those in ``ids`` (the
        ones a reader keeps up to date: :class:`studio.engine.run.tried.TriedBook`), by id: what
        changed since a read, without reading the whole run again."""
        p = t.proposals.c
        made_after = select(t.proposals).where(p.run_id == run_id, p.id > after_id)
        query: Executable = made_after
        wanted = list(ids)
        if wanted:
            query = made_after.union_all(select(t.proposals).where(p.id.in_(wanted),
                                                              p.id <= after_id))
        with self.engine.connect() as c:
            rows = c.execute(query).all()
        return sorted((to_model(Proposal, r) for r in rows), key=lambda m: m.id or 0)

    @guard
    def waiting_proposals(self) -> dict[str, Proposal]:
        """Run id -> the proposal waiting at its gate for a person's decision (the latest,
        should a run have several), for every run that has one, in one query: the inbox badge
        reads it on every page, so it must not cost a query per listed run. Waiting proposals
        are few (at most one or two per unfinished run), so callers filter by run."""
        query = select(t.proposals).where(
            t.proposals.c.status == ProposalStatus.PENDING.value,
            t.proposals.c.decided_at.is_(None)).order_by(t.proposals.c.id)
        with self.engine.connect() as c:
            return {row.run_id: to_model(Proposal, row) for row in c.execute(query)}

    @guard
    def add_decision(self, decision: Decision) -> Decision:
        """Record the decision on a proposal that has none yet: the first decision wins.

        The proposal row is claimed and the decision inserted in one transaction
        (``UPDATE ... WHERE decided_at IS NULL``), so of two people deciding at once, or a
        person and a second engine, exactly one succeeds.

        Raises:
            RunStateError: the proposal was already decided (says by whom and when).
        """
        proposal = self.get_proposal(decision.proposal_id)
        values = decision.model_dump(exclude={"id"})
        values["run_id"] = proposal.run_id
        with self.engine.begin() as c:  # only a proposal evaluating or waiting is claimed
            claimed = c.execute(_CLAIM, {"proposal_id": decision.proposal_id,
                                         "b_decided_at": decision.created_at}).rowcount
            if claimed == 1:
                new_id = inserted_id(c.execute(_INSERT_DECISION, values))
        if claimed != 1:
            raise RunStateError(self.already_decided(proposal))
        return decision.model_copy(update={"id": new_id})

    def already_decided(self, proposal: Proposal) -> str:
        """Why a proposal cannot be decided again: who decided it, when, and how."""
        first = next(iter(self.decisions(proposal_id=proposal.id)), None)
        if first is None:
            return (f"proposal {proposal.id} is {proposal.status.value}: only a proposal "
                    "waiting at the gate can be decided")
        return f"proposal {proposal.id} {_decided_words(first)}"

    @guard
    def what_became_of(self, proposal_id: int) -> str:
        """What became of a proposal a person was shown, in words that follow its name: who
        decided it and when ("was already decided by ana at ... UTC (accept)"), or that it
        still waits, or its state."""
        proposal = self.get_proposal(proposal_id)
        first = next(iter(self.decisions(proposal_id=proposal_id)), None)
        if first is not None:
            return _decided_words(first)
        if proposal.status is ProposalStatus.PENDING and proposal.decided_at is None:
            return "still waits for a decision"
        return f"is {proposal.status.value}"

    @guard
    def decisions(self, run_id: str | None = None, *, proposal_id: int | None = None,
                  after_id: int | None = None) -> list[Decision]:
        """Oldest first; ``after_id``: only those recorded after decision ``after_id`` (a
        reader that keeps a run's decisions reads only the new ones)."""
        values = {"run_id": run_id, "proposal_id": proposal_id, "after_id": after_id}
        query = _decisions_query(run_id is not None, proposal_id is not None,
                                 after_id is not None)
        with self.engine.connect() as c:
            return [to_model(Decision, r) for r in c.execute(
                query, {name: value for name, value in values.items() if value is not None})]



def _decided_words(first: Decision) -> str:
    """"was already decided by ana at 2026-01-02 10:00:00 UTC (accept)": who decided a
    proposal first, when, and how (the acceptance rule, in auto mode)."""
    who = "the acceptance rule" if first.automatic else first.author
    return (f"was already decided by {who} at {first.created_at:%Y-%m-%d %H:%M:%S} UTC "
            f"({first.action.value})")
