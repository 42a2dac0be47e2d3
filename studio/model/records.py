"""Domain records: agent specs, dataset examples, and what a run leaves in the store.

Scores shown to people are means in [0, 1]. "Could not evaluate" is ``None``, never 0.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    computed_field,
    field_validator,
    model_validator,
)

from studio.model.agent_models import LOCAL_MODEL, ModelOverrides
from studio.model.base import ConfigModel
from studio.model.config import EvolutionConfig
from studio.model.consensus import (
    OUTPUT_SEPARATOR,
    consensus_score,
    joined_texts,
    mean_dimensions,
)
from studio.model.errors import ConfigError, DatasetError, SchemaError, StudioError
from studio.model.evidence import Evidence
from studio.model.feedback import Feedback
from studio.model.graph import GraphShape
from studio.model.limits import (
    MAX_COMPONENT_CHARS,
    MAX_DATASET_MEDIA_BYTES,
    MAX_DATASET_ROWS,
    MAX_DEMO_CHARS,
    MAX_DEMOS,
)
from studio.model.media import check_example_media, without_media
from studio.model.stops import stop_condition
from studio.model.tools import check_tool_refs
from studio.model.workflow import WorkflowSpec, check_workflow, sequential, split_component

if TYPE_CHECKING:  # google.genai takes about half a second to import (see ``to_adk``)
    from google.genai.types import GenerateContentConfig

COMPONENTS = ("instruction", "output_schema", "generate_content_config", "few_shot")
"""Parts of an agent that evolution may rewrite, each with its own reflection agent."""

EXPECTED_KEY = "expected"
INPUT_KEY = "input"


def utcnow() -> datetime:
    return datetime.now(UTC)


# --------------------------------------------------------------------------- agent specs


class GenerationConfig(ConfigModel):
    """The part of ADK's ``GenerateContentConfig`` the studio edits and evolves."""

    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    """Sampling temperature, 0 to 2 (None: the model's default)."""
    top_p: float | None = Field(default=None, ge=0.0, le=1.0)
    """Nucleus sampling: the share of probability mass sampled from (None: the model's)."""
    max_output_tokens: int | None = Field(default=None, gt=0, le=32768)
    """Longest reply, in tokens (None: the model's limit)."""

    def to_adk(self) -> GenerateContentConfig | None:
        # google.genai takes about half a second to import; records are loaded by the CLI and
        # the pages long before any agent is built, so pay for it only here.
        from google.genai import types

        values = self.model_dump(exclude_none=True)
        return types.GenerateContentConfig(**values) if values else None


def validate_json_schema(schema: object, *, where: str = "output_schema") -> dict[str, Any]:
    """Check that ``schema`` is itself a valid JSON Schema describing an object.

    Raises:
        SchemaError: naming the JSON path of the first problem.
    """
    # jsonschema is imported on first use so that `import studio` stays light (checked by
    # test_importing_the_library_pulls_no_ml_stack_and_no_model_client).
    import jsonschema

    if isinstance(schema, str):
        try:
            schema = json.loads(schema)
        except json.JSONDecodeError as exc:
            raise SchemaError(
                f"not valid JSON (line {exc.lineno}, column {exc.colno}): {exc.msg}", where=where
            ) from exc
    if not isinstance(schema, dict):
        raise SchemaError("a JSON Schema must be an object", where=where, value=schema)
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        path = "/".join(str(p) for p in exc.path) or "(root)"
        raise SchemaError(f"invalid JSON Schema at {path}: {exc.message}", where=where) from exc
    if schema.get("type", "object") != "object":
        raise SchemaError(
            f"output_schema must describe an object (type 'object'), got {schema.get('type')!r}",
            where=where,
        )
    return schema


class Demo(ConfigModel):
    """A demonstration: one prior exchange the agent's model is shown as real conversation turns
    (the user's ``input``, then the agent's ``output``) before the actual request."""

    input: str = Field(min_length=1, max_length=MAX_DEMO_CHARS)
    """The user's message of the exchange."""
    output: str = Field(min_length=1, max_length=MAX_DEMO_CHARS)
    """The reply the agent is shown giving to it."""


def demos_to_text(demos: Iterable[Demo]) -> str:
    """The ``few_shot`` component's text: a JSON list of ``{"input", "output"}``."""
    return json.dumps([demo.model_dump() for demo in demos], indent=2, ensure_ascii=False)


def demos_from_text(text: str, *, where: str = "few_shot") -> list[Demo]:
    """Parse and bound a ``few_shot`` text (empty text: no demonstrations).

    Raises:
        ConfigError: not JSON, not a list, too many demos, or a demo that is not
            ``{"input": text, "output": text}`` within ``MAX_DEMO_CHARS``; ``where`` names it.
    """
    if not text.strip():
        return []
    if len(text) > MAX_COMPONENT_CHARS:
        raise ConfigError(f"{len(text):,} characters; the limit is {MAX_COMPONENT_CHARS:,}",
                          where=where)
    try:
        values = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"not valid JSON (line {exc.lineno}, column {exc.colno}): {exc.msg}; "
                          'write a list such as [{"input": "...", "output": "..."}]',
                          where=where) from exc
    return checked_demos(values, where=where)


