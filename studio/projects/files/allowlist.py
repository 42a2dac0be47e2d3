"""What a project from the browser may set: an allow-list, kept in one table
(:data:`BROWSER_FIELDS`).

A project that arrives through the browser (Projects → Import, the YAML editor, *Try it*, a
stored project started from Run, a stored run resumed, forked, aligned, re-scored or scored on
its test set from the studio) is untrusted. It may set the fields the table allows, within the
bounds written there, and nothing else: any other field is refused when the project is
imported or saved (and again on every path that starts it), by its path, e.g.
``critic.adk_metrics.criteria.final_response_match_v2.judge_model_options.judge_model_config
.http_options``, saying why and what to do instead. A field the table does not name, such as
one a new ADK or google-genai release adds, is refused until someone decides about it; the
test ``tests/projects/test_allowlist.py`` walks every field reachable from the project file (and
the ADK and google-genai models inside it) and fails until the table has that decision.

Why fields are refused (each row says it for its own field):

- **Transport** (``http_options``, base URLs, headers, proxies, timeouts, retries, client
  arguments, extra request bodies): google-genai sends a request to the ``base_url`` a
  ``GenerateContentConfig`` names, with the server's API key in ``x-goog-api-key``, and ADK's
  LiteLLM model turns ``http_options.headers`` into request headers. Where a provider is and
  how it is reached comes from the server's own configuration (its environment) only.
- **Addresses hidden in model names**: a model string may name a provider but never an address
  (no ``://``, no ADK ``Class:`` override, no Vertex AI resource path). A provider that is a
  server on the network whose address LiteLLM would otherwise default (``ollama_chat/...``:
  ``http://localhost:11434``) may be named only once the operator set its address
  (:data:`ADDRESS_PROVIDERS`); other providers are the hosted ones in :data:`HOSTED_PROVIDERS`.
- **Code and server files**: Python references, function tools, agent folders (unless the
  operator opted in: ``STUDIO_ALLOW_CODE_REFS``), ADK ``custom_metrics``, dataset and criteria
  files, local embedding models by path.
- **What belongs to other runs**: ``run.rate_limits`` apply to every run of the process; they
  are the server's (``STUDIO_RATE_LIMITS``), or the CLI user's own file's.
- **Unbounded cost**: judge samples are capped (:data:`studio.model.limits.MAX_JUDGE_SAMPLES`),
  ``candidate_count`` (several paid answers per call) is refused.
- **Resources in the server's account or the studio's own plumbing**: cached contents, Model
  Armor templates, billing labels, stored responses, tools and function calling, system
  instructions and response schemas of ADK's judges, routing to other models, audio and image
  outputs the studio never reads.

The walk reads plain data: a project's fields as dumped without defaults (what the project
set), and the raw mappings of the free-form sections (``critic.evaluator``,
``critic.adk_metrics``, evaluator ``params``), whose keys may be written in ADK's camelCase.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

from studio.evaluators._judge import POTATO_ENDPOINTS
from studio.model.errors import ConfigError, DatasetError, ModelConfigError, ProjectFileError
from studio.model.limits import (
    MAX_COMPONENT_CHARS,
    MAX_DEMO_CHARS,
    MAX_FEEDBACK_CHARS,
    MAX_JUDGE_SAMPLES,
    MAX_NAME_CHARS,
)
from studio.runtime.providers.calls import RATE_LIMITS_ENV

ALLOW_CODE_REFS_ENV = "STUDIO_ALLOW_CODE_REFS"
"""The operator's opt-in to Python code from the browser (``studio ui --allow-code-refs``)."""


def code_refs_allowed() -> bool:
    """Whether the server's operator opted in to projects from the browser loading Python code."""
    return os.environ.get(ALLOW_CODE_REFS_ENV, "").strip().lower() in ("1", "true", "yes")


# --------------------------------------------------------------------------- where a value is


@dataclass(frozen=True)
class Place:
    """Where a value sits: the source (a file name, ``project 'x'``, ``run abc``) and its
    field path."""

    source: str
    path: tuple[str | int, ...] = ()

    def child(self, key: str | int) -> Place:
        return Place(self.source, (*self.path, key))

    @property
    def field(self) -> str:
        text = ""
        for key in self.path:
            text += f"[{key}]" if isinstance(key, int) else (f".{key}" if text else str(key))
        return text or "(the project)"

    def refuse(self, message: str, value: object = None,
               error: type[ConfigError] = ProjectFileError) -> ConfigError:
        return error(message, where=f"{self.source}: {self.field}", value=_shown(value))


def _shown(value: object) -> object:
    text = repr(value)
    return value if len(text) <= 200 else text[:197] + "..."


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 100 else text[:97] + "..."


def _unset(value: object) -> bool:
    """A field written empty sets nothing."""
    return value is None or (isinstance(value, str | list | dict | tuple) and not value)


# --------------------------------------------------------------------------- decisions


