"""Run settings (:class:`EvolutionConfig`), under the names the product documents.

gepa-adk's spellings are accepted on input where their meaning maps (``patience=0``,
``max_concurrent_evals``...) and refused, with where to say it instead, where it does not; they
are translated before validation, so the stored JSON only ever holds the studio's names.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic_core import ErrorDetails

from studio.model.base import CONFIG_MODEL, ConfigModel
from studio.model.errors import ConfigError


class ReviewMode(StrEnum):
    AUTO = "auto"
    """The acceptance rule decides alone."""
    REVIEW = "review"
    """Every evaluated proposal waits for a person's accept / edit / reject."""


class Selection(StrEnum):
    PARETO = "pareto"
    GREEDY = "greedy"
    EPSILON_GREEDY = "epsilon_greedy"


class RateLimit(ConfigModel):
    """At most ``requests`` model calls start in any ``per_seconds`` window, for one model, in
    one process (every run a worker or the studio's server holds shares it). In
    ``STUDIO_RATE_LIMITS`` or a project run from the command line,
    ``{openai/gpt-4o-mini: 500}`` is 500 requests per minute."""

    model_config = ConfigDict(frozen=True, allow_inf_nan=False)

    requests: int = Field(ge=1, le=1_000_000)
    """Model calls that may start in one window."""
    per_seconds: float = Field(default=60.0, gt=0, le=86_400)
    """The window's length, in seconds."""

    @model_validator(mode="before")
    @classmethod
    def _from_rpm(cls, data: object) -> Any:
        """A bare number is requests per minute (LiteLLM's ``rpm``); ``{rpm: N}`` too."""
        if isinstance(data, int) and not isinstance(data, bool):
            return {"requests": data}
        if isinstance(data, dict) and set(data) == {"rpm"}:
            return {"requests": data["rpm"]}
        return data


class _RefusesWithConfigError(type(BaseModel)):  # type: ignore[misc]
    """``EvolutionConfig(...)`` refusals raise :class:`ConfigError` (gepa-adk's documented
    ``ConfigurationError``), not pydantic's ``ValidationError``.

    Done at the call, not in ``__init__``: pydantic calls a custom ``__init__`` for nested
    models too, and a config nested in a project file or a run must keep pydantic's errors with
    their path (``run.max_iterations``) for the file's messages.
    """

    def __call__(cls, *args: object, **kwargs: object) -> Any:
        try:
            return super().__call__(*args, **kwargs)
        except ValidationError as exc:
            raise config_error(exc, given=set(kwargs)) from exc


