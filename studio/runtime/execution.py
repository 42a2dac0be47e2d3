"""Run ADK agents on one input in an isolated session and capture what happened.

:class:`AgentExecutor` is the only place the studio drives an ADK ``Runner``. It adds what a run
of hundreds of calls needs: a concurrency limit, a per-call timeout, retries with backoff on rate
limits, 5xx and timeouts, and a trace (events, tool calls with arguments and results, state delta,
token usage, latency). A failure is returned as a result with ``error`` set, never raised, so one
bad example cannot end a run.

It also implements gepa-adk's :class:`studio.runtime.protocol.AgentExecutorProtocol`
(:meth:`AgentExecutor.execute_agent`), so code written against gepa-adk's executor runs here.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
import re
import time
import uuid
import weakref
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from studio.model.costs import implausible_call
from studio.model.errors import ConfigError, StudioError
from studio.model.jsontools import to_jsonable
from studio.model.limits import clip
from studio.model.media import Media
from studio.model.redaction import redact
from studio.runtime.protocol import ExecutionResult, ExecutionStatus
from studio.runtime.providers import register_providers
from studio.runtime.providers.calls import reply_cut_short
from studio.runtime.slots import PrioritySlots, slots_of_loop

if TYPE_CHECKING:
    from google.adk.agents import BaseAgent
    from google.adk.events import Event
    from google.adk.runners import Runner
    from google.adk.sessions import BaseSessionService
    from google.genai.types import Content, GenerateContentResponseUsageMetadata, Part

__all__ = ["AgentExecutor", "ExecutionResult", "ExecutionStatus", "describe_error"]

logger = logging.getLogger(__name__)

MAX_TRACE_TEXT = 4000
"""Longest text kept per trace event; outputs themselves are never truncated."""
MAX_TRACE_VALUE_CHARS = 20_000
"""Longest JSON kept of one tool call's arguments or result (a tool may return megabytes)."""


def _retryable_errors() -> tuple[type[BaseException], ...]:
    import litellm

    return (
        litellm.RateLimitError,
        litellm.InternalServerError,
        litellm.ServiceUnavailableError,
        litellm.BadGatewayError,
        litellm.Timeout,
        litellm.APIConnectionError,
        TimeoutError,
    )


RETRIED_REPLY_CODES = frozenset({"MALFORMED_FUNCTION_CALL"})
"""Error codes on a model's reply that a new attempt may well not repeat, retried like a 5xx:
a tool call whose arguments are not a JSON object is the model's slip, and the model writes
the call afresh on the next attempt. A refusal (``SAFETY``) or a length cut (``MAX_TOKENS``)
would come back the same, so it is said once."""


EMPTY_REPLY_CODES = frozenset({"MODEL_RETURNED_NO_CONTENT"})
"""ADK's code for a reply with nothing in it, which the engine says in its own words (how many
tool calls came without text: :func:`studio.engine.scoring.processes.run_chain`)."""


class ModelReplyError(Exception):
    """The agent's turn ended on a model reply that ADK marked with an error code and no text
    to score: said as what it is (the code and ADK's message), not as an empty reply."""

    def __init__(self, code: str, detail: str, author: str) -> None:
        self.code, self.detail, self.author = code, detail, author
        super().__init__(_reply_error_words(code, detail, author))

    @property
    def retryable(self) -> bool:
        return self.code in RETRIED_REPLY_CODES


def _reply_error_words(code: str, detail: str, author: str) -> str:
    said = f" ({detail.strip()})" if detail and detail.strip() else ""
    if code == "MALFORMED_FUNCTION_CALL":
        return (f"{author}'s model called a tool with arguments that are not a JSON object, "
                f"so ADK discarded the call (MALFORMED_FUNCTION_CALL{said})")
    return f"{author}'s model ended its reply with {code} and no text{said}"