class Decision(Protocol):
    """What the browser may do with one field: ``check`` raises ProjectFileError naming the
    field, or returns when the value is allowed."""

    def check(self, value: object, parent: Mapping[str, object], at: Place) -> None: ...


@dataclass(frozen=True)
class Allowed:
    """Set freely: data, or a setting its section's own model already bounds (``note``)."""

    note: str = ""

    def check(self, value: object, parent: Mapping[str, object], at: Place) -> None:
        return None


@dataclass(frozen=True)
class Number:
    """A finite number from ``low`` to ``high`` (an integer when ``integer``)."""

    low: float
    high: float
    integer: bool = False

    def check(self, value: object, parent: Mapping[str, object], at: Place) -> None:
        if value is None:
            return
        kinds = (int,) if self.integer else (int, float)
        if isinstance(value, bool) or not isinstance(value, kinds) or not (
                math.isfinite(value) and self.low <= value <= self.high):
            kind = "a whole number" if self.integer else "a number"
            raise at.refuse(f"must be {kind} from {self.low:g} to {self.high:g} in a project "
                            f"from the browser; got {_shown(value)!r}", value)


@dataclass(frozen=True)
class Text:
    """Text up to ``limit`` characters."""

    limit: int

    def check(self, value: object, parent: Mapping[str, object], at: Place) -> None:
        if value is None:
            return
        if not isinstance(value, str):
            raise at.refuse(f"must be text; got {type(value).__name__}", value)
        if len(value) > self.limit:
            raise at.refuse(f"is {len(value):,} characters; the limit is {self.limit:,}")


@dataclass(frozen=True)
class Pattern:
    """Text matching ``regex`` (``what`` names the form in the refusal)."""

    regex: str
    what: str

    def check(self, value: object, parent: Mapping[str, object], at: Place) -> None:
        if value is None:
            return
        if not isinstance(value, str) or not re.fullmatch(self.regex, value) or ".." in value:
            raise at.refuse(f"{_short(value)} is not {self.what}", value)


@dataclass(frozen=True)
class ModelName:
    """A model string a project from the browser may name (:func:`browser_model_refusal`)."""

    def check(self, value: object, parent: Mapping[str, object], at: Place) -> None:
        if value is None:
            return
        refusal = browser_model_refusal(value)
        if refusal is not None:
            raise at.refuse(refusal.message, value, refusal.error)


@dataclass(frozen=True)
class ModelMap:
    """Models by agent name (``models: {searcher: openai/gpt-4o-mini}``): each a name, each
    model one a project from the browser may name (:class:`ModelName`)."""

    def check(self, value: object, parent: Mapping[str, object], at: Place) -> None:
        if value is None:
            return
        if not isinstance(value, Mapping):
            raise at.refuse(f"must be a mapping of agent names to models; got "
                            f"{type(value).__name__}", value)
        for name, model in value.items():
            _NAME.check(name, value, at)
            _MODEL.check(model, value, at.child(str(name)))


@dataclass(frozen=True)
class Refused:
    """Never from the browser: ``why`` says what the field does, ``instead`` what to do."""

    why: str
    instead: str
    error: type[ConfigError] = ProjectFileError
    rule: str = "a project from the browser may not set it"

    def check(self, value: object, parent: Mapping[str, object], at: Place) -> None:
        if _unset(value):
            return
        raise at.refuse(f"{_short(value)} {self.why}; {self.rule}. {self.instead}", value,
                        self.error)


@dataclass(frozen=True)
class CodeOptIn:
    """Python code on the server: from the browser only once the operator opted in."""

    why: str

    def check(self, value: object, parent: Mapping[str, object], at: Place) -> None:
        if _unset(value) or code_refs_allowed():
            return
        raise at.refuse(f"{self.why}, which projects from the browser (upload, YAML editor, "
                        "stored projects) may not do. Run the project file from the command "
                        "line (`studio run project.yaml`), or start the studio with `studio ui "
                        f"--allow-code-refs` ({ALLOW_CODE_REFS_ENV}=1) on a machine whose users "
                        "you trust", value)


NodeOf = Callable[[object, Mapping[str, object], Place], str]


@dataclass(frozen=True)
class Section:
    """A nested section (or a list of them) checked against the table's ``node``; a plain
    value in its place is checked by ``scalars`` (refused when None)."""

    node: str | NodeOf
    scalars: Decision | None = None

    def check(self, value: object, parent: Mapping[str, object], at: Place) -> None:
        if isinstance(value, list | tuple):
            for index, item in enumerate(value):
                self.check(item, parent, at.child(index))
            return
        if value is None:
            return
        if not isinstance(value, Mapping):
            if self.scalars is None:
                raise at.refuse(f"must be a mapping; got {type(value).__name__}", value)
            self.scalars.check(value, parent, at)
            return
        node = self.node if isinstance(self.node, str) else self.node(value, parent, at)
        check_section(value, node, at)


