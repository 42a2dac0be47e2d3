"""The Review page's "Review next" queue: the trials on which a person's label is worth most,
in order, each with the reasons shown to the person; and how long the reviews still expected
will take (the run's ETA adds it in review mode).

A trial is put in the first of four groups it qualifies for and keeps every reason it has:

1. **Margin**: a trial of the pending proposal's evidence (the child's minibatch trials and the
   parent's on the same examples). GEPA's rule compares sums, so every scored trial needs the
   same move to flip the verdict (the margin), but not every trial *can* move that far inside
   [0, 1]: only trials that alone could flip it are queued, smallest move first; ties go to a
   trial that also looks wrong (groups 2-3), then to the lower id. An unscored trial (the critic
   could not evaluate it) whose partner is scored comes after them: a label brings its example
   into the comparison.
2. **Contradiction**: the feedback says the opposite of the score (:func:`contradiction`).
3. **Disagreement**: two scores the studio holds for one trial disagree by
   :data:`DISAGREEMENT` or more (:func:`disagreement`).
4. **More reviewers**: when several people review each trial, one that others labelled and
   that waits for this reviewer's label (validation examples first, oldest first).
5. **Never reviewed**: an example none of whose trials a person has reviewed; its newest trial
   stands for it (validation examples first: they decide the front and the best candidate).

A trial a person has reviewed (a correction, even one undone since, or a recorded review that
corrected or confirmed it) is never queued again (for anyone, unless several people review each
trial: then until enough did), nor are probes and test-set trials. Pure logic:
the page reads the store through its loaders.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence, Set
from dataclasses import dataclass
from enum import IntEnum
from typing import TYPE_CHECKING

from studio.model.records import Split, Trial, TrialPhase, stored_id
from studio.views.tables import format_duration

if TYPE_CHECKING:
    from studio.projects.reviewing import ReviewRecord

EPSILON = 1e-9
HIGH_SCORE = 0.7
"""At or above it, negative feedback contradicts the score."""
LOW_SCORE = 0.3
"""At or below it, praise contradicts the score."""
DISAGREEMENT = 0.3
"""Gap between two scores of one trial that makes them disagree."""
FEEDBACK_SCAN_CHARS = 4_000
"""Characters of a feedback text the contradiction heuristic reads."""
NAME_CHARS = 40
"""Characters of a dimension or component name shown in a reason."""
DEFAULT_REVIEW_SECONDS = 20.0
"""Seconds per trial assumed before any review was timed: reading an input and an output and
typing a score."""


NOT_QUEUED = (TrialPhase.PROBE, TrialPhase.TEST)
"""A probe is no part of the run; the test set is held out from the loop (a label there
steers nothing, and reviewing it example by example would let it leak into the person's
decisions)."""


class Group(IntEnum):
    MARGIN = 1
    CONTRADICTION = 2
    DISAGREEMENT = 3
    MORE_REVIEWERS = 4
    """Others labelled it and it waits for this reviewer's label too (several per trial)."""
    UNREVIEWED = 5


GROUP_LABELS = {Group.MARGIN: "could flip the pending decision",
                Group.CONTRADICTION: "feedback contradicts the score",
                Group.DISAGREEMENT: "scores disagree",
                Group.MORE_REVIEWERS: "waits for your label too",
                Group.UNREVIEWED: "example never reviewed"}
"""The badge on a queued trial."""
GROUP_COUNTS = {Group.MARGIN: "could flip the pending decision",
                Group.CONTRADICTION: "with feedback that contradicts the score",
                Group.DISAGREEMENT: "with scores that disagree",
                Group.MORE_REVIEWERS: "labelled by others, waiting for yours",
                Group.UNREVIEWED: "stand for examples never reviewed"}
"""How the queue's summary counts each group."""