class AgentExecutor:
    """Runs ADK agents through ADK runners with limits, retries and tracing.

    Args:
        session_service: ADK session service; an ``InMemorySessionService`` when None.
        max_concurrency: agent calls in flight at once (per event loop).
        timeout_s: limit for one attempt of one call.
        max_retries: further attempts after a retryable failure (429, 5xx, timeout).
        backoff_s: first backoff delay; doubles each retry, with jitter.
        app_name: ADK application name for the sessions this executor creates.
    """

    def __init__(
        self,
        session_service: BaseSessionService | None = None,
        *,
        max_concurrency: int = 4,
        timeout_s: float = 120.0,
        max_retries: int = 3,
        backoff_s: float = 1.0,
        app_name: str = "studio",
        user_id: str = "studio",
    ) -> None:
        if max_concurrency < 1:
            raise ValueError(f"max_concurrency must be >= 1, got {max_concurrency}")
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s}")
        if max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {max_retries}")
        register_providers()
        if session_service is None:
            from google.adk.sessions import InMemorySessionService

            session_service = InMemorySessionService()
        self.session_service = session_service
        self.max_concurrency = max_concurrency
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.app_name = app_name
        self.user_id = user_id
        self._runners: OrderedDict[tuple[int, str], tuple[BaseAgent, Runner]] = OrderedDict()
        self._copies: OrderedDict[tuple[int, str | None, int],
                                  tuple[BaseAgent, BaseAgent, object]] = OrderedDict()
        self._slots_by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop,
                                                        PrioritySlots] = (
            weakref.WeakKeyDictionary()
        )

    # ------------------------------------------------------------------ public API

    async def execute(
        self,
        agent: BaseAgent,
        input_text: str,
        *,
        state: Mapping[str, object] | None = None,
        session_id: str | None = None,
        app_name: str | None = None,
        output_author: str | None = None,
        content: Content | None = None,
        timeout_s: float | None = None,
        media: Sequence[Media] = (),
    ) -> ExecutionResult:
        """Run ``agent`` on ``input_text``.

        With ``session_id`` the run joins that session (shared state), created with that id and
        holding ``state`` when it does not exist yet, as gepa-adk's executor does, and kept
        afterwards; otherwise a fresh session holding ``state`` is created and deleted
        afterwards. ``output_author`` picks whose
        reply is the output in a workflow (its last one; default: the last reply of anyone).
        ``content`` (an ADK ``Content``) is sent instead of the text when given; ``timeout_s``
        replaces the executor's per-attempt limit for this call. ``media`` (an example's images
        and videos) follow the text in the user message as inline-data parts, which ADK's
        LiteLLM adapter sends as ``image_url`` / ``video_url`` content parts.
        """
        app = app_name or self.app_name
        limit = timeout_s or self.timeout_s
        message = content or user_message(input_text, media)
        held_from: list[float] = []  # when the first attempt got its call slot
        result = await self._with_retries(agent, message, state, session_id, app,
                                          output_author, timeout_s=limit, held_from=held_from)
        result.execution_time_seconds = time.perf_counter() - held_from[0] if held_from else 0.0
        result.trace["latency_s"] = round(result.latency_s, 4)
        return result

    async def execute_agent(
        self,
        agent: Any,
        input_text: str,
        *,
        input_content: Any | None = None,
        instruction_override: str | None = None,
        output_schema_override: Any | None = None,
        session_state: dict[str, Any] | None = None,
        existing_session_id: str | None = None,
        timeout_seconds: float | None = None,
        app_name: str | None = None,
    ) -> ExecutionResult:
        """gepa-adk's ``execute_agent``: :meth:`execute` under the protocol's parameter names.

        The overrides run a copy of ``agent`` (never mutated). ``timeout_seconds=None`` keeps the
        executor's own limit (gepa-adk's default is 300 s); past it the status is ``TIMEOUT``.
        ``app_name`` is a studio addition (the app whose sessions ``existing_session_id`` names).

        Raises:
            ConfigError: an argument of the wrong kind (an override on an agent that is not an
                ``LlmAgent``, a schema that is not a pydantic model, content that is not an ADK
                ``Content``), named with its parameter.
        """
        _check_run_arguments(input_content, session_state, timeout_seconds)
        runnable = self._overridden(agent, instruction_override, output_schema_override)
        return await self.execute(runnable, input_text, state=session_state,
                                  session_id=existing_session_id, app_name=app_name,
                                  content=input_content, timeout_s=timeout_seconds)

    def execute_sync(self, agent: BaseAgent, input_text: str, **kwargs: Any) -> ExecutionResult:
        return asyncio.run(self.execute(agent, input_text, **kwargs))

    # ------------------------------------------------------------------ internals

    def call_slots(self) -> PrioritySlots:
        """The call limit of the running event loop; the most urgent call goes first
        (:mod:`studio.runtime.slots`: a reflection before the chains queued ahead of it)."""
        return slots_of_loop(self._slots_by_loop, self.max_concurrency)

    def _overridden(self, agent: BaseAgent, instruction: str | None, schema: object
                    ) -> BaseAgent:
        """A copy of ``agent`` with the overrides, cached so that its ADK Runner is reused."""
        if instruction is None and schema is None:
            return agent
        update = _override_update(agent, instruction, schema)
        key = (id(agent), instruction, id(schema))
        cached = self._copies.get(key)
        if cached is not None and cached[0] is agent and cached[2] is schema:
            self._copies.move_to_end(key)
            return cached[1]
        copy = agent.model_copy(update=update)
        self._copies[key] = (agent, copy, schema)
        while len(self._copies) > 64:
            self._copies.popitem(last=False)
        return copy

    async def _join_session(self, app: str, session_id: str,
                            state: Mapping[str, object] | None) -> None:
        """gepa-adk's get-or-create: a named session that does not exist yet is created with
        that id, holding ``state``; one that exists keeps its own state (``state`` is not
        applied to it). Two calls creating the same session at once both join it."""
        from google.adk.errors.already_exists_error import AlreadyExistsError

        service, user = self.session_service, self.user_id
        if await service.get_session(app_name=app, user_id=user, session_id=session_id):
            return
        with contextlib.suppress(AlreadyExistsError):  # another call created it meanwhile
            await service.create_session(app_name=app, user_id=user, session_id=session_id,
                                         state=dict(state or {}))

    def _runner(self, agent: BaseAgent, app_name: str) -> Runner:
        """One cached ADK Runner per (agent, app): building a Runner costs more than a call."""
        from google.adk.runners import Runner

        key = (id(agent), app_name)
        cached = self._runners.get(key)
        if cached is not None and cached[0] is agent:
            self._runners.move_to_end(key)
            return cached[1]
        runner = Runner(agent=agent, app_name=app_name, session_service=self.session_service)
        self._runners[key] = (agent, runner)
        while len(self._runners) > 64:
            self._runners.popitem(last=False)
        return runner

    async def _with_retries(self, agent, message, state, session_id, app, output_author=None,
                            *, timeout_s: float, held_from: list[float]) -> ExecutionResult:
        """Each attempt holds a call slot; the backoff before a retry holds none, so a waiting
        call (a reflection's, a gate's minibatch) is not kept behind a sleep. ``held_from``
        gets the time the first attempt got its slot (the call's latency counts from it)."""
        retryable = _retryable_errors()
        attempt, started = 0, time.perf_counter()
        earlier: list[str] = []
        while True:
            attempt += 1
            try:
                async with self.call_slots():
                    if not held_from:  # the call's latency counts from its first slot
                        started = time.perf_counter()
                        held_from.append(started)
                    async with asyncio.timeout(timeout_s):
                        result = await self._run_once(agent, message, state, session_id, app,
                                                      output_author)
                result.attempts = attempt
                return result
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a failure on one example is a result, not a crash
                if not _is_retryable(exc, retryable) or attempt > self.max_retries:
                    return _failure(exc, attempt, session_id, timeout_s=timeout_s,
                                    elapsed_s=time.perf_counter() - started, earlier=earlier)
                earlier.append(describe_error(exc, timeout_s=timeout_s))
                delay = self.backoff_s * (2 ** (attempt - 1)) * (1 + random.random() / 4)
                logger.info("retrying %s after %s (attempt %d)", _name(agent), type(exc).__name__,
                            attempt)
                await asyncio.sleep(delay)

    async def _run_once(self, agent, message, state, session_id, app,
                        output_author=None) -> ExecutionResult:
        runner = self._runner(agent, app)
        own_session = session_id is None
        if own_session:
            session = await self.session_service.create_session(
                app_name=app, user_id=self.user_id, state=dict(state or {}),
                session_id=uuid.uuid4().hex,
            )
            session_id = session.id
        else:
            await self._join_session(app, session_id, state)
        recorder = _TraceRecorder()
        try:
            async for event in runner.run_async(
                user_id=self.user_id, session_id=session_id, new_message=message
            ):
                recorder.add(event)
        finally:
            if own_session:
                await self.session_service.delete_session(
                    app_name=app, user_id=self.user_id, session_id=session_id
                )
        output = (recorder.final_text if output_author is None
                  else recorder.outputs.get(output_author, ""))
        if not output and recorder.reply_errors:  # what ended the turn, not "no content"
            raise ModelReplyError(*recorder.reply_errors[-1])
        trace = recorder.trace()
        return ExecutionResult(
            status=ExecutionStatus.SUCCESS, session_id=session_id, extracted_value=output or None,
            captured_events=trace["events"], trace=trace,
        )