class EvolutionConfig(BaseModel, metaclass=_RefusesWithConfigError):
    """How long a run goes, how it picks parents, and whether a person gates proposals.

    Every stop condition is optional except ``max_iterations``; the first one reached ends the run.
    """

    model_config = ConfigDict(**CONFIG_MODEL, allow_inf_nan=False)
    """NaN and infinities are refused: ``call_timeout_seconds: .inf`` is not "no limit"."""


    max_iterations: int = Field(default=10, ge=0, le=100_000)
    """Reflection iterations after the baseline."""
    max_metric_calls: int | None = Field(default=None, ge=1)
    """Budget of critic evaluations: each trial counts once, or once per judge sample when its
    critic asks a judge model several times (an ADK metric's ``num_samples``). An iteration it
    cannot pay for whole (parent, child, validation) is not started; an edit it cannot pay for
    is refused at the gate."""
    patience: int | None = Field(default=None, ge=1)
    """Stop after this many iterations in a row without a better best validation score."""
    score_threshold: float | None = Field(default=None, ge=0.0, le=1.0)
    """Stop once the best validation mean reaches this."""
    out_of_ideas_after: int | None = Field(default=3, ge=1, le=100_000)
    """End the run (``out_of_ideas``) after this many reflection iterations in a row that made
    no new candidate: the reflection only repeated texts already tried (rejected, edited away,
    pooled) however often it was asked again, or had nothing to propose. Each such iteration
    still costs its reflection calls; a person who rejects every idea is told to edit or to try
    another reflection model instead. None: never (the run goes on to its other limits)."""
    timeout_seconds: float | None = Field(default=None, gt=0)
    """Limit on the run's machine time, checked between iterations: time paused or waiting at
    a gate for a person does not count."""
    minibatch_size: int = Field(default=3, ge=1, le=1000)
    """Training examples each iteration scores the parent and its child on (GEPA's
    minibatch)."""
    candidate_selection: Selection = Selection.PARETO
    """How each iteration picks its parent: ``pareto`` (GEPA's: among the candidates best on
    some validation example), ``greedy`` (the best mean) or ``epsilon_greedy``."""
    epsilon: float = Field(default=0.1, ge=0.0, le=1.0)
    """Exploration rate for ``epsilon_greedy``."""
    max_concurrency: int = Field(default=4, ge=1, le=256)
    """Model calls in flight at once: the agent's, the critic's and the reflection's, a freed
    slot going to the most urgent call (a reflection, then a minibatch a gate waits for, then
    a validation: :mod:`studio.runtime.slots`). A critic that calls its models outside the
    run's executor is counted by its chains (at most this many at once)."""
    parallel_proposals: int | None = Field(default=None, ge=1, le=64)
    """Iterations in flight at once (lanes: iteration i starts when iteration i - k has
    settled), sharing the ``max_concurrency`` slots; None picks the count whose minibatches
    come nearest to filling the slots (1 for the default 4 slots and minibatches of 3, 2 for 5
    slots). Each iteration sees what iteration i - k left, so a seeded run reproduces; in
    review mode each lane's proposal waits for a person. One lane under ``max_metric_calls``,
    with merge, in align runs and on the embedded model (:mod:`studio.engine.loop.window`)."""
    processes: int = Field(default=1, ge=1, le=64)
    """Worker processes a batch's agent->critic chains fan out to (framework CPU is bound by
    one process's GIL); the concurrency limit holds in total. Runs defined by a spec only."""
    review: ReviewMode = ReviewMode.AUTO
    """``auto``: the acceptance rule decides alone; ``review``: every evaluated proposal waits
    for a person's accept, edit or reject."""
    seed: int = 0
    """One seed makes a run with the scripted model reproducible."""
    call_timeout_seconds: float = Field(default=300.0, gt=0)
    """Limit for one model call (agent, critic or reflection)."""
    max_retries: int = Field(default=3, ge=0, le=10)
    """Further attempts of a model call after a retryable failure (429, 5xx, timeout)."""
    use_merge: bool = False
    """GEPA's merge: after an accepted proposal, combine two pool candidates that improved
    different components since a common ancestor. Off by default, as in GEPA."""
    max_merge_invocations: int = Field(default=5, ge=0, le=1000)
    """Most merge proposals a run makes (accepted or not)."""
    skip_perfect_score: bool = True
    """Skip the reflection when the parent scores at least ``perfect_score`` on every example of
    its minibatch: no child could beat it under the rule, so GEPA (same name, same default)
    spends no reflection and no child trials there. The iteration still counts (toward
    ``max_iterations``, as one without improvement for ``patience``), and so do the parent's
    trials, against ``max_metric_calls``. A trial that could not be evaluated is not perfect."""
    perfect_score: float = Field(default=1.0, ge=0.0, le=1.0)
    """The score that counts as perfect for ``skip_perfect_score`` (GEPA's ``perfect_score``)."""
    rate_limits: dict[str, RateLimit] = Field(default_factory=dict, max_length=100)
    """Per model string: requests per minute (``{openai/gpt-4o-mini: 500}``) or
    ``{requests: N, per_seconds: S}``, for the models the server's own limits
    (``STUDIO_RATE_LIMITS``) leave out. Shared by every run in the same process (a worker's runs
    together), so only a project run from the command line may set them; a project from the
    browser is refused (docs/guides/providers.md)."""

    @model_validator(mode="before")
    @classmethod
    def _accept_gepa_adk_names(cls, data):
        """gepa-adk's spellings translated to the studio's (see :data:`GEPA_ADK_RENAMED`)."""
        if not isinstance(data, dict):
            return data
        return translate_gepa_adk_names(data, known=set(cls.model_fields))

    @model_validator(mode="before")
    @classmethod
    def _explain_enums(cls, data):
        """Name the allowed values when a policy name is wrong (pydantic's message is terse)."""
        if isinstance(data, dict):
            for key, enum in (("candidate_selection", Selection), ("review", ReviewMode)):
                value = data.get(key)
                if isinstance(value, str) and value not in {e.value for e in enum}:
                    allowed = ", ".join(e.value for e in enum)
                    raise ValueError(f"{key} {value!r} is not one of: {allowed}")
        return data

    @model_validator(mode="after")
    def _merge_can_happen(self):
        """``use_merge`` with no merge allowed is a contradiction worth naming, not a no-op."""
        if self.use_merge and self.max_merge_invocations == 0:
            raise ValueError("use_merge is on but max_merge_invocations is 0, so no merge could "
                             "ever be proposed: set max_merge_invocations to 1 or more, or turn "
                             "use_merge off")
        return self