def checked_demos(values: object, *, where: str = "few_shot") -> list[Demo]:
    """``values`` (a list of mappings) as bounded demos, or ConfigError naming the bad one."""
    if not isinstance(values, list):
        raise ConfigError('must be a list of {"input": ..., "output": ...} demonstrations, '
                          f"got {type(values).__name__}", where=where)
    if len(values) > MAX_DEMOS:
        raise ConfigError(f"{len(values)} demonstrations; the limit is {MAX_DEMOS}",
                          where=where)
    demos = []
    for i, value in enumerate(values):
        try:
            demos.append(value if isinstance(value, Demo) else Demo.model_validate(value))
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or '(root)'}: {e['msg']}"
                                 for e in exc.errors())
            raise ConfigError(problems, where=f"{where}[{i}]") from exc
    return demos


class AgentSpec(ConfigModel):
    """A declarative ADK ``LlmAgent``: what the studio edits, stores and evolves."""

    name: str = Field(default="agent", pattern=r"^[A-Za-z_][A-Za-z0-9_]*$", max_length=64)
    """At most 64 characters: ``agent.component`` keys must fit the store's column."""
    model: str = LOCAL_MODEL
    """A LiteLLM model string; ``local/smollm2`` is the embedded offline model."""
    instruction: str = Field(default="", max_length=MAX_COMPONENT_CHARS)
    output_schema: dict[str, Any] | None = None
    """JSON Schema the agent's reply must satisfy, or None for free text."""
    generate_content_config: GenerationConfig = Field(default_factory=GenerationConfig)
    output_key: str | None = Field(default=None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    """In a workflow: the session-state key this agent's reply is written to, which later
    agents' instructions read as ``{key}``."""
    tools: list[str] = Field(default_factory=list)
    """Python function tools as ``package.module:function`` (resolved when the agent is built)."""
    few_shot: list[Demo] = Field(default_factory=list, max_length=MAX_DEMOS)
    """Demonstrations shown to this agent's model as prior conversation turns."""

    @field_validator("output_schema")
    @classmethod
    def _schema_is_valid(cls, value: Mapping[str, object] | None) -> dict[str, Any] | None:
        return None if value is None else validate_json_schema(value)

    @field_validator("tools")
    @classmethod
    def _tools_are_refs(cls, value: list[str], info: ValidationInfo) -> list[str]:
        return check_tool_refs(value, agent=str(info.data.get("name", "agent")))

    def components(self) -> dict[str, str]:
        """The evolvable components as text (JSON for the schema, YAML for the config)."""
        return {
            "instruction": self.instruction,
            "output_schema": json.dumps(self.output_schema, indent=2) if self.output_schema else "",
            "generate_content_config": config_to_yaml(self.generate_content_config),
            "few_shot": demos_to_text(self.few_shot),
        }


def config_to_yaml(config: GenerationConfig) -> str:
    values = config.model_dump(exclude_none=True)
    return yaml.safe_dump(values, sort_keys=False) if values else "{}\n"


def config_from_yaml(text: str, *, where: str = "generate_content_config") -> GenerationConfig:
    """Parse and validate a generate_content_config YAML text."""

    try:
        values = yaml.safe_load(text) if text.strip() else {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"YAML does not parse: {exc}", where=where) from exc
    if values is None:
        values = {}
    if not isinstance(values, dict):
        raise ConfigError("must be a YAML mapping such as 'temperature: 0.3'", where=where)
    try:
        return GenerationConfig(**values)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or '(root)'}: {e['msg']}" for e in exc.errors()
        )
        raise ConfigError(problems, where=where) from exc


def parse_components(components: dict[str, str]) -> dict[str, Any]:
    """Component texts as typed values: the instruction as is, the output schema as a dict (None
    when empty: free text), the config as :class:`GenerationConfig`, the demos as a list of
    :class:`Demo`. Raises on invalid text."""
    parsed: dict[str, Any] = {}
    if "instruction" in components:
        parsed["instruction"] = components["instruction"]
    if "output_schema" in components:
        text = components["output_schema"].strip()
        parsed["output_schema"] = validate_json_schema(text) if text else None
    if "generate_content_config" in components:
        parsed["generate_content_config"] = config_from_yaml(components["generate_content_config"])
    if "few_shot" in components:
        parsed["few_shot"] = demos_from_text(components["few_shot"])
    return parsed


def content_hash(components: dict[str, str]) -> str:
    """Stable hash of a candidate's components, to skip duplicate proposals."""
    canonical = json.dumps({k: components[k].strip() for k in sorted(components)}, sort_keys=True)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


# --------------------------------------------------------------------------- dataset examples


def _checked_example(row: object, *, where: str) -> tuple[dict[str, Any], int]:
    """``(example, bytes of its images and videos)``."""
    if not isinstance(row, dict):
        raise DatasetError(
            f"each example must be a mapping such as {{'topic': 'autumn leaves'}}, "
            f"got {type(row).__name__}",
            where=where,
            value=row,
        )
    inputs = {k: v for k, v in row.items() if k != EXPECTED_KEY}
    if not inputs:
        raise DatasetError("example has no input fields (only 'expected' or nothing)", where=where)
    bad = [k for k in row if not isinstance(k, str)]
    if bad:
        raise DatasetError(f"example keys must be strings, got {bad!r}", where=where)
    return check_example_media(row, where=where)


class CheckedExamples(list[dict[str, Any]]):
    """Examples :func:`validate_examples` returned: given to it again, they are returned as
    they are, so a dataset is checked once however many steps hand it on (a project's rows
    are checked when read, then by the project's check and by ``create_run``). A slice or a
    sum of them is a plain list, checked again (:meth:`subset` keeps the mark: a part of a
    checked split is checked, its images bounded by the whole's)."""

    def subset(self, rows: list[dict[str, Any]]) -> CheckedExamples:
        """``rows``, taken from these examples, as checked."""
        return CheckedExamples(rows)