def user_message(input_text: str, media: Sequence[Media] = ()) -> Content:
    """The user's turn: the text, then each image or video as an inline-data part."""
    from google.genai import types

    parts = [types.Part(text=input_text)]
    parts += [types.Part(inline_data=types.Blob(data=m.data, mime_type=m.mime_type))
              for m in media]
    return types.Content(role="user", parts=parts)


def _name(agent: object) -> str:
    return str(getattr(agent, "name", type(agent).__name__))


def _failure(exc: BaseException, attempts: int, session_id: str | None, *, timeout_s: float,
             elapsed_s: float = 0.0, earlier: Sequence[str] = ()):
    import litellm

    message = describe_error(exc, timeout_s=timeout_s) + _attempts_said(attempts, elapsed_s,
                                                                       earlier)
    message = redact(message)[:2000]
    timed_out = isinstance(exc, TimeoutError | litellm.Timeout)
    return ExecutionResult(
        status=ExecutionStatus.TIMEOUT if timed_out else ExecutionStatus.FAILED,
        session_id=session_id or "", error_message=message, attempts=attempts,
        trace={"error": message, "attempts": attempts},
    )


def _attempts_said(attempts: int, elapsed_s: float, earlier: Sequence[str]) -> str:
    """What the retries were and how long they took in all: a per-attempt timeout alone
    ("timed out after 20s") hid that three attempts took 68 s and the first ones were resets."""
    if attempts <= 1:
        return f" (after {elapsed_s:.1f} s)" if elapsed_s >= 1 else ""
    before = "; ".join(dict.fromkeys(earlier))
    retries = "1 retry" if attempts == 2 else f"{attempts - 1} retries"
    return (f" (on attempt {attempts} of {attempts}, after {retries} and {elapsed_s:.1f} s "
            "in all" + (f"; earlier attempts: {before}" if before else "")
            + ")")


