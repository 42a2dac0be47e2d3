"""A proposal's evidence, computed one way for everyone: the engine's rule, the decision screen,
the review queue, the CLI, the library's history and exports.

The evidence compares the child with its parent (for a merge: with both parents, the better one
being the bar) on the proposal's recorded minibatch (``Proposal.minibatch``), from the first
trial of each (candidate, example) pair, both as the judge scored it and as it counts now
(corrections applied). An example is compared only where every candidate has a score: "could
not evaluate" (None) is left out, never read as 0.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from studio.model.evidence import Evidence, Sums
from studio.model.records import Proposal, Trial, stored_id
from studio.store.seams import PolicyStore

Score = tuple[float | None, float | None]
"""A pair's ``(judge's score, effective score)``."""

JUDGED, EFFECTIVE = 0, 1

_FEW_CANDIDATES = 500
"""Up to this many candidates, a batched read names them in SQL; a whole run's listing involves
nearly every candidate, so its pairs are narrowed by example only."""


# --------------------------------------------------------------------------- the rule (pure)


def compare(parents: Sequence[Mapping[int, Score]], child: Mapping[int, Score],
            examples: Sequence[int], *, merge: bool = False,
            parent_ids: Sequence[int] = ()) -> Evidence:
    """The evidence from each candidate's scores by example id.

    ``parents``: one mapping for a reflection, the two parents' (first parent first) for a
    merge; ``parent_ids`` names them for a merge's ``parent_sums``. The rule, on the effective
    sums: a reflection's child must be strictly above its parent (GEPA's ``>``), a merged child
    at least the better parent (GEPA's ``>=``); nothing compared never accepts."""
    judged = _sums(parents, child, examples, JUDGED)
    effective = _sums(parents, child, examples, EFFECTIVE)
    better = _better(effective[0])
    bar, child_sum, compared = effective[0][better], effective[1], effective[2]
    accepts = compared > 0 and (child_sum >= bar if merge else child_sum > bar)
    judged_bar = judged[0][_better(judged[0])]
    return Evidence(
        judged=Sums(parent_sum=judged_bar, child_sum=judged[1], compared=judged[2]),
        effective=Sums(parent_sum=bar, child_sum=child_sum, compared=compared),
        rule_accepts=accepts, merge=merge,
        parent_sums=dict(zip(parent_ids, effective[0], strict=False)) if merge else {},
        better_parent=parent_ids[better] if merge and parent_ids else None)


def _sums(parents: Sequence[Mapping[int, Score]], child: Mapping[int, Score],
          examples: Sequence[int], which: int) -> tuple[list[float], float, int]:
    """Each parent's sum, the child's and the count, over the examples where all have a score.
    ``math.fsum``: exact sums, so the verdict never depends on the order scores were read in."""
    rows: list[list[float]] = []
    for example in dict.fromkeys(examples):  # an example counts once
        scores = [p.get(example, (None, None))[which] for p in parents]
        scores.append(child.get(example, (None, None))[which])
        present = [score for score in scores if score is not None]
        if len(present) == len(scores):
            rows.append(present)
    parent_sums = [math.fsum(row[i] for row in rows) for i in range(len(parents))]
    return parent_sums, math.fsum(row[-1] for row in rows), len(rows)


def _better(sums: list[float]) -> int:
    """The index of the highest sum (ties: the first)."""
    return max(range(len(sums)), key=lambda i: (sums[i], -i))


def verdict_reason(evidence: Evidence) -> str:
    """The rule's verdict in words, as an automatic decision records it."""
    sums = evidence.effective
    if evidence.merge:
        verb = "at least" if evidence.rule_accepts else "below"
        return (f"merged child's sum {sums.child_sum:.3f} is {verb} the better parent's "
                f"{sums.parent_sum:.3f} ({sums.compared} validation examples compared)")
    verb = "above" if evidence.rule_accepts else "not above"
    return (f"child minibatch sum {sums.child_sum:.3f} is {verb} the parent's "
            f"{sums.parent_sum:.3f} ({sums.compared} examples compared)")


# --------------------------------------------------------------------------- from the store


def parents_of(proposal: Proposal) -> list[int]:
    """The candidates a proposal's child is compared with: its parent, or a merge's two."""
    return list(proposal.merge.parents) if proposal.merge is not None else [proposal.parent_id]


def proposal_evidence(store: PolicyStore, proposal: Proposal) -> Evidence:
    """One proposal's evidence from the scores as stored now (one query)."""
    return evidence_for(store, proposal.run_id, [proposal])[stored_id(proposal)]


def evidence_for(store: PolicyStore, run_id: str, proposals: Iterable[Proposal]
                 ) -> dict[int, Evidence]:
    """Proposal id -> its evidence, for many proposals of one run in one query (the first
    trial of every pair involved), never one per proposal."""
    proposals = list(proposals)
    if not proposals:
        return {}
    involved = {c for p in proposals for c in (*parents_of(p), p.child_id) if c is not None}
    scores = store.first_scores(
        run_id, example_ids={e for p in proposals for e in p.minibatch},
        candidate_ids=involved if len(involved) <= _FEW_CANDIDATES else None)
    return {stored_id(p): evidence_from(p, scores) for p in proposals}


def evidence_from(proposal: Proposal, scores: Mapping[tuple[int, int], Score]) -> Evidence:
    """A proposal's evidence from ``(candidate, example) -> score`` pairs already read."""
    def of(candidate: int | None) -> dict[int, Score]:
        if candidate is None:
            return {}
        return {e: scores[(candidate, e)] for e in proposal.minibatch
                if (candidate, e) in scores}

    parents = parents_of(proposal)
    return compare([of(p) for p in parents], of(proposal.child_id), proposal.minibatch,
                   merge=proposal.is_merge, parent_ids=parents)


@dataclass
class EvidenceTrials:
    """A proposal's evidence with the trials behind it, for a person to read example by example:
    the parent's (a merge's better parent's) and the child's first trial on each example."""

    proposal: Proposal
    evidence: Evidence
    parent: list[Trial]
    child: list[Trial]

    @property
    def parent_sum(self) -> float:
        return self.evidence.parent_sum

    @property
    def child_sum(self) -> float:
        return self.evidence.child_sum

    @property
    def compared(self) -> int:
        return self.evidence.compared

    @property
    def rule_accepts(self) -> bool:
        return self.evidence.rule_accepts

    @property
    def parent_sums(self) -> dict[int, float]:
        return self.evidence.parent_sums


def evidence_trials(store: PolicyStore, proposal: Proposal) -> EvidenceTrials:
    """:func:`proposal_evidence` with its trials (a query per candidate compared); the sums are
    computed from these very trials by :func:`compare`."""
    examples = proposal.minibatch
    parents = {p: store.first_trials(p, examples) for p in parents_of(proposal)}
    child = store.first_trials(proposal.child_id, examples) \
        if proposal.child_id is not None else {}
    evidence = compare([_scores(t) for t in parents.values()], _scores(child), examples,
                       merge=proposal.is_merge, parent_ids=list(parents))
    shown = parents[evidence.better_parent] if evidence.better_parent is not None \
        else next(iter(parents.values()))
    return EvidenceTrials(proposal, evidence, [shown[e] for e in examples if e in shown],
                          [child[e] for e in examples if e in child])


def _scores(trials: Mapping[int, Trial]) -> dict[int, Score]:
    return {e: (t.score, t.effective_score) for e, t in trials.items()}