def validate_examples(rows: object, *, name: str = "trainset") -> CheckedExamples:
    """Checked examples (image data URIs rewritten to their sniffed type), with the split's
    images bounded together; examples it already returned are not checked again."""
    if isinstance(rows, CheckedExamples):
        return rows
    if not isinstance(rows, list | tuple):
        raise DatasetError(f"{name} must be a list of examples", where=name, value=rows)
    if not rows:
        raise DatasetError(f"{name} is empty: add at least one example", where=name)
    if len(rows) > MAX_DATASET_ROWS:
        raise DatasetError(f"{name} has {len(rows):,} examples; the limit is "
                           f"{MAX_DATASET_ROWS:,} (sample it, or split it into several runs)",
                           where=name)
    checked, media_bytes = CheckedExamples(), 0
    for i, row in enumerate(rows):
        example, size = _checked_example(row, where=f"{name}[{i}]")
        checked.append(example)
        media_bytes += size
        if media_bytes > MAX_DATASET_MEDIA_BYTES:
            raise DatasetError(f"the images and videos of {name} add up to more than "
                               f"{MAX_DATASET_MEDIA_BYTES:,} bytes (at row {i}): use fewer or "
                               "smaller ones", where=f"{name}[{i}]")
    return checked


def example_input_text(example: dict[str, Any], input_key: str | None = None) -> str:
    """How an example dict becomes the agent's input text.

    1. ``input_key`` (a project's chosen input column) if given, else the key ``"input"``:
       its value as text.
    2. Otherwise every field except ``expected``, one ``key: value`` per line
       (``{"topic": "autumn leaves"}`` becomes ``"topic: autumn leaves"``).
    The same fields are also put in the session state, so an instruction may say ``{topic}``.
    An image or video field shows as its label (``[image: photo]``): the media itself reaches
    the agent as a part of the message (:func:`studio.model.media.example_media`).
    """
    example = without_media(example)
    key = input_key or (INPUT_KEY if INPUT_KEY in example else None)
    if key is not None:
        if key not in example:
            raise DatasetError(f"example has no field {key!r}", where=key, value=example)
        return _as_text(example[key])
    return "\n".join(f"{k}: {_as_text(v)}" for k, v in example.items() if k != EXPECTED_KEY)


def example_expected(example: Mapping[str, object]) -> str | None:
    value = example.get(EXPECTED_KEY)
    return None if value is None else _as_text(value)


def example_state(example: dict[str, Any]) -> dict[str, Any]:
    """The session state an example starts with: its fields except ``expected``, an image or
    video as its label, so ``{photo}`` in an instruction names the attached image instead of
    pouring its base64 into the prompt."""
    return {k: v for k, v in without_media(example).items() if k != EXPECTED_KEY}


def _as_text(value: object) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


_PLACEHOLDER = re.compile(r"(?<![${\\])\{+([^{}]*)\}+")
"""ADK's own template pattern: ``${x}`` and ``\\{x}`` are left alone."""
_STATE_PREFIXES = ("app:", "user:", "temp:")


def instruction_placeholders(text: str) -> set[str]:
    """The names ADK will fill in an instruction, exactly as ADK reads them: state keys
    (``{topic}``, ``{user:name}``) and artifacts (``{artifact.notes}``). Optional ones
    (``{name?}``) and anything else in braces (JSON, ``{not a name}``) ADK leaves alone or fills
    with nothing, so they are not required."""
    names = set()
    for match in _PLACEHOLDER.finditer(text):
        name = match.group(1).strip()
        if not name.endswith("?") and _fillable(name):
            names.add(name)
    return names


def _fillable(name: str) -> bool:
    if name.startswith("artifact.") or name.isidentifier():
        return True
    return name.startswith(_STATE_PREFIXES) and name.split(":", 1)[1].isidentifier()


# --------------------------------------------------------------------------- store records


class RunStatus(StrEnum):
    QUEUED = "queued"
    """Waiting in the store for a ``studio worker`` to claim it (see
    :mod:`studio.engine.hosting.queue`)."""
    PENDING = "pending"
    RUNNING = "running"
    PAUSED = "paused"
    COMPLETED = "completed"
    STOPPED = "stopped"
    FAILED = "failed"
    ORPHANED = "orphaned"
    """Its worker stopped sending heartbeats (crash, SIGKILL); it can be resumed."""

    @property
    def is_active(self) -> bool:
        return self in (RunStatus.QUEUED, RunStatus.PENDING, RunStatus.RUNNING,
                        RunStatus.PAUSED)


class Split(StrEnum):
    TRAIN = "train"
    VAL = "val"
    TEST = "test"
    """Held out: the loop never samples, reflects on or selects with it (the overfitting guard
    scores the baseline and the best candidate on it once the run ends)."""


class TrialPhase(StrEnum):
    VALSET = "valset"
    """Scoring a candidate on the validation set (baseline and accepted children)."""
    PARENT = "parent"
    """The parent on this iteration's minibatch."""
    CHILD = "child"
    """The proposed child on the same minibatch."""
    PROBE = "probe"
    """A one-off 'try on one example' from the studio."""
    TEST = "test"
    """The baseline or the best candidate on the held-out test set (never seen by the loop)."""


class ProposalStatus(StrEnum):
    EVALUATING = "evaluating"
    PENDING = "pending"
    """Evaluated, waiting for a person (review mode)."""
    ACCEPTED = "accepted"
    REJECTED = "rejected"
    EDITED = "edited"
    """Replaced by an edited proposal that is scored and comes back to the gate."""
    INVALID = "invalid"
    """Empty, unchanged, duplicate, or a schema/YAML that does not validate."""