def _override_update(agent: object, instruction: str | None, schema: object) -> dict[str, Any]:
    """The fields an ``execute_agent`` override replaces, checked against what ADK accepts."""
    from google.adk.agents import LlmAgent
    from pydantic import BaseModel

    if not isinstance(agent, LlmAgent):
        raise ConfigError(f"overrides apply to an LlmAgent; {_name(agent)!r} is a "
                          f"{type(agent).__name__}", where="execute_agent.agent")
    update: dict[str, Any] = {}
    if instruction is not None:
        if not isinstance(instruction, str):
            raise ConfigError(f"must be text, got {type(instruction).__name__}",
                              where="execute_agent.instruction_override")
        update["instruction"] = instruction
    if schema is not None:
        if not (isinstance(schema, type) and issubclass(schema, BaseModel)):
            raise ConfigError(f"must be a pydantic model class, got {schema!r:.80}",
                              where="execute_agent.output_schema_override")
        update["output_schema"] = schema
    return update


def _check_run_arguments(content: object, state: object, timeout_seconds: object) -> None:
    from google.genai import types

    if content is not None and not isinstance(content, types.Content):
        raise ConfigError(f"must be a google.genai types.Content, got {type(content).__name__}",
                          where="execute_agent.input_content")
    if state is not None and not isinstance(state, dict):
        raise ConfigError(f"must be a dict, got {type(state).__name__}",
                          where="execute_agent.session_state")
    if timeout_seconds is not None and (isinstance(timeout_seconds, bool) or not isinstance(
            timeout_seconds, int | float) or not 0 < timeout_seconds < float("inf")):
        raise ConfigError(f"must be a positive number of seconds, got {timeout_seconds!r}",
                          where="execute_agent.timeout_seconds")


