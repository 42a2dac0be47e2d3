"""Scoring the held-out test set: at the end of a completed run, and on demand.

The loop never sees the test set (split ``test``): it samples minibatches from the training
examples, reflects on their trials and selects with the validation examples only. When a run
completes (any limit), and whenever asked (``studio test RUN``, the Compare page's button,
:func:`studio.engine.hosting.api.score_test_set`), the baseline (#0) and the best candidate are
scored
on it, phase ``test``, outside the loop's metric-call budget and time limit. Trials are
committed like any other and each (candidate, example) pair is judged once, so an interrupted
or repeated scoring only judges what is missing. A test example the critic could not evaluate
is not kept (a ``ScoringError`` says which), and a person's Stop ends the scoring between chains
(calls in flight cancelled): in both cases ``studio test`` later judges what is missing.
:func:`load_holdout` turns the stored scores into the guard's report
(:mod:`studio.engine.scoring.guard`).
"""

from __future__ import annotations

from studio.engine.policies.pool import load_view
from studio.engine.run.context import RunContext
from studio.engine.run.events import TestScored
from studio.engine.scoring.batch import score_batch
from studio.engine.scoring.guard import HoldoutReport, Scores, holdout_report
from studio.model.errors import RunStateError, ScoringError
from studio.model.records import EventKind, Split, TrialPhase, stored_id
from studio.store.seams import ScoringStore


async def score_holdout(ctx: RunContext, iteration: int) -> TestScored | None:
    """Score the baseline and the best candidate on the test set (committed trials reused);
    None when the run has no test set or no scored baseline."""
    if not ctx.test_ids:
        return None
    view = load_view(ctx.store, ctx.run_id)
    if not view.pooled_ids:
        return None
    baseline_id = view.pooled_ids[0]
    best_id = view.best_id if view.best_id is not None else baseline_id
    unscored: list[str] = []
    for candidate_id in dict.fromkeys([baseline_id, best_id]):
        await score_batch(  # a person's stop ends it between chains (StopRun)
            ctx, view.candidate(candidate_id), ctx.test_ids, phase=TrialPhase.TEST,
            iteration=iteration, metered=False, unscored=unscored)
    means = test_means(ctx.store, ctx.run_id, ctx.test_ids, [baseline_id, best_id])
    event = TestScored(run_id=ctx.run_id, iteration=iteration, baseline_id=baseline_id,
                       best_id=best_id, baseline_mean=means[baseline_id],
                       best_mean=means[best_id])
    ctx.emit(event)
    if unscored:
        pairs = len(ctx.test_ids) * len({baseline_id, best_id})
        raise ScoringError(f"{len(unscored)} of {pairs} test pairs got no score (first: "
                           f"{unscored[0]}); they were not kept, so `studio test {ctx.run_id}` "
                           "or the Compare page scores them again")
    return event


def test_means(store: ScoringStore, run_id: str, test_ids: list[int], candidate_ids: list[int]
               ) -> dict[int, float | None]:
    """Each candidate's mean effective score on the test set (None: nothing evaluable)."""
    scores = store.effective_scores(run_id, example_ids=test_ids)
    means: dict[int, float | None] = {}
    for candidate_id in candidate_ids:
        found = [v for v in (scores.get((candidate_id, e)) for e in test_ids) if v is not None]
        means[candidate_id] = sum(found) / len(found) if found else None
    return means


def test_problem(store: ScoringStore, run_id: str) -> str | None:
    """Why the test set is not fully scored (the last scoring failed or was stopped and none
    succeeded since), or None."""
    unscored = store.latest_event(run_id, EventKind.TEST_UNSCORED)
    scored = store.latest_event(run_id, EventKind.TEST_SCORED)
    if unscored is None or (scored is not None and (scored.id or 0) > (unscored.id or 0)):
        return None
    return str(unscored.payload.get("message") or "scoring the test set did not finish")


def check_testable(store: ScoringStore, run_id: str) -> None:
    """Raises RunStateError unless the run is settled, has a test set and a scored baseline."""
    run = store.get_run(run_id)
    if run.status.is_active:
        raise RunStateError(f"run {run_id} is {run.status.value}: it scores its test set when "
                            "it completes; stop it first to score it now")
    if not store.examples(run_id, Split.TEST):
        raise RunStateError(f"run {run_id} has no test set: give dataset.test in the project "
                            "(or testset= to evolve/create_run) for a new run")
    if not store.pooled_ids(run_id):
        raise RunStateError(f"run {run_id} has no scored baseline to compare with")


def load_holdout(store: ScoringStore, run_id: str) -> HoldoutReport:
    """The guard's report from the store's effective scores (corrections count)."""
    view = load_view(store, run_id)
    examples = store.examples(run_id)
    ids = {split: [stored_id(e) for e in examples if e.split is split] for split in Split}
    baseline = view.candidates[0] if view.candidates else None
    best = view.candidate(view.best_id) if view.best_id is not None else baseline
    pair = [stored_id(c) for c in (baseline, best) if c is not None]
    scores = (store.effective_scores(run_id, example_ids=[stored_id(e) for e in examples])
              if pair else {})

    def split_scores(example_ids: list[int]) -> tuple[Scores, Scores]:
        if not pair:
            return {}, {}
        baseline_scores, best_scores = ({e: scores[(c, e)] for e in example_ids
                                         if (c, e) in scores} for c in (pair[0], pair[-1]))
        return baseline_scores, best_scores

    return holdout_report(
        baseline_index=baseline.index if baseline else None,
        best_index=best.index if best else None, test_size=len(ids[Split.TEST]),
        train=split_scores(ids[Split.TRAIN]), val=split_scores(view.val_ids),
        test=split_scores(ids[Split.TEST]))