class ProposalKind(StrEnum):
    REFLECTION = "reflection"
    """A reflection agent rewrote one component of one parent."""
    MERGE = "merge"
    """GEPA's merge: whole components taken from two parents (see :class:`MergeDetail`)."""


class MergeDetail(BaseModel):
    """Where a merge's components come from. Component keys are opaque: never parsed."""

    parents: list[int] = Field(min_length=2, max_length=2)
    """The two pool candidates merged (ids); the child's ``parent_ids``."""
    ancestor: int
    """Their common ancestor, against which "improved" is judged."""
    sources: dict[str, int]
    """Component key -> id of the candidate it is taken from: the parent that changed it since
    the ancestor, or the ancestor when neither did."""
    subsample: list[int] = Field(default_factory=list)
    """Validation example ids the child is judged on against both parents."""


class DecisionAction(StrEnum):
    ACCEPT = "accept"
    REJECT = "reject"
    EDIT = "edit"
    STOP = "stop"


class RunRequest(StrEnum):
    """A person's request to the worker running a run, stored on the run until acted on."""

    PAUSE = "pause"
    STOP = "stop"


class NotStoredError(StudioError, ValueError):
    """A record that was never stored was used where only a stored one (with an id) fits."""


def stored_id(record: Candidate | Proposal | Trial | Example | Decision) -> int:
    """The id of a record read from the store (ids are None only before the first write).

    Raises:
        NotStoredError: ``record`` was never stored.
    """
    if record.id is None:
        raise NotStoredError(f"this {type(record).__name__} was never stored, so it has no id: "
                             "store it first")
    return record.id


class StopReason(StrEnum):
    """Why a run ended: stored on the run (``runs.stop_reason``), carried by
    :class:`~studio.engine.run.events.RunFinished` and printed by the CLI, all as these words."""

    # The stop conditions' reasons (their words and settings: studio.model.stops); a
    # condition without a member here still gets one, by its reason (_missing_).
    MAX_ITERATIONS = "max_iterations"
    MAX_METRIC_CALLS = "max_metric_calls"
    PATIENCE = "patience"
    SCORE_THRESHOLD = "score_threshold"
    TIMEOUT = "timeout"
    OUT_OF_IDEAS = "out_of_ideas"
    """``out_of_ideas_after`` iterations in a row had no new text from the reflection."""
    USER = "user"
    """A person's Stop."""
    SHUTDOWN = "shutdown"
    """The worker shut down (SIGTERM): the run ends at its next step so another continues it."""
    DATABASE_UNAVAILABLE = "database_unavailable"
    ERROR = "error"
    NOT_STARTED = "not_started"
    """The run could not be built (a model or key missing where it was started)."""
    LEASE_LOST = "lease lost"
    """Another worker took the run over; this one stopped without writing (never stored)."""
    TEST_SCORED = "test_scored"
    """What a run that only scores a settled run's test set ends with (never stored)."""

    @classmethod
    def _missing_(cls, value: object) -> StopReason | None:
        """The one place older spellings are read back, and where the reason of a stop
        condition that has no member here (:mod:`studio.model.stops`) becomes one."""
        if str(value) in _STOP_REASON_ALIASES:
            return _STOP_REASON_ALIASES[str(value)]
        condition = stop_condition(str(value))
        return None if condition is None else cls._condition_member(condition.reason)

    @classmethod
    def _condition_member(cls, value: str) -> StopReason:
        member = str.__new__(cls, value)
        member._name_ = value.upper()
        member._value_ = value
        cls._value2member_map_[value] = member
        return member

    @property
    def is_limit(self) -> bool:
        """A configured limit was reached: the run is completed and resuming would stop again."""
        return stop_condition(self.value) is not None

    @property
    def leaves_resumable(self) -> bool:
        """A person's stop or a worker's shutdown: the run is stopped and can be resumed."""
        return self in (StopReason.USER, StopReason.SHUTDOWN)

    @property
    def limit_field(self) -> str | None:
        """The :class:`EvolutionConfig` field whose limit this reason reports, if any."""
        condition = stop_condition(self.value)
        return None if condition is None else condition.setting

    @property
    def words(self) -> str:
        """Why the run ended, for people ("reached its iteration limit"): the one wording the
        studio's pages and the CLI both print (a stop condition's own words)."""
        condition = stop_condition(self.value)
        if condition is not None:
            return condition.words
        return _STOP_WORDS.get(self, self.value.replace("_", " "))


_STOP_REASON_ALIASES = {"lost": StopReason.LEASE_LOST, "lease_lost": StopReason.LEASE_LOST}
_STOP_WORDS = {
    StopReason.USER: "stopped by a person",
    StopReason.SHUTDOWN: "its worker shut down",
    StopReason.DATABASE_UNAVAILABLE: "the database was unavailable",
    StopReason.ERROR: "an error",
    StopReason.NOT_STARTED: "could not start",
    StopReason.LEASE_LOST: "another worker took it over",
    StopReason.TEST_SCORED: "scored its test set",
}
"""The words of the run's ends that are not stop conditions."""