@dataclass(frozen=True)
class QueueItem:
    """One trial to review, why, and where it stands in the queue."""

    trial: Trial
    group: Group
    reasons: tuple[str, ...]
    rank: tuple[float, ...]
    """Order inside the group (smaller first)."""
    flip_distance: float | None = None
    """Margin items: how far the score must move to flip the pending decision (None: unscored)."""

    @property
    def example(self) -> str:
        return f"{self.trial.split.value} example {self.trial.example_index}"


# --------------------------------------------------------------------------- 1. margin


@dataclass(frozen=True)
class Flip:
    """What one trial's label must be to flip a pending decision on its own."""

    distance: float | None
    """How far the score must move (None: the trial is unscored)."""
    reason: str


@dataclass(frozen=True)
class _Rule:
    """A pending decision as the flip arithmetic sees it."""

    margin: float
    """The child's sum minus the parent's, over the examples both have a score on."""
    accepts: bool
    inclusive: bool
    """Whether a score exactly at the bound flips the verdict."""
    verdict: str


def margin_flips(proposal_id: int, parent: Sequence[Trial], child: Sequence[Trial], *,
                 ties_accept: bool = False) -> dict[int, Flip]:
    """Per trial of a pending proposal's evidence, the label that alone would flip the rule:
    GEPA's (child sum strictly above the parent's, over the examples both have a score on), or
    with ``ties_accept`` a merge's (at or above the better parent's); trials that cannot flip
    it inside [0, 1] are left out."""
    children = {t.example_id: t for t in child}
    pairs = [(p, children[p.example_id]) for p in parent if p.example_id in children]
    differences = [child_score - parent_score for p, c in pairs
                   if (parent_score := p.effective_score) is not None
                   and (child_score := c.effective_score) is not None]
    margin = sum(differences)
    accepts = bool(differences) and (margin >= -EPSILON if ties_accept else margin > EPSILON)
    rule = _Rule(margin, accepts, accepts != ties_accept,
                 _verdict(proposal_id, margin, accepts))
    flips: dict[int, Flip] = {}
    for parent_trial, child_trial in pairs:
        for trial, partner, is_child in ((child_trial, parent_trial, True),
                                         (parent_trial, child_trial, False)):
            flip = _flip(trial, partner, is_child, rule)
            if flip is not None and trial.id is not None:
                flips[trial.id] = flip
    return flips


def _verdict(proposal_id: int, margin: float, accepts: bool) -> str:
    rule = f"proposal #{proposal_id}'s rule would {'accept' if accepts else 'reject'}"
    if abs(margin) <= EPSILON:
        return f"{rule}: the child's and the parent's sums are equal"
    return f"{rule}: the child's sum is {abs(margin):.2f} " \
           f"{'above' if margin > 0 else 'below'} the parent's"


def _flip(trial: Trial, partner: Trial, is_child: bool, rule: _Rule) -> Flip | None:
    role = "child" if is_child else "parent"
    score, other = trial.effective_score, partner.effective_score
    if other is None:
        return None
    down = is_child == rule.accepts  # a child lowers or a parent raises the margin
    if score is None:  # a label adds the pair: the margin moves by (label - other) for a child
        target = other - rule.margin if is_child else other + rule.margin
    else:
        target = score - abs(rule.margin) if down else score + abs(rule.margin)
    bound = _bound(target, down, rule.inclusive)
    if bound is None:
        return None
    shown = f"{bound} {min(1.0, max(0.0, target)):.2f}"
    to = "reject" if rule.accepts else "accept"
    if score is None:
        return Flip(None, f"{rule.verdict}; the critic could not score this {role} trial, so "
                          f"the rule leaves its example out: a score {shown} would flip it to "
                          f"{to}")
    return Flip(abs(rule.margin), f"{rule.verdict}; scoring this {role} trial {shown} (the "
                                  f"judge gave {score:.2f}) would flip it to {to}")