class InvalidConfigError(ConfigError):
    """``EvolutionConfig(...)`` refused its arguments: pydantic's messages, one line per problem,
    with the first field in ``where``/``field``; ``errors()`` lists them all as pydantic does."""

    def __init__(self, exc: ValidationError | str, given: set[str] | None = None) -> None:
        if not isinstance(exc, ValidationError):  # unpickled: only the message survives
            self.validation_error = None
            super().__init__(str(exc))
            return
        self.validation_error = exc
        problems = exc.errors()
        first: Mapping[str, Any] = problems[0] if problems else {}
        field = ".".join(str(part) for part in first.get("loc", ())) or None
        field = _name_given(field, given or set())
        lines = [_problem_line(problem, with_field=len(problems) > 1) for problem in problems]
        super().__init__("\n".join(lines) or str(exc),
                         where=f"EvolutionConfig.{field}" if field else "EvolutionConfig",
                         value=first.get("input") if field else None, field=field)

    def errors(self) -> list[ErrorDetails]:
        return self.validation_error.errors() if self.validation_error is not None else []


def _problem_line(problem: ErrorDetails, *, with_field: bool) -> str:
    field = ".".join(str(part) for part in problem.get("loc", ())) if with_field else ""
    message = str(problem.get("msg", "")).removeprefix("Value error, ")
    shown = repr(problem.get("input"))
    shown = shown if len(shown) <= 80 else shown[:77] + "..."
    line = f"{field}: {message}" if field else message
    return line if "input" not in problem or problem.get("type") == "value_error" \
        else f"{line} (got {shown})"


def _name_given(field: str | None, given: set[str]) -> str | None:
    """The field as the caller spelled it: gepa-adk's ``max_concurrent_evals=0`` is refused as
    ``max_concurrent_evals``, not as the studio's ``max_concurrency`` it was renamed to."""
    for old, new in GEPA_ADK_RENAMED.items():
        if field == new and old in given and new not in given:
            return old
    return field


def config_error(exc: ValidationError, given: set[str] | None = None) -> ConfigError:
    """The ConfigError for a refused ``EvolutionConfig``: the one a validator raised (it already
    names the gepa-adk field), else pydantic's messages as an :class:`InvalidConfigError`
    (``given``: the argument names, to name a renamed field as the caller spelled it)."""
    for problem in exc.errors():
        inner = (problem.get("ctx") or {}).get("error")
        if isinstance(inner, ConfigError):
            return inner
    return InvalidConfigError(exc, given)


# --------------------------------------------------------------------------- gepa-adk's names

GEPA_ADK_RENAMED = {"max_concurrent_evals": "max_concurrency",
                    "reflection_minibatch_size": "minibatch_size"}
"""gepa-adk field -> the studio field with the same meaning."""

