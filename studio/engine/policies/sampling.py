"""Minibatch sampling as GEPA's ``EpochShuffledBatchSampler`` does it: the trainset is shuffled
once per epoch with the run's RNG, padded to a whole number of minibatches, and consumed one
minibatch at a time, so every example is seen each epoch and no minibatch straddles two."""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, field


@dataclass
class EpochSampler:
    example_ids: list[int]
    size: int
    epoch: int = 0
    """Epochs started (the first shuffle makes it 1)."""
    order: list[int] = field(default_factory=list)
    """This epoch's shuffled ids and their padding."""
    position: int = 0

    def sample(self, rng: random.Random) -> list[int]:
        """The next minibatch of this epoch's order, each example once.

        GEPA's padding repeats the epoch's last example in its last minibatch (``[d, d, c]``);
        the studio judges each (candidate, example) pair once, so that minibatch is ``[d, c]``.
        A checkpoint from before padding resumes with a shorter last minibatch, never one that
        runs into the next epoch.
        """
        if self.position >= len(self.order):
            self._new_epoch(rng)
        batch = self.order[self.position:self.position + self.size]
        self.position += self.size
        return list(dict.fromkeys(batch))

    def _new_epoch(self, rng: random.Random) -> None:
        shuffled = list(self.example_ids)
        rng.shuffle(shuffled)
        self.order = padded(shuffled, self.size)
        self.position = 0
        self.epoch += 1

    def state(self) -> dict:
        return asdict(self)

    @classmethod
    def from_state(cls, state: dict) -> EpochSampler:
        return cls(**state)


def padded(shuffled: list[int], size: int) -> list[int]:
    """``shuffled`` extended to a multiple of ``size`` with the least-used ids, ties going to the
    latest in ``shuffled`` (the order GEPA's ``Counter.most_common()[::-1]`` gives)."""
    uses = dict.fromkeys(shuffled, 0)
    for example in shuffled:
        uses[example] += 1
    order = list(shuffled)
    for _ in range(-len(order) % size if order else 0):
        fewest = min(uses.values())
        pick = [example for example, n in uses.items() if n == fewest][-1]
        order.append(pick)
        uses[pick] += 1
    return order
