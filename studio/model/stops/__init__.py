"""The run's stop conditions, each one object in one module of this package.

A condition owns its facts: the :class:`~studio.model.config.EvolutionConfig` setting it reads,
its check, the :class:`~studio.model.records.StopReason` a run it ends carries, the words that
reason prints, and the input the Run form shows for it. Adding one is adding a module here
that subclasses :class:`StopCondition` (the class registers itself; the package imports every
module in it): the engine checks it (:func:`studio.engine.policies.limits.check_limits`),
the Run form shows its input, the CLI and the pages print its words.

Checked between iterations only, in :attr:`StopCondition.order`, against a
:class:`RunProgress` the engine fills in; the first one reached ends the run.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

if TYPE_CHECKING:
    from studio.model.config import EvolutionConfig


class RunProgress(Protocol):
    """What a stop condition may read of a running loop: the engine's view of it."""

    @property
    def iteration(self) -> int:
        """The last settled iteration the check is made for (0: the baseline)."""

    @property
    def best_score(self) -> float | None:
        """The best validation mean so far."""

    @property
    def stale_iterations(self) -> int:
        """Iterations in a row without a better best validation mean."""

    @property
    def idle_iterations(self) -> int:
        """Reflection iterations in a row that made no new candidate."""

    def metric_calls(self) -> int:
        """The loop's metric calls so far."""

    def next_iteration_calls(self) -> int:
        """What one more iteration could cost at worst (parent, child, validation)."""

    def timed_seconds(self) -> float:
        """The run's machine time, pauses and gates left out."""


@dataclass(frozen=True)
class FormInput:
    """How the Run form asks for a condition's setting: a number where ``0`` means "none"
    unless the setting is required, shown divided by ``scale`` (seconds shown as minutes)."""

    label: str
    minimum: int | float
    maximum: int | float
    step: int | float = 1
    help: str | None = None
    key: str | None = None
    """The widget's key suffix; the setting's name when None."""
    scale: int | float = 1
    required: bool = False
    """The setting has no "none" (``max_iterations``): 0 is a value, not "no limit"."""

    def shown(self, setting: Any) -> int | float:
        """The number the input starts at, from the setting's current value."""
        value = (setting or 0) / self.scale
        return float(value) if isinstance(self.step, float) else int(value)

    def setting(self, shown: int | float) -> int | float | None:
        """The setting's value from the number a person entered."""
        value = float(shown) * self.scale if isinstance(self.step, float) else int(shown)
        return value if value or self.required else None


class StopCondition:
    """One stop condition; subclass it in a module of this package (see the package doc)."""

    reason: ClassVar[str]
    """The :class:`~studio.model.records.StopReason` value a run it ends stores."""
    setting: ClassVar[str]
    """The :class:`~studio.model.config.EvolutionConfig` field holding its limit (None: off)."""
    words: ClassVar[str]
    """Why the run ended, for people: what the pages and the CLI print."""
    order: ClassVar[int]
    """Where it is checked among the others (lower first)."""
    form: ClassVar[FormInput | None] = None
    """Its input on the Run form; None: set in the project file only."""

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        _REGISTERED[cls.reason] = cls()

    def limit(self, config: EvolutionConfig) -> Any:
        """The configured limit, None when the condition is off."""
        return getattr(config, self.setting)

    def check(self, config: EvolutionConfig, progress: RunProgress) -> bool:
        """Whether the run should end here."""
        limit = self.limit(config)
        return limit is not None and self.reached(limit, progress)

    def reached(self, limit: Any, progress: RunProgress) -> bool:
        """Whether ``progress`` reached the (set) ``limit``."""
        raise NotImplementedError


_REGISTERED: dict[str, StopCondition] = {}


def _import_all() -> None:
    for module in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{module.name}")


_import_all()
STOP_CONDITIONS: tuple[StopCondition, ...] = tuple(
    sorted(_REGISTERED.values(), key=lambda c: c.order))
"""Every stop condition, in the order they are checked."""


def stop_condition(reason: str) -> StopCondition | None:
    """The condition that ends a run with ``reason``, None for the run's other ends."""
    return _REGISTERED.get(reason)
