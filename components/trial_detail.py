"""A trial in full: input (with thumbnails of its images), output, trace (tool calls with
arguments), critic feedback, dimension scores and guidance; in a workflow, the pipeline step by
step (which agent said what, the scored reply marked). Model-written text is shown as text
(``st.code`` / ``st.text``), never as HTML or live Markdown; images as small PNGs the studio
re-encoded (``st.image`` from bytes)."""

from __future__ import annotations

from typing import Any

import streamlit as st

from components import diff_view, loaders
from studio.model.feedback import Feedback
from studio.model.limits import THUMBNAIL_PIXELS
from studio.model.redaction import redact
from studio.views.markdown import escape_markdown
from studio.views.media import Thumbnail
from studio.views.tables import (
    dimension_scores,
    format_score,
    metric_rows,
    optimised_note,
    tool_call_steps,
    trace_tool_calls,
)
from studio.views.workflows import PipelineStep, is_pipeline, pipeline_steps


def text_block(label: str, text: str | None, *, empty: str = "(empty)") -> None:
    """A labelled block of untrusted text, shown verbatim (secrets from the environment as
    ``***``: the text is stored raw)."""
    st.caption(label)
    st.code(redact(text) if text else empty, language=None, wrap_lines=True)


def show_trial(trial: Any, *, candidate: int | None = None, scored: str | None = None) -> None:
    """Everything about one stored trial (``scored``: the agent whose reply a workflow run
    scores)."""
    head = (f"{loaders.trial_title(trial.run_id, trial.id)} · iteration {trial.iteration} · "
            f"{trial.phase.value}")
    if candidate is not None:
        head += f" · candidate #{candidate}"
    head += f" · {trial.split.value} example {trial.example_index}"
    st.markdown(f"**{escape_markdown(head)}**")
    scores = st.columns(4)
    scores[0].metric("Score (effective)", format_score(trial.effective_score))
    scores[1].metric("Judge", format_score(trial.score))
    scores[2].metric("Latency", f"{trial.latency_s:.2f} s")
    scores[3].metric("Tokens", f"{trial.tokens}")
    if trial.override is not None:
        o = trial.override
        st.info(escape_markdown(
            f"Corrected by {o.author} at {o.created_at:%Y-%m-%d %H:%M}: judge said "
            f"{format_score(o.judge_score)}, human says "
            f"{format_score(o.score, missing='(score unchanged)')}."))
        if o.corrected_output:
            diff_view.side_by_side(trial.output, o.corrected_output, left="Output",
                                   right="What the answer should have been")
    show_result(trial.input_text, trial.output, trial.feedback, trial.error, trial.trace,
                human_feedback=trial.override.feedback if trial.override else None,
                corrected=trial.override is not None,
                thumbnails=loaders.thumbnails(trial.example_id), scored=scored)


def show_result(input_text: str, output: str, feedback: Feedback, error: str | None,
                trace: dict[str, Any] | None, *, human_feedback: str | None = None,
                corrected: bool = False,
                thumbnails: list[Thumbnail] | None = None, scored: str | None = None) -> None:
    if error:
        st.error(escape_markdown(error), icon=":material/error:")
    left, right = st.columns(2)
    with left:
        text_block("Input", input_text)
        show_thumbnails(thumbnails or [])
    with right:
        text_block(f"Output (scored: {scored}'s reply)" if scored else "Output", output,
                   empty="(no output)")
    steps = pipeline_steps(trace, scored)
    if is_pipeline(steps):
        show_pipeline(steps)
    left, right = st.columns(2)
    with left:
        text_block("Critic feedback", feedback.text, empty="(no feedback)")
        if human_feedback:
            text_block("Human feedback (overrides the critic's)", human_feedback)
        if feedback.guidance:
            text_block("Critic's actionable guidance", feedback.guidance)
        if corrected:
            st.caption("A person corrected this trial: the reflection reads their correction, "
                       "not the critic's feedback, guidance, dimension scores or checks.")
    with right:
        if feedback.verdict is not None:
            show_verdict(feedback)
        dims = dimension_scores(feedback)
        if feedback.verdict is None and not dims.empty:
            st.caption("Critic's dimension scores")
            st.dataframe(dims, hide_index=True, width="stretch", placeholder="n/a",
                         column_config={"score": st.column_config.ProgressColumn(
                             "score", min_value=0.0, max_value=1.0, format="%.2f")})
        if feedback.extra:
            st.caption("Other critic fields")
            st.json(feedback.extra, expanded=False)
    show_trace(trace or {})


