"""Criteria judge with numeric (1-10) or binary scoring, pass rates and logged eval runs.

One holistic verdict on an output against free-text criteria. To judge a trajectory against a
checklist, one verdict per requirement, use
:class:`studio.evaluators.requirements_judge.AgentAsJudgeEvaluator` instead.

Follows Agno's ``AgentAsJudgeEval``: ``run(input=..., output=...)`` or ``run(cases=[...])``
(``arun`` for async), ``passed = score >= threshold``, ``on_fail`` called (sync or async) for each
case that did not pass, and an aggregate with avg/min/max/std score and pass rate.

Differences, on purpose:

- A failed judge call (model error, reply without JSON, a score of 11 or "seven") is *recorded*
  as a case with ``error`` set and ``passed=None``; it is not dropped, and it is not counted as a
  failure: pass rate and score statistics cover judged cases only (``error_count`` says how many
  were not). ``on_fail`` is not called for it.
- ``pass_rate`` is a percentage (0-100) as in Agno; ``pass_fraction`` is the same in [0, 1]
  (code that read ``pass_rate`` as a fraction reads ``pass_fraction``: see the Agno table in
  docs/guides/evaluators.md). With no judged case both are None, where Agno reports 0.0.
- The judge is an ADK agent reached through LiteLLM: ``model`` is a LiteLLM string or an
  Agno-style model object (``OpenAIChat(id="gpt-4o")`` -> ``"openai/gpt-4o"``), and
  ``evaluator_agent`` an ADK ``LlmAgent`` (an Agno ``Agent`` is refused, naming what to pass).
  ``telemetry`` is accepted and changes nothing: the studio sends no telemetry.
- The judged output is fenced between random nonce markers, and the judge is told the fenced
  text is data.
- Runs are logged to the studio's store (``db=``: a :class:`studio.store.Store` or a database URL)
  and can be listed with :meth:`AgentAsJudgeEval.eval_runs`.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import statistics
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol, cast

from pydantic import BaseModel, Field, model_validator

from studio.evaluators._judge import (
    DATA_NOTE,
    Fence,
    Judge,
    JudgeReply,
    parse_bool,
    parse_number,
    resolve_model,
    run_sync,
)
from studio.evaluators.base import as_text
from studio.model.errors import ConfigError, StudioError
from studio.model.printable import printable as _printable
from studio.store import EvalRun, open_store

if TYPE_CHECKING:
    from google.adk.agents import BaseAgent

    from studio.runtime.execution import AgentExecutor

logger = logging.getLogger(__name__)

STRATEGIES = ("numeric", "binary")
EVAL_KIND = "agent_as_judge"


class NumericJudgeResponse(BaseModel):
    """The judge's reply in numeric mode."""

    score: int = Field(ge=1, le=10, description="Score between 1 and 10.")
    reason: str = Field(description="Detailed reasoning for the evaluation.")


class BinaryJudgeResponse(BaseModel):
    """The judge's reply in binary mode."""

    passed: bool = Field(description="Pass/fail result.")
    reason: str = Field(description="Detailed reasoning for the evaluation.")


class AgentAsJudgeEvaluation(BaseModel):
    """One case judged by :class:`AgentAsJudgeEval` (what ``on_fail`` receives)."""

    input: str
    output: str
    criteria: str
    score: int | None = None
    """1-10 in numeric mode; None in binary mode or when the judge failed."""
    reason: str = ""
    passed: bool | None = None
    """None when the judge could not evaluate (see ``error``)."""
    error: str | None = None
    """Why the judge could not evaluate: call failure, no JSON, score outside 1-10."""
    raw_reply: str | None = None
    """The judge's reply text, kept when it could not be used."""

    @property
    def evaluated(self) -> bool:
        return self.error is None

    @property
    def normalized_score(self) -> float | None:
        """The verdict in [0, 1]: ``(score - 1) / 9`` in numeric mode, 1/0 in binary mode."""
        if self.error is not None or self.passed is None:
            return None
        if self.score is not None:
            return (self.score - 1) / 9
        return 1.0 if self.passed else 0.0

    def print_eval(self, console: object = None) -> None:
        """Print this case for a person (Agno's ``print_eval``); model text is made inert."""
        status = {True: "PASSED", False: "FAILED", None: "NOT EVALUATED"}[self.passed]
        rows = [("Input", _clip_line(self.input)), ("Output", _clip_line(self.output))]
        if self.score is not None:
            rows.append(("Score", f"{self.score}/10"))
        rows.append(("Status", status))
        rows.append(("Reason", printable(self.reason) or "-"))
        if self.error is not None:
            rows.append(("Error", printable(self.error)))
        _emit(console, "[ Agent As Judge Evaluation ]", rows)


