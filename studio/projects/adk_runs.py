"""A run from an ADK agent folder and its eval sets, with no project file:
``studio run my_agent --evalset my_agent/haiku.evalset.json``.

The inputs are the ones ``adk optimize`` takes, read with ADK's own models: the agent folder,
eval sets (``--evalset``, or the ``train_eval_set`` / ``validation_eval_set`` and case ids of
the sampler config, ``LocalEvalSamplerConfig``), the eval criteria (the sampler config's
``eval_config``, or a ``test_config.json`` given with ``--criteria``; ADK's default criteria
otherwise), and the optimizer config (``GEPARootAgentPromptOptimizerConfig``: its
``optimizer_model``, ``max_metric_calls`` and ``reflection_minibatch_size``). They become an
ordinary :class:`ProjectFile`, so the run is stored, watched and steered like any other, and
``--write-project`` saves that file to run again or edit.

The criteria are judged as ``adk eval`` judges them, by ADK's own evaluators
(:mod:`studio.critics.adk_metrics`): each metric against its own threshold, a case passing only
when every metric passes; ADK's default criteria (``tool_trajectory_avg_score`` and
``response_match_score``) need no model. ``--model`` runs every agent of the folder's tree on
another model with no edit to its files (:mod:`studio.runtime.agent_models`); the proposals are
written by ``--reflection-model``, else the optimizer config's model, else the agent's own.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError, field_validator

from studio.model.errors import ConfigError, DatasetError
from studio.model.jsontools import first_non_finite
from studio.projects.files import (
    ProjectFile,
    decode_text,
    file_kind,
    parse_project,
    read_bounded,
)
from studio.runtime.adk_evalsets import case_row, is_eval_set_file, parse_eval_set

if TYPE_CHECKING:
    from google.adk.evaluation.eval_config import EvalConfig
    from google.adk.optimization.gepa_root_agent_prompt_optimizer import (
        GEPARootAgentPromptOptimizerConfig,
    )

M = TypeVar("M", bound=BaseModel)

ADK_DEFAULT_CRITERIA: dict[str, float] = {"tool_trajectory_avg_score": 1.0,
                                          "response_match_score": 0.8}
"""What ``adk eval`` scores when no criteria are given (ADK's ``_DEFAULT_EVAL_CONFIG``)."""

MAX_EVAL_SET_BYTES = 20_000_000
"""An eval set file larger than this (20 MB) is refused before it is read."""


class SamplerConfig(BaseModel):
    """ADK's ``LocalEvalSamplerConfig`` (``adk optimize --sampler_config_file_path``), field for
    field. ADK's own class lives in a module that imports its eval extra (the Vertex AI SDK),
    which the studio does not install; its ``eval_config`` is read with ADK's ``EvalConfig``."""

    eval_config: Any
    """ADK's ``EvalConfig``: ``{"criteria": {metric: threshold or criterion}}`` (Any: ADK's
    class is imported only when a config is read, by the validator below)."""
    app_name: str
    """The agent folder's name, as ``adk optimize`` checks it."""
    train_eval_set: str
    """The name of the eval set in the agent folder (``<name>.evalset.json``) to train on."""
    train_eval_case_ids: list[str] | None = None
    validation_eval_set: str | None = None
    """Default: the train eval set."""
    validation_eval_case_ids: list[str] | None = None

    @field_validator("eval_config", mode="before")
    @classmethod
    def _adk_eval_config(cls, value: object) -> EvalConfig:
        from google.adk.evaluation.eval_config import EvalConfig

        return finite_criteria(EvalConfig.model_validate(value))


def finite_criteria(config: EvalConfig) -> EvalConfig:
    """ADK's ``EvalConfig`` when every number in its criteria is finite. ADK's model takes a
    NaN threshold (``NaN`` in JSON), and every comparison with NaN is false: each case would
    fail (or pass) whatever it scored.

    Raises:
        ValueError: naming the criterion and the number (pydantic reports it at the field).
    """
    found = first_non_finite(config.model_dump(mode="python")["criteria"], "criteria")
    if found is not None:
        path, number = found
        raise ValueError(f"{path} is {number}: a threshold must be a finite number (against "
                         "NaN every comparison is false, so every case would be judged the "
                         "same whatever it scored)")
    return config


@dataclass(frozen=True)
class FolderRunRequest:
    """What ``studio run DIR`` was given besides the run settings."""

    folder: Path
    evalsets: tuple[Path, ...] = ()
    val_evalsets: tuple[Path, ...] = ()
    sampler_config: Path | None = None
    """ADK's ``LocalEvalSamplerConfig`` JSON (``adk optimize --sampler_config_file_path``)."""
    optimizer_config: Path | None = None
    """ADK's ``GEPARootAgentPromptOptimizerConfig`` JSON (``--optimizer_config_file_path``)."""
    criteria: Path | None = None
    """ADK's eval criteria file (``test_config.json``: ``{"criteria": {...}}``)."""
    model: str | None = None
    """Every model-bearing agent of the folder's tree runs on this model instead of its code's
    (``--model``)."""
    critic_model: str | None = None
    """The judge of the criteria judged by a model (``--critic-model``; default: the agent's
    own model)."""
    reflection_model: str | None = None
    """The model that writes the proposals (``--reflection-model``; default: the optimizer
    config's, else the agent's own model)."""


@dataclass(frozen=True)
class FolderProject:
    """The project a folder run is, its text (what ``--write-project`` saves) and the folder
    its paths are relative to."""

    project: ProjectFile
    text: str
    base_dir: Path


@dataclass(frozen=True)
class _Split:
    files: tuple[Path, ...]
    case_ids: tuple[str, ...] | None = None


def folder_project(request: FolderRunRequest, *, project_dir: Path | None = None
                   ) -> FolderProject:
    """The project for ``request``; paths in it are relative to ``project_dir`` (where
    ``--write-project`` writes), else to the folder holding the agent folder and eval sets.

    Raises:
        ConfigError: the folder is not an agent folder, eval sets are missing or given twice,
            a config file does not parse with ADK's model, or a criterion has no counterpart.
        DatasetError: an eval set is missing or unreadable, or a case id is unknown.
    """
    folder = _agent_folder(request.folder)
    sampler = _read_adk_config(request.sampler_config, SamplerConfig, "LocalEvalSamplerConfig")
    train, val = _splits(request, folder, sampler)
    base_dir = (project_dir or _common_folder([folder, *train.files, *(val.files if val
                                                                        else ())])).resolve()
    agent: dict[str, object] = {"folder": os.path.relpath(folder, base_dir)}
    if request.model:
        agent["model"] = request.model
    data: dict[str, Any] = {
        "name": folder.name,
        "agent": agent,
        "critic": critic_section(_criteria(request, sampler), judge_model=request.critic_model),
        "reflection": {"model": request.reflection_model} if request.reflection_model else {},
        "components": ["instruction"],
        "dataset": {"train": _source(train, base_dir, "dataset.train")},
        "run": {},
    }
    if val is not None:
        data["dataset"]["val"] = _source(val, base_dir, "dataset.val")
    _apply_optimizer_config(data, _optimizer_config(request.optimizer_config),
                            request.reflection_model)
    text = _project_text(data, request)
    return FolderProject(parse_project(text, source=f"the project for {folder}"), text,
                         base_dir)


def _agent_folder(path: Path) -> Path:
    folder = path.resolve()
    if not folder.is_dir():
        raise ConfigError(f"agent folder not found: {folder}", where="agent folder",
                          value=str(path))
    if not (folder / "agent.py").is_file() and not (folder / "__init__.py").is_file():
        raise ConfigError(f"{folder} is not an ADK agent folder: it needs agent.py defining "
                          "root_agent (and __init__.py with `from . import agent`), as "
                          "`adk create` makes it", where="agent folder", value=str(path))
    return folder


def _optimizer_config(path: Path | None) -> GEPARootAgentPromptOptimizerConfig | None:
    """``adk optimize``'s optimizer config file (``None`` when not given)."""
    if path is None:
        return None
    from google.adk.optimization import gepa_root_agent_prompt_optimizer as optimizer

    return _read_adk_config(path, optimizer.GEPARootAgentPromptOptimizerConfig,
                            "GEPARootAgentPromptOptimizerConfig")


def _read_adk_config(path: Path | None, cls: type[M], model: str) -> M | None:
    """ADK's own pydantic model ``cls`` (named ``model``) for a config file (``None`` when
    not given)."""
    if path is None:
        return None
    text = _read_text(path, where=model)
    try:
        return cls.model_validate_json(text)
    except ValidationError as exc:
        error = exc.errors()[0]
        place = ".".join(str(p) for p in error["loc"]) or "(top level)"
        message = str(error["msg"]).removeprefix("Value error, ")
        raise ConfigError(f"{path} is not an ADK {model}: {place}: {message}",
                          where=str(path), value=place) from exc


def _read_text(path: Path, *, where: str) -> str:
    """A config or eval set file's text: a regular file (a folder or a FIFO is named as such),
    at most :data:`MAX_EVAL_SET_BYTES`, UTF-8, as a dataset file is read."""
    try:
        data = read_bounded(path, MAX_EVAL_SET_BYTES, ConfigError)
        return decode_text(data, str(path), ConfigError)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc.message}", where=where, value=str(path)) from exc


