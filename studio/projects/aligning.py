"""Align a run's critic with the people who corrected it.

Every override with a score is a label: what the critic read (its input exactly as the critic
saw it), the critic's score and feedback, the person's score and feedback. An *align run* is an
ordinary run (watched, gated, resumed like any) whose agent is the critic, whose examples are
the labels (a seeded share held out as its test set, never seen by the loop) and whose critic is
agreement with the person (:mod:`studio.critics.alignment`). :func:`align_report` compares the
original and the aligned critic on the held-out labels; the aligned critic is then used for the
next run (:func:`use_for_next_run`: a copy of the project) or re-scores a run's trials
(:func:`rescore_run`: a scoring pass stored beside the old scores, which stay untouched).

The labels are the corrections as they are now, not as they were when the align run was
created: the engine reads them at every step (:mod:`studio.engine.people.labels`), and the report
reads them again (:func:`align_report`): an undone correction is no label (its example is
"could not evaluate"), a changed one counts at its new value, judged pairs included.

Each function asks for an :class:`~studio.store.seams.AligningStore`, except those that start
the align run (:func:`start_align`, :func:`align_critic`): they dispatch it, so they take the
whole :class:`~studio.store.Store`.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field

from studio.critics.agent import SimpleCriticOutput, format_critic_input
from studio.critics.agreement import AgreementReport, agreement
from studio.critics.alignable import JudgeText, alignable_parts, judge_text, with_judge_text
from studio.critics.alignment import KEY as AGREEMENT_KEY
from studio.critics.alignment import is_undone, label_text, read_label, reply_score, worst_score
from studio.critics.protocol import Critic, Sample
from studio.engine.hosting.build import (
    complete_spec,
    create_run,
    critic_agent_spec,
    critic_for_run,
    default_model_for,
    spec_agent,
    spec_model,
    workflow_context,
)
from studio.engine.hosting.dispatch import dispatch, launch
from studio.engine.people.labels import active_corrections, label_sources, relabel_run
from studio.engine.policies.pool import load_view
from studio.model.config import EvolutionConfig
from studio.model.errors import ConfigError, RunStateError
from studio.model.limits import MAX_NAME_CHARS, clip
from studio.model.records import (
    AgentSpec,
    AlignOrigin,
    CriticSpec,
    Project,
    ReflectionSpec,
    Run,
    RunSpec,
    Trial,
    TrialPhase,
    example_expected,
    stored_id,
)
from studio.projects.background import Job, start_job
from studio.projects.files import Origin, check_spec_trust, dump_project, parse_project
from studio.projects.team_review import trial_labels
from studio.runtime.execution import AgentExecutor
from studio.runtime.providers.calls import metered
from studio.store import EvalRun, Store
from studio.store.seams import AligningStore

MIN_ALIGN_LABELS = 10
"""Fewer corrections than this cannot both teach the critic and test it."""
DEFAULT_HELD_OUT = 0.3
MAX_RESCORE_TRIALS = 2_000
"""A scoring pass judges at most this many trials (each is a critic call)."""
RESCORE_KIND = "rescore"
HELD_OUT_KIND = "align_heldout"
"""An eval run holding the real critic's held-out agreement, original vs aligned text."""
ALIGN_CONFIG = EvolutionConfig(max_iterations=5)
"""An align run's settings unless given: a few reflections on a small label set."""
HELD_OUT_SCOPE = "the align run's held-out labels"
ALL_SCOPE = "every corrected trial (none was a training label of the align run)"
IN_SAMPLE_SCOPE = "every corrected trial, training labels included (in-sample)"


@dataclass(frozen=True)
class Label:
    """One correction as the critic saw it and as the person judged it."""

    trial_id: int
    critic_input: str
    human_score: float
    human_feedback: str | None
    critic_score: float | None
    critic_feedback: str | None

    def example(self) -> dict[str, Any]:
        return {"input": self.critic_input,
                "expected": label_text(self.human_score, self.human_feedback,
                                       self.critic_score, self.critic_feedback)}


@dataclass(frozen=True)
class LabelStatus:
    count: int
    needed: int
    """How many more corrections with a score are needed (0: enough)."""

    @property
    def ready(self) -> bool:
        return self.needed == 0

    @property
    def message(self) -> str:
        if self.ready:
            return f"{self.count} corrected trials are labels for aligning the critic."
        return (f"{self.count} corrected trial{'s' if self.count != 1 else ''} so far: "
                f"{self.needed} more correction{'s' if self.needed != 1 else ''} with a score "
                f"needed to align the critic (at least {MIN_ALIGN_LABELS}).")


class ReviewerDistance(BaseModel):
    """One reviewer's own held-out labels against the original and the aligned critic."""

    reviewer: str
    labels: int
    before: float | None
    """Mean absolute error of the original critic from this reviewer's scores."""
    after: float | None
    """Mean absolute error of the aligned critic from this reviewer's scores."""