class AgentAsJudgeResult(BaseModel):
    """All cases of one run, every one kept, with statistics over the judged ones."""

    run_id: str
    name: str | None = None
    results: list[AgentAsJudgeEvaluation] = Field(default_factory=list)
    avg_score: float | None = None
    min_score: float | None = None
    max_score: float | None = None
    std_dev_score: float | None = None
    """Sample standard deviation (0.0 for a single score)."""
    pass_rate: float | None = None
    """Passed / judged cases as a percentage (0-100), as Agno reports it; None when no case
    was judged."""
    pass_fraction: float | None = None
    """The same in [0, 1]."""
    passed_count: int = 0
    failed_count: int = 0
    error_count: int = 0
    """Cases the judge could not evaluate; excluded from the rate and the statistics."""
    eval_run_id: int | None = None
    """Id of the logged eval run in the store, when ``db`` was given."""
    log_error: str | None = None
    """Why logging to the store failed, if it did (the results are still returned)."""

    @classmethod
    def from_results(cls, run_id: str, name: str | None,
                     results: list[AgentAsJudgeEvaluation]) -> AgentAsJudgeResult:
        return cls(run_id=run_id, name=name, results=results)

    @model_validator(mode="after")
    def _derive_stats(self) -> AgentAsJudgeResult:
        """Statistics follow the cases, as Agno's ``__post_init__`` computes them:
        ``AgentAsJudgeResult(run_id=..., results=[...])`` is complete."""
        if self.results:
            self.compute_stats()
        return self

    def compute_stats(self) -> None:
        """Recompute the statistics from ``results`` (Agno's method; call it after appending)."""
        judged = [r for r in self.results if r.passed is not None]
        scores = [float(r.score) for r in judged if r.score is not None]
        passed = sum(1 for r in judged if r.passed)
        values = {
            "avg_score": statistics.fmean(scores) if scores else None,
            "min_score": min(scores) if scores else None,
            "max_score": max(scores) if scores else None,
            "std_dev_score": (statistics.stdev(scores) if len(scores) > 1 else 0.0)
            if scores else None,
            "pass_rate": 100 * passed / len(judged) if judged else None,
            "pass_fraction": passed / len(judged) if judged else None,
            "passed_count": passed, "failed_count": len(judged) - passed,
            "error_count": len(self.results) - len(judged),
        }
        for field, value in values.items():  # no validate_assignment: no re-entry
            setattr(self, field, value)

    def summary(self) -> dict[str, Any]:
        """The aggregate numbers (what the store keeps as the run's summary)."""
        return self.model_dump(exclude={"results", "eval_run_id", "log_error"})

    def print_results(self, console: object = None) -> None:
        """Print every case (Agno's ``print_results``)."""
        for evaluation in self.results:
            evaluation.print_eval(console)

    def print_summary(self, console: object = None) -> None:
        """Print the aggregate (Agno's ``print_summary``), with the cases not evaluated."""
        rows = [("Number of Evaluations", str(len(self.results))),
                ("Pass Rate", "-" if self.pass_rate is None else f"{self.pass_rate:.1f}%")]
        if self.avg_score is not None:
            rows.append(("Average Score", f"{self.avg_score:.2f}/10"))
            if len(self.results) > 1:
                rows += [("Min Score", f"{self.min_score:.2f}/10"),
                         ("Max Score", f"{self.max_score:.2f}/10")]
        if self.error_count:
            rows.append(("Not Evaluated", str(self.error_count)))
        _emit(console, "[ Agent As Judge Evaluation Summary ]", rows)


