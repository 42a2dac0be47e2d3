"""What the Proposals page says when several proposals wait at once (parallel proposals in
review mode: :mod:`studio.engine.loop.window`)."""

from __future__ import annotations

from studio.engine.people.history import numbered
from studio.model.records import Proposal, stored_id


def waiting_note(pending: list[Proposal], numbers: dict[int, int] | None = None) -> str | None:
    """For ``pending`` in the order to decide them
    (:func:`studio.engine.people.gates.pending_in_order`):
    a line naming them all, the first shown; None when one waits or none. ``numbers``: the
    run's own proposal numbers (:func:`studio.engine.people.history.proposal_numbers`)."""
    if len(pending) < 2:
        return None
    numbers = numbers or {}

    def name(p: Proposal) -> str:
        return numbered("Proposal", numbers.get(stored_id(p)), p.id)

    others = ", ".join(f"{name(p)} (iteration {p.iteration})" for p in pending[1:])
    return (f"{len(pending)} proposals wait, in the order to decide them: "
            f"{name(pending[0])} (iteration {pending[0].iteration}, shown here), then {others}. "
            "Their children join the pool in this order; the run keeps scoring meanwhile.")
