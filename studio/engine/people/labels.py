"""An align run's labels are the person's corrections as they are now, not as they were.

An align run (:class:`~studio.model.records.AlignOrigin`) evolves a critic on another run's
corrections: each of its examples is one corrected trial, its label (``expected``) the
person's score and words. The person may undo or change a correction while the align run runs,
waits at a gate or is stopped, so the label is never a copy: before and after every batch the
engine scores (:func:`studio.engine.scoring.batch.score_batch`), :meth:`LabelBook.refresh` reads
each
source trial's active correction (the store's override query, merged by
:func:`~studio.model.records.merge_overrides`: one definition of "active") and

- writes the current label into the example (in memory and in the store), so the agreement
  metric (:class:`~studio.critics.alignment.CriticAgreement`) scores new replies against it;
- re-scores every trial the metric already judged whose label changed, from the critic reply
  the trial keeps (``1 - |critic - human|`` needs no model call), so acceptance, the Pareto
  front, the best candidate and the reflection read agreement with the current label, as
  effective scores follow overrides in any other run.

The same refresh runs when the engine is built (a resumed align run starts from the
corrections as they are), when a person corrects or undoes a labelled trial
(:func:`relabel_align_runs`, from :func:`studio.engine.people.gates.override`: a proposal waiting at
the gate shows its evidence against the current labels) and before a report
(:func:`relabel_run`). It is idempotent, so the engine and a page may both run it.

An undone correction (or one left without a score) keeps its example in the run, recorded as
"could not evaluate" with the reason (:func:`~studio.critics.alignment.undone_label`), rather
than taken out of sampling and validation. That keeps the engine's guarantees: the training,
validation and held-out sets never change under the loop, so every candidate's Pareto row is
over the same validation examples (an unscored example is None for every candidate and makes
none better); a (candidate, example) pair is still judged once (a correction made again
re-scores the kept reply, no new call); and the budget counts what was run, as always (an
undone example drawn into a minibatch still runs the evolved critic once: its reply is kept
for the day the trial is corrected again).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, MutableMapping
from dataclasses import dataclass, field

from studio.critics.adapters import evaluator_feedback
from studio.critics.alignment import (
    KEY,
    CriticAgreement,
    is_undone,
    label_text,
    read_label,
    undone_label,
)
from studio.critics.feedback import checked_feedback, unscored_reason
from studio.model.errors import StudioError
from studio.model.feedback import Feedback
from studio.model.records import AlignOrigin, Example, RunSpec, Split, stored_id
from studio.store import OverridePair
from studio.store.seams import PeopleStore

logger = logging.getLogger(__name__)


@dataclass
class LabelBook:
    """Where an align run's labels come from, and the labels it last applied."""

    origin: AlignOrigin
    sources: dict[int, int]
    """Align example id -> the corrected trial (of the source run) it came from."""
    metric: CriticAgreement
    applied: dict[int, str] | None = field(default=None)
    """Example id -> the label text last written (None: not yet in this process)."""

    @classmethod
    def for_run(cls, spec: RunSpec, examples: Mapping[int, Example]) -> LabelBook | None:
        """The book of an align run; None for any other run."""
        if spec.aligns is None:
            return None
        return cls(spec.aligns, label_sources(spec.aligns, examples.values()),
                   agreement_metric(spec))

    def undone(self, example_id: int) -> bool:
        """The example's correction was undone when the labels were last read: a reply on it
        is recorded as could not evaluate, not left to be judged again."""
        text = (self.applied or {}).get(example_id)
        return text is not None and is_undone(read_label(text))

    def refresh(self, store: PeopleStore, run_id: str, examples: MutableMapping[int, Example]
                ) -> bool:
        """Apply the active corrections: labels into ``examples`` and the store, changed
        labels into the trials already judged. True when a trial's verdict changed."""
        labels = current_labels(store, self.origin, self.sources)
        if labels == self.applied:
            return False
        for example_id, text in labels.items():
            example = examples.get(example_id)
            if example is not None and example.data.get("expected") != text:
                data = {**example.data, "expected": text}
                examples[example_id] = example.model_copy(update={"data": data})
                store.set_example_data(example_id, data)
        changed = rejudge_trials(store, run_id, labels, self.metric)
        self.applied = labels
        return changed > 0


