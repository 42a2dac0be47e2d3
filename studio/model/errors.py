"""Typed errors. Each carries the value, field or file that is wrong and says how to fix it.

A failure on one example (agent timeout, unparseable critic reply) is *not* an exception in the
engine: it becomes a recorded trial with ``score=None``. These errors are for systemic problems and
bad input that a person must fix.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any


class StudioError(Exception):
    """Base class for every error the product raises on purpose."""


class ConfigError(StudioError, ValueError):
    """A configuration value is wrong. ``where`` names the file/field, ``value`` the bad value.

    gepa-adk's ``ConfigurationError(message, field=..., value=..., constraint=...)`` keywords are
    accepted too: ``field`` is read as ``where`` when ``where`` is not given, both it and
    ``constraint`` are kept as attributes, and the message reads as gepa-adk's
    (``"message [field='x', value=-1]"``).
    """

    def __init__(self, message: str, *, where: str | None = None, value: object = None,
                 field: str | None = None, constraint: str | None = None) -> None:
        gepa_style = where is None and field is not None
        where = where if where is not None else field
        self.where = where
        self.field = field if field is not None else where
        self.value = value
        self.constraint = constraint
        self.message = message
        if gepa_style:
            context = [f"field={field!r}"] + ([f"value={value!r}"] if value is not None else [])
            super().__init__(f"{message} [{', '.join(context)}]")
        else:
            super().__init__(f"{where}: {message}" if where else message)


class ModelConfigError(ConfigError):
    """A model string cannot be used: unknown provider, unknown local model or missing API key."""


class AgentImportError(ConfigError):
    """An agent's Python code (an ADK agent folder, a ``module:attribute`` reference) raised, or
    exited, while it was imported. ``file`` and ``line`` say where in the person's code (None
    when no frame of it was found), ``cause`` what it raised, in one line."""

    def __init__(self, message: str, *, where: str | None = None, value: object = None,
                 file: str | None = None, line: int | None = None, cause: str = "") -> None:
        super().__init__(message, where=where, value=value)
        self.file = file
        self.line = line
        self.cause = cause


class SchemaError(ConfigError):
    """A JSON Schema (agent output_schema, evaluator schema) is itself invalid."""


class DatasetError(ConfigError):
    """A dataset row or file is unusable (empty, not a dict, missing column)."""


class ProjectFileError(ConfigError):
    """A project YAML file is invalid; the message names the file, the field and the problem."""


class TemplateError(ConfigError):
    """An instruction template lacks a required placeholder (e.g. ``{trials}``)."""


class ScoringError(StudioError):
    """A critic gave no score: its reply could not be read or its agent did not run (gepa-adk's
    name for this family, so ``except ScoringError`` ports unchanged).

    ``cause`` (gepa-adk's keyword) is the underlying exception, kept as an attribute and named
    in the message as gepa-adk does ("... (caused by: ...)").
    """

    def __init__(self, message: str = "", *, cause: BaseException | None = None) -> None:
        self.cause = cause
        super().__init__(message)

    def __str__(self) -> str:
        base = super().__str__()
        return f"{base} (caused by: {self.cause})" if self.cause is not None else base


class CriticOutputParseError(ScoringError, ValueError):
    """The critic's reply holds no JSON object that could be parsed; ``parse_error`` says why
    (gepa-adk's attribute; the message says it too)."""

    def __init__(self, message: str, *, raw_output: str = "", parse_error: str = "",
                 cause: BaseException | None = None) -> None:
        self.raw_output = raw_output
        self.parse_error = parse_error or message
        super().__init__(message, cause=cause)


class MissingScoreFieldError(CriticOutputParseError):
    """The critic replied with JSON but without a usable ``score`` field.

    ``parsed_output`` (gepa-adk's keyword and attribute) and ``parsed`` (the studio's) name the
    same value: the JSON the critic did return.
    """

    def __init__(self, message: str, *, raw_output: str = "", parsed: object = None,
                 parsed_output: object = None, cause: BaseException | None = None) -> None:
        self.parsed = parsed if parsed is not None else parsed_output
        super().__init__(message, raw_output=raw_output, cause=cause)

    @property
    def parsed_output(self) -> Any:
        """gepa-adk's name for ``parsed``."""
        return self.parsed

    @property
    def available_fields(self) -> list[str]:
        """The fields the critic did return (gepa-adk's attribute)."""
        return sorted(map(str, self.parsed)) if isinstance(self.parsed, dict) else []


class ScoreOutOfRangeError(CriticOutputParseError):
    """The critic's score is outside [0, 1]; ``score`` holds the offending value."""

    def __init__(self, score: float, *, raw_output: str = "") -> None:
        self.score = score
        super().__init__(
            f"critic score {score!r} is outside [0, 1]; the critic must score from 0.0 to 1.0",
            raw_output=raw_output,
        )


class FeedbackShapeError(CriticOutputParseError):
    """A critic's feedback field has the wrong shape; ``field`` names it, ``value`` is what came."""

    def __init__(self, field: str, value: object, expected: str) -> None:
        self.field = field
        self.value = value
        shown = repr(value)
        shown = shown if len(shown) <= 120 else shown[:117] + "..."
        super().__init__(f"critic feedback field {field!r} must be {expected}, got {shown}; "
                         f"fix the critic's output schema or instruction")


class StoreError(StudioError):
    """The database cannot be opened or written (unwritable file, locked, bad URL)."""


class StoreUnavailableError(StoreError):
    """The database stayed unreachable or locked past the retry budget: nothing was changed by
    the call that failed, so a worker waits and tries again, and a run resumes later."""


class StoreFullError(StoreUnavailableError):
    """The disk holding the SQLite file is full. It may pass (another program frees space), so
    store calls wait for it like an outage; a run it stopped is not resumed on its own, since
    a disk rarely frees itself: a person frees space and runs ``studio resume``."""


class NotFoundError(StudioError, KeyError):
    """A record (run, trial, proposal, project) does not exist."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0]) if self.args else "not found"


class ProposalProblem(StrEnum):
    """What makes a proposal unusable (:attr:`ProposalError.reason`)."""

    EMPTY = "empty"
    TOO_LONG = "too_long"
    UNCHANGED = "unchanged"
    REPETITIVE = "repetitive"
    """A degenerate reply that repeats one sentence."""
    INVALID_SCHEMA = "invalid_schema"
    INVALID_YAML = "invalid_yaml"
    INVALID_DEMOS = "invalid_demos"
    UNKNOWN_PLACEHOLDER = "unknown_placeholder"
    DUPLICATE = "duplicate"
    """A person's edit makes a candidate the run already has."""


class ProposalError(StudioError, ValueError):
    """A reflection proposal is unusable (empty, unchanged, invalid schema or YAML, duplicate)."""

    def __init__(self, message: str, *, reason: ProposalProblem) -> None:
        self.reason = reason
        super().__init__(message)


class DuplicateCandidateError(StudioError):
    """A run already has a candidate with these components: the store keeps one per content
    hash (its unique index), so no pool holds two equal candidates. ``index`` is the existing
    candidate's number in the run, ``candidate_id`` its id."""

    def __init__(self, run_id: str, index: int, candidate_id: int) -> None:
        self.run_id, self.index, self.candidate_id = run_id, index, candidate_id
        super().__init__(f"run {run_id} already has these components as candidate #{index}: "
                         "a run keeps one candidate per text")


class RunStateError(StudioError):
    """An action does not fit the run's state (deciding a proposal that is not pending, ...)."""


class PageChangedError(RunStateError):
    """A decision made on a page that showed another proposal than the one it would decide:
    the page swapped in ``proposal_id`` (another tab or the CLI decided ``shown_id``) under the
    person's click, so the click is refused rather than landing on a proposal nobody chose."""

    def __init__(self, message: str, *, shown_id: int, proposal_id: int) -> None:
        self.shown_id = shown_id
        self.proposal_id = proposal_id
        super().__init__(message)


class LeaseLostError(RunStateError):
    """This worker no longer holds the run's lease: another worker took it over (its heartbeat
    went stale, e.g. the database was out of reach for longer than the lease)."""


class AccessError(StudioError, PermissionError):
    """An action the acting person's role does not allow, or a person the studio does not know.

    ``action`` is what was refused (``"deciding a proposal"``), ``needed`` the role it needs
    (``"owner"``), ``actor`` who asked and ``role`` the role they have (None: no role here)."""

    def __init__(self, message: str, *, action: str = "", needed: str | None = None,
                 actor: str | None = None, role: str | None = None) -> None:
        self.action = action
        self.needed = needed
        self.actor = actor
        self.role = role
        super().__init__(message)
