"""What the loop remembers it tried: the texts already proposed for a parent's component and
refused (rejected, edited away by a person, found invalid), with why.

GEPA forgets a rejected proposal (its issue #379); a studio where a person says "no" must not.
The reflection reads these texts, fenced as data inside ``{trials}`` (records with an
``already_tried`` key, so a custom reflection template gets them too), and a proposal that
still repeats one is refused with the text's history named (see :func:`describe_candidate`).

Scope: the texts tried on this parent for this component, and a person's rejections of this
component on other parents (their reasons are about the idea, not the parent). Nothing from
another component or agent: in a workflow the writer never hears the outliner's rejections.
"""

from __future__ import annotations

import bisect
import heapq
from dataclasses import dataclass
from enum import StrEnum

from studio.engine.run.agent_texts import UNCHANGED_PREFIX
from studio.model.limits import REFLECTION_FIELD_CHARS, clip
from studio.model.records import (
    Candidate,
    Decision,
    DecisionAction,
    Proposal,
    ProposalStatus,
    stored_id,
)
from studio.model.refusals import REJECTIONS, Refusal
from studio.store.seams import RunPartsStore

TRIED_SHOWN = 6
"""At most this many tried texts reach one reflection prompt (newest first)."""
MAX_ATTEMPTS = 3
"""Reflection calls per iteration when the answers repeat a tried text (the first and two
retries); then the iteration is skipped."""
DUPLICATE_PREFIX = "duplicate of "
"""How the reason of a proposal refused as a repeat begins (read back on resume)."""


class TriedOutcome(StrEnum):
    """How a tried text was refused."""

    REJECTED = "rejected"
    EDITED_AWAY = "edited away"
    INVALID = "invalid"


@dataclass(frozen=True)
class TriedText:
    """One text already tried for a component, and why it is not wanted again."""

    proposal_id: int
    text: str
    refusal: Refusal
    reason: str | None = None
    """The refusal's own reason: a reviewer's words, the rule's, why it was invalid."""
    by: str = ""
    """Who refused it: a reviewer's name, "the acceptance rule", or empty for an invalid text."""
    candidate_index: int | None = None
    """The candidate it made (a rejected or edited text was scored), when there is one."""

    @property
    def outcome(self) -> TriedOutcome:
        return TriedOutcome(self.refusal.outcome)

    @property
    def why(self) -> str:
        """In words, e.g. "A reviewer rejected the proposed text: too long"."""
        return self.refusal.why(self.reason)

    def record(self) -> dict[str, object]:
        """The fenced trials record the reflection reads."""
        entry: dict[str, object] = {"text": clip(self.text, REFLECTION_FIELD_CHARS),
                                 "outcome": self.outcome.value,
                                 "refusal": self.refusal.value,
                                 "why": clip(self.why, REFLECTION_FIELD_CHARS)}
        if self.by:
            entry["by"] = self.by
        if self.candidate_index is not None:
            entry["candidate"] = self.candidate_index
        return {"already_tried": entry}


def tried_texts(store: RunPartsStore, run_id: str, parent_id: int, component: str, *,
                limit: int | None = TRIED_SHOWN, before: int | None = None) -> list[TriedText]:
    """Texts tried for ``component`` of this parent, and the ones a person rejected for the
    same component on other parents; newest first, one entry per text, at most ``limit``
    (None: all, for the model-free operators' exact check). ``before``: only iterations
    before it (with parallel proposals an iteration reads the history k iterations back:
    :mod:`studio.engine.loop.window`). Reads the run once; the engine keeps a :class:`TriedBook`."""
    return TriedBook(store, run_id).texts(parent_id, component, limit=limit, before=before)


@dataclass(frozen=True)
class _Entry:
    """A settled proposal's tried text, with what :meth:`TriedBook.texts` filters it by."""

    iteration: int
    parent_id: int
    tried: TriedText


