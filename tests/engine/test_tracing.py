"""Tracing (:mod:`studio.runtime.tracing`): each trial is a ``studio.trial`` span carrying the
run, candidate, example and trial ids, the parent of ADK's own agent and LLM spans, received by
an in-memory exporter (what an OTLP backend such as Phoenix, Langfuse or MLflow would get)."""

from __future__ import annotations

import asyncio

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from studio.engine import EvolutionConfig, build_engine, create_run
from studio.runtime.tracing import TRIAL_SPAN, enable_tracing
from tests.helpers import demo_spec, trainset

_EXPORTER = InMemorySpanExporter()


@pytest.fixture
def spans():
    """The process's tracer provider (set once: OpenTelemetry refuses a second) with an
    in-memory exporter, emptied for each test."""
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    if not getattr(provider, "_studio_test_exporter", False):
        provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))
        provider._studio_test_exporter = True
    _EXPORTER.clear()
    yield _EXPORTER
    _EXPORTER.clear()


@pytest.mark.slow  # a run with one iteration, and every span kept
def test_each_trial_is_a_span_with_its_ids_around_adks_spans(store, spans):
    run_id = create_run(store, spec=demo_spec(), trainset=trainset(3),
                        config=EvolutionConfig(max_iterations=1, minibatch_size=2)).id
    asyncio.run(build_engine(store, run_id).run())
    finished = spans.get_finished_spans()
    trial_spans = [s for s in finished if s.name == TRIAL_SPAN]
    trials = store.trials(run_id)
    assert len(trials) >= 4  # the baseline's 3 and the child's minibatch
    seen = sorted((s.attributes["studio.trial_id"], s.attributes["studio.run_id"],
                   s.attributes["studio.candidate_id"], s.attributes["studio.example_id"])
                  for s in trial_spans if "studio.trial_id" in s.attributes)
    assert seen == sorted((t.id, run_id, t.candidate_id, t.example_id) for t in trials)
    by_id = {s.context.span_id: s for s in finished}
    for span in trial_spans:
        under = {s.name.split()[0] for s in finished if _under(s, span, by_id)}
        # the agent's and the critic's: ADK's runner, agent and model-call spans
        assert {"invoke_agent", "generate_content"} <= under, (dict(span.attributes), under)


def _under(span, ancestor, by_id) -> bool:
    while span.parent is not None:
        if span.parent.span_id == ancestor.context.span_id:
            return True
        span = by_id.get(span.parent.span_id)
        if span is None:
            return False
    return False


def test_tracing_is_not_set_up_without_an_endpoint(monkeypatch):
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    assert enable_tracing() is False