@dataclass(frozen=True)
class Entries:
    """A mapping whose keys name what each value is (ADK's criteria by metric, a rubric's
    nodes by name): ``node_of(key)`` picks the table's node for a mapping value (or refuses
    the key), ``scalars`` checks a plain value."""

    node_of: Callable[[str, Place], str]
    scalars: Decision

    def check(self, value: object, parent: Mapping[str, object], at: Place) -> None:
        if value is None:
            return
        if not isinstance(value, Mapping):
            raise at.refuse(f"must be a mapping; got {type(value).__name__}", value)
        for key, item in value.items():
            place = at.child(str(key))
            node = self.node_of(str(key), place)
            if isinstance(item, Mapping):
                check_section(item, node, place)
            else:
                self.scalars.check(item, value, place)


# --------------------------------------------------------------------------- model names


HOSTED_PROVIDERS = frozenset({
    "openai", "text-completion-openai", "anthropic", "gemini", "vertex_ai", "azure", "azure_ai",
    "bedrock", "groq", "mistral", "codestral", "deepseek", "together_ai", "fireworks_ai",
    "cohere", "cohere_chat", "xai", "openrouter", "perplexity", "cerebras", "sambanova",
    "deepinfra", "nvidia_nim", "huggingface", "replicate", "ai21", "ai21_chat", "databricks",
    "watsonx", "cloudflare", "moonshot", "dashscope", "nebius", "novita", "hyperbolic",
    "lambda_ai", "featherless_ai", "friendliai", "meta_llama", "zai", "minimax", "wandb",
    "vercel_ai_gateway",
})
"""LiteLLM providers with a fixed public endpoint (or one the server's environment sets, such
as ``AZURE_API_BASE``): a browser project may name their models; the key is the server's."""

ADDRESS_PROVIDERS = {
    "ollama": "OLLAMA_API_BASE", "ollama_chat": "OLLAMA_API_BASE",
    "lm_studio": "LM_STUDIO_API_BASE", "llamafile": "LLAMAFILE_API_BASE",
    "hosted_vllm": "HOSTED_VLLM_API_BASE", "xinference": "XINFERENCE_API_BASE",
    "litellm_proxy": "LITELLM_PROXY_API_BASE", "lemonade": "LEMONADE_API_BASE",
    "docker_model_runner": "DOCKER_MODEL_RUNNER_API_BASE", "apigee": "APIGEE_PROXY_URL",
}
"""Providers that are a server on the network, reached at the address in this environment
variable, else at a default LiteLLM or ADK picks (Ollama's ``http://localhost:11434``,
llamafile's ``http://127.0.0.1:8080``): a browser project may name them only once the
operator set the address, so the server never reaches an address nobody configured."""

STUDIO_PROVIDERS = frozenset({"scripted", "local"})
"""The studio's own in-process models."""

_MODEL_TEXT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._\-]*(/[A-Za-z0-9._\-:@+]+)*")
MAX_MODEL_CHARS = 200


@dataclass(frozen=True)
class ModelRefusal:
    """Why a model string may not come from the browser, and the error that says it (an
    unknown provider is the model check's own :class:`ModelConfigError`)."""

    message: str
    error: type[ConfigError] = ProjectFileError


def browser_model_refusal(model: object) -> ModelRefusal | None:
    """Why a project from the browser may not name ``model``, or None when it may.

    A model string names a provider and a model, never an address: the characters of a model
    name only (so no ``://``, ``${...}``, spaces), no ADK ``Class:model`` override, no Vertex
    AI resource path (``projects/...``); its provider is the studio's, a hosted one, or a
    network server whose address the operator set.
    """
    if not isinstance(model, str) or not model:
        return ModelRefusal("must be a model name such as 'openai/gpt-4o-mini' or "
                            "'gemini-2.5-flash'")
    if len(model) > MAX_MODEL_CHARS or not _MODEL_TEXT.fullmatch(model) or ".." in model:
        return ModelRefusal(f"{model[:80]!r} is not a model name (provider/model: letters, "
                            "digits and ._-:@+ only): a model string may not carry an address, "
                            "a variable or a path")
    if ":" in model and "/" not in model.split(":", 1)[0]:
        return ModelRefusal(f"{model!r}: 'Name:model' picks an ADK model class by name; give "
                            "the model name alone")
    provider = model.split("/", 1)[0] if "/" in model else None
    if provider is None or provider in STUDIO_PROVIDERS | HOSTED_PROVIDERS:
        return None
    if provider in ADDRESS_PROVIDERS:
        return _address_refusal(model, provider)
    if provider == "projects":
        return ModelRefusal(f"{model!r} is a Vertex AI resource path, which names a Google "
                            "Cloud project and endpoint: name the model instead, or run the "
                            "project from the command line")
    if not _litellm_provider(provider):
        return ModelRefusal(f"unknown model provider in {model!r}: use a model string such as "
                            "'gemini/gemini-2.5-flash', 'openai/gpt-4o-mini' or "
                            "'gemini-2.5-flash'", ModelConfigError)
    return ModelRefusal(
        f"{model!r}: provider {provider!r} is not one a project from the browser may name "
        f"(hosted: {', '.join(sorted(HOSTED_PROVIDERS))}; network servers once their address "
        f"is set: {', '.join(sorted(ADDRESS_PROVIDERS))}); run the project from the command "
        "line to use it")


