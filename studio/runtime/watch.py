"""Watching and stopping the model calls made for one person's request ("Try it").

A page that starts slow work on a person's behalf shows its progress and offers a Cancel that
really stops it. Cancelling the asyncio task ends the work at its next ``await``; the embedded
model, though, generates on its own worker thread, which a cancelled task does not stop. So the
request carries a :class:`CallWatch` in a context variable (LiteLLM runs a provider's request
in a copy of the caller's context, and the embedded model's worker runs it in that copy too):
the model counts the tokens it generates on it and stops at the next token once it is cancelled.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field

from studio.model.errors import StudioError


class GenerationCancelled(StudioError):
    """The person cancelled the request while a model was generating its reply."""


@dataclass
class CallWatch:
    """The progress of one request's model calls, and its stop signal (thread-safe: the page
    reads it while the model's thread writes it)."""

    started: float = field(default_factory=time.monotonic)
    tokens: int = 0
    """Tokens the embedded model generated so far (hosted and scripted models report none)."""
    _cancel: threading.Event = field(default_factory=threading.Event, repr=False)

    def cancel(self) -> None:
        self._cancel.set()

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    @property
    def elapsed_s(self) -> float:
        return time.monotonic() - self.started

    def token(self) -> None:
        """One more token generated; raises once the request was cancelled, which ends the
        model's generation loop there.

        Raises:
            GenerationCancelled: the request was cancelled.
        """
        if self._cancel.is_set():
            raise GenerationCancelled("the request was cancelled while the model was writing "
                                      f"(after {self.tokens} token(s))")
        self.tokens += 1


_CURRENT: ContextVar[CallWatch | None] = ContextVar("studio_call_watch", default=None)


def current_watch() -> CallWatch | None:
    """The watch of the request this code runs for, if someone watches it."""
    return _CURRENT.get()


@contextlib.contextmanager
def watching(watch: CallWatch) -> Iterator[CallWatch]:
    """Model calls made inside (and in tasks started inside) report to ``watch``."""
    token = _CURRENT.set(watch)
    try:
        yield watch
    finally:
        _CURRENT.reset(token)