class TriedBook:
    """A run's tried texts as the loop reads them every iteration, read from the store once
    and then kept up to date, so an iteration's cost does not grow with the run.

    Each :meth:`texts` asks the store only for what may have changed: proposals newer than the
    last one seen, the proposals not yet settled (their text, status and child change until
    the engine settles them), decisions and candidates newer than the last seen (a person's
    decision made in another process is a new decision row). A settled proposal is final: the
    engine settles it once, after its decision, and a proposal that is settled can no longer
    be decided (:meth:`studio.store.Store.add_decision` claims only an open one), so its
    entry is made once. Entries are kept by component and parent, and a person's rejections
    by component: one iteration reads only the newest few of its own."""

    def __init__(self, store: RunPartsStore, run_id: str) -> None:
        self.store, self.run_id = store, run_id
        self._open: dict[int, Proposal] = {}
        """Proposals seen and not yet settled, by id."""
        self._decisions: dict[int, Decision] = {}
        """The last decision on each proposal still open."""
        self._indexes: dict[int, int] = {}
        self._by_parent: dict[tuple[str, int], list[_Entry]] = {}
        self._rejected: dict[str, list[_Entry]] = {}
        """A person's rejections, by component (they count on every parent)."""
        self._last = {"proposal": 0, "decision": 0, "candidate": 0}

    def texts(self, parent_id: int, component: str, *, limit: int | None = TRIED_SHOWN,
              before: int | None = None) -> list[TriedText]:
        """:func:`tried_texts`, from the book brought up to date."""
        self.refresh()
        own = reversed(self._by_parent.get((component, parent_id), []))
        others = (e for e in reversed(self._rejected.get(component, []))
                  if e.parent_id != parent_id)
        found: list[TriedText] = []
        seen: set[str] = set()
        for entry in heapq.merge(own, others, key=lambda e: -_newness(e)):
            text = entry.tried.text.strip()
            if (before is not None and entry.iteration >= before) or text in seen:
                continue
            seen.add(text)
            found.append(entry.tried)
            if limit is not None and len(found) >= limit:
                break
        return found

    def refresh(self) -> None:
        """Read what changed since the last read (see the class docstring)."""
        last = self._last
        changed = self.store.proposals_since(self.run_id, last["proposal"], list(self._open))
        for decision in self.store.decisions(self.run_id, after_id=last["decision"]):
            self._decisions[decision.proposal_id] = decision
            last["decision"] = max(last["decision"], stored_id(decision))
        self._indexes.update(self.store.candidate_indexes(self.run_id,
                                                          after_id=last["candidate"]))
        last["candidate"] = max(self._indexes, default=0)
        for proposal in changed:
            last["proposal"] = max(last["proposal"], stored_id(proposal))
            self._open[stored_id(proposal)] = proposal
            if proposal.status not in OPEN:
                self._settle(self._open.pop(stored_id(proposal)))

    def _settle(self, proposal: Proposal) -> None:
        decision = self._decisions.pop(stored_id(proposal), None)
        if proposal.is_merge or not proposal.text.strip():
            return
        tried = _tried(proposal, decision, self._indexes)
        if tried is None:
            return
        entry = _Entry(proposal.iteration, proposal.parent_id, tried)
        # by id, as the proposals were made: lanes may settle them in another order
        bisect.insort(self._by_parent.setdefault((proposal.component, proposal.parent_id), []),
                      entry, key=_newness)
        if _a_persons_rejection(tried):
            bisect.insort(self._rejected.setdefault(proposal.component, []), entry,
                          key=_newness)


def _newness(entry: _Entry) -> int:
    return entry.tried.proposal_id


OPEN = frozenset({ProposalStatus.EVALUATING, ProposalStatus.PENDING})
"""The statuses a proposal leaves once, when the engine settles it."""


def _a_persons_rejection(tried: TriedText) -> bool:
    return tried.outcome is TriedOutcome.REJECTED and tried.by != RULE


RULE = "the acceptance rule"


def _tried(proposal: Proposal, decision: Decision | None,
           indexes: dict[int, int]) -> TriedText | None:
    index = indexes.get(proposal.child_id) if proposal.child_id is not None else None
    if proposal.status is ProposalStatus.REJECTED:
        return _rejected(proposal, decision, index)
    if proposal.status is ProposalStatus.EDITED:
        author = decision.author if decision is not None else "a reviewer"
        return TriedText(stored_id(proposal), proposal.text, Refusal.EDITED_AWAY,
                         decision.reason if decision is not None else None, author, index)
    if proposal.status is ProposalStatus.INVALID and not is_repeat(proposal):
        return TriedText(stored_id(proposal), proposal.text, Refusal.INVALID,
                         proposal.invalid_reason)
    return None