def _address_refusal(model: str, provider: str) -> ModelRefusal | None:
    variable = ADDRESS_PROVIDERS[provider]
    if os.environ.get(variable, "").strip():
        return None
    return ModelRefusal(
        f"{model!r} is served by a {provider} server on the network, and this studio's "
        f"operator has not set its address ({variable}): without it the server would call a "
        "default address nobody configured. Set it in the studio's environment, or run the "
        "project from the command line")


def _litellm_provider(name: str) -> bool:
    """Whether LiteLLM has a provider of that name (LiteLLM is imported on first use)."""
    import litellm

    return name in {str(getattr(p, "value", p)) for p in litellm.provider_list}


# --------------------------------------------------------------------------- dynamic nodes


def _evaluator_node(key: str) -> NodeOf:
    """The params node of the evaluator a sibling field names (``evaluator:exact_match``)."""

    def node(value: object, parent: Mapping[str, object], at: Place) -> str:
        name = str(parent.get(key))
        node = f"evaluator:{EVALUATOR_ALIASES.get(name, name)}"
        if node not in BROWSER_FIELDS:
            raise at.refuse(f"evaluator {name!r} is not one of the studio's evaluators a "
                            f"project from the browser may configure ({_evaluator_list()})",
                            name)
        return node
    return node


@dataclass(frozen=True)
class EvaluatorName:
    """An evaluator's registered name, unless the entry is a judge block (then a label)."""

    unless: tuple[str, ...] = ()

    def check(self, value: object, parent: Mapping[str, object], at: Place) -> None:
        if any(key in parent for key in self.unless):
            Text(MAX_NAME_CHARS).check(value, parent, at)
            return
        name = EVALUATOR_ALIASES.get(value, value) if isinstance(value, str) else value
        if f"evaluator:{name}" not in BROWSER_FIELDS:
            raise at.refuse(f"{value!r} is not one of the studio's evaluators a project from "
                            f"the browser may use ({_evaluator_list()})", value)


def _evaluator_list() -> str:
    return ", ".join(sorted(n.split(":", 1)[1] for n in BROWSER_FIELDS
                            if n.startswith("evaluator:")))


def _criterion_node(metric: str, at: Place) -> str:
    node = CRITERION_NODES.get(metric)
    if node is not None:
        return node
    raise at.refuse(f"{metric!r} is not one of ADK's metrics a project from the browser may "
                    f"score by ({', '.join(sorted(CRITERION_NODES))})", metric)


@dataclass(frozen=True)
class PotatoEndpoint:
    """Potato's ``endpoint_type``: the provider of the model it forms (``ollama`` is
    ``ollama_chat/...``), checked as a model name is."""

    def check(self, value: object, parent: Mapping[str, object], at: Place) -> None:
        prefix = POTATO_ENDPOINTS.get(str(value))
        refusal = browser_model_refusal(f"{prefix}/model") if prefix else None
        if refusal is not None:
            raise at.refuse(f"endpoint_type {value!r}: {refusal.message}", value)


@dataclass(frozen=True)
class Rows:
    """A dataset split: inline rows (data), or ``{path: ...}`` (checked as ``DataSource``)."""

    def check(self, value: object, parent: Mapping[str, object], at: Place) -> None:
        if isinstance(value, Mapping):
            check_section(value, "DataSource", at)


@dataclass(frozen=True)
class AdkCriteria:
    """``critic.adk_metrics``: the criteria inline (a path would read the server's files)."""

    def check(self, value: object, parent: Mapping[str, object], at: Place) -> None:
        if isinstance(value, str):
            raise at.refuse(f"{value!r}: a project from the browser cannot read files on the "
                            "server; paste the criteria inline (adk_metrics: {criteria: "
                            "{...}})", value)
        Section("EvalConfig").check(value, parent, at)


# --------------------------------------------------------------------------- the table

_TEXT = Text(MAX_COMPONENT_CHARS)
_NAME = Text(MAX_NAME_CHARS)
_DATA = Allowed("data the studio reads, never an address, a file or code")
_BOUNDED = Allowed("bounded by the section's own model")
_MODEL = ModelName()
_FLAG = Allowed("a switch")
_UNIT = Number(0.0, 1.0)
_THRESHOLD = Number(-1e9, 1e9)

