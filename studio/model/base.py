"""The base of every model a person writes: a project file's sections, run settings, specs."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

CONFIG_MODEL = ConfigDict(extra="forbid", use_attribute_docstrings=True)
""":class:`ConfigModel`'s settings, for a config model that cannot take it as a base
(:class:`~studio.model.config.EvolutionConfig`, whose metaclass the type checker would lose)."""


class ConfigModel(BaseModel):
    """A model a person writes (in a project file, a run's settings, a spec): unknown fields
    are refused, and each field's docstring is its description, so ``studio schema`` and the
    generated reference (``docs/reference/project-file.md``) say what every field is from the
    one text beside its declaration."""

    model_config = CONFIG_MODEL
