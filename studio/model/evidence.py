"""The evidence a proposal is decided on, as a record: parent and child sums on the proposal's
minibatch, from the judge's scores and from the effective (corrected) ones, and the rule's
verdict. :func:`studio.engine.policies.evidence.compare` computes it; a decision keeps a copy of the
evidence as it stood when it was made (``Decision.evidence``)."""

from __future__ import annotations

from pydantic import BaseModel, Field


class Sums(BaseModel):
    """Parent and child sums over the examples both could be scored on."""

    parent_sum: float = 0.0
    """For a merge: the better parent's sum (the bar the child must reach)."""
    child_sum: float = 0.0
    compared: int = 0
    """Examples where every candidate compared has a score ("could not evaluate", None, on
    either side leaves the example out)."""

    def arrow(self) -> str:
        """``0.800 → 0.750``: how a person reads the comparison."""
        return f"{self.parent_sum:.3f} → {self.child_sum:.3f}"


class Evidence(BaseModel):
    """A proposal's evidence at one moment."""

    judged: Sums = Field(default_factory=Sums)
    """From the judge's scores alone, as the critic gave them."""
    effective: Sums = Field(default_factory=Sums)
    """From the effective scores: a person's correction where there is one, else the judge's.
    The rule decides on these."""
    rule_accepts: bool = False
    """GEPA's rule on the effective sums: a reflection's child strictly above its parent; a
    merged child at least the better parent (``>=``, as GEPA has it)."""
    merge: bool = False
    parent_sums: dict[int, float] = Field(default_factory=dict)
    """A merge's two parents' effective sums by candidate id (empty for a reflection)."""
    better_parent: int | None = None
    """A merge's parent with the higher effective sum (ties: the first)."""

    # the effective sums under the names every caller used before the record existed
    @property
    def parent_sum(self) -> float:
        return self.effective.parent_sum

    @property
    def child_sum(self) -> float:
        return self.effective.child_sum

    @property
    def compared(self) -> int:
        return self.effective.compared

    @property
    def corrected(self) -> bool:
        """Whether people's corrections change the sums the judge alone gives."""
        return self.judged != self.effective

    def same_sums(self, other: Evidence) -> bool:
        """Whether ``other`` shows a person the same numbers (to the shown precision)."""
        return _shown(self.effective) == _shown(other.effective) and \
            self.rule_accepts == other.rule_accepts


def _shown(sums: Sums) -> tuple[str, int]:
    return sums.arrow(), sums.compared