def _bound(target: float, down: bool, inclusive: bool) -> str | None:
    """"≤", "<", "≥" or ">" before ``target``; None when no score in [0, 1] satisfies it."""
    if down:
        ok = target >= -EPSILON if inclusive else target > EPSILON
        return ("≤" if inclusive else "<") if ok else None
    ok = target <= 1 + EPSILON if inclusive else target < 1 - EPSILON
    return ("≥" if inclusive else ">") if ok else None


# --------------------------------------------------------------------------- 2. contradiction

NEGATIVE_CUES = {
    "negated praise": r"\b(?:not|never|hardly|isn't|wasn't|aren't)\s+(?:\w+\s+)?(?:good|great|"
                      r"correct|accurate|clear|relevant|complete|excellent|perfect)\b",
    "'Missing:' list": r"\bmissing\s*:",
    "missing": r"\bmissing\b",
    "incorrect": r"\b(?:incorrect(?:ly)?|wrong|inaccurate|false)\b",
    "fails": r"\b(?:fail(?:s|ed|ing)?|does not|doesn't|did not|didn't)\b",
    "lacks": r"\black(?:s|ing)?\b",
    "violates": r"\bviolat\w*",
    "off-topic": r"\b(?:off[- ]topic|irrelevant|ignor(?:es|ed))\b",
    "poor": r"\b(?:poor(?:ly)?|bad|weak|unclear)\b",
    "hallucinates": r"\bhallucinat\w*",
    "too short/long": r"\btoo\s+(?:short|long|brief|vague|generic|plain|wordy|verbose|simple|"
                      r"terse|bland|flat|literal)\b",
}
"""Cues of negative feedback: a label names each (the reason shows the label, never the
model's words)."""
POSITIVE_CUES = {
    "excellent": r"\b(?:excellent|outstanding|superb)\b",
    "perfect": r"\bperfect(?:ly)?\b",
    "great": r"\b(?:great|well[- ]done|strong)\b",
    "correct": r"\b(?:correct(?:ly)?|accurate(?:ly)?|right)\b",
    "good": r"\b(?:good|clear|complete|meets (?:all|every))\b",
}
_LABELS = [*NEGATIVE_CUES, *POSITIVE_CUES]
_CUES = re.compile("|".join(f"(?P<c{i}>{pattern})" for i, pattern in
                            enumerate([*NEGATIVE_CUES.values(), *POSITIVE_CUES.values()])), re.I)
"""One pass over the text; at each place the first cue listed wins, so "not correct" is negated
praise (not praise) and "Missing:" a list (not the word)."""
HEDGES = re.compile(r"\b(?:should|would|could|needs?|must|ought|if)\b", re.I)
"""Words that make praise a norm or a wish ("a good answer would...", "needs to be clear"):
praise in a sentence with one of them, or with a negative cue, is not counted as praise."""
_SENTENCE_END = re.compile(r"[.!?\n]+")


@dataclass(frozen=True)
class Doubt:
    """A reason to think a judge's score is wrong, and how strong it is (larger first)."""

    size: float
    reason: str


def feedback_cues(text: str) -> tuple[dict[str, int], dict[str, int]]:
    """Counts of negative and positive cues in a feedback text. A "Missing:" list counts its
    items; praise under a negation ("not correct") counts as negative, not as praise; praise
    beside criticism or a hedge in one sentence ("Too short: a good answer explains itself")
    is not counted (it names what the answer lacks)."""
    text = text[:FEEDBACK_SCAN_CHARS]
    negative: dict[str, int] = {}
    positive: dict[str, int] = {}
    for sentence in _sentences(text):
        found = [(_cue_label(m), m) for m in _CUES.finditer(sentence)]
        criticised = HEDGES.search(sentence) is not None or \
            any(label in NEGATIVE_CUES for label, _ in found)
        for label, match in found:
            if label in NEGATIVE_CUES:
                negative[label] = negative.get(label, 0) + _count(label, sentence, match.end())
            elif not criticised:
                positive[label] = positive.get(label, 0) + 1
    return negative, positive