OnFail = Callable[[AgentAsJudgeEvaluation], object]
"""A caller's callback on a failed case; what it returns is awaited when awaitable."""


class EvalRunLog(Protocol):
    """Where judged runs are logged: a studio :class:`~studio.store.Store` (or an object with
    its two methods)."""

    def add_eval_run(self, name: str, kind: str, summary: dict[str, Any],
                     cases: list[dict[str, Any]]) -> int: ...

    def list_eval_runs(self, name: str | None = None, limit: int = 100) -> list[EvalRun]: ...


class AgentAsJudgeEval:
    """Judge outputs against free-text criteria with an LLM (one holistic verdict per case).

    Args:
        criteria: what a good output does.
        scoring_strategy: ``"numeric"`` (1-10, ``NumericJudgeResponse``) or ``"binary"``
            (``BinaryJudgeResponse``); binary by default, as in Agno.
        threshold: numeric mode passes when ``score >= threshold`` (1-10).
        additional_guidelines: extra rules, one string or a list.
        on_fail: called with each case that did not pass; may be a coroutine function.
        model: LiteLLM model string, or an Agno-style model object with an ``id`` (mapped to
            LiteLLM's ``provider/id``); the embedded model by default.
        evaluator_agent: an ADK ``LlmAgent`` to judge with instead of the built one: its own
            instruction is kept, its reply schema set (on a copy: the agent is not mutated),
            and the prompt carries the data rule and the answer format.
        executor: an :class:`studio.runtime.execution.AgentExecutor` to share.
        db: a :class:`studio.store.Store`, a database URL, or None (nothing logged).
        name: the eval's name in the store.
        print_results, print_summary: print every case / the aggregate after each run, as
            ``run(print_results=True)`` does.
        telemetry: accepted for Agno's callers; the studio sends no telemetry either way.

    Raises:
        ConfigError: empty criteria, an unusable ``db``, a model that cannot be mapped, an
            ``evaluator_agent`` that is not an ADK agent.
        ValueError: a strategy or threshold outside the allowed values.
    """

    def __init__(
        self,
        criteria: str = "",
        scoring_strategy: Literal["numeric", "binary"] = "binary",
        threshold: int = 7,
        additional_guidelines: str | Sequence[str] | None = None,
        on_fail: OnFail | None = None,
        model: object = None,
        executor: AgentExecutor | None = None,
        db: EvalRunLog | str | None = None,
        name: str | None = None,
        evaluator_agent: BaseAgent | None = None,
        print_results: bool = False,
        print_summary: bool = False,
        telemetry: bool = True,
    ) -> None:
        if not isinstance(criteria, str) or not criteria.strip():
            raise ConfigError("criteria is empty: say what a good output does", where="criteria",
                              value=criteria)
        if scoring_strategy not in STRATEGIES:
            raise ValueError(f"scoring_strategy must be one of {', '.join(STRATEGIES)}; "
                             f"got {scoring_strategy!r}")
        if isinstance(threshold, bool) or not isinstance(threshold, int) or not (
                1 <= threshold <= 10):
            raise ValueError(f"threshold must be an integer from 1 to 10; got {threshold!r}")
        self.criteria = criteria
        self.scoring_strategy = scoring_strategy
        self.threshold = threshold
        self.additional_guidelines = additional_guidelines
        self.on_fail = on_fail
        self.model = resolve_model(model, None)
        self.name = name
        self.db = _check_db(db)
        self.print_results = print_results
        self.print_summary = print_summary
        self.telemetry = telemetry  # nothing is sent: kept so Agno's code reads it back
        self._custom_agent = _judge_agent(evaluator_agent, self._response_model())
        self._judge = Judge(name="criteria_judge", model=self.model, system=self._system(),
                            schema=self._response_model().model_json_schema(), executor=executor,
                            agent=self._custom_agent)

    # ------------------------------------------------------------------ public API

    def run(self, *, input: str | None = None, output: str | None = None,
            cases: Sequence[Mapping[str, Any]] | None = None, print_summary: bool = False,
            print_results: bool = False, run_metrics: object = None) -> AgentAsJudgeResult:
        """Judge one ``input``/``output`` pair or a list of ``cases`` (dicts with both keys).

        ``print_results`` / ``print_summary`` print each case / the aggregate to stdout once
        judged, as in Agno (model text printed inert: control characters escaped).
        ``run_metrics`` is accepted for Agno's callers and left untouched.

        Raises:
            ValueError: both or neither of (input, output) and cases, or a malformed case.
        """
        return run_sync(self.arun(input=input, output=output, cases=cases,
                                  print_summary=print_summary, print_results=print_results,
                                  run_metrics=run_metrics))

    async def arun(self, *, input: str | None = None, output: str | None = None,
                   cases: Sequence[Mapping[str, Any]] | None = None, print_summary: bool = False,
                   print_results: bool = False, run_metrics: object = None) -> AgentAsJudgeResult:
        """Async :meth:`run`; cases are judged concurrently (the executor bounds it)."""
        pairs = _pairs(input, output, cases)
        evaluations = await asyncio.gather(*(self.judge_case(i, o) for i, o in pairs))
        for evaluation in evaluations:
            if evaluation.passed is False:
                await self._notify(evaluation)
        result = AgentAsJudgeResult.from_results(str(uuid.uuid4()), self.name, list(evaluations))
        if self.db is not None:
            await asyncio.to_thread(self._log, result)
        if print_results or self.print_results:
            result.print_results()
        if print_summary or self.print_summary:
            result.print_summary()
        return result

    @property
    def evaluator_agent(self) -> BaseAgent | None:
        """The caller's ADK judge agent, or None when the built one judges."""
        return self._custom_agent

    @evaluator_agent.setter
    def evaluator_agent(self, agent: object) -> None:
        """Assignable after construction, as in Agno; the built agent assigned back (from
        :meth:`get_evaluator_agent`) stays the built one."""
        if agent is not None and agent is self._judge.agent():
            return
        self._custom_agent = _judge_agent(agent, self._response_model())
        self._judge._agent = self._custom_agent

    def get_evaluator_agent(self) -> BaseAgent:
        """The ADK agent that judges (Agno's name): ``evaluator_agent`` when one was given,
        else the one built from the criteria, strategy and model."""
        return self._judge.agent()

    async def judge_case(self, input: str, output: str | None) -> AgentAsJudgeEvaluation:
        """Judge one case without logging or ``on_fail`` (the critic path uses this).

        An output of None (the agent produced nothing) is recorded as not evaluated.
        """
        if output is None:
            return AgentAsJudgeEvaluation(input=input, output="", criteria=self.criteria,
                                          error="no output to judge (it is None)")
        fence = Fence()
        prompt = f"<input>\n{input}\n</input>\n\n{fence.wrap(output, 'output')}\n"
        if self._custom_agent is not None:  # its own instruction lacks the rules: say them
            prompt += f"\n## Criteria\n{self.criteria}\n\n{DATA_NOTE}\n{self._answer_line()}"
        reply = await self._judge.ask(prompt)
        return self._evaluation(input, output, reply)

    def eval_runs(self, limit: int = 100) -> list[EvalRun]:
        """Logged runs of this eval (by ``name``), newest first; [] when no ``db`` was given."""
        store = self._store()
        return [] if store is None else store.list_eval_runs(name=self._run_name(), limit=limit)

    # ------------------------------------------------------------------ internals

    def _response_model(self) -> type[BaseModel]:
        return NumericJudgeResponse if self.scoring_strategy == "numeric" else BinaryJudgeResponse

    def _system(self) -> str:
        lines = ["You are an expert evaluator. Score outputs objectively based on the provided "
                 "criteria.", "", "## Criteria", self.criteria, ""]
        lines += _NUMERIC_LINES if self.scoring_strategy == "numeric" else _BINARY_LINES
        lines += _guideline_lines(self.additional_guidelines)
        lines += ["", DATA_NOTE, "", "Be objective and thorough in your evaluation.",
                  self._answer_line()]
        return "\n".join(lines)

    def _answer_line(self) -> str:
        answer = ('{"score": <integer 1-10>, "reason": "<reasoning>"}'
                  if self.scoring_strategy == "numeric"
                  else '{"passed": <true or false>, "reason": "<reasoning>"}')
        return f"Respond with JSON only: {answer}"

    def _evaluation(self, input: str, output: str, reply: JudgeReply) -> AgentAsJudgeEvaluation:
        made = functools.partial(AgentAsJudgeEvaluation, input=input, output=output,
                                 criteria=self.criteria)
        if reply.error is not None:
            return made(error=f"judge call failed: {reply.error}")
        if reply.data is None:
            return made(error="judge reply holds no JSON object", raw_reply=reply.text[:2000])
        reason = str(reply.data.get("reason") or reply.data.get("reasoning") or "")
        if self.scoring_strategy == "numeric":
            score, problem = numeric_score(reply.data.get("score"))
            if score is None:
                return made(reason=reason, error=problem, raw_reply=reply.text[:2000])
            return made(score=score, reason=reason, passed=score >= self.threshold)
        passed = parse_bool(reply.data.get("passed", reply.data.get("pass")))
        if passed is None:
            return made(
                reason=reason, raw_reply=reply.text[:2000],
                error=f"judge verdict {reply.data.get('passed')!r} is not true or false")
        return made(reason=reason, passed=passed)

    async def _notify(self, evaluation: AgentAsJudgeEvaluation) -> None:
        """Call ``on_fail``; its own errors are logged, never allowed to lose the results."""
        if self.on_fail is None:
            return
        try:
            outcome = self.on_fail(evaluation)
            if inspect.isawaitable(outcome):
                await outcome
        except Exception:
            logger.warning("on_fail callback raised", exc_info=True)

    def _store(self) -> EvalRunLog | None:
        if isinstance(self.db, str):

            self.db = open_store(self.db)
        return self.db

    def _run_name(self) -> str:
        return self.name or EVAL_KIND

    def _log(self, result: AgentAsJudgeResult) -> None:
        summary = {**result.summary(), "criteria": self.criteria,
                   "scoring_strategy": self.scoring_strategy,
                   "threshold": self.threshold if self.scoring_strategy == "numeric" else None,
                   "additional_guidelines": self.additional_guidelines, "model": self.model}
        try:
            store = self._store()  # opening a database URL may fail too: recorded the same way
            if store is None:  # called only with a db
                return
            result.eval_run_id = store.add_eval_run(
                self._run_name(), EVAL_KIND, summary, [r.model_dump() for r in result.results])
        except StudioError as exc:  # keep the results; say the log failed
            result.log_error = str(exc)
            logger.warning("could not log eval run %r: %s", self._run_name(), exc)