_TRANSPORT = Refused(
    "says where and how requests are sent (base URL, API version, headers, timeouts, retries, "
    "client arguments, extra request body), and google-genai sends the server's API key "
    "wherever it points",
    "Remove it: which address a provider is reached at comes from the studio's own "
    "environment (docs/security.md)")
_PYTHON_OBJECT = Refused("is a Python object, which only code can pass",
                         "Remove it (it has no YAML form)")
_JUDGE_PLUMBING = Refused(
    "replaces part of the request ADK's judge builds itself (its system instruction, tools, "
    "function calling or response format)",
    "Remove it: the judge's prompt and reply format are ADK's metric's own")
_ACCOUNT_RESOURCE = Refused(
    "names a resource in the server's Google Cloud account (cached content, a Model Armor "
    "template, billing labels, stored responses or service tier)",
    "Remove it, or run the project from the command line")
_OTHER_OUTPUT = Refused(
    "asks for output the studio never reads (audio, images, speech, log probabilities, "
    "several candidates, continuations) and that is paid for",
    "Remove it")
_ROUTING = Refused("sends the request to other models than the one named",
                   "Name the judge model in judge_model instead")

_GENERATION: dict[str, Decision] = {
    "temperature": Number(0.0, 2.0), "top_p": _UNIT, "top_k": Number(1, 1000, integer=True),
    "max_output_tokens": Number(1, 32768, integer=True),
    "seed": Number(-(2**31), 2**31 - 1, integer=True),
    "presence_penalty": Number(-2.0, 2.0), "frequency_penalty": Number(-2.0, 2.0),
    "stop_sequences": Allowed("texts that end a reply"),
    "thinking_config": Section("ThinkingConfig"),
    "http_options": _TRANSPORT,
    "should_return_http_response": _TRANSPORT,
    "system_instruction": _JUDGE_PLUMBING, "tools": _JUDGE_PLUMBING,
    "tool_config": _JUDGE_PLUMBING, "automatic_function_calling": _JUDGE_PLUMBING,
    "response_mime_type": _JUDGE_PLUMBING, "response_schema": _JUDGE_PLUMBING,
    "response_json_schema": _JUDGE_PLUMBING,
    "routing_config": _ROUTING, "model_selection_config": _ROUTING,
    "cached_content": _ACCOUNT_RESOURCE, "labels": _ACCOUNT_RESOURCE,
    "model_armor_config": _ACCOUNT_RESOURCE, "service_tier": _ACCOUNT_RESOURCE,
    "store": _ACCOUNT_RESOURCE,
    "candidate_count": _OTHER_OUTPUT, "response_logprobs": _OTHER_OUTPUT,
    "logprobs": _OTHER_OUTPUT, "response_modalities": _OTHER_OUTPUT,
    "media_resolution": _OTHER_OUTPUT, "speech_config": _OTHER_OUTPUT,
    "audio_timestamp": _OTHER_OUTPUT, "image_config": _OTHER_OUTPUT,
    "audio_transcription_config": _OTHER_OUTPUT, "continuation_token": _OTHER_OUTPUT,
    "automatic_continuation": _OTHER_OUTPUT, "generation_output_config": _OTHER_OUTPUT,
    "safety_settings": Refused("changes the provider's safety filters for the judge",
                               "Remove it: the judge runs with the provider's defaults"),
    "enable_enhanced_civic_answers": _OTHER_OUTPUT,
}
"""google-genai's ``GenerateContentConfig`` (an ADK judge's ``judge_model_config``): sampling
settings only."""

_CRITERION: dict[str, Decision] = {"threshold": _THRESHOLD,
                                   "include_intermediate_responses_in_final": _FLAG}
_JUDGED_CRITERION: dict[str, Decision] = {**_CRITERION,
                                          "judge_model_options": Section("JudgeModelOptions")}

_EVALUATOR_COMMON: dict[str, Decision] = {"key": _NAME}
_JUDGE_EVALUATOR: dict[str, Decision] = {
    **_EVALUATOR_COMMON, "config": Section("judge config"), "model": _MODEL,
    "endpoint": _PYTHON_OBJECT, "executor": _PYTHON_OBJECT,
}
_RAG: dict[str, Decision] = {**_JUDGE_EVALUATOR, "question_key": _NAME, "context_key": _NAME}

_AGENT_FIELDS: dict[str, Decision] = {
    "name": _NAME, "model": _MODEL, "instruction": _TEXT,
    "output_schema": Allowed("a JSON Schema: data, its $ref are never fetched"),
    "generate_content_config": Section("GenerationConfig"),
    "output_key": _BOUNDED,
    "tools": CodeOptIn("a function tool runs Python code on the server whenever the model "
                       "calls it"),
    "few_shot": Section("Demo"),
}
_CODE_REF = CodeOptIn("a Python reference (agent.ref) loads Python code on the server")
_FOLDER = CodeOptIn("an agent folder imports its Python code (and reads its .env) on the server")