def _splits(request: FolderRunRequest, folder: Path, sampler: SamplerConfig | None
            ) -> tuple[_Split, _Split | None]:
    """The train and validation eval sets: from ``--evalset`` / ``--val-evalset``, or the
    sampler config's eval set names, found in the agent folder as ADK's
    ``LocalEvalSetsManager`` finds them (``my_agent/<eval_set_id>.evalset.json``)."""
    if sampler is None:
        if not request.evalsets:
            raise ConfigError("give the eval set to train on: --evalset "
                              f"{folder.name}/NAME.evalset.json (repeatable), or "
                              "--sampler-config as `adk optimize` takes it",
                              where="--evalset")
        val = _Split(request.val_evalsets) if request.val_evalsets else None
        return _Split(request.evalsets), val
    if request.evalsets or request.val_evalsets:
        raise ConfigError("give the eval sets either with --evalset/--val-evalset or in the "
                          "sampler config (train_eval_set, validation_eval_set), not both",
                          where="--evalset")
    if sampler.app_name != folder.name:
        raise ConfigError(f"the sampler config's app_name {sampler.app_name!r} is not the agent "
                          f"folder's name {folder.name!r} (`adk optimize` refuses this too)",
                          where="--sampler-config: app_name", value=sampler.app_name)
    train = _Split((_named_eval_set(folder, sampler.train_eval_set),),
                   _ids(sampler.train_eval_case_ids))
    if sampler.validation_eval_set is None and sampler.validation_eval_case_ids is None:
        return train, None
    val_set = sampler.validation_eval_set or sampler.train_eval_set
    return train, _Split((_named_eval_set(folder, val_set),),
                         _ids(sampler.validation_eval_case_ids))