_NUMERIC_LINES = [
    "## Scoring (1-10)",
    "- 1-2: Completely fails the criteria",
    "- 3-4: Major issues",
    "- 5-6: Partial success with significant issues",
    "- 7-8: Mostly meets criteria with minor issues",
    "- 9-10: Fully meets or exceeds criteria",
    "",
    "## Instructions",
    "1. Carefully evaluate the output against the criteria above",
    "2. Provide a score from 1-10",
    "3. Provide detailed reasoning that references specific parts of the output",
]
_BINARY_LINES = [
    "## Evaluation",
    "Determine if the output PASSES or FAILS the criteria above.",
    "",
    "## Instructions",
    "1. Carefully evaluate the output against the criteria above",
    "2. Decide if it passes (true) or fails (false)",
    "3. Provide detailed reasoning that references specific parts of the output",
]


def _guideline_lines(guidelines: str | Sequence[str] | None) -> list[str]:
    if not guidelines:
        return []
    if isinstance(guidelines, str):
        return ["", "## Additional Guidelines", guidelines]
    return ["", "## Additional Guidelines", *(f"- {g}" for g in guidelines)]


def numeric_score(raw: object) -> tuple[int | None, str]:
    """A judge's 1-10 score, or ``(None, reason)``: never clamped, never guessed from words."""
    if raw is None:
        return None, "judge reply has no 'score'"
    number = parse_number(raw)
    if number is None:
        return None, f"judge score {raw!r} is not a number from 1 to 10"
    if not number.is_integer():
        return None, f"judge score {raw!r} is not a whole number from 1 to 10"
    if not 1 <= number <= 10:
        return None, f"judge score {raw!r} is outside 1-10"
    return int(number), ""


