"""Provenance ("blame") of a candidate: which proposal introduced each sentence of each component,
in which iteration, written by the reflection or edited by a person, and how the score moved.

The unit is the sentence for prose components (an instruction: a proposal adds or rewrites a
sentence, and one line often holds several) and the line for JSON and YAML components
(``output_schema``, ``generate_content_config``, ``few_shot``: a line is one key or value).
Component keys are opaque (``instruction``, ``writer.instruction``); only their last part
picks the unit.

The walk follows the candidate's lineage back to the seed. At each step whose text changed, the
accepted proposal's chain (the reflection's text, then each person's edit of it) is applied in
order, diffing unit lists with difflib: a unit kept from the previous text keeps its earlier
origin, a new or rewritten one is attributed to the step that wrote it. A merge child (two
parents) took each component whole from one of them: the walk goes through the parent whose text
equals the child's. :func:`attribute` is pure; :func:`load_provenance` reads the records.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from studio.engine.people.history import proposal_numbers
from studio.engine.policies.evidence import evidence_for
from studio.engine.policies.pool import pool_scores
from studio.model.errors import ConfigError, NotFoundError
from studio.model.records import Candidate, DecisionAction, Proposal, ProposalStatus, stored_id
from studio.model.workflow import split_component
from studio.store.seams import ProvenanceStore

SEED, REFLECTION, EDIT, MERGE, CHANGE = "seed", "reflection", "edit", "merge", "change"
"""Origin kinds: the seed's text, a reflection's proposal, a person's edit of a proposal, a merge
child whose text is neither parent's, and a change with no proposal for the component."""

STRUCTURED = frozenset({"output_schema", "generate_content_config", "few_shot"})
"""Components written as JSON or YAML: attributed line by line."""

_SENTENCE_END = re.compile(r"[.!?]+[\"')\]]*\s+(?=[A-Z0-9\"'(\[{*#•-])")
"""The end of a sentence: closing punctuation, then space before what starts a new one (so
``e.g. this`` and ``3.5`` stay whole)."""


# --------------------------------------------------------------------------- records


@dataclass(frozen=True)
class StepScore:
    """Parent vs child means on the step's minibatch (effective scores: corrections count)."""

    parent_mean: float
    child_mean: float
    compared: int

    @property
    def change(self) -> float:
        return self.child_mean - self.parent_mean


@dataclass(frozen=True)
class UnitOrigin:
    """Where a unit of text first appeared in a candidate's lineage."""

    kind: str
    run_id: str
    candidate_id: int
    """The lineage candidate whose step introduced the unit."""
    candidate_index: int
    iteration: int
    proposal_id: int | None = None
    author: str | None = None
    """The person who edited the proposal (edits only)."""
    score: StepScore | None = None
    proposal_number: int | None = None
    """The proposal's number in its run (what people read; ``proposal_id`` is the database's)."""

    @property
    def by(self) -> str:
        """Who wrote it: the seed, the reflection, a person's name, a merge, or a change no
        proposal records."""
        if self.kind == EDIT:
            return self.author or "a person"
        return "unrecorded change" if self.kind == CHANGE else self.kind

    def label(self, run_id: str | None = None) -> str:
        """Compact: ``it 3 · p12 · reflection · +0.25`` (p12: the run's twelfth proposal; the
        run named when it differs)."""
        where = f"run {self.run_id} · " if run_id is not None and run_id != self.run_id else ""
        if self.kind == SEED:
            return f"{where}seed (candidate #{self.candidate_index})"
        parts = [f"it {self.iteration}"]
        parts.append(f"p{self.proposal_number or self.proposal_id}"  # its number in its run
                     if self.proposal_id is not None else f"candidate #{self.candidate_index}")
        parts.append(f"edited by {self.by}" if self.kind == EDIT else self.by)
        parts.append("score n/a" if self.score is None else f"{self.score.change:+.2f}")
        return where + " · ".join(parts)

    def as_dict(self) -> dict[str, Any]:
        score = self.score
        return {
            "kind": self.kind, "by": self.by, "run_id": self.run_id,
            "candidate_id": self.candidate_id, "candidate_index": self.candidate_index,
            "iteration": self.iteration, "proposal_id": self.proposal_id,
            "proposal_number": self.proposal_number, "author": self.author,
            "parent_mean": None if score is None else score.parent_mean,
            "child_mean": None if score is None else score.child_mean,
            "score_change": None if score is None else score.change,
            "compared": None if score is None else score.compared,
        }


