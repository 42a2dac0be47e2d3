"""A run's examples (trainset, valset, test set), stored with the run."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Mapping
from typing import TypeVar

from sqlalchemy import bindparam, insert, select, text, update

import studio.store.schema as t
from studio.model.errors import NotFoundError
from studio.model.records import Example, Split, stored_id
from studio.store.repos.base import Repository, guard, to_model

_EXAMPLE_RENAME = {"idx": "index"}
_INSERT = insert(t.examples)
_IDS = (select(t.examples.c.id, t.examples.c.split)
        .where(t.examples.c.run_id == bindparam("run_id"))
        .order_by(t.examples.c.split, t.examples.c.idx))
_BY_IDS = select(t.examples).where(t.examples.c.id.in_(bindparam("ids", expanding=True)))
_SQLITE_KEYS = text("SELECT DISTINCT field.key FROM examples, json_each(examples.data) AS field "
                    "WHERE examples.run_id = :run_id")
_PG_KEYS = text("SELECT DISTINCT json_object_keys(data) FROM examples WHERE run_id = :run_id")
WRITE_BATCH = 2000
"""Examples written per statement (the driver holds one batch's parameters at a time)."""
READ_BATCH = 500
"""Examples read per query (below every database's limit of bound parameters)."""
T = TypeVar("T")


class ExampleRepository(Repository):
    """A run's examples (trainset, valset, test set), stored with the run."""

    @guard
    def add_examples(self, run_id: str, split: Split, rows: Iterable[dict]) -> int:
        """Store ``rows`` as the split's examples, in order, in one transaction, written
        :data:`WRITE_BATCH` at a time (a 100,000-row split is never held twice: the rows are
        not read back); returns how many were stored."""
        split_value = Split(split).value
        count = 0
        with self.engine.begin() as c:
            for batch in _batches(enumerate(rows), WRITE_BATCH):
                c.execute(_INSERT, [{"run_id": run_id, "split": split_value, "idx": i,
                                     "data": row} for i, row in batch])
                count += len(batch)
        return count

    @guard
    def example_ids(self, run_id: str) -> dict[Split, list[int]]:
        """Each split's example ids, by index (no data read: the engine reads an example
        when it needs it, :class:`studio.engine.run.examples.RunExamples`)."""
        ids: dict[Split, list[int]] = {split: [] for split in Split}
        with self.engine.connect() as c:
            for example_id, split in c.execute(_IDS, {"run_id": run_id}):
                ids[Split(split)].append(example_id)
        return ids

    @guard
    def example_keys(self, run_id: str) -> set[str]:
        """Every field name any of the run's examples has, listed by the database (one
        query, no example read into Python)."""
        keys = (_PG_KEYS if self.engine.dialect.name == "postgresql" else _SQLITE_KEYS)
        with self.engine.connect() as c:
            return {row[0] for row in c.execute(keys, {"run_id": run_id})}

    @guard
    def examples_by_id(self, example_ids: list[int]) -> list[Example]:
        """The examples of ``example_ids`` (read :data:`READ_BATCH` ids per query), in no
        particular order; an id that does not exist is left out."""
        found: list[Example] = []
        with self.engine.connect() as c:
            for batch in _batches(example_ids, READ_BATCH):
                found += [to_model(Example, r, **_EXAMPLE_RENAME)
                          for r in c.execute(_BY_IDS, {"ids": list(batch)})]
        return found

    def iter_examples(self, run_id: str, split: Split | None = None) -> Iterator[Example]:
        """The run's examples (of ``split``, or all) by split and index, read
        :data:`READ_BATCH` at a time: a 100,000-row dataset is never held at once."""
        after = -1
        while True:
            batch = self._example_batch(run_id, split, after)
            yield from batch
            if len(batch) < READ_BATCH:
                return
            after = stored_id(batch[-1])

    @guard
    def _example_batch(self, run_id: str, split: Split | None, after_id: int) -> list[Example]:
        query = select(t.examples).where(t.examples.c.run_id == run_id,
                                         t.examples.c.id > after_id)
        if split is not None:
            query = query.where(t.examples.c.split == Split(split).value)
        with self.engine.connect() as c:
            return [to_model(Example, r, **_EXAMPLE_RENAME)
                    for r in c.execute(query.order_by(t.examples.c.id).limit(READ_BATCH))]

    @guard
    def examples(self, run_id: str, split: Split | None = None) -> list[Example]:
        query = select(t.examples).where(t.examples.c.run_id == run_id)
        if split is not None:
            query = query.where(t.examples.c.split == Split(split).value)
        query = query.order_by(t.examples.c.split, t.examples.c.idx)
        with self.engine.connect() as c:
            return [to_model(Example, r, **_EXAMPLE_RENAME) for r in c.execute(query)]

    @guard
    def set_example_data(self, example_id: int, data: Mapping[str, object]) -> None:
        """Replace an example's fields: an align run's label read again from the person's
        correction as it is now (:mod:`studio.engine.people.labels`)."""
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



def _batches(items: Iterable[T], size: int) -> Iterator[list[T]]:
    """``items`` in lists of ``size`` (the last one shorter)."""
    iterator = iter(items)
    while batch := list(itertools.islice(iterator, size)):
        yield batch
