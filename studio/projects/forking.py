"""Forks as people ask for them: from the command line (a critic or dataset file of their own,
``key=value`` settings) and from the browser (only what the stored run already has, or inline
settings: never a file on the server). Both end in :func:`studio.engine.hosting.forks.fork`.

:func:`start_fork` dispatches the fork, so it takes the whole :class:`~studio.store.Store`;
the rest asks for a :class:`~studio.store.seams.ForkingStore`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from studio.engine.hosting.build import critic_for_run, spec_model
from studio.engine.hosting.dispatch import dispatch
from studio.engine.hosting.forks import fork
from studio.engine.policies.pool import pool_scores
from studio.model.errors import (
    ConfigError,
    DatasetError,
    NotFoundError,
    ProjectFileError,
    RunStateError,
)
from studio.model.records import Candidate, CriticSpec, Run
from studio.projects.files import (
    MAX_DATASET_BYTES,
    MAX_PROJECT_BYTES,
    BoundedLoader,
    CriticSection,
    DatasetSection,
    Origin,
    check_browser_critic,
    check_browser_settings,
    check_critic_section,
    check_spec_trust,
    decode_text,
    explain_validation,
    prepare_rows,
    read_bounded,
    read_csv,
    read_jsonl,
    resolve_datasets,
    resolve_testset,
    set_fields,
)
from studio.runtime.execution import AgentExecutor
from studio.store import Store
from studio.store.seams import ForkingStore

ROW_FILES = (".csv", ".jsonl", ".ndjson")
YAML_FILES = (".yaml", ".yml")


def parse_settings(items: list[str]) -> dict[str, object]:
    """``["max_iterations=5", "review=review"]`` as ``{"max_iterations": 5, ...}`` (each value
    read as a YAML scalar: numbers, ``null``, ``true``; checked later as EvolutionConfig).

    Raises:
        ConfigError: an item without ``=``, or a value that is not a plain scalar.
    """
    settings: dict[str, object] = {}
    for item in items:
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"{item!r} is not key=value (e.g. max_iterations=5)",
                              where="--config", value=item)
        try:
            value = yaml.safe_load(text) if text.strip() else None
        except yaml.YAMLError as exc:
            raise ConfigError(f"the value of {key!r} does not parse: {exc}",
                              where=f"--config {key}", value=text) from exc
        if isinstance(value, dict | list):
            raise ConfigError(f"the value of {key!r} must be a number, a word or null",
                              where=f"--config {key}", value=text)
        settings[key] = value
    return settings


def critic_from_text(text: str, source: str, origin: Origin = Origin.LOCAL) -> CriticSpec:
    """A critic from YAML text: a project's ``critic:`` section, or a whole project file (its
    critic is taken). Bounded and alias-free like project files; from the browser, checked
    against the allow-list as a project's critic is.

    Raises:
        ProjectFileError: naming ``source``, the field and what is wrong.
    """
    data = _yaml_mapping(text, source)
    section = data.get("critic", data) if isinstance(data.get("critic"), dict) else data
    try:
        critic = CriticSection.model_validate(section)
    except ValidationError as exc:
        raise ProjectFileError(explain_validation(exc), where=f"{source}: critic") from exc
    if origin is Origin.BROWSER:
        check_browser_critic(set_fields(critic), source)
    check_critic_section(critic, source)
    return critic.to_spec()


def critic_from_argument(argument: str) -> CriticSpec:
    """``--critic``: a YAML file of the CLI user's (a critic section or a project file), or the
    YAML itself (``"{type: evaluator, evaluator: {evaluator: exact_match}}"``)."""
    path = Path(argument)
    if path.suffix.lower() in YAML_FILES and path.is_file():
        data = read_bounded(path, MAX_PROJECT_BYTES, ProjectFileError)
        return critic_from_text(decode_text(data, str(path), ProjectFileError), str(path))
    if path.suffix.lower() in YAML_FILES and "\n" not in argument and ":" not in argument:
        raise ProjectFileError(f"file {argument!r} does not exist (or is not a file): give the "
                               "path of a YAML file with a critic section, or the YAML itself",
                               where="--critic", value=argument)
    return critic_from_text(argument, "--critic")


def datasets_from_path(path: Path, input_key: str | None
                       ) -> tuple[list[dict], list[dict] | None, list[dict] | None]:
    """``--dataset``: a CSV/JSONL file (the fork's training rows; validation and test stay the
    source's), or a YAML file with a project's ``dataset:`` section (train, and optionally val
    and test; its file paths relative to it, inside its folder). Returns ``(train, val, test)``.

    Raises:
        DatasetError: naming the file, the field and the problem.
    """
    suffix = path.suffix.lower()
    if suffix in ROW_FILES:
        text = decode_text(read_bounded(path, MAX_DATASET_BYTES, DatasetError), str(path))
        rows = read_csv(path, text=text) if suffix == ".csv" else read_jsonl(path, text=text)
        columns = DatasetSection(train=rows, input_column=input_key)
        return prepare_rows(rows, columns, str(path)), None, None
    if suffix not in YAML_FILES:
        raise DatasetError(f"--dataset {path} must be .csv, .jsonl or a .yaml dataset section",
                           where="--dataset", value=str(path))
    text = decode_text(read_bounded(path, MAX_PROJECT_BYTES, DatasetError), str(path))
    data = _yaml_mapping(text, str(path))
    try:
        section = DatasetSection.model_validate(data.get("dataset", data))
    except ValidationError as exc:
        raise DatasetError(explain_validation(exc), where=f"{path}: dataset") from exc
    if section.input_column not in (None, input_key):
        raise DatasetError(f"input_column {section.input_column!r} differs from the run's "
                           f"{input_key!r}: a fork keeps its agent's input; leave it out or "
                           "use the same column", where=f"{path}: dataset.input_column")
    holder = _DatasetHolder(section.model_copy(update={"input_column": input_key}))
    train, val = resolve_datasets(holder, path.parent, source=str(path))
    return train, val, resolve_testset(holder, path.parent, source=str(path))


class _DatasetHolder:
    """Just enough of a project for the dataset readers (they read ``project.dataset``)."""

    def __init__(self, dataset: DatasetSection) -> None:
        self.dataset = dataset


def fork_from_cli(store: ForkingStore, run_id: str, candidate_index: int, *,
                  critic: str | None = None, dataset: Path | None = None,
                  settings: list[str] | None = None, name: str = "") -> Run:
    """``studio fork``: the CLI user's own files are trusted (as ``studio run`` is)."""
    source = store.get_run(run_id)
    critic_spec = critic_from_argument(critic) if critic else None
    train = val = test = None
    if dataset is not None:
        train, val, test = datasets_from_path(dataset, source.spec.input_key)
    if critic_spec is not None:
        check_critic_builds(critic_spec, source, "--critic")
    return fork(store, run_id, candidate_index, critic=critic_spec, trainset=train,
                valset=val, testset=test, config=parse_settings(settings or []), name=name)


def start_fork(store: Store, run_id: str, candidate_index: int, *,
               settings: dict[str, Any] | None = None, critic_yaml: str = "",
               name: str = "") -> Run:
    """A fork from the browser: the stored run's agent, examples and critic (or an inline critic
    YAML), with ``settings`` on top; queued when a worker is live, else started here.

    Raises:
        ProjectFileError: the run loads Python code (``agent.ref``) and the server did not opt
            in. RunStateError: the run was started from Python objects. ConfigError: a setting,
            the critic or the candidate is wrong.
    """
    source = store.get_run(run_id)
    check_spec_trust(source.spec, Origin.BROWSER, f"run {run_id}")
    if not source.spec.resumable:
        raise RunStateError(f"run {run_id} was started from Python objects, which the studio "
                            "cannot rebuild: fork it from Python with studio.fork(...)")
    check_browser_settings(settings or {}, f"fork of run {run_id}", prefix="settings")
    critic = critic_from_text(critic_yaml, "critic", origin=Origin.BROWSER) \
        if critic_yaml.strip() else None
    if critic is not None:
        check_critic_builds(critic, source, "critic")
    run = fork(store, run_id, candidate_index, critic=critic, config=settings or {},
               name=name)
    return dispatch(store, run.id).run


def check_critic_builds(critic: CriticSpec, source: Run, where: str) -> None:
    """Build the critic as the engine will (no model is called), so a bad evaluator config is
    refused before the fork is stored."""
    try:
        critic_for_run(critic, AgentExecutor(max_concurrency=1, timeout_s=1.0),
                       spec_model(source.spec))
    except ConfigError as exc:
        raise ConfigError(getattr(exc, "message", str(exc)),
                          where=f"{where}: {exc.where or 'critic'}", value=exc.value) from exc


def _yaml_mapping(text: str, source: str) -> dict[str, Any]:
    if len(text) > MAX_PROJECT_BYTES:
        raise ProjectFileError(f"{len(text):,} characters; the limit is {MAX_PROJECT_BYTES:,}",
                               where=source)
    try:
        data = yaml.load(text, Loader=BoundedLoader)  # noqa: S506 (a SafeLoader subclass)
    except yaml.YAMLError as exc:
        raise ProjectFileError(f"YAML does not parse: {getattr(exc, 'problem', None) or exc}",
                               where=source) from exc
    if not isinstance(data, dict):
        raise ProjectFileError("must be a YAML mapping (e.g. {type: evaluator, evaluator: "
                               "{name: exact_match}})", where=source)
    return data


# --------------------------------------------------------------------------- lineage across runs

MAX_FORK_DEPTH = 50
"""How many forks back a lineage is followed (a guard against a spec that names itself)."""


@dataclass(frozen=True)
class RunTree:
    """One run of a lineage: its candidates and their validation means."""

    run: Run
    candidates: list[Candidate]
    means: dict[int, float | None] = field(default_factory=dict)
    front: dict[int, int] = field(default_factory=dict)
    best_id: int | None = None


def ancestry(store: ForkingStore, run_id: str) -> list[RunTree]:
    """The run and the runs it was forked from, oldest first (a deleted source ends it)."""
    chain: list[RunTree] = []
    seen: set[str] = set()
    current: str | None = run_id
    while current is not None and current not in seen and len(chain) < MAX_FORK_DEPTH:
        seen.add(current)
        try:
            run = store.get_run(current)
        except NotFoundError:
            break
        scores = pool_scores(store, run)
        chain.append(RunTree(run, store.candidates(current), scores.means, scores.front,
                             scores.best_id))
        current = run.spec.forked_from.run_id if run.spec.forked_from else None
    return chain[::-1]


def forks_of(store: ForkingStore, run_id: str) -> list[Run]:
    """Every run forked from ``run_id``, however old, oldest first (found by query)."""
    return store.forks_of(run_id)