def _ids(ids: list[str] | None) -> tuple[str, ...] | None:
    return None if ids is None else tuple(ids)


def _named_eval_set(folder: Path, eval_set_id: str) -> Path:
    if not eval_set_id or Path(eval_set_id).name != eval_set_id:
        raise ConfigError(f"eval set name {eval_set_id!r} must be a file name without folders",
                          where="--sampler-config", value=eval_set_id)
    return folder / f"{eval_set_id}.evalset.json"


def _common_folder(paths: list[Path]) -> Path:
    """The folder holding every path (the agent folder's parent at least)."""
    folders = [str(paths[0].parent)] + [str(p.resolve().parent) for p in paths[1:]]
    return Path(os.path.commonpath(folders))


def _source(split: _Split, base_dir: Path, where: str) -> object:
    """A split's dataset source: the eval set's path when it is one file under ``base_dir``
    read whole, else its cases as inline rows (several files, or some case ids)."""
    for path in split.files:
        _check_eval_set_file(path, where)
    only = split.files[0].resolve()
    if len(split.files) == 1 and split.case_ids is None and only.is_relative_to(base_dir):
        return {"path": os.path.relpath(only, base_dir)}
    return _rows(split, where)


def _check_eval_set_file(path: Path, where: str) -> None:
    if not is_eval_set_file(path):
        raise DatasetError(f"{path} is not named as ADK names eval sets: *.evalset.json or "
                           "*.test.json", where=where, value=str(path))
    if not path.exists():
        raise DatasetError(f"eval set not found: {path}", where=where, value=str(path))
    if not path.is_file():
        raise DatasetError(f"the eval set {path} is not a regular file ({file_kind(path)}); give "
                           "the eval set file itself", where=where, value=str(path))