def _sentences(text: str) -> list[str]:
    """The text cut after each ".", "!", "?" or line break (a "Missing:" list keeps its line)."""
    return [part for part in _SENTENCE_END.split(text) if part.strip()]


def _count(label: str, text: str, end: int) -> int:
    """1 per cue; a "Missing:" list counts the comma- or semicolon-separated items on its line."""
    if label != "'Missing:' list":
        return 1
    stop = text.find("\n", end)
    line = text[end:] if stop < 0 else text[end:stop]
    return max(1, len([part for part in re.split(r"[,;]", line) if part.strip()]))


def contradiction(trial: Trial) -> Doubt | None:
    """The judge's feedback says the opposite of its score (documented heuristic): a score at
    or above :data:`HIGH_SCORE` with more negative cues than praise, or at or below
    :data:`LOW_SCORE` with more praise than negative cues (see :data:`NEGATIVE_CUES`,
    :data:`POSITIVE_CUES`). Its size: how far the score is from the middle (0 to 1) plus 0.1
    per cue more on the contradicting side (at most 5)."""
    score = trial.score
    if score is None or LOW_SCORE < score < HIGH_SCORE or not trial.feedback.text:
        return None
    negative, positive = feedback_cues(trial.feedback.text)
    net = sum(negative.values()) - sum(positive.values())
    if score >= HIGH_SCORE and net > 0:
        cues, what = negative, "a high score with negative feedback"
    elif score <= LOW_SCORE and net < 0:
        cues, what = positive, "a low score with praise"
    else:
        return None
    listed = ", ".join(f"{label} ×{count}" if count > 1 else label for label, count in
                       sorted(cues.items(), key=lambda kv: -kv[1]))
    size = abs(score - 0.5) * 2 + 0.1 * min(5, abs(net))
    return Doubt(size, f"{what}: judge {score:.2f}, feedback says {listed}")


# --------------------------------------------------------------------------- 3. disagreement


def disagreement(trial: Trial, usual_gap: float = 0.0) -> Doubt | None:
    """The widest disagreement among the scores the studio holds for one trial: the critic's
    overall score against the mean of its own per-dimension scores (``Feedback.dimensions``),
    and between the components of a weighted critic (``Feedback.extra["components"]``: e.g.
    an evaluator and an LLM judge). Its size is the gap; None below :data:`DISAGREEMENT`.

    A weighted critic's components may differ on every trial by design (an exact-match check
    scores 0 or 1, a judge in between): ``usual_gap`` (:func:`usual_component_gap` over the
    run) is subtracted, so only a gap wider than the critic's usual one by
    :data:`DISAGREEMENT` is flagged."""
    found = [d for d in (_dimension_gap(trial), _component_gap(trial, usual_gap))
             if d is not None]
    found = [d for d in found if d.size >= DISAGREEMENT - EPSILON]
    return max(found, key=lambda d: d.size) if found else None


MIN_USUAL_GAP_TRIALS = 3
"""Trials with two or more scored components needed before their usual gap is trusted."""


def usual_component_gap(trials: Iterable[Trial]) -> float:
    """The median gap between the highest and lowest component score of a weighted critic
    over ``trials`` (0 with fewer than :data:`MIN_USUAL_GAP_TRIALS` such trials)."""
    gaps = sorted(gap for gap in (_component_spread(t) for t in trials) if gap is not None)
    if len(gaps) < MIN_USUAL_GAP_TRIALS:
        return 0.0
    middle = len(gaps) // 2
    return gaps[middle] if len(gaps) % 2 else (gaps[middle - 1] + gaps[middle]) / 2


def _cue_label(match: re.Match[str]) -> str:
    """The cue a match of ``_CUES`` found: each of its alternatives is one group ``c<i>``."""
    if match.lastgroup is None:
        raise ValueError(f"a feedback cue matched {match.group()!r} outside its named groups")
    return _LABELS[int(match.lastgroup[1:])]


