"""Run a candidate on examples and judge each output: the trials of one batch.

Each (candidate, example) pair is judged at most once per run: a committed trial is reused, which
is also what makes resuming after a crash free of re-scoring.

Scheduling: an example's agent call and critic call form a chain. At most ``max_concurrency``
chains run at once, so each holds at most one call and its critic call never queues behind
agent calls of examples that have not started (with a per-call queue, every agent call of the
batch went first and the slots freed by a round of replies were refilled only after that whole
round was processed). A chain gives its slot to the next example as soon as its critic replies,
and commits its trial after that example's call is on its way.
"""

from __future__ import annotations

import asyncio
from typing import Any

from studio.critics.feedback import judge_sample
from studio.critics.protocol import Sample
from studio.engine.context import RunContext
from studio.engine.events import TrialCommitted
from studio.model.limits import MAX_OUTPUT_CHARS, clip
from studio.model.records import (
    Candidate,
    Example,
    Feedback,
    Trial,
    TrialPhase,
    example_expected,
    example_input_text,
    example_state,
)


async def score_batch(
    ctx: RunContext,
    candidate: Candidate,
    example_ids: list[int],
    *,
    phase: TrialPhase,
    iteration: int,
    proposal_id: int | None = None,
) -> list[Trial]:
    """Trials of ``candidate`` on ``example_ids``, in that order (cached ones reused)."""
    cached: dict[int, Trial] = ctx.store.first_trials(candidate.id, example_ids)
    missing = [e for e in example_ids if e not in cached]
    ctx.check_stop()
    ctx.reserve(len(missing))
    agent = ctx.agent_for(candidate)
    slots = asyncio.Semaphore(ctx.config.max_concurrency)
    # A task group: when one example raises, its siblings are cancelled before the error
    # reaches the loop, so nothing is committed after the run is marked failed.
    try:
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(_judge_one(ctx, agent, candidate, ctx.examples[e], phase,
                                                  iteration, proposal_id, slots))
                     for e in missing]
    except BaseExceptionGroup as failed:
        raise failed.exceptions[0] from None  # the first error, as the loop reports it
    cached.update({task.result().example_id: task.result() for task in tasks})
    return [cached[e] for e in example_ids]


async def _judge_one(ctx: RunContext, agent: Any, candidate: Candidate, example: Example,
                     phase: TrialPhase, iteration: int, proposal_id: int | None,
                     slots: asyncio.Semaphore) -> Trial:
    input_text = example_input_text(example.data, ctx.input_key)
    async with slots:
        result = await ctx.executor.execute(agent, input_text, state=example_state(example.data))
        feedback = Feedback()
        error = f"the agent failed (the critic was not called): {result.error}" \
            if result.error else None
        output = clip(result.output, MAX_OUTPUT_CHARS)  # the critic judges what is kept
        if error is None:
            sample = Sample(input_text=input_text, output=output,
                            expected=example_expected(example.data), example=example.data,
                            trace=result.trace)
            feedback, error = await judge_sample(ctx.critic, sample)
    await asyncio.sleep(0)  # the next example's call starts before this commit
    trial = Trial(
        run_id=ctx.run_id, candidate_id=candidate.id, example_id=example.id,
        split=example.split, example_index=example.index, iteration=iteration, phase=phase,
        proposal_id=proposal_id, input_text=input_text, output=output, score=feedback.score,
        feedback=feedback, error=error, trace=result.trace, latency_s=result.latency_s,
        tokens=result.tokens, worker=ctx.worker,
    )
    trial = ctx.store.add_trial(trial)
    ctx.count_metric_call()
    ctx.emit(TrialCommitted(run_id=ctx.run_id, iteration=iteration, trial_id=trial.id,
                            candidate_id=candidate.id, score=feedback.score))
    return trial