@dataclass(frozen=True)
class Attributed:
    """One sentence (or line) of a component and its origin."""

    text: str
    origin: UnitOrigin


@dataclass
class RunLineage:
    """The records a walk needs, by id (a run's, and those of runs its seed was forked from)."""

    candidates: dict[int, Candidate]
    proposals: dict[int, Proposal]
    edit_authors: dict[int, str] = field(default_factory=dict)
    """Id of an edited proposal (the person's text) -> who edited."""
    scores: dict[int, StepScore] = field(default_factory=dict)
    """Proposal id -> its minibatch evidence."""

    def proposal_number(self, proposal: Proposal) -> int | None:
        """Its number in its own run (a fork's lineage holds the proposals of several runs)."""
        same_run = [p for p in self.proposals.values() if p.run_id == proposal.run_id]
        return proposal_numbers(same_run).get(stored_id(proposal))


@dataclass
class Provenance:
    """A candidate's components, unit by unit, each with its origin."""

    run_id: str
    candidate_id: int
    candidate_index: int
    components: dict[str, list[Attributed]]

    def rows(self) -> Iterator[dict[str, Any]]:
        """Flat records (export, ``--json``): one per unit, in component order."""
        for key, units in self.components.items():
            for position, unit in enumerate(units):
                yield {"candidate_id": self.candidate_id, "candidate_index": self.candidate_index,
                       "component": key, "unit": unit_kind(key), "position": position,
                       "text": unit.text, "label": unit.origin.label(self.run_id),
                       **{f"origin_{k}": v for k, v in unit.origin.as_dict().items()}}


# --------------------------------------------------------------------------- units (pure)


def unit_kind(key: str) -> str:
    """``line`` for JSON/YAML components, ``sentence`` for everything else."""
    return "line" if split_component(key)[1] in STRUCTURED else "sentence"


def split_units(text: str, kind: str) -> list[str]:
    """The component's sentences (or non-empty lines), in order; blank lines dropped."""
    lines = (text or "").splitlines()
    if kind == "line":
        return [line.rstrip() for line in lines if line.strip()]
    return [sentence for line in lines for sentence in _sentences(line.strip())]


def _sentences(line: str) -> list[str]:
    found, start = [], 0
    for end in _SENTENCE_END.finditer(line):
        found.append(line[start:end.end()].strip())
        start = end.end()
    found.append(line[start:].strip())
    return [s for s in found if s]


def _normal(unit: str) -> str:
    return " ".join(unit.split())


def carry(previous: list[Attributed], units: list[str], origin: UnitOrigin) -> list[Attributed]:
    """``units`` attributed: those kept from ``previous`` keep their origin, others get
    ``origin``."""
    matcher = difflib.SequenceMatcher(a=[_normal(u.text) for u in previous],
                                      b=[_normal(u) for u in units], autojunk=False)
    result: list[Attributed] = []
    for op, i1, _i2, j1, j2 in matcher.get_opcodes():
        for offset, unit in enumerate(units[j1:j2]):
            kept = previous[i1 + offset].origin if op == "equal" else origin
            result.append(Attributed(unit, kept))
    return result


# --------------------------------------------------------------------------- the walk (pure)


def attribute(lineage: RunLineage, candidate_id: int) -> dict[str, list[Attributed]]:
    """Every component of the candidate, unit by unit, attributed through its lineage."""
    candidate = lineage.candidates[candidate_id]
    return {key: _attribute_component(lineage, _path(lineage, candidate, key), key)
            for key in candidate.components}


