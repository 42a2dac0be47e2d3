"""A run's examples (trainset, valset, test set), stored with the run."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import insert, select, update

import studio.store.schema as t
from studio.model.errors import NotFoundError
from studio.model.records import Example, Split
from studio.store.repos.base import Repository, guard, to_model

_EXAMPLE_RENAME = {"idx": "index"}


class ExampleRepository(Repository):
    """A run's examples (trainset, valset, test set), stored with the run."""

    @guard
    def add_examples(self, run_id: str, split: Split, rows: Iterable[dict]) -> list[Example]:
        values = [{"run_id": run_id, "split": Split(split).value, "idx": i, "data": row}
                  for i, row in enumerate(rows)]
        with self.engine.begin() as c:
            if values:
                c.execute(insert(t.examples), values)
        return self.examples(run_id, split)

    @guard
    def examples(self, run_id: str, split: Split | None = None) -> list[Example]:
        query = select(t.examples).where(t.examples.c.run_id == run_id)
        if split is not None:
            query = query.where(t.examples.c.split == Split(split).value)
        query = query.order_by(t.examples.c.split, t.examples.c.idx)
        with self.engine.connect() as c:
            return [to_model(Example, r, **_EXAMPLE_RENAME) for r in c.execute(query)]

    @guard
    def set_example_data(self, example_id: int, data: dict[str, Any]) -> None:
        """Replace an example's fields: an align run's label read again from the person's
        correction as it is now (:mod:`studio.engine.labels`)."""
        with self.engine.begin() as c:
            c.execute(update(t.examples).where(t.examples.c.id == example_id)
                      .values(data=data))

    @guard
    def get_example(self, example_id: int) -> Example:
        """One example (a trial view reads its images from it)."""
        with self.engine.connect() as c:
            row = c.execute(select(t.examples).where(t.examples.c.id == example_id)).first()
        if row is None:
            raise NotFoundError(f"example {example_id} does not exist")
        return to_model(Example, row, **_EXAMPLE_RENAME)

