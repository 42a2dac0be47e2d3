"""GEPA's merge proposal, in the studio's words.

Two pool candidates that descend from a common ancestor, where one of them changed a component
the other left as the ancestor had it (GEPA's rule), are combined: the child takes each changed
component from the candidate that changed it, and the rest from the ancestor (or, where both
changed a component, from the better of the two). A child that would be one of the two again,
or any candidate the run has, is never proposed (a run keeps one candidate per text:
docs/decisions/0001-merge-never-repeats-a-candidate.md). The child is judged on a small
validation subsample where the parents differ, and the rule accepts it when its sum there is at
least the better parent's (:func:`studio.engine.policies.evidence.compare`).

When (GEPA): a merge is tried at the start of an iteration that follows one whose reflection
child was accepted, while the run has made fewer than ``max_merge_invocations`` merge proposals.
Which pairs: candidates on the Pareto front (GEPA's dominators), never one the other's ancestor,
never a pair already merged, and a common ancestor that is not better than either of them.

Component keys are opaque strings: they are compared as keys, never parsed.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import studio.engine.propose.proposer as proposer
from studio.engine.policies.pool import RunView
from studio.engine.run.context import RunContext
from studio.engine.run.events import ProposalCreated
from studio.model.errors import RunStateError
from studio.model.records import (
    Candidate,
    MergeDetail,
    Proposal,
    ProposalKind,
    ProposalStatus,
    content_hash,
    stored_id,
)

MERGE_SUBSAMPLE = 5
"""Validation examples a merged child is judged on (GEPA's number)."""


@dataclass(frozen=True)
class MergeChoice:
    """A pair to merge, the ancestor it is judged against, and each component's source."""

    parents: tuple[int, int]
    ancestor: int
    sources: dict[str, int]


# --------------------------------------------------------------------------- lineage (pure)


def ancestors(candidate_id: int, parents: Mapping[int, list[int]]) -> set[int]:
    """Every candidate ``candidate_id`` descends from (parents, their parents, ...)."""
    found: set[int] = set()
    stack = list(parents.get(candidate_id, []))
    while stack:
        current = stack.pop()
        if current not in found:
            found.add(current)
            stack.extend(parents.get(current, []))
    return found


def merge_sources(a: Candidate, b: Candidate, ancestor: Candidate,
                  means: Mapping[int, float | None]) -> dict[str, int] | None:
    """Where each component of the merged child comes from, or None when the triplet has no
    component that one of ``a`` and ``b`` changed and the other kept as the ancestor had it
    (GEPA's ``does_triplet_have_desirable_predictors``: then nothing tells the child apart).

    As GEPA's merge: a component one of them changed comes from that one; one both changed
    differently from the better of the two (ties: ``a``, where GEPA draws at random); one
    neither changed from the ancestor. A child that is ``a`` or ``b`` again is left out by
    :func:`find_merge` (a run keeps one candidate per text)."""
    keys = set(ancestor.components)
    if set(a.components) != keys or set(b.components) != keys:
        return None
    sources: dict[str, int] = {}
    desirable = False
    a_id, b_id = stored_id(a), stored_id(b)
    for key in ancestor.components:  # in the run's order
        base, in_a, in_b = ancestor.components[key], a.components[key], b.components[key]
        if in_a == in_b:  # neither changed it, or both the same way
            sources[key] = stored_id(ancestor) if in_a == base else a_id
        elif in_b == base:
            sources[key], desirable = a_id, True
        elif in_a == base:
            sources[key], desirable = b_id, True
        else:  # both changed it, differently: the better parent's way (ties: the first)
            sources[key] = b_id if _rank(means, b_id) > _rank(means, a_id) else a_id
    return sources if desirable else None


def merged_components(sources: Mapping[str, int], candidates: Mapping[int, Candidate]
                      ) -> dict[str, str]:
    """The child's component texts, each from the candidate ``sources`` names."""
    return {key: candidates[source].components[key] for key, source in sources.items()}


def _rank(means: Mapping[int, float | None], candidate_id: int) -> float:
    """A mean for ordering; "could not evaluate" ranks below any score (never as 0)."""
    mean = means.get(candidate_id)
    return -math.inf if mean is None else mean


def _not_better(ancestor: int, a: int, b: int, means: Mapping[int, float | None]) -> bool:
    """GEPA merges only against an ancestor that both descendants at least match."""
    mean = means.get(ancestor)
    descendants = [means.get(c) for c in (a, b)]
    return mean is None or all(other is None or mean <= other for other in descendants)


def find_merge(candidates: list[Candidate], front: Iterable[int],
               means: Mapping[int, float | None], tried: set[frozenset[int]],
               rng: random.Random) -> MergeChoice | None:
    """A pair of front candidates to merge and how, or None when no pair qualifies.

    Every pair is examined (GEPA samples up to ten at random and can miss the one that
    qualifies); one qualifying pair is drawn with ``rng``. Its ancestor is the best-scoring
    common ancestor that qualifies (ties: the latest, i.e. the nearest)."""
    by_id = {stored_id(c): c for c in candidates}
    parents = {stored_id(c): list(c.parent_ids) for c in candidates}
    lineage = {c: ancestors(c, parents) for c in front}
    known = {c.content_hash for c in candidates}
    on_front = sorted(front, key=lambda c: by_id[c].index)
    choices = []
    for i, a in enumerate(on_front):
        for b in on_front[i + 1:]:
            if frozenset((a, b)) in tried or a in lineage[b] or b in lineage[a]:
                continue
            choice = _pair_choice(by_id[a], by_id[b], lineage[a] & lineage[b], by_id, means,
                                  known)
            if choice is not None:
                choices.append(choice)
    return rng.choice(choices) if choices else None


def _pair_choice(a: Candidate, b: Candidate, common: set[int], by_id: Mapping[int, Candidate],
                 means: Mapping[int, float | None], known: set[str]) -> MergeChoice | None:
    ranked = sorted(common, key=lambda c: (_rank(means, c), by_id[c].index), reverse=True)
    for ancestor in ranked:
        if not _not_better(ancestor, stored_id(a), stored_id(b), means):
            continue
        sources = merge_sources(a, b, by_id[ancestor], means)
        if sources is None:
            continue
        if content_hash(merged_components(sources, by_id)) in known:
            continue  # this child was already tried
        return MergeChoice((stored_id(a), stored_id(b)), ancestor, sources)
    return None


def merge_subsample(a_scores: Mapping[int, float | None], b_scores: Mapping[int, float | None],
                    order: list[int], rng: random.Random, size: int = MERGE_SUBSAMPLE
                    ) -> list[int]:
    """Up to ``size`` validation examples both parents were scored on, balanced as in GEPA:
    about a third where the first parent is better, a third where the second is, a third where
    they tie, topped up from the rest. Returned in validation order."""
    scored: list[tuple[int, float, float]] = []
    for e in order:
        a_score, b_score = a_scores.get(e), b_scores.get(e)
        if a_score is not None and b_score is not None:
            scored.append((e, a_score, b_score))
    common = [e for e, _, _ in scored]
    buckets = ([e for e, a, b in scored if a > b],
               [e for e, a, b in scored if b > a],
               [e for e, a, b in scored if a == b])
    each = max(1, math.ceil(size / 3))
    chosen: list[int] = []
    for bucket in buckets:
        take = min(len(bucket), each, size - len(chosen))
        chosen += rng.sample(bucket, take) if take > 0 else []
    rest = [e for e in common if e not in chosen]
    chosen += rng.sample(rest, min(len(rest), size - len(chosen)))
    return [e for e in order if e in chosen]


# --------------------------------------------------------------------------- in the run


def merge_due(ctx: RunContext, iteration: int) -> bool:
    """Whether this iteration tries a merge: merges are on, fewer than the limit were
    proposed, the previous iteration's reflection child was accepted, and the budget pays for
    the subsample and a validation (read from the store, so a resumed run agrees)."""
    store = proposer.propose_store(ctx)
    config = ctx.config
    if not config.use_merge or iteration < 2:
        return False
    if len(store.proposals(ctx.run_id, kind=ProposalKind.MERGE)) >= \
            config.max_merge_invocations:
        return False
    budget = config.max_metric_calls
    if budget is not None and \
            ctx.metric_calls() + ctx.trial_calls(MERGE_SUBSAMPLE + len(ctx.val_ids)) > budget:
        return False
    return any(p.status is ProposalStatus.ACCEPTED and p.kind is ProposalKind.REFLECTION
               for p in store.proposals(ctx.run_id, iteration=iteration - 1))


def plan_merge(ctx: RunContext, view: RunView, rng: random.Random) -> MergeDetail | None:
    """The merge this iteration proposes, or None (then it reflects as usual)."""
    store = proposer.propose_store(ctx)
    tried = {frozenset(p.merge.parents)
             for p in store.proposals(ctx.run_id, kind=ProposalKind.MERGE) if p.merge}
    choice = find_merge(view.candidates, view.front, view.means, tried, rng)
    if choice is None:
        return None
    a, b = choice.parents
    subsample = merge_subsample(view.matrix[a], view.matrix[b], view.val_ids, rng)
    if not subsample:
        return None
    return MergeDetail(parents=[a, b], ancestor=choice.ancestor, sources=choice.sources,
                       subsample=subsample)


def merges_before(ctx: RunContext, iteration: int) -> int:
    """Merge iterations before ``iteration`` (round robin over components skips them)."""
    store = proposer.propose_store(ctx)
    return sum(1 for p in store.proposals(ctx.run_id, kind=ProposalKind.MERGE)
               if p.iteration < iteration)


def propose_merge(ctx: RunContext, iteration: int, detail: MergeDetail) -> Proposal:
    """This iteration's merge proposal: the stored one when resuming, else a new one."""
    store = proposer.propose_store(ctx)
    existing = store.proposals(ctx.run_id, iteration=iteration, kind=ProposalKind.MERGE)
    if existing:
        proposal = existing[0]
        stale = proposal.status is ProposalStatus.EVALUATING and proposal.child_id is None
        return checked(ctx, proposal) if stale else proposal
    index = store.candidate_indexes(ctx.run_id)
    proposal = store.add_proposal(Proposal(
        run_id=ctx.run_id, iteration=iteration, parent_id=detail.parents[0], component="",
        text=summary(detail, index), reasoning=reasoning(detail, index),
        kind=ProposalKind.MERGE, merge=detail, minibatch=list(detail.subsample)))
    ctx.emit(ProposalCreated(run_id=ctx.run_id, iteration=iteration,
                             proposal_id=stored_id(proposal), parent_id=detail.parents[0],
                             proposal_kind=ProposalKind.MERGE,
                             parent_ids=list(detail.parents), sources=dict(detail.sources)))
    return checked(ctx, proposal)


def checked(ctx: RunContext, proposal: Proposal) -> Proposal:
    """A merge whose child already exists in the run is recorded as invalid (never raised)."""
    components = merged_components(_detail(proposal).sources, _candidates(ctx))
    duplicate = proposer.find_duplicate(ctx, components)
    if duplicate is not None:
        return proposer.invalidate(ctx, proposal, f"duplicate of candidate #{duplicate.index}: "
                                                  "the same components were already tried")
    return proposal


def merged_child(ctx: RunContext, proposal: Proposal) -> Candidate | None:
    """The merged candidate, with both parents (created once, reused on resume); None when the
    run has it already (:func:`studio.engine.propose.proposer.add_child`)."""
    store = proposer.propose_store(ctx)
    if proposal.child_id is not None:
        return store.get_candidate(proposal.child_id)
    detail = _detail(proposal)
    components = merged_components(detail.sources, _candidates(ctx))
    return proposer.add_child(ctx, proposal, components, list(detail.parents))


def _detail(proposal: Proposal) -> MergeDetail:
    """A merge proposal's detail (every merge proposal is stored with one)."""
    if proposal.merge is None:
        raise RunStateError(f"proposal {proposal.id} is a {proposal.kind} proposal, not a merge: "
                            "it has no merge detail")
    return proposal.merge


def _candidates(ctx: RunContext) -> dict[int, Candidate]:
    store = proposer.propose_store(ctx)
    return {stored_id(c): c for c in store.candidates(ctx.run_id)}


def summary(detail: MergeDetail, index: Mapping[int, int]) -> str:
    """One line: which component comes from which candidate (``#index``)."""
    taken = "; ".join(f"{key} from #{index.get(source, '?')}"
                      for key, source in detail.sources.items())
    a, b = (index.get(p, "?") for p in detail.parents)
    return f"merge of #{a} and #{b}: {taken}"


def reasoning(detail: MergeDetail, index: Mapping[int, int]) -> str:
    """Why this merge: what each parent improved since their common ancestor."""
    a, b = detail.parents
    taken = {p: [k for k, s in detail.sources.items() if s == p] for p in (a, b)}
    said = " and ".join(f"#{index.get(p, '?')}'s {', '.join(taken[p])}" for p in (a, b)
                        if taken[p])
    return (f"Since their common ancestor #{index.get(detail.ancestor, '?')}, the two changed "
            f"different things; the child takes {said}, each from the candidate that changed "
            "it (from the better one where both did), the rest from the ancestor.")