def _is_retryable(exc: BaseException, retryable: tuple[type[BaseException], ...]) -> bool:
    """A rate limit, a 5xx, a timeout or a lost connection (not one wrapping a studio error,
    which a new attempt would meet again), or a reply error a new attempt may not repeat."""
    if isinstance(exc, ModelReplyError):
        return exc.retryable
    return isinstance(exc, retryable) and _root_studio_error(exc) is None


def _root_studio_error(exc: BaseException) -> StudioError | None:
    """The studio error LiteLLM wrapped (it re-raises provider errors as APIConnectionError)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, StudioError):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def describe_error(exc: BaseException, *, timeout_s: float | None = None) -> str:
    """One readable line: the root cause, without LiteLLM's traceback and bug-report link."""
    if isinstance(exc, TimeoutError):
        return f"timed out after {timeout_s:g}s" if timeout_s else "timed out"
    if isinstance(exc, ModelReplyError):
        return str(exc)
    if isinstance(exc, RecursionError):
        return ("the model's reply nests its JSON too deeply to read (a runaway reply; "
                f"RecursionError: {exc})")
    root = _root_studio_error(exc)
    if root is not None:
        return f"{type(root).__name__}: {root}"
    if type(exc).__name__ == "LlmCallsLimitExceededError":
        return (f"the agent or workflow made more model calls on one example than ADK allows "
                f"({_first_line(exc)}): fewer agents or fewer tool rounds per example, or a "
                f"higher limit (ADK reads it from ADK_MAX_LLM_CALLS)")
    cut_short = reply_cut_short(exc)
    if cut_short is not None:
        return ("the model's server closed the connection before its reply was complete "
                f"({cut_short})")
    if _connection_lost(exc):
        return ("the connection to the model's server was reset or refused by the server "
                f"({type(exc).__name__}: {_first_line(exc)})")
    text = _first_line(exc)
    text = re.sub(r"^(litellm\.\w+:\s*)+", "", text)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _first_line(exc: BaseException) -> str:
    text = _without_traceback(str(exc))
    text = text.strip().splitlines()[0] if text.strip() else ""
    return re.sub(r"^(litellm\.\w+:\s*)+", "", text)


TRACEBACK = "Traceback (most recent call last):"


def _without_traceback(text: str) -> str:
    """A message with a traceback pasted into it (LiteLLM's "Invalid response object Traceback
    (most recent call last): File ..."), as the text before it and the error it ends with, on
    one line; any other message as it is."""
    head, marker, rest = text.partition(TRACEBACK)
    if not marker:
        return text
    lines = [line for line in rest.splitlines() if line.strip()]
    at = next((i for i, line in enumerate(lines) if not line[0].isspace()), None)
    if at is None:
        return head.strip()
    kind, _, said = lines[at].partition(": ")
    cause = f"{kind.rpartition('.')[2]}: {said}" if said else kind.rpartition(".")[2]
    if kind.endswith("ValidationError") and at + 2 < len(lines):  # pydantic: field, message
        field, problem = lines[at + 1].strip(), lines[at + 2].strip()
        message, _, details = problem.partition(" [")
        got = re.search(r"input_type=(\w+)", details)
        cause = f"{field}: {message}" + (f", got a {got.group(1)}" if got else "")
    return f"{head.strip()} ({cause})"