class AlignReport(BaseModel):
    """The original critic (candidate #0) against the aligned one (the best candidate), on the
    held-out labels: how each agrees with the person."""

    align_run_id: str
    source_run_id: str
    status: str
    target: str
    labels: int
    """Labels the align run was created with (corrections with a score, then)."""
    held_out: int
    active_labels: int = 0
    """Of :attr:`labels`, those whose correction is active now (an undone one is no label)."""
    active_held_out: int = 0
    """Of the held-out labels, those active now: what before/after are measured on."""
    threshold: float
    before: AgreementReport | None = None
    after: AgreementReport | None = None
    baseline_index: int = 0
    best_index: int | None = None
    text_before: str = ""
    text_after: str = ""
    part_name: str = ""
    """The aligned part of a weighted critic ("" for the whole critic)."""
    measured_by: str = ""
    """Where before/after come from (the align run's test set, or the real judge)."""
    recorded: AgreementReport | None = None
    """The scores the person corrected, as recorded, against the person (a reference)."""
    measure_pending: bool = False
    """The real judge has not been run on the held-out labels yet (:func:`measure_held_out`)."""
    note: str = ""
    """Why before/after are missing, when they are."""
    reviewers: list[ReviewerDistance] = Field(default_factory=list)
    """How far the original and the aligned critic are from each reviewer's own labels on the
    held-out trials (the critic was trained on their consensus: :attr:`before` and
    :attr:`after` measure the distance from it)."""

    @property
    def improved(self) -> bool | None:
        """None unless both critics were measured on the same labels (never on fewer: an
        unusable reply counts as the worst error, :func:`counted_agreement`)."""
        before = self.before.mae if self.before is not None else None
        after = self.after.mae if self.after is not None else None
        if not comparable(self.before, self.after) or before is None or after is None:
            return None
        return after < before


def comparable(before: AgreementReport | None, after: AgreementReport | None) -> bool:
    """Both measured, with an error, on as many labels, none skipped."""
    return (before is not None and after is not None and None not in (before.mae, after.mae)
            and before.count == after.count and before.skipped == after.skipped == 0)


def counted_agreement(pairs: list[tuple[float | None, float]], threshold: float
                      ) -> AgreementReport:
    """Agreement where a critic reply without a usable score counts as the worst error
    (:func:`~studio.critics.alignment.worst_score`), not as a label left out: two critics are
    then compared on the same labels, and failing to reply never improves the numbers."""
    unusable = sum(1 for critic, _ in pairs if critic is None)
    counted = [(worst_score(human) if critic is None else critic, human)
               for critic, human in pairs]
    return agreement(counted, threshold).model_copy(update={"unusable": unusable})


class RescorePass(BaseModel):
    """A run's trials scored again with an aligned critic; the old scores are untouched."""

    id: int
    run_id: str
    align_run_id: str
    critic: str
    scores: dict[int, float | None] = Field(default_factory=dict)
    """Trial id -> the aligned critic's score (None: could not evaluate)."""
    before: AgreementReport
    """The original critic against the people, on the corrections in :attr:`scope`."""
    after: AgreementReport
    """The aligned critic against the people, on the same corrections."""
    scope: str = HELD_OUT_SCOPE
    """Which corrections before/after cover (:data:`HELD_OUT_SCOPE`, :data:`ALL_SCOPE`, or
    :data:`IN_SAMPLE_SCOPE` for passes stored before held-out was kept apart)."""
    cost_usd: float = 0.0
    """LiteLLM's price of the pass's critic calls (US dollars; 0 for passes stored before it
    was kept, and for the embedded and scripted models)."""
    in_sample_before: AgreementReport | None = None
    """On every corrected trial, the aligned critic's training labels included (it has seen
    those: an overstated reference); None when :attr:`scope` already covers them all."""
    in_sample_after: AgreementReport | None = None



# --------------------------------------------------------------------------- labels


def collect_labels(store: AligningStore, run_id: str) -> list[Label]:
    """The run's corrected trials whose effective correction has a score, oldest first."""
    labels = []
    for pair in store.override_pairs(run_id):
        if pair.human_score is None:
            continue
        trial = store.get_trial(pair.trial_id)
        expected = example_expected(store.get_example(trial.example_id).data)
        labels.append(Label(trial_id=pair.trial_id,
                            critic_input=format_critic_input(trial.input_text, trial.output,
                                                             expected),
                            human_score=pair.human_score, human_feedback=pair.human_feedback,
                            critic_score=pair.judge_score, critic_feedback=pair.judge_feedback))
    return labels


def label_status(store: AligningStore, run_id: str) -> LabelStatus:
    count = sum(1 for p in store.override_pairs(run_id) if p.human_score is not None)
    return LabelStatus(count=count, needed=max(0, MIN_ALIGN_LABELS - count))