def _rows(split: _Split, where: str) -> list[dict[str, Any]]:
    rows, seen = [], set()
    for path in split.files:
        eval_set = parse_eval_set(_read_text(path, where=where), source=str(path), where=where)
        for index, case in enumerate(eval_set.eval_cases):
            seen.add(case.eval_id)
            if split.case_ids is None or case.eval_id in split.case_ids:
                rows.append(case_row(case, source=str(path), where=f"{where}[{index}]",
                                     eval_set_id=eval_set.eval_set_id))
    unknown = [i for i in split.case_ids or () if i not in seen]
    if unknown:
        raise DatasetError(f"eval case ids {unknown} are not in {', '.join(map(str, split.files))}",
                           where=where, value=unknown)
    if not rows:
        raise DatasetError("no eval cases selected", where=where, value=split.case_ids)
    return rows


def _criteria(request: FolderRunRequest, sampler: SamplerConfig | None) -> dict[str, object]:
    """The criteria as ``{metric: threshold or criterion dict}``: ``--criteria``, else the
    sampler config's ``eval_config``, else ADK's default."""
    if request.criteria is not None:
        from google.adk.evaluation.eval_config import EvalConfig

        text = _read_text(request.criteria, where="--criteria")
        try:
            config = finite_criteria(EvalConfig.model_validate_json(text))
        except ValidationError as exc:
            raise ConfigError(f"{request.criteria} is not ADK eval criteria "
                              f"({{\"criteria\": {{...}}}}): {exc.errors()[0]['msg']}",
                              where="--criteria", value=str(request.criteria)) from exc
        except ValueError as exc:
            raise ConfigError(f"{request.criteria}: {exc}", where="--criteria",
                              value=str(request.criteria)) from exc
    elif sampler is not None:
        config = sampler.eval_config
    else:
        return dict(ADK_DEFAULT_CRITERIA)
    return {name: value if isinstance(value, (int, float)) else value.model_dump()
            for name, value in config.criteria.items()} or dict(ADK_DEFAULT_CRITERIA)


FOLDER_SCORE_RULE = "graded"
"""The number GEPA optimises in a run of an agent folder (:class:`~studio.model.verdicts.
ScoreRule`): each metric's share of its threshold, averaged, so it is 1.0 exactly when ADK passes
the case, and a failing metric moved toward its threshold counts (``adk optimize``'s pass/fail
score gives GEPA nothing to climb until a case flips). Each trial still shows ADK's verdict."""


def critic_section(criteria: Mapping[str, object], *, judge_model: str | None = None
                   ) -> dict[str, object]:
    """A project's critic section judging ``criteria`` (ADK metric names to thresholds or
    criterion dicts) as ``adk eval`` does, with ADK's own evaluators (``type: adk_metrics``):
    each metric against its threshold, a case passing only when every metric passes. Metrics
    judged by a model ask ``judge_model`` (default: the agent's own model)."""
    section: dict[str, object] = {"type": "adk_metrics", "name": "adk_criteria",
                               "adk_metrics": {"criteria": criteria},
                               "score": FOLDER_SCORE_RULE}
    if judge_model:
        section["model"] = judge_model
    return section


def _apply_optimizer_config(data: dict[str, Any],
                            optimizer: GEPARootAgentPromptOptimizerConfig | None,
                            model: str | None) -> None:
    """``adk optimize``'s optimizer settings as the studio's: its model writes the proposals
    (unless --reflection-model says otherwise), its budget and minibatch are the run's."""
    if optimizer is None:
        return
    if model is None:
        data["reflection"]["model"] = optimizer.optimizer_model
    data["run"]["max_metric_calls"] = optimizer.max_metric_calls
    data["run"]["minibatch_size"] = optimizer.reflection_minibatch_size


def _project_text(data: dict[str, Any], request: FolderRunRequest) -> str:
    header = (f"# The project `studio run {request.folder}` ran: its agent folder, eval sets and "
              "criteria.\n# Run it again with `studio run THIS_FILE`, or edit it first.\n")
    return header + yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
