""""Try on one example": run a project's agent and critic once, store nothing.

The studio's Projects page calls :func:`probe_sync` so a person can see what the agent writes and
what the critic says before spending a run on it. A failure of the agent or the critic is part of
the result (``error``), like in a run; only a configuration problem (an unknown model, a missing
API key, a bad critic config) raises, before any call is made.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from studio.critics.feedback import judge_sample
from studio.critics.protocol import Sample
from studio.engine.hosting.build import (
    check_spec_models,
    complete_spec,
    critic_for_run,
    default_model_for,
    spec_agent,
    workflow_context,
)
from studio.model.errors import StudioError
from studio.model.feedback import Feedback
from studio.model.media import example_media
from studio.model.records import RunSpec, example_expected, example_input_text, example_state
from studio.projects.files import Origin, check_spec_trust, check_trust
from studio.runtime.execution import AgentExecutor
from studio.runtime.watch import CallWatch, watching

if TYPE_CHECKING:
    from studio.projects.files import ProjectFile


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


def check_probe(project_or_spec: ProjectFile | RunSpec, *,
                origin: Origin = Origin.BROWSER) -> RunSpec:
    """The probe's spec once its trust and models are checked (no call is made), so a page
    says a configuration problem at once instead of starting work that cannot run.

    Raises:
        ModelConfigError: a model is unknown or lacks its API key.
        ProjectFileError: the project loads Python code, or sets a field the allow-list does
            not allow, and its origin is not trusted.
    """
    if isinstance(project_or_spec, RunSpec):
        spec = project_or_spec
    else:  # the project's own fields first: a refusal names them as the person wrote them
        check_trust(project_or_spec, origin, f"project {project_or_spec.name!r}")
        spec = project_or_spec.run_spec()
    check_spec_trust(spec, origin, f"project {spec.project or ''!r}")
    check_spec_models(spec)
    return spec


class ProbePhase(StrEnum):
    """Where a running probe is (what the page says while it waits)."""

    STARTING = "starting"
    AGENT = "running the agent"
    CRITIC = "running the critic"
    DONE = "done"
    CANCELLED = "cancelled"
    FAILED = "failed"


async def probe(project_or_spec: ProjectFile | RunSpec, example: dict[str, Any], *,
                timeout_s: float = 180.0, origin: Origin = Origin.BROWSER,
                on_phase: Callable[[ProbePhase], None] | None = None) -> ProbeResult:
    """Run the agent on ``example`` and the critic on its output.

    Args:
        project_or_spec: a :class:`studio.projects.files.ProjectFile` or a :class:`RunSpec`.
        example: one dataset row (``expected`` is the reference, if any).
        timeout_s: limit for each model call.
        origin: where the project came from; the studio's button passes nothing (browser: a
            Python ``agent.ref`` is refused unless the server opted in).
        on_phase: called with each :class:`ProbePhase` as the probe reaches it.

    Raises:
        ModelConfigError: a model is unknown or lacks its API key.
        ConfigError: the agent or critic cannot be built from the spec.
        ProjectFileError: the project loads Python code and its origin is not trusted.
    """
    spec = check_probe(project_or_spec, origin=origin)
    agent = spec_agent(spec)  # a group's agents run as their workflow
    spec = complete_spec(spec, agent)  # a workflow loaded by reference: as its run sees it
    executor = AgentExecutor(max_concurrency=2, timeout_s=timeout_s, max_retries=1,
                             app_name="probe")
    scored = workflow_context(agent, spec.primary).get("primary")
    default_model = default_model_for(agent, spec, scored)
    critic = critic_for_run(spec.critic, executor, default_model)
    input_text = example_input_text(example, spec.input_key)
    result = ProbeResult(input_text=input_text)

    if on_phase is not None:
        on_phase(ProbePhase.AGENT)
    started = time.perf_counter()
    media = example_media(example)
    run = await executor.execute(agent, input_text, state=example_state(example), media=media,
                                 output_author=scored)
    result.agent_seconds = time.perf_counter() - started
    result.output, result.trace = run.output, run.trace
    if run.error is not None:
        result.error = f"the agent failed: {run.error}"
        return result

    if on_phase is not None:
        on_phase(ProbePhase.CRITIC)
    started = time.perf_counter()
    sample = Sample(input_text=input_text, output=run.output,
                    expected=example_expected(example), example=example, trace=run.trace,
                    media=tuple(media))
    result.feedback, result.error = await judge_sample(critic, sample)
    result.score = result.feedback.score
    result.critic_seconds = time.perf_counter() - started
    return result


def probe_sync(project_or_spec: ProjectFile | RunSpec, example: dict[str, Any],
               **kwargs: Any) -> ProbeResult:
    """:func:`probe` for code without an event loop (a Streamlit script)."""
    return asyncio.run(probe(project_or_spec, example, **kwargs))


class ProbeJob:
    """A probe running on its own thread and event loop, so the page that started it stays
    responsive, shows its progress and can stop it.

    :meth:`cancel` stops it for real: the probe's task is cancelled (a hosted or scripted call
    ends at its next ``await``) and its :class:`CallWatch` stops the embedded model at the next
    token (its generation runs on the model's worker thread, which a cancelled task does not
    reach). The thread then ends; nothing is left running.
    """

    def __init__(self, project_or_spec: ProjectFile | RunSpec, example: dict[str, Any],
                 **kwargs: Any) -> None:
        self.watch = CallWatch()
        self.phase = ProbePhase.STARTING
        self.result: ProbeResult | None = None
        self.error: StudioError | None = None
        self.finished_s: float | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[ProbeResult] | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(project_or_spec, example, kwargs), name="probe", daemon=True)
        self._thread.start()

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    @property
    def elapsed_s(self) -> float:
        return self.finished_s if self.finished_s is not None else self.watch.elapsed_s

    def cancel(self) -> None:
        """Stop the probe (its phase becomes ``cancelled`` once it has stopped)."""
        self.watch.cancel()
        self._ready.wait(timeout=5)
        if self._loop is not None and self._task is not None and not self._loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nothing to do
                self._loop.call_soon_threadsafe(self._task.cancel)

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the thread to end; True when it did."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def _set_phase(self, phase: ProbePhase) -> None:
        self.phase = phase

    def _run(self, project_or_spec: ProjectFile | RunSpec, example: dict[str, Any],
             kwargs: dict[str, Any]) -> None:
        loop = asyncio.new_event_loop()
        try:
            with watching(self.watch):  # the task copies this context: its calls report here
                self._task = loop.create_task(probe(project_or_spec, example,
                                                    on_phase=self._set_phase, **kwargs))
            self._loop = loop
            self._ready.set()
            if self.watch.cancelled:
                self._task.cancel()
            self.result = loop.run_until_complete(self._task)
            self.phase = ProbePhase.DONE
        except asyncio.CancelledError:
            self.phase = ProbePhase.CANCELLED
        except StudioError as exc:
            self.error = exc
            self.phase = ProbePhase.CANCELLED if self.watch.cancelled else ProbePhase.FAILED
        finally:
            self._ready.set()
            self.finished_s = self.watch.elapsed_s
            _close(loop)


def _close(loop: asyncio.AbstractEventLoop) -> None:
    """Cancel what the probe left behind (LiteLLM's logging tasks), let it finish, then close
    the loop, so no task is destroyed while pending."""
    try:
        pending = [task for task in asyncio.all_tasks(loop) if not task.done()]
        for task in pending:
            task.cancel()
        if pending:
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        loop.run_until_complete(loop.shutdown_asyncgens())
    finally:
        loop.close()