def _dimension_gap(trial: Trial) -> Doubt | None:
    dims = {name: value for name, value in trial.feedback.dimensions.items()
            if _unit(value)}
    if trial.score is None or not dims:
        return None
    mean = sum(dims.values()) / len(dims)
    low = min(dims, key=lambda name: dims[name])
    high = max(dims, key=lambda name: dims[name])
    shown = f"{_name(low)} {dims[low]:.2f}" if len(dims) == 1 else \
        f"lowest {_name(low)} {dims[low]:.2f}, highest {_name(high)} {dims[high]:.2f}"
    return Doubt(abs(trial.score - mean),
                        f"the critic's overall score {trial.score:.2f} vs the mean of its "
                        f"{len(dims)} dimension score(s) {mean:.2f} ({shown})")


def _component_scores(trial: Trial) -> list[tuple[str, float]]:
    parts = trial.feedback.extra.get("components")
    if not isinstance(parts, list):
        return []
    return [(str(p.get("name", "?")), p["score"]) for p in parts
            if isinstance(p, dict) and _unit(p.get("score"))]


def _component_spread(trial: Trial) -> float | None:
    scores = [score for _, score in _component_scores(trial)]
    return max(scores) - min(scores) if len(scores) >= 2 else None


def _component_gap(trial: Trial, usual_gap: float) -> Doubt | None:
    scored = _component_scores(trial)
    if len(scored) < 2:
        return None
    low = min(scored, key=lambda p: p[1])
    high = max(scored, key=lambda p: p[1])
    usual = f" (they usually differ by {usual_gap:.2f})" if usual_gap > EPSILON else ""
    return Doubt(high[1] - low[1] - usual_gap,
                 f"the critic's components disagree: {_name(high[0])} {high[1]:.2f} vs "
                 f"{_name(low[0])} {low[1]:.2f}{usual}")


