"""The human gate from a terminal: ``studio proposals``, ``decide`` and ``override``."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from studio.cli.common import _store, author_of
from studio.cli.gate import edit_outcome
from studio.engine.people.gates import decide, override, when_applied
from studio.engine.people.history import proposal_rows
from studio.model.errors import ConfigError
from studio.model.records import DecisionAction, EventKind
from studio.model.redaction import redact
from studio.projects.workspace import require_reason
from studio.store import Store
from studio.views.proposal_card import card_body, card_json
from studio.views.skips import skip_text

if TYPE_CHECKING:
    from studio.engine.people.history import ProposalRow


def cmd_decide(args: argparse.Namespace) -> int:
    require_reason(args.action, args.reason or "")
    store = _store(args)
    decision = decide(args.proposal_id, args.action, reason=args.reason or "",
                      edited_text=args.text, author=author_of(args), store=store)
    run_id = store.get_proposal(args.proposal_id).run_id
    if decision is None:  # a stop: no decision, the proposal waits again on resume
        live = store.get_run(run_id).status.is_active
        print(f"run {run_id} {'stops' if live else 'is not running'}; proposal "
              f"{args.proposal_id} stays pending and comes back to the gate when the run "
              f"resumes (`studio resume {run_id}`)")
        return 0
    print(f"decision {decision.id}: {decision.action.value} proposal {decision.proposal_id}")
    if decision.action is DecisionAction.EDIT:
        print(edit_outcome(store, args.proposal_id))
        return 0
    later = when_applied(store, run_id)
    if later:
        print(later)
    return 0


def cmd_override(args: argparse.Namespace) -> int:
    record = override(args.trial_id, score=args.score, feedback=args.feedback,
                      corrected_output=args.corrected_output, author=author_of(args),
                      reviewer=args.actor.reviewer, store=_store(args),
                      dimensions=dimension_scores(args.dimension))
    print(f"override {record.id}: trial {record.trial_id} score {record.score} "
          f"(judge said {record.judge_score})")
    return 0


def dimension_scores(given: list[str]) -> dict[str, float] | None:
    """``--dimension NAME=SCORE`` options as a dict.

    Raises:
        ConfigError: an option without ``=`` or with a score that is not a number."""
    found: dict[str, float] = {}
    for item in given:
        name, sep, value = item.partition("=")
        try:
            if not sep or not name.strip():
                raise ValueError
            found[name.strip()] = float(value)
        except ValueError:
            raise ConfigError(f"{item!r} is not NAME=SCORE (e.g. structure=0.5)",
                              where="--dimension", value=item) from None
    return found or None


def cmd_proposals(args: argparse.Namespace) -> int:
    rows = proposal_rows(_store(args), args.run_id, pending_only=args.pending,
                         with_text=args.json or args.pending)
    if args.json:
        print(json.dumps([card_json(row) for row in rows], indent=2))
        return 0
    if not rows:
        print("no proposal waits for a decision" if args.pending else "no proposals yet")
    for r in rows:
        decided = (f"{r.decision.value} by {r.decided_by} at {r.decided_at:%Y-%m-%d %H:%M:%S}"
                   if r.decision else ("WAITING FOR YOU" if r.waiting_for_you else "-"))
        sums = r.sums_text() or "-"
        said = f": {' '.join(r.reason.split())}" if r.decision and r.reason else ""
        edit = f"  (edit of {r.edited_from_number} by {r.edited_by or '?'})" \
            if r.edited_from is not None else ""
        print(redact(f"{r.number:>3} (id {r.id})  iter {r.iteration:<3} {_changes(r):<24} "
                     f"{r.status.value:<10} {sums}  {decided}{said}{edit}"
                     + (f"  ({r.invalid_reason})" if r.invalid_reason else "")))
        if args.pending:  # what a person decides on: the evidence and the diff
            print("\n".join(card_body(r)))
        elif r.merge:
            print("       " + ", ".join(f"{key} from #{source}"
                                        for key, source in r.merge.sources.items()))
    if not args.pending:
        _print_skipped(_store(args), args.run_id)
    return 0


def _print_skipped(store: Store, run_id: str) -> None:
    """Iterations that ended without a proposal to decide on, said plainly under the list."""
    for event in store.events(run_id, kind=EventKind.ITERATION_SKIPPED):
        print(f"iteration {event.iteration} skipped: {skip_text(event)}")


def _changes(row: ProposalRow) -> str:
    """What a proposal changes: its component, or which candidates a merge combines (for a
    merge, the parent's sum is the better parent's on the subsample)."""
    if not row.merge:
        return row.component
    a, b = row.merge.parents
    return f"merge #{a} + #{b}"