BROWSER_FIELDS: dict[str, dict[str, Decision]] = {
    # ---- the project file
    "ProjectFile": {
        "name": _NAME, "description": _TEXT, "agent": Section("AgentSection"),
        "agents": Section("AgentSection"), "workflow": Section("WorkflowSpec"),
        "primary": _NAME, "critic": Section("CriticSection"),
        "reflection": Section("ReflectionSpec"), "components": _BOUNDED,
        "dataset": Section("DatasetSection"), "run": Section("EvolutionConfig"),
    },
    "AgentSection": {**_AGENT_FIELDS, "ref": _CODE_REF, "folder": _FOLDER,
                     "models": ModelMap()},
    "GenerationConfig": {"temperature": _BOUNDED, "top_p": _BOUNDED,
                         "max_output_tokens": _BOUNDED},
    "Demo": {"input": Text(MAX_DEMO_CHARS), "output": Text(MAX_DEMO_CHARS)},
    "WorkflowSpec": {"type": _BOUNDED, "name": _NAME, "max_iterations": _BOUNDED,
                     "steps": Section("WorkflowSpec", scalars=_NAME)},
    "CriticSection": {
        "type": _BOUNDED, "name": _NAME, "model": _MODEL, "instruction": _TEXT,
        "schema_kind": _BOUNDED,
        "output_schema": Allowed("a JSON Schema: data, its $ref are never fetched"),
        "evaluator": Section("critic config"), "adk_metrics": AdkCriteria(), "score": _BOUNDED,
    },
    "ReflectionSpec": {"model": _MODEL, "instruction": _TEXT, "strategy": _BOUNDED},
    "DatasetSection": {
        "train": Rows(), "val": Rows(), "test": Rows(), "split": Section("SplitSection"),
        "input_column": _NAME, "expected_column": _NAME,
        "images": Allowed("column names; images are checked by the dataset rules"),
    },
    "DataSource": {"path": Refused(
        "names a file", "It must inline its rows (dataset.train: [{...}]) or upload the "
        "CSV/JSONL with the dataset editor", error=DatasetError,
        rule="a project from the browser cannot read files on the server")},
    "SplitSection": {"val_fraction": _BOUNDED, "seed": _BOUNDED},
    "EvolutionConfig": {
        **dict.fromkeys(
            ("max_iterations", "max_metric_calls", "patience", "score_threshold",
             "timeout_seconds", "minibatch_size", "candidate_selection", "epsilon",
             "max_concurrency", "parallel_proposals", "processes", "review", "seed",
             "call_timeout_seconds", "max_retries", "use_merge", "max_merge_invocations",
             "skip_perfect_score", "perfect_score", "out_of_ideas_after"),
            Allowed("this run's own setting, bounded by the run settings' model")),
        "rate_limits": Refused(
            "sets rate limits per model for every run of the server's process, so one "
            "project would throttle everyone's runs",
            f"Rate limits belong to the server: set them in {RATE_LIMITS_ENV} in the "
            "environment of `studio ui` / `studio worker` (docs/guides/providers.md), or put "
            "run.rate_limits in a project you run from the command line"),
    },
    # ---- a stored run (resumed, forked, aligned or scored from the studio)
    "RunSpec": {
        "agent": Section("AgentSpec"), "agent_ref": _CODE_REF, "agent_folder": _FOLDER,
        "agents": Section("AgentSpec"), "workflow": Section("WorkflowSpec"),
        "primary": _NAME, "critic": Section("CriticSpec"),
        "reflection": Section("ReflectionSpec"), "components": _BOUNDED,
        "input_key": _NAME, "val_is_train": _FLAG, "resumable": _FLAG, "project": _NAME,
        "forked_from": Section("ForkOrigin"), "aligns": Section("AlignOrigin"),
        "graph": Allowed("the shape of a Python graph, written by the studio for display"),
        "models": Section("ModelOverrides"),
        "code_models": Allowed("the models the agent's code names, written by the studio for "
                               "display; never called"),
    },
    "ModelOverrides": {"every": _MODEL, "agents": ModelMap()},
    "AgentSpec": dict(_AGENT_FIELDS),
    "CriticSpec": {"type": _BOUNDED, "name": _NAME, "agent": Section("AgentSpec"),
                   "schema_kind": _BOUNDED, "evaluator": Section("critic config")},
    "ForkOrigin": {"run_id": _NAME, "candidate_id": _BOUNDED, "candidate_index": _BOUNDED,
                   "components": Allowed("component texts, checked as a proposal's are")},
    "AlignOrigin": {
        "run_id": _NAME, "critic": Section("CriticSpec"), "target": _BOUNDED,
        "part": _BOUNDED, "part_name": _NAME, "label_trial_ids": _DATA,
        "held_out_trial_ids": _DATA, "threshold": _BOUNDED, "default_model": _MODEL,
    },
    # ---- declarative critics (studio.critics.adapters.build_critic)
    "critic config": {
        "evaluator": EvaluatorName(), "evaluators": Section("critic config item"),
        "agent_as_judge": Section("agent_as_judge"),
        "params": Section(_evaluator_node("evaluator")),
        "name": _NAME, "use": _BOUNDED, "reference_key": _NAME,
        "adk_metrics": AdkCriteria(), "judge_model": _MODEL, "score": _BOUNDED,
        "type": _BOUNDED, "description": _TEXT,
    },
    "critic config item": {
        "name": EvaluatorName(unless=("agent_as_judge", "adk_metrics")),
        "params": Section(_evaluator_node("name")), "weight": Number(1e-9, 1e9),
        "use": _BOUNDED, "reference_key": _NAME, "label": _NAME,
        "agent_as_judge": Section("agent_as_judge"), "adk_metrics": AdkCriteria(),
        "judge_model": _MODEL, "score": _BOUNDED, "type": _BOUNDED, "description": _TEXT,
    },
    "agent_as_judge": {
        "criteria": _TEXT, "scoring_strategy": _BOUNDED, "threshold": _BOUNDED,
        "additional_guidelines": _DATA, "model": _MODEL, "name": _NAME,
    },
    "judge config": {
        "model": _MODEL, "ai_support": Section("ai_support"),
        "judge_alignment": Section("judge_alignment"),
    },
    "judge_alignment": {"ai_support": Section("ai_support")},
    "ai_support": {
        "endpoint_type": PotatoEndpoint(),
        "model": _MODEL, "ai_config": Section("ai_config"),
        "base_url": _TRANSPORT, "api_key": Refused(
            "is a credential", "Remove it: keys are read from the server's environment only"),
    },
    "ai_config": {
        "model": _MODEL, "base_url": _TRANSPORT,
        "api_key": Refused("is a credential",
                           "Remove it: keys are read from the server's environment only"),
    },
    # ---- the studio's evaluators' params (studio.evaluators.registry), by name
    "evaluator:trajectory_match": {**_EVALUATOR_COMMON, "mode": _BOUNDED,
                                   "tool_args_match_mode": _BOUNDED,
                                   "tool_args_match_overrides": _DATA},
    "evaluator:tool_use": {**_EVALUATOR_COMMON, "expected_tool": _NAME, "expected_args": _DATA,
                           "args_match_mode": _BOUNDED},
    "evaluator:tool_call_accuracy": {**_EVALUATOR_COMMON, "args_match_mode": _BOUNDED},
    "evaluator:llm_trajectory_judge": {**_JUDGE_EVALUATOR, "prompt": _TEXT,
                                       "continuous": _FLAG},
    "evaluator:exact_match": {**_EVALUATOR_COMMON, "case_sensitive": _FLAG, "strip": _FLAG},
    "evaluator:contains": {**_EVALUATOR_COMMON, "substring": _TEXT, "case_sensitive": _FLAG},
    "evaluator:regex_match": {**_EVALUATOR_COMMON, "pattern": Text(MAX_FEEDBACK_CHARS),
                              "flags": _BOUNDED, "full_match": _FLAG},
    "evaluator:edit_distance": {**_EVALUATOR_COMMON, "case_sensitive": _FLAG},
    "evaluator:response_match": dict(_EVALUATOR_COMMON),
    "evaluator:json_valid": {**_EVALUATOR_COMMON, "allow_code_fence": _FLAG},
    "evaluator:json_schema_match": {
        **_EVALUATOR_COMMON, "allow_code_fence": _FLAG,
        "schema": Allowed("a JSON Schema: data, its $ref are never fetched")},
    "evaluator:embedding_distance": {
        **_EVALUATOR_COMMON, "embed_fn": _PYTHON_OBJECT,
        "model_name": Pattern(r"[A-Za-z0-9][A-Za-z0-9._\-]*(/[A-Za-z0-9][A-Za-z0-9._\-]*)?",
                              "a Hugging Face model id such as 'all-MiniLM-L6-v2' (looked up in "
                              "the local cache only: never a path or an address)")},
    "evaluator:rubric_dag": {**_JUDGE_EVALUATOR, "dag": Section("RubricDag"),
                             "preset": _BOUNDED},
    "evaluator:context_relevance": dict(_RAG),
    "evaluator:groundedness": dict(_RAG),
    "evaluator:answer_relevance": dict(_RAG),
    "evaluator:agent_as_judge": {**_JUDGE_EVALUATOR, "requirements": _DATA,
                                 "requirements_key": _NAME, "question_key": _NAME},
    "evaluator:critic_agreement": {"mode": _BOUNDED, "threshold": _UNIT},
    "RubricDag": {"key": _NAME, "root": _NAME, "guidance": _TEXT,
                  "nodes": Entries(lambda key, at: "RubricNode", scalars=Refused(
                      "must be a question (a mapping)", "Write {question, choices, branches}"))},
    "RubricNode": {"question": _TEXT, "choices": _DATA,
                   "branches": Entries(lambda key, at: "RubricLeaf", scalars=_NAME)},
    "RubricLeaf": {"score": _UNIT, "label": _NAME},
    # ---- ADK's eval criteria (critic.adk_metrics)
    "EvalConfig": {
        "criteria": Entries(_criterion_node, scalars=_THRESHOLD),
        "custom_metrics": Refused(
            "imports the Python functions it names on the server",
            "Remove it: custom metrics are for a criteria file run from the command line"),
        "user_simulator_config": Refused(
            "configures ADK's user simulator for multi-turn conversations, which the studio "
            "does not score", "Remove it"),
        "live_model_config": Refused(
            "configures ADK's live (streaming audio) evaluation, which the studio does not run",
            "Remove it"),
    },
    "BaseCriterion": dict(_CRITERION),
    "LlmAsAJudgeCriterion": dict(_JUDGED_CRITERION),
    "HallucinationsCriterion": {**_JUDGED_CRITERION, "evaluate_intermediate_nl_responses": _FLAG},
    "RubricsBasedCriterion": {**_JUDGED_CRITERION, "rubrics": Section("Rubric")},
    "ToolTrajectoryCriterion": {**_CRITERION, "match_type": _BOUNDED, "ignore_args": _FLAG},
    "Rubric": {"rubric_id": _NAME, "rubric_content": Section("RubricContent"),
               "description": _TEXT, "type": _NAME},
    "RubricContent": {"text_property": _TEXT},
    "JudgeModelOptions": {
        "judge_model": _MODEL, "judge_model_config": Section("GenerateContentConfig"),
        "num_samples": Number(1, MAX_JUDGE_SAMPLES, integer=True),
        "parallelism_limit": Number(1, MAX_JUDGE_SAMPLES, integer=True),
    },
    "GenerateContentConfig": _GENERATION,
    "ThinkingConfig": {"include_thoughts": _FLAG,
                       "thinking_budget": Number(-1, 32768, integer=True),
                       "thinking_level": _BOUNDED},
}
"""Node -> field -> decision: every field a project from the browser may reach, and what it
may do there (see the module docstring for the reasons)."""

