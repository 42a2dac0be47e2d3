"""OpenTelemetry: ADK's own setup, switched on by the environment ``adk web`` reads, and one
span per trial around ADK's agent and LLM spans.

:func:`enable_tracing` (called by ``studio run``, ``studio worker`` and ``studio ui``) hands over
to ADK's :func:`google.adk.telemetry.setup.maybe_set_otel_providers` when an OTLP endpoint is
configured (``OTEL_EXPORTER_OTLP_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``, with
``OTEL_SERVICE_NAME`` / ``OTEL_RESOURCE_ATTRIBUTES`` as usual), and does nothing otherwise.
Phoenix, Langfuse and MLflow all take OTLP, so they receive the runs with no SDK of theirs.

:func:`start_trial_span` opens a ``studio.trial`` span carrying the run, candidate and example
ids; the agent's and the critic's ADK spans are its children, and the trial's id is added when
the trial is stored (:func:`end_trial_span`). Without a tracer provider (nothing configured) no
span is made at all.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from opentelemetry.trace import Span

logger = logging.getLogger(__name__)

TRIAL_SPAN = "studio.trial"
ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
"""Either one turns tracing on (the variables ADK's ``adk web`` honours)."""


@dataclass(frozen=True)
class TrialIds:
    """What a trial span is found by in a tracing backend."""

    run_id: str
    candidate_id: int
    example_id: int
    split: str = ""

    def attributes(self) -> dict[str, str | int]:
        found: dict[str, str | int] = {"studio.run_id": self.run_id,
                                       "studio.candidate_id": self.candidate_id,
                                       "studio.example_id": self.example_id}
        return found | ({"studio.split": self.split} if self.split else {})


_ENABLED: list[bool] = []


def tracing_configured() -> bool:
    return any(os.environ.get(name, "").strip() for name in ENDPOINT_VARIABLES)


def enable_tracing() -> bool:
    """ADK's OpenTelemetry setup when an OTLP endpoint is configured; True when it ran. With
    no endpoint nothing is imported or set up (a run pays nothing). A missing exporter package
    is ADK's warning, not an error: install ``google-adk[otel]``."""
    if not tracing_configured():
        return False
    if _ENABLED:  # the studio's page script runs on every interaction
        return True
    from google.adk.telemetry.setup import maybe_set_otel_providers

    maybe_set_otel_providers()
    _ENABLED.append(True)
    logger.info("OpenTelemetry: spans go to the OTLP endpoint in %s",
                " / ".join(name for name in ENDPOINT_VARIABLES if os.environ.get(name)))
    return True


def flush_tracing(timeout_s: float = 2.0) -> None:
    """Send the spans not yet exported (a process about to end without its teardown, which
    would have flushed them); nothing when tracing is off."""
    if not _ENABLED:
        return
    from opentelemetry import trace

    flush = getattr(trace.get_tracer_provider(), "force_flush", None)
    if flush is not None:
        with contextlib.suppress(Exception):  # a collector gone away must not keep us
            flush(int(timeout_s * 1000))


def _provider_set() -> bool:
    """True once a real tracer provider is installed (ADK's setup or the application's)."""
    from opentelemetry import trace

    return not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)


def start_trial_span(ids: TrialIds | None) -> Span | None:
    """A started ``studio.trial`` span for ``ids`` (ended by :func:`end_trial_span`), or None
    when there is nothing to trace."""
    if ids is None or not _provider_set():
        return None
    from opentelemetry import trace

    return trace.get_tracer("studio").start_span(TRIAL_SPAN, attributes=ids.attributes())


@contextlib.contextmanager
def current_span(span: Span | None) -> Iterator[None]:
    """Make ``span`` the parent of the spans started inside (ADK's), without ending it."""
    if span is None:
        yield
        return
    from opentelemetry import trace

    with trace.use_span(span, end_on_exit=False):
        yield


def end_trial_span(span: Span | None, *, trial_id: int | None = None, error: str | None = None,
                   cost_usd: float = 0.0) -> None:
    """Close a trial's span with what became of it: its stored id, its cost, its error."""
    if span is None or not span.is_recording():
        return
    if trial_id is not None:
        span.set_attribute("studio.trial_id", trial_id)
    span.set_attribute("studio.cost_usd", cost_usd)
    if error:
        span.set_attribute("studio.error", error[:500])
    span.end()