def _connection_lost(exc: BaseException) -> bool:
    """A reset, refused or dropped connection, however LiteLLM wrapped it (the OpenAI client
    reports it as "Connection error." inside an ``InternalServerError``)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ConnectionError) or type(current).__name__ in (
                "ConnectError", "RemoteProtocolError", "ReadError", "APIConnectionError"):
            return True
        if str(current).strip().endswith("Connection error."):
            return True
        current = current.__cause__ or current.__context__
    return False


class _TraceRecorder:
    """Condenses ADK events into the trajectory trace shown to reflection and to people."""

    def __init__(self, input_text: str = "") -> None:
        self.events: list[dict[str, Any]] = []
        self.tool_calls: list[dict[str, Any]] = []
        self.state_delta: dict[str, Any] = {}
        self.usage: dict[str, Any] = {"prompt_tokens": 0, "completion_tokens": 0,
                                      "total_tokens": 0}
        self.final_text = ""
        self.outputs: dict[str, str] = {}
        """Each author's last final reply (a workflow's agents by name)."""
        self.model_calls = 0
        self.reply_errors: list[tuple[str, str, str]] = []
        """``(code, ADK's message, author)`` of each reply ADK marked with an error code."""

    def add(self, event: Event) -> None:
        author = event.author
        content = event.content
        code = str(getattr(event.error_code, "value", event.error_code) or "")
        if code and code not in EMPTY_REPLY_CODES:
            detail = str(event.error_message or "")[:MAX_TRACE_TEXT]
            self.reply_errors.append((code, detail, author))
        for part in (content.parts or []) if content else []:
            self._add_part(author, part)
        actions = event.actions
        if actions is not None and actions.state_delta:
            self.state_delta.update(to_jsonable(actions.state_delta))
        usage = event.usage_metadata
        if usage is not None:
            self.model_calls += 1
            self._add_usage(usage)
        if event.is_final_response() and content and content.parts:
            text = "".join(p.text for p in content.parts if p.text and not p.thought)
            if text:
                self.final_text = text
                self.outputs[author] = text

    def _add_usage(self, usage: GenerateContentResponseUsageMetadata) -> None:
        """One call's tokens into the sums; a report no call could make
        (:func:`studio.model.costs.implausible_call`) is kept raw beside them instead."""
        counts = {"prompt_tokens": usage.prompt_token_count or 0,
                  "completion_tokens": usage.candidates_token_count or 0,
                  "total_tokens": usage.total_token_count or 0}
        why = implausible_call(max(counts.values()))
        if why is not None:
            self.usage.setdefault("implausible", []).append({**counts, "why": why})
            return
        for key, count in counts.items():
            self.usage[key] += count

    def _add_part(self, author: str, part: Part) -> None:
        if part.function_call is not None:
            call = part.function_call
            record = {"id": call.id, "name": (call.name or "")[:MAX_TRACE_TEXT],
                      "args": _bounded(call.args or {})}
            self.tool_calls.append({**record, "result": None})
            self.events.append({"author": author, "type": "tool_call", **record})
        elif part.function_response is not None:
            response = part.function_response
            result = _bounded(response.response)
            for call in reversed(self.tool_calls):
                if call["id"] == response.id or (call["result"] is None and call["name"] ==
                                                   response.name):
                    call["result"] = result
                    break
            self.events.append({"author": author, "type": "tool_result", "id": response.id,
                                "name": response.name, "result": result})
        elif part.text and not part.thought:
            self.events.append({"author": author, "type": "text",
                                "text": part.text[:MAX_TRACE_TEXT]})

    def trace(self) -> dict[str, Any]:
        """What a trial stores: events in order, tool calls with their results, state, usage."""
        return {
            "events": self.events,
            "tool_calls": self.tool_calls,
            "state_delta": self.state_delta,
            "usage": self.usage,
            "model_calls": self.model_calls,
        }


def _bounded(value: object) -> Any:
    """``value`` as JSON data, or its JSON text clipped (with a marker) when it is too long to
    keep in every trial; small values stay structured so trajectory evaluators compare them."""
    data = to_jsonable(value)
    text = json.dumps(data, ensure_ascii=False, default=str)
    return data if len(text) <= MAX_TRACE_VALUE_CHARS else clip(text, MAX_TRACE_VALUE_CHARS)