class Run(BaseModel):
    id: str
    project_id: int | None = None
    name: str = ""
    status: RunStatus = RunStatus.PENDING
    config: EvolutionConfig = Field(default_factory=EvolutionConfig)
    """How long the run goes and whether a person gates proposals (stored as JSON)."""
    spec: RunSpec = Field(default_factory=lambda: RunSpec())
    """Everything needed to rebuild the run: agent, critic, reflection, components, input key."""
    created_at: datetime = Field(default_factory=utcnow)
    started_at: datetime | None = None
    finished_at: datetime | None = None
    heartbeat_at: datetime | None = None
    worker: str | None = None
    """``host:pid:token`` of the process running it."""
    stop_reason: StopReason | None = None
    error: str | None = None
    control: RunRequest | None = None
    """A request from a person to the worker (cleared when acted on)."""
    control_seq: int = 0
    """How many requests people have made of the run: a resume withdraws only the request it
    read (:func:`studio.engine.people.steering.withdraw_requests`), never one made since."""
    queue: str | None = None
    """The queue a ``studio worker`` takes it from; None for a run started in a process of
    its own (``studio run``, the studio without a live worker), which no worker adopts."""
    build_tries: int = 0
    """Workers (or tries) that claimed the run and could not build it (a key missing there)."""
    build_error: str | None = None
    """Why the last of them could not."""
    build_tries_max: int | None = None
    """Tries allowed before the run fails (the worker's ``--build-tries``)."""

    @property
    def waiting_note(self) -> str:
        """What a queued run waits for after a worker could not build it; "" otherwise."""
        if self.status is not RunStatus.QUEUED or not self.build_tries:
            return ""
        limit = f"/{self.build_tries_max}" if self.build_tries_max else ""
        return (f"waiting for a worker that can build it: {self.build_error or 'unknown'} "
                f"(tries {self.build_tries}{limit})")

    @property
    def shown_status(self) -> RunStatus:
        """The status a person sees: ``paused`` as soon as they asked for a pause (the worker
        holds the run before its next model call, within a heartbeat; the stored status
        follows then)."""
        if self.control is RunRequest.PAUSE and self.status in (RunStatus.RUNNING,
                                                                 RunStatus.PENDING):
            return RunStatus.PAUSED
        return self.status


class WorkerInfo(BaseModel):
    """A ``studio worker`` process as it registers in the store (its only way to be seen)."""

    id: str
    """``host:pid:token``, the same string it writes into ``runs.worker``."""
    queue: str
    host: str
    pid: int
    started_at: datetime
    last_seen: datetime
    run_id: str | None = None
    """The run it holds now, if any."""


class Example(BaseModel):
    id: int | None = None
    run_id: str
    split: Split
    index: int
    data: dict[str, Any]


class Candidate(BaseModel):
    id: int | None = None
    run_id: str
    index: int
    """0 for the seed; then in order of creation."""
    parent_ids: list[int] = Field(default_factory=list)
    components: dict[str, str]
    content_hash: str
    iteration: int = 0
    proposal_id: int | None = None
    pooled: bool = False
    """True once scored on the validation set and part of the Pareto pool."""
    created_at: datetime = Field(default_factory=utcnow)


class Override(BaseModel):
    """A person's correction of a trial (a label). The judge's values are kept beside it."""

    id: int | None = None
    trial_id: int
    run_id: str | None = None
    """The trial's run (filled in when read from the store)."""
    score: float | None = Field(default=None, ge=0.0, le=1.0)
    feedback: str | None = None
    judge_score: float | None = None
    judge_feedback: str | None = None
    author: str = "anonymous"
    created_at: datetime = Field(default_factory=utcnow)
    undone_at: datetime | None = None
    corrected_output: str | None = None
    """What the answer should have been, in the person's words (None: not given)."""
    reviewer: str | None = None
    """The verified person whose label this is (a signed-in or token user, a listed OS user);
    None for a correction made in the local studio, where every correction is one person's.
    Labels of different reviewers are combined, never replaced (:mod:`studio.model.consensus`)."""
    adjudicated: bool = False
    """An owner's ruling on a trial people disagree on: it settles the trial's effective
    values; everyone's labels are kept."""
    dimensions: dict[str, float] | None = None
    """The person's score per critic dimension (each in [0, 1]; None: none given)."""

    @field_validator("dimensions")
    @classmethod
    def _unit_dimensions(cls, value: dict[str, float] | None) -> dict[str, float] | None:
        for name, score in (value or {}).items():
            if not 0.0 <= score <= 1.0:
                raise ValueError(f"dimension {name!r}: score {score} is outside [0, 1]")
        return value or None


def merge_overrides(overrides: Iterable[Override]) -> Override | None:
    """The one effective correction of a trial (:mod:`studio.model.consensus`): an owner's
    adjudication, else the consensus of the people who labelled it, each person's label being
    their latest value of each field.

    One person may correct the score and later only the feedback (or the reverse); each field
    keeps that person's latest value from the overrides that were not undone, and a field
    nobody corrected stays None so the judge's value shows through. Several people's labels
    are combined (the mean score, or the majority of a pass/fail vote; every feedback text),
    and an adjudication overrides the fields it gives. ``overrides`` are one trial's, oldest
    first. Store queries, views, exports, acceptance, reflection and agreement all read
    corrections through this function.
    """
    active = [o for o in overrides if o.undone_at is None]
    if not active:
        return None
    people = list(labels_by_person(active).values())
    merged = _combined(people) if people else None
    rulings = [o for o in active if o.adjudicated]
    if rulings:
        merged = _settled(_latest_fields(rulings), merged)
    if merged is None:  # unreachable: ``active`` holds a label or a ruling
        return None
    return merged.model_copy(update={"judge_score": active[0].judge_score,
                                     "judge_feedback": active[0].judge_feedback})


