"""The libraries' logging, quieted the same way by the CLI, the studio's frame and the benches."""

from __future__ import annotations

import logging


def quiet_library_logs() -> None:
    """ADK logs a full traceback for every failed model call; the trial records it already."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    for name in ("google_adk", "google.adk", "LiteLLM", "litellm", "httpx"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