def split_labels(labels: list[Label], held_out: float, seed: int
                 ) -> tuple[list[Label], list[Label]]:
    """``(train, held_out)``: a seeded shuffle of the labels grouped by critic input, at least
    one group on each side. Labels with the same input make the same example, so a group goes
    wholly to one side: else the held-out set would test what the loop trained on.

    Raises:
        ConfigError: ``held_out`` is not a fraction, or every label has the same input.
    """
    if not 0.0 < held_out < 1.0:
        raise ConfigError("held_out must be a fraction between 0 and 1 (e.g. 0.3)",
                          where="held_out", value=held_out)
    groups: dict[str, list[Label]] = {}
    for label in labels:
        groups.setdefault(label.critic_input, []).append(label)
    if len(groups) < 2:
        raise ConfigError(f"the {len(labels)} corrected trials all show the critic the same "
                          "input: none can be held out to test on", where="labels",
                          value=len(labels))
    order = list(groups.values())
    random.Random(seed).shuffle(order)
    wanted = max(1, round(len(labels) * held_out))
    taken, held = 0, 0
    while taken < len(order) - 1 and held < wanted:
        held += len(order[taken])
        taken += 1
    train = [x for group in order[taken:] for x in group]
    if len(train) < MIN_TRAIN_LABELS and held_out > 0.5:
        raise ConfigError(f"held_out {held_out} keeps {held} of the {len(labels)} labels out and "
                          f"leaves {len(train)} to align on: lower --held-out (e.g. 0.3) or "
                          "correct more trials", where="held_out", value=held_out)
    return train, [x for group in order[:taken] for x in group]


MIN_TRAIN_LABELS = 2
"""Fewer labels than this to align on (one label: one score to agree with) is refused when the
person asked to hold most of them out, since the loop would learn nothing they meant it to."""


# --------------------------------------------------------------------------- what is evolved


def unalignable_reason(critic: CriticSpec) -> str | None:
    """Why this critic has no text to align (None: it has one), said before a person spends
    corrections on a panel that would refuse them."""
    if critic.type == "agent" or alignable_parts(critic.evaluator):
        return None
    try:
        judge_text(critic.evaluator)
    except ConfigError as exc:
        return exc.message
    return None


def alignable(critic: CriticSpec, default_model: str, part: str | None = None
              ) -> tuple[AgentSpec, JudgeText]:
    """The agent an align run evolves and the critic text it stands for. A critic agent is
    itself; a judge's text (criteria, prompt, rubric) is rendered as a critic agent's
    instruction: the loop's proxy, whose held-out numbers the real judge replaces
    (:func:`measure_held_out`)."""
    if critic.type == "agent":
        if part:
            raise ConfigError("a critic agent has no parts to pick from", where="part",
                              value=part)
        agent = critic_agent_spec(critic, default_model)
        return agent, JudgeText("instruction", agent.instruction, agent.model, "score")
    found = judge_text(critic.evaluator, part)
    agent = AgentSpec(name="judge", model=found.model or default_model, instruction=found.text,
                      output_schema=SimpleCriticOutput.model_json_schema())
    return agent, found


def run_default_model(spec: RunSpec) -> str:
    """The model a run's critic defaults to, resolved as its engine resolves it
    (:func:`~studio.engine.hosting.build.default_model_for`): an agent loaded by reference has no
    agent spec, and its own model, not :func:`spec_model`'s fallback, is the run's default."""
    if not spec.agent_ref or spec.agents or spec.agent is not None:
        return spec_model(spec)
    agent = spec_agent(spec)
    completed = complete_spec(spec, agent)
    primary = workflow_context(agent, completed.primary).get("primary")
    return default_model_for(agent, completed, primary)


def origin_default_model(store: AligningStore, origin: AlignOrigin) -> str:
    """The source run's critic default as the align run recorded it (resolved again for align
    runs stored before it was kept)."""
    return origin.default_model or run_default_model(store.get_run(origin.run_id).spec)


def with_text(critic: CriticSpec, target: str, text: str, part: int | None = None
              ) -> CriticSpec:
    """``critic`` with its instruction (or judge text, of part ``part``) replaced by ``text``."""
    if target == "instruction":
        agent = critic.agent or AgentSpec(name="critic")
        return critic.model_copy(update={"agent": agent.model_copy(update={"instruction": text})})
    evaluator = with_judge_text(critic.evaluator or {}, target, text, part)
    return critic.model_copy(update={"evaluator": evaluator})


# --------------------------------------------------------------------------- the align run