def labels_by_person(overrides: Iterable[Override]) -> dict[str | None, Override]:
    """Each person's own label of one trial (their latest value of each field, from their
    active, non-adjudicating overrides), keyed by :attr:`Override.reviewer`, in the order they
    first labelled. ``overrides`` are one trial's, oldest first."""
    groups: dict[str | None, list[Override]] = {}
    for o in overrides:
        if o.undone_at is None and not o.adjudicated:
            groups.setdefault(o.reviewer, []).append(o)
    return {person: _latest_fields(group) for person, group in groups.items()}


def _latest_fields(group: list[Override]) -> Override:
    """One person's overrides (or the rulings), oldest first, as one: per field, the latest
    value given."""
    def latest(field: str) -> Any:
        return next((getattr(o, field) for o in reversed(group)
                     if getattr(o, field) is not None), None)

    return group[-1].model_copy(update={name: latest(name) for name in
                                        ("score", "feedback", "corrected_output", "dimensions")})


def _combined(people: list[Override]) -> Override:
    """Several people's labels as one (:func:`studio.model.consensus.consensus_score`)."""
    if len(people) == 1:
        return people[0]
    newest = max(people, key=lambda o: (o.created_at, o.id or 0))
    scores = [o.score for o in people if o.score is not None]
    return newest.model_copy(update={
        "score": consensus_score(scores),
        "feedback": joined_texts(o.feedback for o in people),
        "corrected_output": joined_texts((o.corrected_output for o in people),
                                         OUTPUT_SEPARATOR),
        "dimensions": mean_dimensions(o.dimensions for o in people),
        "author": ", ".join(dict.fromkeys(o.author for o in people)),
        "reviewer": None})


def _settled(ruling: Override, people: Override | None) -> Override:
    """An adjudication over the people's consensus: each field the owner gave wins."""
    if people is None:
        return ruling
    return ruling.model_copy(update={
        name: getattr(ruling, name) if getattr(ruling, name) is not None
        else getattr(people, name)
        for name in ("score", "feedback", "corrected_output", "dimensions")})


def corrected_score(judge_score: float | None, override: Override | None) -> float | None:
    """A trial's effective score: the person's corrected score, else the judge's."""
    if override is not None and override.score is not None:
        return override.score
    return judge_score


class Trial(BaseModel):
    """One agent run on one example, scored by the critic."""

    id: int | None = None
    run_id: str
    candidate_id: int
    example_id: int
    split: Split
    example_index: int
    iteration: int = 0
    phase: TrialPhase
    proposal_id: int | None = None
    input_text: str = ""
    output: str = ""
    feedback: Feedback = Field(default_factory=Feedback)
    """What the critic said: its score, text, guidance, dimensions and any other fields
    (``extra``). The one place a trial keeps the judge's score (:attr:`score` reads it)."""
    error: str | None = None
    trace: dict[str, Any] = Field(default_factory=dict)
    latency_s: float = 0.0
    tokens: int = 0
    cost_usd: float = 0.0
    """LiteLLM's price of the trial's model calls (agent and critic), in US dollars; 0 for a
    model without a price (the embedded and scripted models) and for trials stored before."""
    created_at: datetime = Field(default_factory=utcnow)
    worker: str | None = None
    """The worker process that judged it (``host:pid:token``): who did what, across workers."""
    override: Override | None = None
    """The effective human correction (``merge_overrides`` of the active ones), filled in when
    read from the store."""

    @property
    def effective_score(self) -> float | None:
        return corrected_score(self.score, self.override)

    @model_validator(mode="before")
    @classmethod
    def _score_into_feedback(cls, data: object) -> Any:
        """A ``score`` given to the trial (a caller's keyword, a store row's column) is the
        judge's score and is written into the feedback. Rows stored before the Feedback record
        kept it only in that column."""
        if not isinstance(data, dict) or "score" not in data:
            return data
        data = dict(data)
        score = data.pop("score")
        feedback = data.get("feedback")
        if isinstance(feedback, Feedback):
            data["feedback"] = feedback.model_copy(update={"score": score})
        else:
            data["feedback"] = {**(feedback or {}), "score": score}
        return data

    @computed_field  # type: ignore[prop-decorator]
    @property
    def score(self) -> float | None:
        """The judge's score (``feedback.score``); None when it could not evaluate. It is
        dumped with the trial, so the store's ``score`` column (kept for sorting and SQL) is
        written from the record."""
        return self.feedback.score

    @property
    def feedback_text(self) -> str:
        return self.feedback.text

    @property
    def effective_feedback(self) -> str:
        if self.override is not None and self.override.feedback is not None:
            return self.override.feedback
        return self.feedback_text

    @property
    def overridden(self) -> bool:
        return self.override is not None


class Proposal(BaseModel):
    id: int | None = None
    run_id: str
    iteration: int
    parent_id: int
    component: str
    text: str
    reasoning: str = ""
    status: ProposalStatus = ProposalStatus.EVALUATING
    child_id: int | None = None
    edited_from: int | None = None
    """The proposal this one is an edit of."""
    invalid_reason: str | None = None
    """Why the proposal is invalid (empty, unchanged, a duplicate, a failed reflection...).
    Older stores also hold "run stopped" and "cannot pay for its validation" here: neither
    settles a proposal any more (a stop leaves it pending; an accepted child is validated)."""
    created_at: datetime = Field(default_factory=utcnow)
    decided_at: datetime | None = None
    """When the (first and only) decision on it was made."""
    kind: ProposalKind = ProposalKind.REFLECTION
    merge: MergeDetail | None = None
    """For a merge: its two parents and which component comes from which (``parent_id`` is
    the first parent, ``component`` empty and ``text`` a one-line summary)."""
    minibatch: list[int] = Field(default_factory=list)
    """The example ids parent and child are compared on: the iteration's minibatch (an edit
    keeps its original's), a merge's validation subsample. Recorded with the proposal, so its
    evidence is computed from the proposal alone (:mod:`studio.engine.policies.evidence`)."""
    cost_usd: float = 0.0
    """LiteLLM's price of the reflection calls that made it (US dollars; a refused repeat
    keeps its own), part of the run's cost; 0 for the model-free operators and edits."""

    @property
    def is_merge(self) -> bool:
        return self.kind is ProposalKind.MERGE


