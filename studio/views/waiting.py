"""What the Proposals page says when several proposals wait at once (parallel proposals in
review mode: :mod:`studio.engine.lanes`)."""

from __future__ import annotations

from studio.model.records import Proposal


def waiting_note(pending: list[Proposal]) -> str | None:
    """For ``pending`` in the order to decide them (:func:`studio.engine.gates.pending_in_order`):
    a line naming them all, the first shown; None when one waits or none."""
    if len(pending) < 2:
        return None
    others = ", ".join(f"#{p.id} (iteration {p.iteration})" for p in pending[1:])
    return (f"{len(pending)} proposals wait, in the order to decide them: "
            f"#{pending[0].id} (iteration {pending[0].iteration}, shown here), then {others}. "
            "Their children join the pool in this order; the run keeps scoring meanwhile.")