def create_align_run(store: AligningStore, run_id: str, *, held_out: float = DEFAULT_HELD_OUT,
                     config: EvolutionConfig | None = None, threshold: float = 0.5,
                     name: str = "", part: str | None = None) -> Run:
    """Create (not start) the run that aligns ``run_id``'s critic with its corrections
    (``part``: which part of a weighted critic, when several could be aligned).

    Raises:
        NotEnoughLabels (a ConfigError): fewer than :data:`MIN_ALIGN_LABELS` labels, saying how
            many more. ConfigError: nothing alignable, an ambiguous part, a bad ``held_out``.
    """
    if not 0.0 <= threshold <= 1.0:
        raise ConfigError("the pass threshold must be from 0.0 to 1.0", where="threshold",
                          value=threshold)
    source = store.get_run(run_id)
    status = label_status(store, run_id)
    if not status.ready:
        raise NotEnoughLabels(status)
    config = config or ALIGN_CONFIG
    default_model = run_default_model(source.spec)
    agent, found = alignable(source.spec.critic, default_model, part)
    train, test = split_labels(collect_labels(store, run_id), held_out, config.seed)
    origin = AlignOrigin(run_id=run_id, critic=source.spec.critic, target=found.kind,
                         part=found.part, part_name=found.part_name,
                         label_trial_ids=[x.trial_id for x in train + test],
                         held_out_trial_ids=[x.trial_id for x in test], threshold=threshold,
                         default_model=default_model)
    spec = RunSpec(agent=agent, components=["instruction"], input_key="input", aligns=origin,
                   critic=CriticSpec(type="evaluator", name="agreement with people",
                                     evaluator={"evaluator": AGREEMENT_KEY,
                                                "params": {"mode": found.mode,
                                                           "threshold": threshold}}),
                   reflection=ReflectionSpec(model=source.spec.reflection.model),
                   project=source.spec.project)
    return create_run(store, spec=spec, trainset=[x.example() for x in train],
                      testset=[x.example() for x in test], config=config,
                      name=name or f"align critic of {source.name or run_id}"[:MAX_NAME_CHARS],
                      project_id=source.project_id)


class NotEnoughLabels(ConfigError):
    """Too few corrections to align a critic; ``status.needed`` says how many more."""

    def __init__(self, status: LabelStatus) -> None:
        self.status = status
        super().__init__(status.message, where="labels", value=status.count)


def start_align(store: Store, run_id: str, **options: Any) -> Run:
    """Create the align run and start it: queued when a worker is live, else in this process
    (the Agreement page: the run's critic is checked as a browser project's is)."""
    check_spec_trust(store.get_run(run_id).spec, Origin.BROWSER, f"run {run_id}")
    return dispatch(store, create_align_run(store, run_id, **options).id).run


def align_critic(run_id: str, *, store: Store | None = None, held_out: float = DEFAULT_HELD_OUT,
                 config: EvolutionConfig | None = None, threshold: float = 0.5,
                 timeout: float | None = None, part: str | None = None) -> AlignReport:
    """Align ``run_id``'s critic with its corrections, in this process, and report (library).

    The run is stored like any: watch it in the studio, decide its gates
    (``config.review="review"``), resume it with ``studio resume``.
    """
    from studio.store import open_store

    store = store or open_store()
    run = create_align_run(store, run_id, held_out=held_out, config=config, threshold=threshold,
                           part=part)
    launch(store, run.id).wait(timeout)
    return report_measured(store, run.id)


def align_origin(store: AligningStore, align_run_id: str) -> AlignOrigin:
    """Raises RunStateError when the run is not an align run."""
    origin = store.get_run(align_run_id).spec.aligns
    if origin is None:
        raise RunStateError(f"run {align_run_id} is not an align run (start one with "
                            f"`studio align RUN`)")
    return origin


def align_runs(store: AligningStore, run_id: str) -> list[Run]:
    """The align runs of ``run_id``'s critic, newest first, however old (found by query)."""
    return store.align_runs_of(run_id)


# --------------------------------------------------------------------------- the result


def align_report(store: AligningStore, align_run_id: str) -> AlignReport:
    """Agreement with the person on the held-out labels, before (#0) and after (best).

    The labels are the corrections as they are now: the align run's trials are re-scored
    against them first (:func:`~studio.engine.people.labels.relabel_run`, no model call), so the
    best
    candidate, the counts and before/after leave out an undone correction and read a changed
    one at its new value.

    A critic agent is measured by the align run's own test set (its agent is the critic). A
    judge (criteria, prompt, rubric, weighted) is measured as it will be applied: the real
    critic with the original and with the aligned text, run on the held-out trials
    (:func:`measure_held_out`, stored once per best candidate)."""
    run = store.get_run(align_run_id)
    origin = align_origin(store, align_run_id)
    labels = current_align_labels(store, align_run_id)
    held = held_out_labels(origin, labels)
    view = load_view(store, align_run_id)
    baseline = view.candidates[0] if view.candidates else None
    best = view.candidate(view.best_id) if view.best_id is not None else baseline
    report = AlignReport(
        align_run_id=align_run_id, source_run_id=origin.run_id, status=run.status.value,
        target=origin.target, part_name=origin.part_name, labels=len(origin.label_trial_ids),
        held_out=len(origin.held_out_trial_ids), active_labels=len(labels),
        active_held_out=len(held), threshold=origin.threshold,
        best_index=best.index if best else None,
        text_before=baseline.components.get("instruction", "") if baseline else "",
        text_after=best.components.get("instruction", "") if best else "",
        recorded=_recorded_agreement(held, origin.threshold))
    if not held:
        return report.model_copy(update={"note": (
            f"None of the {report.held_out} held-out labels is active now: their corrections "
            "were undone, so there is nothing to measure the critics on.")})
    if measures_real_critic(origin):
        return _judge_report(store, report, best.id if best else None, held)
    pairs = _held_out_pairs(store, align_run_id, [stored_id(c) for c in (baseline, best) if c],
                            held)
    if baseline is None or best is None or not pairs.get(stored_id(baseline)) \
            or not pairs.get(stored_id(best)):
        return report.model_copy(update={"note": (
            "The held-out labels are scored when the align run completes (or now with "
            f"`studio test {align_run_id}`).")})
    before, after = pairs[stored_id(baseline)], pairs[stored_id(best)]
    return report.model_copy(update={
        "measured_by": "the align run's test set: the critic agent itself, candidate #0 "
                       "against the best, on the held-out labels",
        "before": counted_agreement([(x.critic, x.human) for x in before], origin.threshold),
        "after": counted_agreement([(x.critic, x.human) for x in after], origin.threshold),
        "reviewers": reviewer_distances(store, origin.run_id, held,
                                        {x.trial_id: x.critic for x in before},
                                        {x.trial_id: x.critic for x in after},
                                        origin.threshold)})


