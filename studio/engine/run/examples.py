"""A run's examples as the engine reads them: by id, from the store, when a step needs them.

The engine knows each split's example ids from the start (:meth:`RunExamples.ids`), but reads
an example's data only when a batch, a prefetch or an operator needs it: a run of 100,000
examples starts without reading them all, and never holds more than the batches in flight
need (the examples read are kept up to :data:`KEPT`, the least recently used dropped first).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Iterator, MutableMapping, ValuesView

from studio.model.records import Example, Split, stored_id
from studio.store.seams import RunPartsStore


class _Streamed(ValuesView[Example]):
    """A :class:`RunExamples`' values, streamed a batch at a time."""

    _mapping: RunExamples

    def __iter__(self) -> Iterator[Example]:
        return self._mapping.stream()


KEPT = 20_000
"""Examples kept once read: every minibatch and a large validation set's batches in flight."""


class RunExamples(MutableMapping[int, Example]):
    """A run's examples by id (a mapping, read from the store on demand; see the module).

    Setting an example (an align run's label, :mod:`studio.engine.people.labels`) keeps it for the
    run's life, above the store's copy."""

    def __init__(self, store: RunPartsStore, run_id: str) -> None:
        self.store, self.run_id = store, run_id
        self.ids = store.example_ids(run_id)
        """Each split's example ids, by index."""
        self._all = {e: split for split, ids in self.ids.items() for e in ids}
        self._kept: OrderedDict[int, Example] = OrderedDict()
        self._set: dict[int, Example] = {}
        self._keys: set[str] | None = None
        self._training: dict[int, Example] | None = None

    def __getitem__(self, example_id: int) -> Example:
        found = self._set.get(example_id) or self._kept.get(example_id)
        if found is None:
            found = self.read([example_id]).get(example_id)
        if found is None:
            raise KeyError(example_id)
        if example_id in self._kept:  # the least recently used are dropped first
            self._kept.move_to_end(example_id)
        return found

    def __setitem__(self, example_id: int, example: Example) -> None:
        self._set[example_id] = example
        self._keys = self._training = None

    def __delitem__(self, example_id: int) -> None:
        raise TypeError("a run's examples are not removed")

    def values(self) -> ValuesView[Example]:
        """Every example, streamed (:meth:`stream`), not read one by one."""
        return _Streamed(self)

    def __iter__(self) -> Iterator[int]:
        return iter(self._all)

    def __len__(self) -> int:
        return len(self._all)

    def __contains__(self, example_id: object) -> bool:
        return example_id in self._all

    def read(self, example_ids: Iterable[int]) -> dict[int, Example]:
        """The examples of ``example_ids`` (of this run), read from the store in one pass for
        those not kept, and kept."""
        wanted = [e for e in example_ids if e in self._all]
        found = {e: self._set.get(e) or self._kept.get(e) for e in wanted}
        missing = [e for e, example in found.items() if example is None]
        for example in self.store.examples_by_id(missing) if missing else ():
            found[stored_id(example)] = self._keep(example)
        return {e: example for e, example in found.items() if example is not None}

    def _keep(self, example: Example) -> Example:
        self._kept[stored_id(example)] = example
        while len(self._kept) > KEPT:
            self._kept.popitem(last=False)
        return example

    def stream(self, split: Split | None = None) -> Iterator[Example]:
        """The examples (of ``split``, or all) as stored, streamed from the store: read a
        batch at a time, not kept."""
        for example in self.store.iter_examples(self.run_id, split):
            yield self._set.get(stored_id(example), example)

    def training(self) -> dict[int, Example]:
        """The training examples by id, read once and kept: what the demo selector chooses
        demonstrations from at every proposal."""
        if self._training is None:
            self._training = {stored_id(e): e for e in self.stream(Split.TRAIN)}
        return self._training

    def data_keys(self) -> set[str]:
        """Every field any example has (what an instruction may name), asked of the store
        once."""
        if self._keys is None:
            self._keys = self.store.example_keys(self.run_id)
            self._keys |= {key for example in self._set.values() for key in example.data}
        return self._keys