GEPA_ADK_SAME_RULE: dict[str, tuple[tuple[Any, ...], str]] = {
    "min_improvement_threshold": (
        (0,), "the studio accepts a child whose minibatch sum is strictly above its parent's, "
              "with no margin; only 0 means that"),
    "acceptance_metric": (
        ("sum", "mean"), "the studio compares sums over the same examples, which orders "
                         "children exactly as means do"),
    "frontier_type": (
        ("instance",), "the studio's Pareto front is per validation example (gepa-adk's "
                       "'instance'); objective fronts are not supported"),
}
"""gepa-adk fields whose listed values describe what the studio always does (accepted and
dropped); any other value is refused with the reason."""

GEPA_ADK_ELSEWHERE = {
    "reflection_model": "pass evolve(..., reflection_model=...) (project file: reflection.model)",
    "reflection_prompt": "pass evolve(..., reflection_agent=...) with that instruction "
                         "(project file: reflection.instruction)",
    "stop_callbacks": "use timeout_seconds, score_threshold, max_metric_calls or stop the run "
                      "from the studio",
    "on_iteration": "pass evolve(..., on_event=...): it is called for every engine event",
    "proposal_validator": "use review='review' to decide on each proposal",
    "checkpoint_path": "every step is already committed to the store",
    "resume": "pass evolve(..., resume=RUN_ID) or run `studio resume RUN_ID`",
    "reflection_timeout_seconds": "call_timeout_seconds limits every model call, reflection "
                                  "included",
    "reflection_max_trials": "the reflection sees the minibatch's trials (minibatch_size)",
    "reflection_max_trial_chars": "trial texts are bounded by the studio's own limits",
    "max_consecutive_reflection_errors": "a failed reflection invalidates that proposal only",
}
"""gepa-adk fields with no EvolutionConfig equivalent, and where their intent goes instead."""


def translate_gepa_adk_names(data: Mapping[str, object], *, known: set[str]) -> dict[str, Any]:
    """``data`` with gepa-adk's spellings replaced by the studio's.

    ``patience=0`` (gepa-adk: no early stopping) becomes None, ``seed=None`` the studio's
    default seed (runs are always seeded). Names in ``known`` (the studio's own fields) are left
    alone, so a field the studio adds later is never mistaken for a foreign one.

    Raises:
        ConfigError: a gepa-adk name or value that has no studio meaning, or both spellings of
            one field with different values; ``where`` names the field.
    """
    data = dict(data)
    if data.get("patience") == 0 and not isinstance(data.get("patience"), bool):
        data["patience"] = None
    for old, new in GEPA_ADK_RENAMED.items():
        if old in data and old not in known:
            _rename(data, old, new)
    for name, (values, rule) in GEPA_ADK_SAME_RULE.items():
        if name in data and name not in known:
            _drop_if_same_rule(data, name, values, rule)
    for name, instead in GEPA_ADK_ELSEWHERE.items():
        if name in data and name not in known:
            raise ConfigError(f"gepa-adk's {name} has no EvolutionConfig equivalent: {instead}",
                              where=f"EvolutionConfig.{name}", value=data[name])
    if "seed" in data and data["seed"] is None and "seed" in known:
        del data["seed"]
    return data


def _rename(data: dict[str, Any], old: str, new: str) -> None:
    value = data.pop(old)
    if value is None and old == "reflection_minibatch_size":
        raise ConfigError("None (every proposal on the whole trainset) has no studio "
                          "equivalent: the gate always samples a minibatch; set minibatch_size",
                          where=f"EvolutionConfig.{old}", value=value)
    if new in data and data[new] != value:
        raise ConfigError(f"gepa-adk's {old}={value!r} and {new}={data[new]!r} name the same "
                          f"setting; give only {new}", where=f"EvolutionConfig.{old}", value=value)
    data[new] = value


def _drop_if_same_rule(data: dict[str, Any], name: str, values: tuple[Any, ...],
                       rule: str) -> None:
    value = data.pop(name)
    shown = getattr(value, "value", value)  # gepa-adk's enums are str enums
    if isinstance(shown, bool) or shown not in values:
        raise ConfigError(f"{shown!r} cannot be honoured: {rule}",
                          where=f"EvolutionConfig.{name}", value=value)