def measures_real_critic(origin: AlignOrigin) -> bool:
    """A judge is evolved through a proxy agent, so its numbers come from the judge itself."""
    return origin.critic.type == "evaluator"


@dataclass(frozen=True)
class ActiveLabel:
    """An align run's label whose correction is active now."""

    example_id: int
    """The align run's example."""
    trial_id: int
    """The corrected trial of the source run it comes from."""
    human_score: float
    critic_score: float | None
    """The source critic's score, as recorded when the person corrected it."""


def current_align_labels(store: AligningStore, align_run_id: str) -> list[ActiveLabel]:
    """The align run's labels as the active corrections make them now, in example order
    (training labels first): the run's examples and judged trials are brought up to date
    first (:func:`~studio.engine.people.labels.relabel_run`)."""
    origin = align_origin(store, align_run_id)
    relabel_run(store, align_run_id)
    examples = store.examples(align_run_id)
    sources = label_sources(origin, examples)
    found = []
    for example in examples:
        label = read_label(example.data.get("expected"))
        if example.id in sources and not is_undone(label):
            found.append(ActiveLabel(example.id, sources[example.id], float(label["score"]),
                                     label.get("critic_score")))
    return found


def active_label_count(store: AligningStore, align_run_id: str) -> tuple[int, int]:
    """(labels active now, labels the align run started with), read without re-scoring
    anything: for a panel watching a live align run."""
    origin = align_origin(store, align_run_id)
    active = active_corrections(store, origin)
    return sum(1 for t in origin.label_trial_ids if t in active), len(origin.label_trial_ids)


def held_out_labels(origin: AlignOrigin, labels: list[ActiveLabel]) -> list[ActiveLabel]:
    held = set(origin.held_out_trial_ids)
    return [x for x in labels if x.trial_id in held]


def _judge_report(store: AligningStore, report: AlignReport, best_id: int | None,
                  held: list[ActiveLabel]) -> AlignReport:
    """Before/after from the stored judge replies, against the labels as they are now; a
    held-out label the stored measurement did not cover (its correction was undone then)
    makes it pending again."""
    measured = _stored_measure(store, report.align_run_id, best_id)
    cases = {c["trial_id"]: c for c in measured.cases} if measured is not None else {}
    if measured is None or any(x.trial_id not in cases for x in held):
        return report.model_copy(update={"measure_pending": best_id is not None, "note": (
            f"The real judge has not been run on the {report.active_held_out} held-out labels "
            f"yet (`studio align-report {report.align_run_id}` runs it)." if best_id is not None
            else "The align run has no scored candidate yet.")})
    return report.model_copy(update={
        "measured_by": f"the real critic as applied ({report.target}"
                       f"{' of ' + report.part_name if report.part_name else ''}: original vs "
                       f"aligned), run on the {report.active_held_out} held-out trials",
        "before": counted_agreement([(cases[x.trial_id]["before"], x.human_score)
                                     for x in held], report.threshold),
        "after": counted_agreement([(cases[x.trial_id]["after"], x.human_score)
                                    for x in held], report.threshold),
        "reviewers": reviewer_distances(
            store, report.source_run_id, held, {t: c["before"] for t, c in cases.items()},
            {t: c["after"] for t, c in cases.items()}, report.threshold)})


def _stored_measure(store: AligningStore, align_run_id: str, best_id: int | None) -> EvalRun | None:
    for measured in store.list_eval_runs(name=f"{HELD_OUT_KIND}:{align_run_id}", limit=20):
        if measured.summary.get("best_candidate_id") == best_id:
            return measured
    return None


def _recorded_agreement(held: list[ActiveLabel], threshold: float) -> AgreementReport | None:
    pairs = [(x.critic_score, x.human_score) for x in held]
    return agreement(pairs, threshold) if pairs else None


