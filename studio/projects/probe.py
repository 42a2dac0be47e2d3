""""Try on one example": run a project's agent and critic once, store nothing.

The studio's Projects page calls :func:`probe_sync` so a person can see what the agent writes and
what the critic says before spending a run on it. A failure of the agent or the critic is part of
the result (``error``), like in a run; only a configuration problem (an unknown model, a missing
API key, a bad critic config) raises, before any call is made.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

from studio.critics.feedback import judge_sample
from studio.critics.protocol import Sample
from studio.engine.build import (
    check_spec_models,
    complete_spec,
    critic_for_run,
    default_model_for,
    spec_agent,
    workflow_context,
)
from studio.model.feedback import Feedback
from studio.model.media import example_media
from studio.model.records import RunSpec, example_expected, example_input_text, example_state
from studio.projects.files import Origin, check_spec_trust
from studio.runtime.execution import AgentExecutor


@dataclass
class ProbeResult:
    """What one agent run and its critique produced."""

    input_text: str
    output: str = ""
    trace: dict[str, Any] = field(default_factory=dict)
    score: float | None = None
    """The critic's score; None when it could not evaluate (see ``error``)."""
    feedback: Feedback = field(default_factory=Feedback)
    """What the critic said: text, guidance, dimensions and other fields."""
    error: str | None = None
    agent_seconds: float = 0.0
    critic_seconds: float = 0.0

    @property
    def feedback_text(self) -> str:
        return self.feedback.text


async def probe(project_or_spec: Any, example: dict[str, Any], *,
                timeout_s: float = 180.0, origin: Origin = Origin.BROWSER) -> ProbeResult:
    """Run the agent on ``example`` and the critic on its output.

    Args:
        project_or_spec: a :class:`studio.projects.files.ProjectFile` or a :class:`RunSpec`.
        example: one dataset row (``expected`` is the reference, if any).
        timeout_s: limit for each model call.
        origin: where the project came from; the studio's button passes nothing (browser: a
            Python ``agent.ref`` is refused unless the server opted in).

    Raises:
        ModelConfigError: a model is unknown or lacks its API key.
        ConfigError: the agent or critic cannot be built from the spec.
        ProjectFileError: the project loads Python code and its origin is not trusted.
    """
    spec = project_or_spec if isinstance(project_or_spec, RunSpec) else project_or_spec.run_spec()
    check_spec_trust(spec, origin, f"project {spec.project or ''!r}")
    check_spec_models(spec)
    agent = spec_agent(spec)  # a group's agents run as their workflow
    spec = complete_spec(spec, agent)  # a workflow loaded by reference: as its run sees it
    executor = AgentExecutor(max_concurrency=2, timeout_s=timeout_s, max_retries=1,
                             app_name="probe")
    scored = workflow_context(agent, spec.primary).get("primary")
    default_model = default_model_for(agent, spec, scored)
    critic = critic_for_run(spec.critic, executor, default_model)
    input_text = example_input_text(example, spec.input_key)
    result = ProbeResult(input_text=input_text)

    started = time.perf_counter()
    media = example_media(example)
    run = await executor.execute(agent, input_text, state=example_state(example), media=media,
                                 output_author=scored)
    result.agent_seconds = time.perf_counter() - started
    result.output, result.trace = run.output, run.trace
    if run.error is not None:
        result.error = f"the agent failed: {run.error}"
        return result

    started = time.perf_counter()
    sample = Sample(input_text=input_text, output=run.output,
                    expected=example_expected(example), example=example, trace=run.trace,
                    media=tuple(media))
    result.feedback, result.error = await judge_sample(critic, sample)
    result.score = result.feedback.score
    result.critic_seconds = time.perf_counter() - started
    return result


def probe_sync(project_or_spec: Any, example: dict[str, Any], **kwargs: Any) -> ProbeResult:
    """:func:`probe` for code without an event loop (a Streamlit script)."""
    return asyncio.run(probe(project_or_spec, example, **kwargs))