def show_verdict(feedback: Feedback) -> None:
    """ADK's verdict: each metric against its threshold, the case's status, and beside it the
    number GEPA optimises."""
    verdict = feedback.verdict
    if verdict is None:
        return
    st.caption(escape_markdown(optimised_note(verdict, feedback.score)))
    st.dataframe(metric_rows(verdict), hide_index=True, width="stretch", placeholder="n/a",
                 column_config={
                     "score": st.column_config.NumberColumn("score", format="%.2f"),
                     "threshold": st.column_config.NumberColumn("threshold", format="%g")})


def show_thumbnails(thumbnails: list[Thumbnail]) -> None:
    """The example's images, small, each with its field, type and size."""
    pictures = [t for t in thumbnails if t.png is not None]
    if pictures:
        st.image([t.png for t in pictures if t.png is not None], width=THUMBNAIL_PIXELS,
                 caption=[escape_markdown(t.caption) for t in pictures])  # Markdown: escaped
    for note in (t for t in thumbnails if t.png is None):
        st.caption(escape_markdown(note.caption))


def show_pipeline(steps: list[PipelineStep]) -> None:
    """The workflow's agents in the order they spoke, each with its reply and tool calls."""
    st.caption(f"Pipeline: {len(steps)} step(s) in order")
    with st.container(border=True, key="trial-pipeline"):
        for number, step in enumerate(steps, start=1):
            mark = " · :green-badge[scored output]" if step.scored else ""
            st.markdown(f"**{number}. {escape_markdown(step.author)}**{mark}")
            for call in step.tool_calls:
                st.caption(f"tool call: {escape_markdown(call['name'])}")
                st.json({"arguments": call["args"], "result": call["result"]}, expanded=False)
            if step.texts:
                st.code(step.text, language=None, wrap_lines=True)
            elif not step.tool_calls:
                st.caption("(no reply)")


def show_trace(trace: dict[str, Any]) -> None:
    calls = trace_tool_calls(trace)
    usage = trace.get("usage") or {}
    label = f"Trace: {len(calls)} tool call(s), {trace.get('model_calls', 0)} model call(s)"
    if usage:
        label += f", {usage.get('total_tokens', 0)} tokens"
    with st.expander(label, expanded=not calls.empty):
        if calls.empty:
            st.caption("No tool calls.")
        else:
            st.dataframe(calls, hide_index=True, width="stretch")
            show_tool_calls(trace)
        if trace.get("state_delta"):
            st.caption("State changes")
            st.json(trace["state_delta"], expanded=False)
        events = trace.get("events") or []
        if events:
            st.caption("Events")
            st.json(events, expanded=False)


TOOL_CALLS_SHOWN = 20


def show_tool_calls(trace: dict[str, Any]) -> None:
    """Each tool call in order: its arguments beside its result, verbatim JSON."""
    steps = tool_call_steps(trace)
    for step in steps[:TOOL_CALLS_SHOWN]:
        st.text(f"{step['step']}. {step['tool']}")
        left, right = st.columns(2)
        with left:
            text_block("Arguments", step["arguments"])
        with right:
            text_block("Result", step["result"])
    if len(steps) > TOOL_CALLS_SHOWN:
        st.caption(f"{len(steps) - TOOL_CALLS_SHOWN} more call(s): see the table above.")


def show_probe(result: Any, thumbnails: list[Thumbnail] | None = None, *,
               scored: str | None = None) -> None:
    """The result of "try on one example"."""
    cols = st.columns(3)
    cols[0].metric("Critic score", format_score(result.score))
    cols[1].metric("Agent time", f"{result.agent_seconds:.1f} s")
    cols[2].metric("Critic time", f"{result.critic_seconds:.1f} s")
    show_result(result.input_text, result.output, result.feedback, result.error, result.trace,
                thumbnails=thumbnails, scored=scored)