EVALUATOR_ALIASES = {"embedding_similarity": "embedding_distance"}
"""The registry's other names of an evaluator."""

CRITERION_NODES = {
    "tool_trajectory_avg_score": "ToolTrajectoryCriterion",
    "response_match_score": "BaseCriterion",
    "response_evaluation_score": "BaseCriterion",
    "safety_v1": "BaseCriterion",
    "final_response_match_v2": "LlmAsAJudgeCriterion",
    "rubric_based_final_response_quality_v1": "RubricsBasedCriterion",
    "rubric_based_tool_use_quality_v1": "RubricsBasedCriterion",
    "hallucinations_v1": "HallucinationsCriterion",
}
"""ADK's metrics a trial is scored by -> the criterion each reads (its evaluator's
``criterion_type``); the metrics the studio refuses (multi-turn, efficiency) are left out."""


# --------------------------------------------------------------------------- the walk


def check_section(data: Mapping[str, object], node: str, at: Place) -> None:
    """Check every field ``data`` sets against the table's ``node``.

    Raises:
        ProjectFileError: the first field that is not allowed, by its path.
    """
    fields = BROWSER_FIELDS[node]
    for key, value in data.items():
        place = at.child(str(key))
        decision = fields.get(field_name(str(key)))
        if decision is None:
            allowed = sorted(n for n, d in fields.items() if not isinstance(d, Refused))
            raise place.refuse(f"is not a field a project from the browser may set here "
                               f"(it may set: {', '.join(allowed)})", key)
        decision.check(value, data, place)


def field_name(key: str) -> str:
    """A key as the table names it: ADK's and google-genai's camelCase aliases in snake_case
    (``judgeModelOptions`` -> ``judge_model_options``)."""
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", key).lower()


def check_browser_project_fields(data: Mapping[str, object], source: str) -> None:
    """A project file's fields as set (dumped without defaults), against the allow-list."""
    check_section(data, "ProjectFile", Place(source))


def check_browser_spec_fields(data: Mapping[str, object], source: str) -> None:
    """A stored run's spec (dumped without defaults), against the allow-list."""
    check_section(data, "RunSpec", Place(source))


def check_browser_settings(data: Mapping[str, object], source: str, prefix: str = "run") -> None:
    """Run settings from the browser (a project's ``run:``, the Run page's form, a fork's
    settings), against the allow-list."""
    check_section(data, "EvolutionConfig", Place(source, (prefix,)))


def check_browser_critic(data: Mapping[str, object], source: str) -> None:
    """A critic section from the browser (a fork's inline critic YAML)."""
    check_section(data, "CriticSection", Place(source, ("critic",)))