def _pairs(input: str | None, output: str | None,
           cases: Sequence[Mapping[str, Any]] | None) -> list[tuple[str, str | None]]:
    """The cases to judge. An output of None is kept (recorded as not evaluated)."""
    single = input is not None or output is not None
    if single and cases is not None:
        raise ValueError("provide either (input, output) or cases, not both")
    if not single and cases is None:
        raise ValueError("provide either (input, output) or cases")
    if single:
        if input is None:
            raise ValueError("input is required for a single evaluation")
        return [(str(input), _text_or_none(output))]
    pairs = []
    for index, case in enumerate(cases or []):
        if not isinstance(case, Mapping) or "input" not in case or "output" not in case:
            shown = sorted(case) if isinstance(case, Mapping) else type(case).__name__
            raise ValueError(f"case {index} must be a dict with 'input' and 'output'; got "
                             f"{shown}")
        pairs.append((str(case["input"]), _text_or_none(case["output"])))
    return pairs


def _text_or_none(value: object) -> str | None:
    return None if value is None else as_text(value)


def _judge_agent(agent: object, schema: type[BaseModel]) -> BaseAgent | None:
    """A caller's ADK judge agent, copied with the reply schema set (Agno sets it too); None
    when none was given.

    Raises:
        ConfigError: not an ADK agent (an Agno ``Agent`` cannot run here).
    """
    if agent is None:
        return None
    from google.adk.agents import BaseAgent, LlmAgent

    if not isinstance(agent, BaseAgent):
        raise ConfigError(
            f"evaluator_agent must be an ADK agent (google.adk.agents.LlmAgent), got "
            f"{type(agent).__module__}.{type(agent).__name__}; an Agno Agent cannot run in the "
            "studio: pass model=... (a LiteLLM string or a model object with an id) to use the "
            "built judge, or an LlmAgent with your instruction", where="evaluator_agent",
            value=type(agent).__name__)
    if isinstance(agent, LlmAgent):
        return agent.model_copy(update={"output_schema": schema})
    return agent