def _unit(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and \
        math.isfinite(value) and 0.0 <= value <= 1.0


def _name(name: str) -> str:
    name = " ".join(str(name).split())
    return name if len(name) <= NAME_CHARS else name[:NAME_CHARS - 1] + "…"


# --------------------------------------------------------------------------- the queue


@dataclass
class _Draft:
    trial: Trial
    group: Group
    reasons: list[str]
    rank: tuple[float, ...]
    flip_distance: float | None = None


def build_queue(*, trials: Iterable[Trial], reviewed_ids: set[int],
                reviewed_example_ids: set[int], pending_id: int | None = None,
                parent: Sequence[Trial] = (), child: Sequence[Trial] = (),
                ties_accept: bool = False, open_ids: Set[int] = frozenset()
                ) -> list[QueueItem]:
    """The queue, most valuable label first.

    Args:
        trials: the trials to consider (the page passes the newest few thousand).
        reviewed_ids: trials a person reviewed (never queued).
        reviewed_example_ids: examples with at least one reviewed trial.
        pending_id, parent, child: the pending proposal and its evidence, if one waits.
        ties_accept: the pending proposal is a merge (accepted at or above the better parent's
            sum, the parent given here; a correction that makes the other parent the better
            one is not modelled).
        open_ids: labelled trials that still wait for this reviewer (several people review
            each trial); any other labelled trial is done.
    """
    drafts: dict[int, _Draft] = {}
    flips = margin_flips(pending_id, parent, child, ties_accept=ties_accept) \
        if pending_id is not None else {}
    evidence = {t.id: t for t in (*parent, *child)}
    for trial_id, flip in flips.items():
        trial = evidence[trial_id]
        if _queueable(trial, reviewed_ids, open_ids):
            distance = math.inf if flip.distance is None else flip.distance
            drafts[trial_id] = _Draft(trial, Group.MARGIN, [flip.reason], (distance,),
                                      flip.distance)
    considered = [t for t in {**{t.id: t for t in trials}, **evidence}.values()
                  if _queueable(t, reviewed_ids, open_ids)]
    usual_gap = usual_component_gap(considered)
    for trial in considered:
        _add_doubts(drafts, trial, usual_gap)
        if trial.id in open_ids and trial.id not in drafts:
            drafts[stored_id(trial)] = _Draft(trial, Group.MORE_REVIEWERS, [
                "other reviewers labelled this trial; it waits for yours"],
                (0.0 if trial.split is Split.VAL else 1.0, float(stored_id(trial))))
    _add_unreviewed(drafts, considered, reviewed_example_ids)
    items = [QueueItem(d.trial, d.group, tuple(d.reasons), d.rank, d.flip_distance)
             for d in drafts.values()]
    return sorted(items, key=_order)


def _queueable(trial: Trial, reviewed_ids: Set[int], open_ids: Set[int]) -> bool:
    return trial.id is not None and trial.id not in reviewed_ids and trial.phase not in NOT_QUEUED \
        and (trial.override is None or trial.id in open_ids)


def _add_doubts(drafts: dict[int, _Draft], trial: Trial, usual_gap: float) -> None:
    """Groups 2 and 3: a doubt ranks a margin trial before its equals, or queues it."""
    for group, doubt in ((Group.CONTRADICTION, contradiction(trial)),
                         (Group.DISAGREEMENT, disagreement(trial, usual_gap))):
        if doubt is None:
            continue
        draft = drafts.get(stored_id(trial))
        if draft is None:
            drafts[stored_id(trial)] = _Draft(trial, group, [doubt.reason], (-doubt.size,))
            continue
        draft.reasons.append(doubt.reason)
        if draft.group is Group.MARGIN and len(draft.rank) == 1:
            draft.rank = (draft.rank[0], -1.0)


def _add_unreviewed(drafts: dict[int, _Draft], trials: Sequence[Trial],
                    reviewed_example_ids: set[int]) -> None:
    newest: dict[int, Trial] = {}
    for trial in trials:
        if trial.example_id in reviewed_example_ids:
            continue
        if trial.example_id not in newest \
                or stored_id(trial) > stored_id(newest[trial.example_id]):
            newest[trial.example_id] = trial
    queued = {d.trial.example_id for d in drafts.values()}
    for trial in newest.values():
        reason = f"no trial on {trial.split.value} example {trial.example_index} has been " \
                 "reviewed yet"
        queued_here = [d for d in drafts.values() if d.trial.example_id == trial.example_id]
        if trial.example_id in queued:
            for draft in queued_here:
                draft.reasons.append(reason)
            continue
        split_rank = 0.0 if trial.split is Split.VAL else 1.0
        drafts[stored_id(trial)] = _Draft(trial, Group.UNREVIEWED, [reason],
                                  (split_rank, float(trial.example_index)))


def _order(item: QueueItem) -> tuple:
    rank = item.rank + (0.0,) * (2 - len(item.rank))
    return (int(item.group), *rank, item.trial.id)


def next_item(queue: Sequence[QueueItem], skipped: Sequence[int]) -> QueueItem | None:
    """The first item not skipped in this sitting; once all were skipped, the oldest skip."""
    if not queue:
        return None
    fresh = [item for item in queue if item.trial.id not in skipped]
    if fresh:
        return fresh[0]
    by_id = {item.trial.id: item for item in queue}
    return next(by_id[i] for i in skipped if i in by_id)


def queue_summary(queue: Sequence[QueueItem]) -> str:
    """"12 trials wait: 3 could flip the pending decision, ..." for the page's header."""
    if not queue:
        return "Nothing waits for your eyes now: no trial needs a label."
    counts = {group: sum(1 for item in queue if item.group is group) for group in Group}
    parts = [f"{count} {GROUP_COUNTS[group]}" for group, count in counts.items() if count]
    return f"{len(queue)} trial(s) wait: " + "; ".join(parts) + "."


# --------------------------------------------------------------------------- review time


@dataclass(frozen=True)
class ReviewEstimate:
    """The person's time the run still expects: seconds per trial times trials."""

    per_trial: float
    trials: int
    measured: int
    """Reviews the mean comes from (0: :data:`DEFAULT_REVIEW_SECONDS` is assumed)."""

    @property
    def seconds(self) -> float:
        return self.per_trial * self.trials

    def text(self) -> str:
        basis = (f"mean of {self.measured} timed review(s)" if self.measured
                 else "no review timed yet: assumed")
        return (f"{format_duration(self.seconds)} of your review ({self.trials} trial(s) × "
                f"{self.per_trial:.0f} s, {basis})")


def review_estimate(recorded_seconds: Sequence[float], trials: int) -> ReviewEstimate:
    """Mean recorded seconds per reviewed trial (or the default) for ``trials`` trials."""
    seconds = [s for s in recorded_seconds if math.isfinite(s) and s >= 0]
    per_trial = sum(seconds) / len(seconds) if seconds else DEFAULT_REVIEW_SECONDS
    return ReviewEstimate(per_trial, max(0, trials), len(seconds))


def expected_review_trials(queue_length: int, future_gates: int, minibatch_size: int) -> int:
    """The trials the queue still expects: those in it now, plus each gate still to come
    bringing its proposal's evidence (the parent's and the child's minibatch trials)."""
    return max(0, queue_length) + max(0, future_gates) * 2 * max(0, minibatch_size)


# --------------------------------------------------------------------------- the sitting


REVIEWED_ACTIONS = ("corrected", "confirmed")
"""Recorded review actions that count a trial as done (a skip does not)."""


@dataclass(frozen=True)
class QueueProgress:
    """How far the person is: trials done of the trials done plus those waiting, and the time
    the recorded reviews took."""

    done: int
    total: int
    seconds: float

    def text(self) -> str:
        return f"{self.done} of {self.total} done · {format_duration(self.seconds)} spent"


def review_progress(waiting: int, reviews: Iterable[ReviewRecord],
                    corrected_ids: Iterable[int] = ()) -> QueueProgress:
    """``reviews``: the run's recorded reviews (``trial_id``, ``seconds``, ``action``);
    ``corrected_ids``: trials corrected elsewhere (the Correct many/one forms, the CLI). A trial
    counts once however often it was reviewed."""
    reviews = list(reviews)
    done = {r.trial_id for r in reviews if r.action in REVIEWED_ACTIONS} | set(corrected_ids)
    seconds = sum(r.seconds for r in reviews if math.isfinite(r.seconds) and r.seconds >= 0)
    return QueueProgress(len(done), len(done) + max(0, waiting), seconds)


@dataclass
class Sitting:
    """The trials shown in one sitting, in order, and where the person is among them: at the
    queue's next trial (``cursor`` None) or back on one shown earlier (Previous)."""

    shown: list[int]
    cursor: int | None = None

    def current(self) -> int | None:
        """The earlier trial browsed back to, or None at the queue's next trial."""
        return None if self.cursor is None else self.shown[self.cursor]

    def note(self, trial_id: int) -> None:
        """The queue's next trial is on screen (kept once, newest last)."""
        if trial_id in self.shown:
            self.shown.remove(trial_id)
        self.shown.append(trial_id)

    def can_go_back(self, at_queue: int | None) -> bool:
        return bool(self._earlier(at_queue)) if self.cursor is None else self.cursor > 0

    def back(self, at_queue: int | None) -> None:
        """One trial back: from the queue's next to the last one shown before it."""
        if self.cursor is None:
            earlier = self._earlier(at_queue)
            if earlier:
                self.cursor = self.shown.index(earlier[-1])
        elif self.cursor > 0:
            self.cursor -= 1

    def forward(self) -> None:
        """One trial forward; past the newest, back at the queue's next trial."""
        if self.cursor is not None:  # the newest shown is the queue's next: back at the queue
            self.cursor = self.cursor + 1 if self.cursor + 2 < len(self.shown) else None

    def _earlier(self, at_queue: int | None) -> list[int]:
        return [trial_id for trial_id in self.shown if trial_id != at_queue]
