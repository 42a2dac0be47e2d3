"""Work a page starts and does not wait for: one thread per job, keyed, with progress and the
failure kept for the page to show. A key runs at most once at a time in this process, so a page
that redraws while the job goes on finds it instead of starting it again."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from studio.model.errors import StudioError
from studio.model.redaction import redact

logger = logging.getLogger(__name__)


@dataclass
class Job:
    """One piece of background work: ``done`` of ``total`` steps, then its result or error."""

    key: str
    label: str
    total: int = 0
    done: int = 0
    result: Any = None
    error: str | None = None
    finished: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def step(self) -> None:
        """One more step done (called from worker threads)."""
        with self._lock:
            self.done += 1

    @property
    def running(self) -> bool:
        return not self.finished

    @property
    def progress(self) -> float:
        return min(1.0, self.done / self.total) if self.total else 0.0


_JOBS: dict[str, Job] = {}
_LOCK = threading.Lock()


def start_job(key: str, label: str, work: Callable[[Job], object]) -> Job:
    """Run ``work(job)`` in a thread; while a job with this key runs, return it instead."""
    with _LOCK:
        current = _JOBS.get(key)
        if current is not None and current.running:
            return current
        job = _JOBS[key] = Job(key=key, label=label)
    threading.Thread(target=_run, args=(job, work), name=f"job-{key}", daemon=True).start()
    return job


def job(key: str) -> Job | None:
    """The latest job with this key in this process (running or finished)."""
    with _LOCK:
        return _JOBS.get(key)


def _run(job_: Job, work: Callable[[Job], object]) -> None:
    try:
        job_.result = work(job_)
    except BaseException as exc:  # shown on the page that started it, never lost
        job_.error = failure_text(exc)
        logger.error("background job %s failed: %s", job_.key, job_.error)
        if not isinstance(exc, Exception):
            raise  # SystemExit, KeyboardInterrupt: recorded, then let them stop the thread
    finally:
        job_.finished = True


def failure_text(exc: BaseException) -> str:
    """What the page shows and the log keeps: the message, redacted (an exception's text can
    quote a key or a URL with a password); no traceback, which can quote the same."""
    text = str(exc) if isinstance(exc, StudioError) else f"{type(exc).__name__}: {exc}"
    return redact(text)