def measure_held_out(store: AligningStore, align_run_id: str, *, progress: Job | None = None,
                     concurrency: int = 4) -> AlignReport:
    """Run the real critic, with its original and its aligned text, on the held-out trials
    whose correction is active now, store the agreement of each with the person, and return
    the report.

    Raises:
        RunStateError: not an align run, it has no scored candidate yet, or none of its
            held-out corrections is active now.
    """
    origin = align_origin(store, align_run_id)
    held = held_out_labels(origin, current_align_labels(store, align_run_id))
    view = load_view(store, align_run_id)
    if view.best_id is None:
        raise RunStateError(f"align run {align_run_id} has no scored candidate yet")
    if not held:
        raise RunStateError(f"none of align run {align_run_id}'s held-out corrections is "
                            "active now: there is nothing to measure the critics on")
    trials = [store.get_trial(x.trial_id) for x in held]
    humans = [x.human_score for x in held]
    source = store.get_run(origin.run_id)
    samples = [_sample(store, trial) for trial in trials]
    if progress is not None:
        progress.total = 2 * len(samples)
    step = progress.step if progress is not None else None
    default_model = origin_default_model(store, origin)
    before = _score_samples(source, origin.critic, samples, concurrency, step, default_model)
    after = _score_samples(source, aligned_critic(store, align_run_id), samples, concurrency,
                           step, default_model)
    summary = {"best_candidate_id": view.best_id, "target": origin.target,
               "before": counted_agreement(list(zip([s for s, _ in before], humans, strict=True)),
                                           origin.threshold).model_dump(mode="json"),
               "after": counted_agreement(list(zip([s for s, _ in after], humans, strict=True)),
                                          origin.threshold).model_dump(mode="json")}
    cases = [{"trial_id": t.id, "human": h, "before": b[0], "after": a[0],
              "feedback_before": clip(b[1], 1_000), "feedback_after": clip(a[1], 1_000)}
             for t, h, b, a in zip(trials, humans, before, after, strict=True)]
    store.add_eval_run(f"{HELD_OUT_KIND}:{align_run_id}", HELD_OUT_KIND, summary, cases)
    return align_report(store, align_run_id)


def report_measured(store: AligningStore, align_run_id: str) -> AlignReport:
    """The report, running the real judge on the held-out labels first when still pending
    (the CLI and the library: they wait; the page runs it in the background)."""
    report = align_report(store, align_run_id)
    if report.measure_pending:
        return measure_held_out(store, align_run_id)
    return report


def start_measure(store: AligningStore, align_run_id: str) -> Job:
    """:func:`measure_held_out` in the background (the Agreement page: the align run's critics
    are checked as a browser project's are)."""
    check_spec_trust(store.get_run(align_run_id).spec, Origin.BROWSER, f"run {align_run_id}")
    return start_job(measure_key(align_run_id), "measuring the real judge on the held-out labels",
                     lambda job: measure_held_out(store, align_run_id, progress=job))


def measure_key(align_run_id: str) -> str:
    return f"align-measure:{align_run_id}"


def measure_marker(store: AligningStore, align_run_id: str) -> int | None:
    """The id of the newest held-out measurement (None: none yet): a cache version for the
    page that changes with every new measurement, however many are stored."""
    newest = store.list_eval_runs(name=f"{HELD_OUT_KIND}:{align_run_id}", limit=1)
    return newest[0].id if newest else None



@dataclass(frozen=True)
class _HeldOutPair:
    trial_id: int
    """The source run's corrected trial."""
    critic: float | None
    human: float


def _held_out_pairs(store: AligningStore, run_id: str, candidate_ids: list[int],
                    held: list[ActiveLabel]) -> dict[int, list[_HeldOutPair]]:
    """Per candidate: its critic score beside the people's now, on each active held-out label
    it was run on, read from the reply its trial keeps."""
    labels = {x.example_id: x for x in held}
    pairs: dict[int, dict[int, _HeldOutPair]] = {c: {} for c in candidate_ids}
    for trial in store.trials(run_id, phase=TrialPhase.TEST):
        found = pairs.get(trial.candidate_id)
        label = labels.get(trial.example_id)
        if found is not None and label is not None:
            found.setdefault(trial.example_id, _HeldOutPair(
                label.trial_id, reply_score(trial.output), label.human_score))
    return {c: list(found.values()) for c, found in pairs.items()}


def reviewer_distances(store: AligningStore, source_run_id: str, held: list[ActiveLabel],
                       before: dict[int, float | None], after: dict[int, float | None],
                       threshold: float) -> list[ReviewerDistance]:
    """Per reviewer who labelled held-out trials: the original's and the aligned critic's
    mean absolute error from that reviewer's own scores (a critic reply without a score
    counts as the worst error, as in :func:`counted_agreement`)."""
    trial_ids = {x.trial_id for x in held}
    per_person: dict[str, list[tuple[int, float]]] = {}
    for labels in trial_labels(store, source_run_id):
        if labels.trial_id in trial_ids:
            for name, score in labels.scores.items():
                per_person.setdefault(name, []).append((labels.trial_id, score))
    return [ReviewerDistance(
        reviewer=name, labels=len(found),
        before=counted_agreement([(before.get(t), s) for t, s in found], threshold).mae,
        after=counted_agreement([(after.get(t), s) for t, s in found], threshold).mae)
        for name, found in sorted(per_person.items())]