def printable(text: object) -> str:
    """``text`` safe for a terminal: control and format characters (escape sequences, bidi
    overrides) shown as ``\\x1b``-style escapes; newlines and tabs kept."""
    return _printable(text)


def _clip_line(text: str, limit: int = 200) -> str:
    shown = printable(text)
    return shown if len(shown) <= limit else shown[:limit] + "..."


def _emit(console: Any, title: str, rows: list[tuple[str, str]]) -> None:
    """A titled two-column block, to ``console.print`` when given (a rich Console), else
    stdout."""
    width = max(len(label) for label, _ in rows)
    lines = [title] + [f"{label:<{width}}  " + value.replace("\n", "\n" + " " * (width + 2))
                       for label, value in rows]
    text = "\n".join(lines)
    if console is not None and callable(getattr(console, "print", None)):
        console.print(text, **_plain_text_options(console))
    else:
        print(text)


def _plain_text_options(console: Any) -> dict[str, bool]:
    """For a rich Console: no markup, emoji codes or highlighting in model text."""
    try:
        accepted = inspect.signature(console.print).parameters
    except (TypeError, ValueError):
        return {}
    return {name: False for name in ("markup", "emoji", "highlight") if name in accepted}


def _check_db(db: object) -> EvalRunLog | str | None:
    if db is None or isinstance(db, str):
        return db
    if callable(getattr(db, "add_eval_run", None)):
        return cast(EvalRunLog, db)  # a caller's object: its add_eval_run checked just above
    raise ConfigError("db must be a studio Store, a database URL or None; got "
                      f"{type(db).__name__}", where="db", value=db)
