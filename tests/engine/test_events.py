"""Stored engine events read back as the typed events they were written from."""

from __future__ import annotations

import uuid

import pytest

from studio.engine.run.events import (
    STORED_EVENTS,
    EngineEvent,
    IterationSkipped,
    Progress,
    ProposalCreated,
    RunFinished,
    SkipCause,
    StoredEventError,
    TestUnscored,
)
from studio.model.records import (
    DecisionAction,
    EventKind,
    ProposalKind,
    Run,
    RunEvent,
    RunStatus,
    StopReason,
)


def stored(event: EngineEvent, store) -> RunEvent:
    """``event`` as a reader gets it: written to a real store and read back."""
    run_id = store.create_run(Run(id=uuid.uuid4().hex[:12], name="events")).id
    store.add_event(run_id, event.kind, event.iteration, event.payload())
    return store.events(run_id)[-1]


EXAMPLES = [
    RunFinished(run_id="r", iteration=3, status=RunStatus.STOPPED, stop_reason=StopReason.USER),
    IterationSkipped(run_id="r", iteration=2, cause=SkipCause.PERFECT_PARENT, reason="perfect",
                     proposal_id=None),
    ProposalCreated(run_id="r", iteration=1, proposal_id=4, parent_id=1,
                    proposal_kind=ProposalKind.MERGE, parent_ids=[1, 2], sources={"a": 1}),
    Progress(run_id="r", iteration=2, max_iterations=5, metric_calls=12, best_score=0.5,
             eta_seconds=3.0),
    TestUnscored(run_id="r", iteration=4, reason=StopReason.SHUTDOWN, message="stopped"),
]


@pytest.mark.parametrize("event", EXAMPLES, ids=lambda e: type(e).__name__)
def test_a_stored_event_reads_back_as_the_event_written(event, store):
    row = stored(event, store)
    back = EngineEvent.from_stored(row)
    assert type(back) is type(event)
    assert back == EngineEvent.from_stored(row) == type(event).from_stored(row)
    assert back.payload() == event.payload() and back.run_id == row.run_id


def test_enum_fields_read_back_as_enums(store):
    finished = RunFinished.from_stored(stored(EXAMPLES[0], store))
    assert finished.status is RunStatus.STOPPED and finished.stop_reason is StopReason.USER
    skipped = IterationSkipped.from_stored(stored(EXAMPLES[1], store))
    assert skipped.cause is SkipCause.PERFECT_PARENT


def test_every_stored_kind_has_its_event_class():
    assert len({cls.kind for cls in STORED_EVENTS}) == len(STORED_EVENTS)
    assert EventKind.TRIAL_COMMITTED not in {cls.kind for cls in STORED_EVENTS}


def test_an_older_row_takes_the_defaults_of_fields_it_lacks():
    row = RunEvent(run_id="r", kind=EventKind.DECISION_APPLIED, iteration=2,
                   payload={"proposal_id": 7, "action": "reject"})
    applied = EngineEvent.from_stored(row)
    assert applied.action is DecisionAction.REJECT and applied.reason == ""


def test_a_row_of_another_kind_is_refused_with_where_it_is():
    row = RunEvent(id=9, run_id="r1", kind=EventKind.AWAITING_DECISION, iteration=1,
                   payload={"proposal_id": 3})
    with pytest.raises(StoredEventError, match="event 9 of run r1 .* not a Progress"):
        Progress.from_stored(row)
    review = RunEvent(run_id="r1", kind=EventKind.REVIEW_TIME, iteration=1, payload={})
    with pytest.raises(StoredEventError, match="review_time event, not a EngineEvent"):
        EngineEvent.from_stored(review)


def test_a_payload_that_does_not_fit_is_refused():
    row = RunEvent(run_id="r", kind=EventKind.RUN_FINISHED, iteration=1,
                   payload={"status": "exploded"})
    with pytest.raises(StoredEventError, match="does not fit RunFinished"):
        RunFinished.from_stored(row)


def test_older_stop_reason_spellings_read_back_through_the_enum():
    assert StopReason("lost") is StopReason.LEASE_LOST
    assert StopReason("lease lost") is StopReason.LEASE_LOST
    assert f"{StopReason.LEASE_LOST}" == "lease lost" and StopReason.USER == "user"
    with pytest.raises(ValueError):
        StopReason("exploded")


def test_a_stop_reason_knows_which_limit_it_reports():
    assert StopReason.TIMEOUT.is_limit and StopReason.TIMEOUT.limit_field == "timeout_seconds"
    assert StopReason.USER.leaves_resumable and not StopReason.USER.is_limit
    assert StopReason.SHUTDOWN.leaves_resumable and StopReason.ERROR.limit_field is None
