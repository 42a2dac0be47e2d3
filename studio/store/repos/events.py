"""A run's typed events: the channel of what happened to the UI."""

from __future__ import annotations

from typing import Any

from sqlalchemy import insert, select

import studio.store.schema as t
from studio.model.jsontools import finite_json
from studio.model.records import EventKind, RunEvent
from studio.store.repos.base import Repository, guard, inserted_id, to_model

_INSERT = insert(t.run_events)


class EventRepository(Repository):
    """A run's typed events: the channel of what happened to the UI."""

    @guard
    def add_event(self, run_id: str, kind: EventKind, iteration: int = 0,
                  payload: dict[str, Any] | None = None) -> RunEvent:
        event = RunEvent(run_id=run_id, kind=kind, iteration=iteration, payload=payload or {})
        with self.engine.begin() as c:
            values = event.model_dump(exclude={"id"}) | {"kind": event.kind.value,
                                                         "payload": finite_json(event.payload)}
            new_id = inserted_id(c.execute(_INSERT, values))
        return event.model_copy(update={"id": new_id})

    @guard
    def events(self, run_id: str, *, after_id: int = 0, kind: EventKind | None = None
               ) -> list[RunEvent]:
        query = select(t.run_events).where(t.run_events.c.run_id == run_id,
                                           t.run_events.c.id > after_id)
        if kind is not None:
            query = query.where(t.run_events.c.kind == kind)
        with self.engine.connect() as c:
            return [to_model(RunEvent, r) for r in c.execute(query.order_by(t.run_events.c.id))]

    @guard
    def latest_event(self, run_id: str, kind: EventKind) -> RunEvent | None:
        query = (select(t.run_events).where(t.run_events.c.run_id == run_id,
                                            t.run_events.c.kind == kind)
                 .order_by(t.run_events.c.id.desc()).limit(1))
        with self.engine.connect() as c:
            return to_model(RunEvent, c.execute(query).first())