def aligned_critic(store: AligningStore, align_run_id: str) -> CriticSpec:
    """The source critic with the best candidate's text (in the aligned part, if weighted)."""
    origin = align_origin(store, align_run_id)
    return with_text(origin.critic, origin.target, aligned_text(store, align_run_id), origin.part)


# --------------------------------------------------------------------------- using it


def use_for_next_run(store: AligningStore, align_run_id: str) -> Project:
    """A copy of the source run's project, named ``<project> (aligned critic)``, whose critic
    is the aligned one: its next run judges with it. The original project is left as it was.

    Only the aligned text changes, in the project's critic as it is now: later edits to the
    project (other parts, weights, models) are kept.

    Raises:
        RunStateError: the source run has no stored project (started from code or a file:
            use :func:`aligned_critic` there).
        ConfigError: the project's critic no longer has the text that was aligned (where:
            ``critic.evaluator`` or ``critic.type``).
    """
    from studio.projects.workspace import unique_name

    origin = align_origin(store, align_run_id)
    source = store.get_run(origin.run_id)
    if source.project_id is None:
        raise RunStateError(f"run {origin.run_id} has no project in the studio; take the "
                            f"aligned critic with studio.aligned_critic({align_run_id!r})")
    record = store.get_project(source.project_id)
    project = parse_project(record.yaml, source=f"project {record.name!r}")
    section = _with_aligned_text(project.critic, origin, aligned_text(store, align_run_id),
                                 record.name)
    name = unique_name(store, f"{record.name} (aligned critic)")
    return store.save_project(name, dump_project(project.model_copy(update={"critic": section})))


def aligned_text(store: AligningStore, align_run_id: str) -> str:
    """The best candidate's text: the aligned instruction, criteria, prompt or rubric."""
    view = load_view(store, align_run_id)
    if view.best_id is None:
        raise RunStateError(f"align run {align_run_id} has no scored candidate yet")
    return view.candidate(view.best_id).components["instruction"]


def _with_aligned_text(section: Any, origin: AlignOrigin, text: str, project: str) -> Any:
    """The project's current critic section with ``text`` put where it was aligned."""
    wanted = "agent" if origin.target == "instruction" else "evaluator"
    if section.type != wanted:
        raise ConfigError(f"project {project!r}'s critic is now a critic {section.type}, not "
                          f"the critic {wanted} that was aligned", where="critic.type",
                          value=section.type)
    if origin.target == "instruction":
        return section.model_copy(update={"instruction": text})
    try:
        current = judge_text(section.evaluator, origin.part_name if origin.part is not None
                             else None)
    except ConfigError as exc:
        found, why = None, exc.message
    else:
        found, why = current, f"its text to align is now {current.kind!r}"
    if found is None or found.kind != origin.target or (found.part is None) != (
            origin.part is None):
        aligned = f"the {origin.target}" + (f" of part {origin.part_name!r}"
                                            if origin.part is not None else "")
        raise ConfigError(f"project {project!r}'s critic no longer has {aligned} that was "
                          f"aligned ({why}); align its current critic again",
                          where="critic.evaluator", value=origin.part_name or origin.target)
    evaluator = with_judge_text(section.evaluator, found.kind, text, found.part)
    return section.model_copy(update={"evaluator": evaluator})


def rescore_run(store: AligningStore, run_id: str, align_run_id: str, *, concurrency: int = 4,
                progress: Job | None = None) -> RescorePass:
    """Score ``run_id``'s trials again with the aligned critic of ``align_run_id``, stored as
    a scoring pass of its own; the trials' scores and corrections are not touched.

    Raises:
        ConfigError: the run has more than :data:`MAX_RESCORE_TRIALS` trials.
    """
    critic_spec = aligned_critic(store, align_run_id)
    origin = align_origin(store, align_run_id)
    trials = store.trials(run_id)
    if len(trials) > MAX_RESCORE_TRIALS:
        raise ConfigError(f"run {run_id} has {len(trials):,} trials; a scoring pass judges at "
                          f"most {MAX_RESCORE_TRIALS:,}", where="rescore", value=len(trials))
    if progress is not None:
        progress.total = len(trials)
    run = store.get_run(run_id)
    default_model = (origin_default_model(store, origin) if run_id == origin.run_id
                     else run_default_model(run.spec))
    with metered() as meter:  # the re-judging's price, kept with the pass
        results = _score_samples(run, critic_spec, [_sample(store, trial) for trial in trials],
                                 concurrency, progress.step if progress is not None else None,
                                 default_model)
    cases = [{"trial_id": trial.id, "score": score, "feedback": clip(feedback, 2_000)}
             for trial, (score, feedback) in zip(trials, results, strict=True)]
    scores = {stored_id(trial): score for trial, (score, _) in zip(trials, results, strict=True)}
    measured = _pass_agreement(store, run_id, scores, origin)
    summary = {"run_id": run_id, "align_run_id": align_run_id, "critic": critic_spec.name,
               "trials": len(cases), "cost_usd": meter.cost_usd,
               **{k: v.model_dump(mode="json") if isinstance(
                   v, AgreementReport) else v for k, v in measured.items()}}
    pass_id = store.add_eval_run(f"{RESCORE_KIND}:{run_id}", RESCORE_KIND, summary, cases)
    return RescorePass(id=pass_id, run_id=run_id, align_run_id=align_run_id,
                       critic=critic_spec.name, scores=scores, cost_usd=meter.cost_usd,
                       **measured)