def _rejected(proposal: Proposal, decision: Decision | None,
              index: int | None) -> TriedText:
    if decision is None or decision.action is not DecisionAction.REJECT:  # settled otherwise
        return TriedText(stored_id(proposal), proposal.text, Refusal.NOT_ACCEPTED,
                         proposal.invalid_reason, "", index)
    if decision.automatic:
        return TriedText(stored_id(proposal), proposal.text, Refusal.RULE, decision.reason,
                         RULE, index)
    return TriedText(stored_id(proposal), proposal.text, Refusal.REVIEWER, decision.reason,
                     decision.author, index)


def is_repeat(proposal: Proposal) -> bool:
    """Whether an invalid proposal was refused for repeating a text already tried (the
    reflection is asked again), rather than for being unusable. Read from the stored reason,
    the only durable record of why (on resume too): its two repeat reasons begin with
    :data:`DUPLICATE_PREFIX` (written by the proposer) and :data:`UNCHANGED_PREFIX` (by
    :func:`~studio.engine.run.agent_texts.validate_proposal`), each a constant shared with its
    writer."""
    reason = proposal.invalid_reason or ""
    return proposal.status is ProposalStatus.INVALID and (
        reason.startswith(DUPLICATE_PREFIX) or reason.startswith(UNCHANGED_PREFIX))


def describe_candidate(store: RunPartsStore, candidate: Candidate) -> str:
    """A candidate's history in a few words, as a refused duplicate names it: "candidate #4
    (rejected by alice: too long)", "candidate #0 (the seed)", "candidate #2 (in the pool)"."""
    name = f"candidate #{candidate.index}"
    if candidate.proposal_id is None:
        return f"{name} (the seed)" if candidate.index == 0 else name
    if candidate.pooled:
        return f"{name} (in the pool)"
    proposal = store.get_proposal(candidate.proposal_id)
    if proposal.is_merge:  # a merge's reason is about two parents, not about any one text
        return f"{name} (a merge, {proposal.status.value})"
    tried = candidate_tried(store, candidate)
    if tried is None:
        return name
    who = f" by {tried.by}" if tried.by else ""
    return f"{name} ({tried.outcome.value}{who}: {tried.refusal.reason(tried.reason)})"


def candidate_tried(store: RunPartsStore, candidate: Candidate) -> TriedText | None:
    """How the text that made ``candidate`` was refused, typed (None: the seed, a pooled
    candidate, a merge, or one not refused)."""
    if candidate.proposal_id is None or candidate.pooled:
        return None
    proposal = store.get_proposal(candidate.proposal_id)
    if proposal.is_merge:
        return None
    decisions = store.decisions(proposal_id=candidate.proposal_id)
    return _tried(proposal, decisions[-1] if decisions else None, {})


def retry_record(attempt: int, refused: Proposal) -> dict[str, object]:
    """What a retry's prompt says about the answer just refused."""
    return {"already_tried": {
        "text": clip(refused.text, REFLECTION_FIELD_CHARS), "outcome": "refused just now",
        "why": clip(f"Your previous answer (attempt {attempt} of {MAX_ATTEMPTS}) was refused: "
                    f"{refused.invalid_reason}. Propose a different text.",
                    REFLECTION_FIELD_CHARS)}}


def skip_reason(attempts: list[Proposal], repeated: list[TriedText | None]) -> str:
    """The skipped iteration's reason, in words; ``repeated``: how the text each attempt
    repeated was refused (:func:`candidate_tried` of its duplicate, None for none)."""
    rejected = any(t is not None and t.refusal in REJECTIONS for t in repeated)
    what = "a rejected text" if rejected else "a text already tried"
    return f"the reflection repeated {what} {len(attempts)} times; iteration skipped"