class Decision(BaseModel):
    id: int | None = None
    proposal_id: int
    action: DecisionAction
    reason: str = ""
    edited_text: str | None = None
    author: str = "anonymous"
    automatic: bool = False
    """True when the acceptance rule decided (auto mode)."""
    created_at: datetime = Field(default_factory=utcnow)
    evidence: Evidence | None = None
    """The proposal's evidence as it stood when the decision was made: what the person (or the
    rule) decided on. Corrections made later change the evidence now, never this copy. None
    for decisions recorded before the studio kept it."""


class EventKind(StrEnum):
    """What happened in a run, as stored in its event log and shown by the studio and the CLI."""

    RUN_STARTED = "run_started"
    LANES_REDUCED = "lanes_reduced"
    """The run keeps fewer iterations in flight than ``parallel_proposals`` asked, and why."""
    BASELINE_SCORED = "baseline_scored"
    ITERATION_STARTED = "iteration_started"
    PROPOSAL_CREATED = "proposal_created"
    PROPOSAL_INVALID = "proposal_invalid"
    ITERATION_SKIPPED = "iteration_skipped"
    """An iteration that made no proposal to gate: the reflection kept repeating a text already
    tried (``cause="repeated"``), or the parent was already perfect on its minibatch
    (``cause="perfect_parent"``). ``reason`` says so in words."""
    OUT_OF_IDEAS = "out_of_ideas"
    """The run ends: ``iterations`` in a row made no new candidate, which cost
    ``reflection_calls``; ``reflection_calls_saved`` estimates what its remaining iterations
    would have spent the same way."""
    PROPOSAL_EVALUATED = "proposal_evaluated"
    AWAITING_DECISION = "awaiting_decision"
    DECISION_APPLIED = "decision_applied"
    CANDIDATE_ACCEPTED = "candidate_accepted"
    PROGRESS = "progress"
    PHASE_STARTED = "phase_started"
    """The run began a phase (scoring the seed, running the parent, reflecting, ...): what it
    does, with which model, and how long such a phase took on this machine so far."""
    RUN_PAUSED = "run_paused"
    RUN_RESUMED = "run_resumed"
    RUN_FINISHED = "run_finished"
    TEST_SCORED = "test_scored"
    TEST_UNSCORED = "test_unscored"
    """Scoring the test set failed or was stopped: ``reason`` (``error`` or who stopped it) and
    ``message``; the evolution's result stands and ``studio test RUN`` scores what is missing."""
    TRIAL_COMMITTED = "trial_committed"
    REVIEW_TIME = "review_time"
    """A person reviewed one trial on the Review page: ``trial_id``, ``seconds``, ``action``
    (``corrected``, ``confirmed`` or ``skipped``) and ``author`` (no schema change: an event)."""
    APPLIED = "applied"
    """A candidate was written into the agent folder's source (``studio apply``, *Apply to the
    folder*): its payload is a :class:`studio.model.applied.Applied` (no schema change)."""
    PROPOSAL_COMMENT = "proposal_comment"
    """A person commented on a proposal: ``proposal_id``, ``author`` and ``text`` (a reviewer's
    word to the owner who decides; the reflection does not read it)."""


class RunEvent(BaseModel):
    id: int | None = None
    run_id: str
    kind: EventKind
    iteration: int = 0
    payload: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime = Field(default_factory=utcnow)


class Project(BaseModel):
    id: int | None = None
    name: str
    yaml: str
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)


# --------------------------------------------------------------------------- run specs


class CriticSpec(ConfigModel):
    """How a run judges outputs: an ADK critic agent, or programmatic evaluators / judges."""

    model_config = ConfigDict(populate_by_name=True)

    type: str = Field(default="agent", pattern="^(agent|evaluator)$")
    name: str = "critic"
    agent: AgentSpec | None = None
    """For ``type: agent``: the critic agent. Its output_schema defaults from ``schema``."""
    schema_kind: str = Field(default="simple", pattern="^(simple|advanced|custom)$",
                             alias="schema")
    """``simple`` (score + feedback), ``advanced`` (+ dimensions, guidance) or ``custom``."""
    evaluator: dict[str, Any] | None = None
    """For ``type: evaluator``: the declarative config given to
    :func:`studio.critics.adapters.build_critic`."""


ReflectionStrategy = Literal["llm", "rules", "rules+llm"]


class ReflectionSpec(ConfigModel):
    model: str | None = None
    """The model that writes the proposals; None: the agent's own (its primary agent's, on the
    model the run chose for it), as ``evolve()`` defaults (``adk optimize`` defaults to a capable
    hosted model, ``gemini-2.5-flash``, never to an embedded one)."""
    instruction: str | None = Field(default=None, max_length=MAX_COMPONENT_CHARS)
    """Template for the instruction component; must contain {component_text} and {trials}."""
    strategy: ReflectionStrategy = "llm"
    """Who writes an instruction's proposal: ``llm`` (the reflection agent), ``rules`` (the
    non-LLM operator of :mod:`studio.engine.propose.rules`, which turns the checks that failed into
    instruction rules and shows training examples), or ``rules+llm`` (rules when they have
    something to add, else the reflection agent). Other components always use the agent."""


