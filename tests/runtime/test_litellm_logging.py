"""LiteLLM's background logging with several event loops at once (a run's loop beside "Try it"):
each loop logs on its own worker, so no logging task is destroyed while pending (the server
console printed "Task was destroyed but it is pending!" for LoggingWorker._worker_loop)."""

from __future__ import annotations

import asyncio
import gc
import logging
import threading

import pytest

from studio.projects.files import load_project
from studio.projects.probe import probe
from studio.projects.workspace import EXAMPLES_DIR
from studio.runtime import litellm_logging


class Messages(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.seen.append(record.getMessage())


@pytest.mark.slow
def test_two_loops_calling_models_at_once_destroy_no_pending_task():
    project = load_project(EXAMPLES_DIR / "haiku_scripted.yaml")[0]
    slower = project.model_copy(update={"agent": project.agent.model_copy(
        update={"model": "scripted/demo@200ms"})})
    workers: list[object] = []

    async def calls(spec, n: int) -> None:
        for _ in range(n):
            result = await probe(spec, {"topic": "rain"})
            assert result.error is None
        from litellm.litellm_core_utils import logging_worker

        workers.append(litellm_logging.loop_worker(logging_worker.LoggingWorker))

    messages = Messages()
    logging.getLogger("asyncio").addHandler(messages)
    try:
        other = threading.Thread(target=lambda: asyncio.run(calls(slower, 3)))
        other.start()
        for _ in range(3):
            asyncio.run(calls(project, 1))  # loops that start and end while the other runs
            gc.collect()
        other.join(timeout=60)
        gc.collect()
    finally:
        logging.getLogger("asyncio").removeHandler(messages)
    assert not other.is_alive()
    assert not [m for m in messages.seen if "destroyed but it is pending" in m], messages.seen
    assert len({id(worker) for worker in workers}) == 4  # one logging worker per loop
