"""Forking: a new run whose seed is any candidate of another run.

The fork keeps the source run's agent (or workflow), reflection and components; its candidate #0
is the chosen candidate's component texts (``RunSpec.forked_from``), and it may judge with
another critic, learn from other examples or run with other settings. Everything else is a run
like any other: stored, watched, gated, resumed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from studio.engine.hosting.build import check_seed_state, create_run
from studio.model.config import EvolutionConfig
from studio.model.errors import ConfigError
from studio.model.records import Candidate, CriticSpec, ForkOrigin, Run, Split, stored_id
from studio.store.seams import ForksStore

Rows = list[dict[str, Any]]


def fork(store: ForksStore, run_id: str, candidate_index: int, *, critic: CriticSpec | None = None,
         trainset: Rows | None = None, valset: Rows | None = None, testset: Rows | None = None,
         config: EvolutionConfig | Mapping[str, Any] | None = None, name: str = "") -> Run:
    """Create (not start) a run seeded with candidate ``#candidate_index`` of ``run_id``.

    Left out, each part is the source run's: ``critic``; ``trainset``; ``valset`` (a source
    that validated on its training set validates on the fork's); ``testset``; ``config`` (a
    mapping overrides some settings, e.g. ``{"max_iterations": 5}``; an EvolutionConfig
    replaces them all). Start it like any stored run: ``studio resume ID``,
    :func:`studio.engine.hosting.queue.queue_run`, or for a run started from Python objects
    ``evolve(agent, [], critic=..., resume=ID)``.

    Raises:
        NotFoundError: no such run. ConfigError: no such candidate, a bad setting or dataset,
            or a ``{placeholder}`` of the seed that the fork's examples do not fill.
    """
    source = store.get_run(run_id)
    candidate = candidate_at(store, run_id, candidate_index)
    origin = ForkOrigin(run_id=run_id, candidate_id=stored_id(candidate),
                        candidate_index=candidate.index, components=dict(candidate.components))
    spec = source.spec.model_copy(update={"forked_from": origin,
                                          "critic": critic or source.spec.critic})
    train = trainset if trainset is not None else _rows(store, run_id, Split.TRAIN)
    if valset is None and not source.spec.val_is_train:
        valset = _rows(store, run_id, Split.VAL)
    if testset is None:
        testset = _rows(store, run_id, Split.TEST) or None
    check_seed_state(spec, train)
    return create_run(store, spec=spec, trainset=train, valset=valset, testset=testset,
                      config=fork_config(source.config, config),
                      name=name or f"{source.name or 'run'} · fork of #{candidate.index}",
                      project_id=source.project_id)


def candidate_at(store: ForksStore, run_id: str, index: int) -> Candidate:
    """Candidate ``#index`` of a run.

    Raises:
        ConfigError: the run has no such candidate (the error names the ones it has).
    """
    candidates = store.candidates(run_id)
    found = next((c for c in candidates if c.index == index), None)
    if found is None:
        have = f"#0 to #{candidates[-1].index}" if candidates else "none yet"
        raise ConfigError(f"run {run_id} has no candidate #{index} (it has {have})",
                          where="candidate", value=index)
    return found


def fork_config(base: EvolutionConfig, config: EvolutionConfig | Mapping[str, Any] | None
                ) -> EvolutionConfig:
    """The source's settings with ``config``'s on top, validated.

    Raises:
        ConfigError: naming the setting (``config.max_iterations``) and what is wrong.
    """
    if config is None:
        return base
    if isinstance(config, EvolutionConfig):
        return config
    unknown = [key for key in config if key not in EvolutionConfig.model_fields]
    if unknown:
        raise ConfigError(f"unknown setting {unknown[0]!r}; settings: "
                          f"{', '.join(EvolutionConfig.model_fields)}",
                          where=f"config.{unknown[0]}", value=unknown[0])
    try:
        return EvolutionConfig.model_validate(base.model_dump() | dict(config))
    except ValidationError as exc:
        error = exc.errors()[0]
        field = ".".join(str(p) for p in error["loc"]) or "config"
        message = error["msg"].removeprefix("Value error, ")
        raise ConfigError(message, where=f"config.{field}", value=error.get("input")) from exc


def _rows(store: ForksStore, run_id: str, split: Split) -> Rows:
    return [example.data for example in store.examples(run_id, split)]