def _path(lineage: RunLineage, candidate: Candidate, key: str) -> list[Candidate]:
    """The candidates ``key``'s text came through, from the root to ``candidate``."""
    path, seen = [candidate], {candidate.id}
    current = source_parent(lineage, candidate, key)
    while current is not None and current.id not in seen:
        path.append(current)
        seen.add(current.id)
        current = source_parent(lineage, current, key)
    return path[::-1]


def source_parent(lineage: RunLineage, child: Candidate, key: str) -> Candidate | None:
    """The parent ``key`` came from: the only one, or (a merge) the one whose text the child
    has, else the first; None for a root (the seed, or a parent not in the records)."""
    parents = [lineage.candidates[p] for p in child.parent_ids if p in lineage.candidates]
    if not parents:
        return None
    text = child.components.get(key, "")
    same = [p for p in parents if p.components.get(key, "") == text]
    return (same or parents)[0]


def _attribute_component(lineage: RunLineage, path: list[Candidate], key: str) -> list[Attributed]:
    kind = unit_kind(key)
    root = path[0]
    seed = UnitOrigin(SEED, root.run_id, stored_id(root), root.index, root.iteration)
    units = [Attributed(u, seed) for u in split_units(root.components.get(key, ""), kind)]
    for previous, current in pairwise(path):
        if current.components.get(key, "") == previous.components.get(key, ""):
            continue
        for text, origin in _steps(lineage, current, key):
            units = carry(units, split_units(text, kind), origin)
    return units


def _steps(lineage: RunLineage, candidate: Candidate, key: str) -> list[tuple[str, UnitOrigin]]:
    """The texts that led to ``candidate``'s ``key``, oldest first: the reflection's, then each
    edit; the last is the candidate's own text (as stored after validation)."""
    chain = proposal_chain(lineage, candidate.proposal_id)
    if not chain or chain[-1].is_merge or chain[-1].component != key:
        kind = MERGE if len(candidate.parent_ids) > 1 else CHANGE
        return [(candidate.components.get(key, ""),
                 UnitOrigin(kind, candidate.run_id, stored_id(candidate), candidate.index,
                        candidate.iteration, candidate.proposal_id))]
    steps = [(p.text, _proposal_origin(lineage, p, candidate)) for p in chain]
    steps[-1] = (candidate.components.get(key, ""), steps[-1][1])
    return steps


def proposal_chain(lineage: RunLineage, proposal_id: int | None) -> list[Proposal]:
    """The proposal and the ones it is an edit of, oldest (the reflection's) first."""
    chain: list[Proposal] = []
    seen: set[int] = set()
    while proposal_id is not None and proposal_id in lineage.proposals \
            and proposal_id not in seen:
        proposal = lineage.proposals[proposal_id]
        chain.append(proposal)
        seen.add(proposal_id)
        proposal_id = proposal.edited_from
    return chain[::-1]


def _proposal_origin(lineage: RunLineage, proposal: Proposal, candidate: Candidate) -> UnitOrigin:
    edited = proposal.edited_from is not None
    return UnitOrigin(EDIT if edited else REFLECTION, candidate.run_id, stored_id(candidate),
                  candidate.index, proposal.iteration, proposal.id,
                  author=lineage.edit_authors.get(stored_id(proposal)) if edited else None,
                  score=lineage.scores.get(stored_id(proposal)),
                  proposal_number=lineage.proposal_number(proposal))


# --------------------------------------------------------------------------- from the store


