"""The executor seam under gepa-adk's names: :class:`AgentExecutorProtocol`,
:class:`ExecutionResult`, :class:`ExecutionStatus`.

gepa-adk users inject their own executor (``CriticScorer(critic_agent, executor=...)``); with
these names their executors and test doubles work here after a change of imports. The studio's
own :class:`studio.runtime.execution.AgentExecutor` implements the protocol too, and
:class:`ExecutionResult` is the one result type it returns from ``execute`` and ``execute_agent``,
so the studio has a single notion of "what one agent run produced".

Pure Python (no ADK import): the critics and any user code can depend on it cheaply.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol, runtime_checkable

__all__ = ["AgentExecutorProtocol", "ExecutionResult", "ExecutionStatus"]


class ExecutionStatus(StrEnum):
    """How an agent run ended: the outcome of the run, not the quality of its output.

    Members equal their strings (``"success"``, ``"failed"``, ``"timeout"``), so a result built
    with gepa-adk's own enum, or with a plain string, is read the same way.
    """

    SUCCESS = "success"
    FAILED = "failed"
    TIMEOUT = "timeout"


@dataclass
class ExecutionResult:
    """What one agent run produced, with gepa-adk's fields first (same order, same defaults).

    A run that did not succeed always says why: ``error_message`` defaults to the status when an
    executor leaves it empty, so a failure can never pass for an empty success downstream.
    """

    status: ExecutionStatus
    session_id: str
    extracted_value: str | None = None
    """The final text reply; None when the agent produced none or the run failed."""
    error_message: str | None = None
    """Why the run failed or timed out; None on success."""
    execution_time_seconds: float = 0.0
    captured_events: list[Any] | None = None
    """The run's events. The studio's executor gives its condensed trace events (JSON-able
    dicts: author, type, text / tool call / tool result), not raw ADK ``Event`` objects."""
    trace: dict[str, Any] = field(default_factory=dict)
    """Studio addition: the full trace (events, tool_calls, state_delta, usage, latency)."""
    attempts: int = 1
    """Studio addition: attempts made, retries included."""

    def __post_init__(self) -> None:
        self.status = _status(self.status)
        if self.status is not ExecutionStatus.SUCCESS and not self.error_message:
            self.error_message = f"the agent run ended with status {self.status.value!r}"

    @property
    def ok(self) -> bool:
        return self.status is ExecutionStatus.SUCCESS

    @property
    def output(self) -> str:
        """The reply as text ("" when there is none): what the studio stores and judges."""
        return self.extracted_value or ""

    @property
    def error(self) -> str | None:
        """``error_message`` when the run did not succeed, else None."""
        return None if self.ok else self.error_message

    @property
    def latency_s(self) -> float:
        return self.execution_time_seconds

    @property
    def tokens(self) -> int:
        return int(self.trace.get("usage", {}).get("total_tokens", 0))


def _status(value: Any) -> ExecutionStatus:
    """Our member for ``value``: one of ours, gepa-adk's (a str enum) or a plain string."""
    try:
        return ExecutionStatus(getattr(value, "value", value))
    except ValueError:
        allowed = ", ".join(s.value for s in ExecutionStatus)
        raise ValueError(f"ExecutionResult.status {value!r} is not one of: {allowed}") from None


@runtime_checkable
class AgentExecutorProtocol(Protocol):
    """Runs any ADK agent once and reports how it went (gepa-adk's executor port).

    The parameters are gepa-adk's: ``input_content`` (an ADK ``Content``, e.g. with image
    parts) replaces ``input_text`` as the message when given; ``instruction_override`` and
    ``output_schema_override`` apply to this run only, never to ``agent``; ``session_state`` seeds
    a fresh session; ``existing_session_id`` joins a session instead (e.g. a critic reading its
    generator's state), created with that id (holding ``session_state``) when it does not exist
    yet, gepa-adk's get-or-create; ``timeout_seconds`` limits the run (status ``TIMEOUT`` past it).

    Contract: a run that fails returns a result with status ``FAILED`` or ``TIMEOUT`` and an
    ``error_message``; it does not raise.
    """

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
        timeout_seconds: int = 300,
    ) -> ExecutionResult: ...
