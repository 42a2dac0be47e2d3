"""Minibatch sampling: the trainset is shuffled once per epoch with the run's RNG and consumed
in order, so every example is seen before any repeats."""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, field


@dataclass
class EpochSampler:
    example_ids: list[int]
    size: int
    epoch: int = 0
    order: list[int] = field(default_factory=list)
    position: int = 0

    def sample(self, rng: random.Random) -> list[int]:
        """The next ``size`` examples (fewer only when the trainset is smaller)."""
        size = min(self.size, len(self.example_ids))
        batch: list[int] = []
        while len(batch) < size:
            if self.position >= len(self.order):
                self._new_epoch(rng)
            candidate = self.order[self.position]
            self.position += 1
            if candidate not in batch:
                batch.append(candidate)
        return batch

    def _new_epoch(self, rng: random.Random) -> None:
        self.order = list(self.example_ids)
        rng.shuffle(self.order)
        self.position = 0
        self.epoch += 1

    def state(self) -> dict:
        return asdict(self)

    @classmethod
    def from_state(cls, state: dict) -> EpochSampler:
        return cls(**state)