class ForkOrigin(ConfigModel):
    """Where a forked run's seed comes from: a candidate of another run, its components copied
    (so the fork runs even if the source run is deleted)."""

    run_id: str
    candidate_id: int
    candidate_index: int
    components: dict[str, str]
    """The candidate's component texts, keyed as the run's components are (``instruction`` or
    ``writer.instruction``): the fork's candidate #0."""


class AlignOrigin(ConfigModel):
    """What an align run aligns: the critic of another run, evolved on that run's corrections.

    The align run's agent is the critic (its instruction, or a judge's text rendered as a
    critic agent); its examples are the corrected trials (held-out ones are its test set); its
    critic scores agreement with the person (:mod:`studio.critics.alignment`)."""

    run_id: str
    """The run whose corrections are the labels."""
    critic: CriticSpec
    """The source run's critic as it was (the aligned critic is this with the evolved text)."""
    target: str = Field(pattern="^(instruction|criteria|prompt|rubric)$")
    """What the evolved text replaces: the critic agent's ``instruction``, a judge's
    ``criteria`` or ``prompt``, or a rubric DAG's questions and guidance (``rubric``)."""
    part: int | None = None
    """In a weighted critic: the index of the aligned part in ``evaluators`` (the rest stay)."""
    part_name: str = ""
    label_trial_ids: list[int]
    """The corrected trials used, training labels first."""
    held_out_trial_ids: list[int]
    """The labels kept out of the loop (the align run's test set)."""
    threshold: float = Field(default=0.5, ge=0.0, le=1.0)
    """Pass threshold of the pass/fail statistics (Cohen's kappa, confusion)."""
    default_model: str = ""
    """The model the source run's critic defaulted to, as its engine resolved it (a referenced
    agent's own model); "" in align runs stored before it was kept: resolved again."""


class RunSpec(ConfigModel):
    """Everything needed to rebuild a run's agents, stored with the run (never any API key)."""

    agent: AgentSpec | None = None
    agent_ref: str | None = None
    """``module:attribute`` of an agent (or an ADK workflow agent) defined in Python code."""
    agent_folder: str | None = None
    """The ADK agent folder (absolute) ``agent_ref`` is imported from: made importable and its
    ``.env`` loaded first (:func:`studio.runtime.agents.prepare_agent_folder`)."""
    models: ModelOverrides = Field(default_factory=ModelOverrides)
    """For an agent loaded from code (``agent_ref``): the models run in place of the ones its
    code names (:mod:`studio.model.agent_models`)."""
    code_models: dict[str, str] = Field(default_factory=dict)
    """For an agent loaded from code: the model each of its model-bearing agents names in the
    code, read when the run was created (what "the folder says" on the Run page)."""
    agents: list[AgentSpec] = Field(default_factory=list)
    """A group or workflow run's agents (then ``agent`` is None and ``workflow`` says how they
    run); its components are keyed ``agent.component``."""
    workflow: WorkflowSpec | None = None
    primary: str | None = None
    """The agent whose output the critic scores (default: the workflow's last agent)."""
    critic: CriticSpec = Field(default_factory=CriticSpec)
    reflection: ReflectionSpec = Field(default_factory=ReflectionSpec)
    components: list[str] = Field(default_factory=lambda: ["instruction"])
    input_key: str | None = None
    val_is_train: bool = True
    resumable: bool = True
    """False when the run was started from live Python objects that cannot be rebuilt."""
    project: str | None = None
    forked_from: ForkOrigin | None = None
    """Set on a fork: its seed candidate is that candidate's components, not the agent's."""
    aligns: AlignOrigin | None = None
    """Set on an align run: the critic it aligns with a person's corrections."""
    graph: GraphShape | None = None
    """An ADK 2 graph ``Workflow`` run's nodes and edges (display and reflection; the graph
    itself is the live object the run was started with)."""

    @property
    def is_group(self) -> bool:
        return bool(self.agents) or self.workflow is not None

    @model_validator(mode="after")
    def _group_is_whole(self) -> RunSpec:
        """A group's workflow names its agents; its components are qualified by agent."""
        if self.agents:
            names = [a.name for a in self.agents]
            if self.workflow is None:
                self.workflow = sequential(names)
            check_workflow(self.workflow, names)
            if self.primary is not None and self.primary not in names:
                raise ConfigError(f"primary {self.primary!r} is not one of the agents {names}",
                                  where="primary", value=self.primary)
            self.components = expand_components(self.components, self.workflow.agent_names())
            for key in self.components:
                agent, component = split_component(key)
                if agent not in names:
                    raise ConfigError(f"component {key!r} must name one of the agents {names} "
                                      "as agent.component", where="components", value=key)
        return self


def expand_components(keys: list[str], agents: list[str]) -> list[str]:
    """An unqualified name in a group means that component of every agent (``instruction``:
    every agent's instruction); qualified keys stay; order kept, repeats dropped."""
    expanded: list[str] = []
    for key in keys:
        agent, component = split_component(key)
        for full in ([key] if agent is not None else [f"{a}.{component}" for a in agents]):
            if full not in expanded:
                expanded.append(full)
    return expanded


Run.model_rebuild()