def load_provenance(store: ProvenanceStore, run_id: str, candidate_index: int | None = None
                    ) -> Provenance:
    """The provenance of candidate ``#candidate_index`` (default: the best, else the seed).

    Raises:
        NotFoundError: no such run, or the run has no candidates yet.
        ConfigError: the run has no candidate ``#candidate_index``.
    """
    run = store.get_run(run_id)
    lineage = load_lineage(store, run_id)
    own = sorted((c for c in lineage.candidates.values() if c.run_id == run_id),
                 key=lambda c: c.index)
    if not own:
        raise NotFoundError(f"run {run_id} has no candidates yet: its seed appears once the "
                            "run starts")
    if candidate_index is None:
        best = pool_scores(store, run).best_id
        candidate = lineage.candidates[best] if best is not None else own[0]
    else:
        found = next((c for c in own if c.index == candidate_index), None)
        if found is None:
            raise ConfigError(f"run {run_id} has no candidate #{candidate_index} (it has "
                              f"#{own[0].index} to #{own[-1].index})", where="candidate",
                              value=candidate_index)
        candidate = found
    add_scores(store, lineage, stored_id(candidate))
    return Provenance(run_id, stored_id(candidate), candidate.index,
                      attribute(lineage, stored_id(candidate)))


def load_lineage(store: ProvenanceStore, run_id: str) -> RunLineage:
    """The run's candidates, proposals and edit authors, and those of any run a candidate's
    parent belongs to (a fork's seed), until every parent is found or known missing."""
    lineage = RunLineage({}, {})
    pending, loaded = [run_id], set()
    while pending:
        current = pending.pop()
        loaded.add(current)
        _add_run(store, lineage, current)
        for parent in _missing_parents(lineage):
            other = _run_of(store, parent)
            if other is not None and other not in loaded and other not in pending:
                pending.append(other)
    return lineage


def _add_run(store: ProvenanceStore, lineage: RunLineage, run_id: str) -> None:
    candidates = store.candidates(run_id)
    origin = store.get_run(run_id).spec.forked_from
    if origin is not None and candidates and not candidates[0].parent_ids:
        # a fork's seed is the forked candidate's text: its sentences come from that lineage
        candidates[0] = candidates[0].model_copy(update={"parent_ids": [origin.candidate_id]})
    lineage.candidates.update({stored_id(c): c for c in candidates})
    proposals = store.proposals(run_id)
    lineage.proposals.update({stored_id(p): p for p in proposals})
    edits = {p.edited_from: stored_id(p) for p in proposals if p.edited_from is not None}
    for decision in store.decisions(run_id):
        if decision.action is DecisionAction.EDIT and decision.proposal_id in edits:
            lineage.edit_authors[edits[decision.proposal_id]] = decision.author


def _missing_parents(lineage: RunLineage) -> set[int]:
    return {p for c in lineage.candidates.values() for p in c.parent_ids
            if p not in lineage.candidates}


def _run_of(store: ProvenanceStore, candidate_id: int) -> str | None:
    try:
        return store.get_candidate(candidate_id).run_id
    except NotFoundError:
        return None


def add_scores(store: ProvenanceStore, lineage: RunLineage, candidate_id: int) -> None:
    """The minibatch evidence of every proposal on the candidate's lineage (edits included)."""
    proposals = [p for p in _lineage_proposals(lineage, candidate_id)
                 if p.id not in lineage.scores and p.status is not ProposalStatus.INVALID
                 and p.child_id is not None]
    for run_id in {p.run_id for p in proposals}:  # a fork's lineage spans runs
        found = evidence_for(store, run_id, [p for p in proposals if p.run_id == run_id])
        for proposal_id, evidence in found.items():
            if evidence.compared:
                lineage.scores[proposal_id] = StepScore(evidence.parent_sum / evidence.compared,
                                                        evidence.child_sum / evidence.compared,
                                                        evidence.compared)


def _lineage_proposals(lineage: RunLineage, candidate_id: int) -> list[Proposal]:
    found: list[Proposal] = []
    stack, seen = [candidate_id], set()
    while stack:
        current = lineage.candidates.get(stack.pop())
        if current is None or current.id in seen:
            continue
        seen.add(current.id)
        found += proposal_chain(lineage, current.proposal_id)
        stack.extend(current.parent_ids)
    return found