def label_sources(origin: AlignOrigin, examples: Iterable[Example]) -> dict[int, int]:
    """Align example id -> source trial id. The align run stored its training labels in
    ``origin.label_trial_ids`` order and its held-out ones in ``held_out_trial_ids`` order,
    each split indexed from 0 (:func:`studio.projects.aligning.create_align_run`)."""
    held_out = set(origin.held_out_trial_ids)
    train = [t for t in origin.label_trial_ids if t not in held_out]
    order = {Split.TRAIN: train, Split.TEST: origin.held_out_trial_ids}
    return {stored_id(e): order[e.split][e.index] for e in examples
            if e.index < len(order.get(e.split, []))}


def current_labels(store: PeopleStore, origin: AlignOrigin, sources: dict[int, int]
                   ) -> dict[int, str]:
    """Example id -> its label now: the source trial's active correction with a score, else
    an :func:`~studio.critics.alignment.undone_label`."""
    active = active_corrections(store, origin)
    labels = {}
    for example_id, trial_id in sources.items():
        pair = active.get(trial_id)
        if pair is None or pair.human_score is None:  # active pairs all have a human score
            labels[example_id] = undone_label(trial_id)
        else:
            labels[example_id] = label_text(pair.human_score, pair.human_feedback,
                                            pair.judge_score, pair.judge_feedback)
    return labels


def active_corrections(store: PeopleStore, origin: AlignOrigin) -> dict[int, OverridePair]:
    """Source trial id -> its active correction with a score: what makes
    a label now."""
    return {p.trial_id: p for p in store.override_pairs(origin.run_id)
            if p.human_score is not None}


def agreement_metric(spec: RunSpec) -> CriticAgreement:
    """The align run's metric, as its critic spec configures it."""
    params = (spec.critic.evaluator or {}).get("params") or {}
    return CriticAgreement(**params)


def rejudge_trials(store: PeopleStore, run_id: str, labels: dict[int, str],
                   metric: CriticAgreement) -> int:
    """Score again, from the reply each keeps, the trials the metric judged whose verdict no
    longer matches their example's label; how many changed. A trial whose evolved critic never
    replied (the agent failed) was not judged and is left as it is."""
    changed = 0
    for trial in store.iter_trials(run_id, with_trace=False):
        label = labels.get(trial.example_id)
        if label is None or trial.feedback.extra.get("evaluator") != KEY:
            continue
        feedback, error = judge_reply(metric, trial.output, label)
        if (feedback.score, feedback.text, error) != (trial.score, trial.feedback.text,
                                                      trial.error):
            store.rejudge_trial(stored_id(trial), feedback, error)
            changed += 1
    return changed


def judge_reply(metric: CriticAgreement, reply: str, label: str) -> tuple[Feedback, str | None]:
    """The verdict the run's critic gives ``reply`` against ``label`` (what
    :func:`~studio.critics.feedback.judge_sample` records for an evaluator critic)."""
    feedback = checked_feedback(evaluator_feedback(metric, outputs=reply,
                                                   reference_outputs=label))
    return feedback, unscored_reason(feedback)


def relabel_run(store: PeopleStore, run_id: str) -> bool:
    """:meth:`LabelBook.refresh` outside the engine (a report on a run that is not live)."""
    run = store.get_run(run_id)
    examples = {stored_id(e): e for e in store.examples(run_id)}
    book = LabelBook.for_run(run.spec, examples)
    return book is not None and book.refresh(store, run_id, examples)


def relabel_align_runs(store: PeopleStore, trial_id: int) -> list[str]:
    """Bring at once the align runs that learn from ``trial_id``'s correction up to date (a
    person corrected or undid it): a proposal waiting at an align run's gate then shows its
    evidence against the label as it is now, without waiting for the engine's next batch.
    The engine refreshes again at its next step, so a run missed here is never left stale.
    Returns the align runs brought up to date."""
    source_id = store.get_trial(trial_id).run_id
    done = []
    for run in store.align_runs_of(source_id):
        origin = run.spec.aligns
        if origin is not None and trial_id in origin.label_trial_ids:
            try:
                relabel_run(store, run.id)
            except StudioError:  # the correction is stored; the engine's next step retries
                logger.exception("align run %s could not read trial %s's correction", run.id,
                                 trial_id)
                continue
            done.append(run.id)
    return done