def start_rescore(store: AligningStore, run_id: str, align_run_id: str) -> Job:
    """:func:`rescore_run` in the background (the Agreement page); one at a time per run. The
    aligned critic is checked as a browser project's is."""
    check_spec_trust(store.get_run(align_run_id).spec, Origin.BROWSER, f"run {align_run_id}")
    return start_job(rescore_key(run_id), f"re-scoring run {run_id}",
                     lambda job: rescore_run(store, run_id, align_run_id, progress=job))


def rescore_key(run_id: str) -> str:
    return f"rescore:{run_id}"


def _score_samples(run: Run, spec: CriticSpec, samples: list[Sample], concurrency: int,
                   on_step: Callable[[], None] | None, default_model: str
                   ) -> list[tuple[float | None, str]]:
    """``spec`` built as the run builds its critic (``default_model``: the run's default,
    :func:`run_default_model`), run on each sample."""
    executor = AgentExecutor(max_concurrency=concurrency,
                             timeout_s=run.config.call_timeout_seconds,
                             max_retries=run.config.max_retries, app_name=f"rescore_{run.id}")
    critic = critic_for_run(spec, executor, default_model)
    return asyncio.run(_assess_all(critic, samples, concurrency, on_step))


def rescore_passes(store: AligningStore, run_id: str) -> list[RescorePass]:
    """The run's scoring passes, newest first."""
    return [RescorePass(id=e.id, run_id=run_id, align_run_id=e.summary["align_run_id"],
                        critic=e.summary.get("critic", ""),
                        cost_usd=float(e.summary.get("cost_usd") or 0.0),
                        scores={int(c["trial_id"]): c["score"] for c in e.cases},
                        **_stored_pass_agreement(e.summary))
            for e in store.list_eval_runs(name=f"{RESCORE_KIND}:{run_id}")]


def _stored_pass_agreement(summary: dict[str, Any]) -> dict[str, Any]:
    """A stored pass's agreement; a pass stored without ``scope`` was measured in-sample."""
    reports = {key: AgreementReport.model_validate(summary[key])
               for key in ("before", "after", "in_sample_before", "in_sample_after")
               if summary.get(key) is not None}
    return {**reports, "scope": summary.get("scope", IN_SAMPLE_SCOPE)}


def _sample(store: AligningStore, trial: Trial) -> Sample:
    data = store.get_example(trial.example_id).data
    return Sample(input_text=trial.input_text, output=trial.output,
                  expected=example_expected(data), example=data, trace=trial.trace)


async def _assess_all(critic: Critic, samples: list[Sample], concurrency: int,
                      on_step: Callable[[], None] | None = None
                      ) -> list[tuple[float | None, str]]:
    gate = asyncio.Semaphore(concurrency)

    async def one(sample: Sample) -> tuple[float | None, str]:
        async with gate:
            try:
                feedback = await critic.assess(sample)
            except Exception as exc:  # one unreadable reply is a recorded None, not a crash
                return None, f"could not evaluate: {type(exc).__name__}: {exc}"
            finally:
                if on_step is not None:
                    on_step()
            return feedback.score, feedback.text or feedback.error or ""

    return await asyncio.gather(*(one(s) for s in samples))


def _pass_agreement(store: AligningStore, run_id: str, scores: dict[int, float | None],
                    origin: AlignOrigin) -> dict[str, Any]:
    """Old critic vs people and new critic vs people, on the same corrected trials: those the
    aligned critic never trained on (the held-out labels, for the run it was aligned on), and
    every corrected trial as an in-sample reference (overstated: it learnt from most)."""
    pairs = [p for p in store.override_pairs(run_id) if p.human_score is not None]

    def measured(chosen: list[Any]) -> tuple[AgreementReport, AgreementReport]:
        return (counted_agreement([(p.judge_score, p.human_score) for p in chosen],
                                  origin.threshold),
                counted_agreement([(scores.get(p.trial_id), p.human_score) for p in chosen],
                                  origin.threshold))

    if run_id != origin.run_id:
        before, after = measured(pairs)
        return {"scope": ALL_SCOPE, "before": before, "after": after}
    held = set(origin.held_out_trial_ids)
    before, after = measured([p for p in pairs if p.trial_id in held])
    in_before, in_after = measured(pairs)
    return {"scope": HELD_OUT_SCOPE, "before": before, "after": after,
            "in_sample_before": in_before, "in_sample_after": in_after}
