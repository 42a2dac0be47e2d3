"""The studio's timing settings in one place: how often a live thing says it is alive, when its
silence counts as death, and how often waiting code looks again.

Each setting that an operator (or a test) may need to change is read once, at import, from an
environment variable, so every process a command starts (a worker, a pool's processes) agrees
on it; within one process, tests shorten a setting with ``monkeypatch.setattr`` on the module
that uses it. The relations between them are kept here too: a lease or a wedge is always
several beats long, so a beat that comes a moment late on a busy machine never looks like
death.
"""

from __future__ import annotations

import math
import os

from studio.model.errors import ConfigError


def seconds_setting(name: str, default: float, low: float, high: float) -> float:
    """A number of seconds from the environment variable ``name``, in ``[low, high]``.

    Raises:
        ConfigError: the value is not a finite number in the range (``0`` or a negative stale
            age would let a second process take over a live run at once).
    """
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and low <= value <= high):
        raise ConfigError(f"{text!r} is not allowed: give a number of seconds from "
                          f"{low:g} to {high:g} (default {default:g}), or unset it",
                          where=name, value=text)
    return value


# --------------------------------------------------------------------------- heartbeats

HEARTBEAT_SECONDS = seconds_setting("STUDIO_HEARTBEAT_SECONDS", 1.0, 0.05, 600.0)
"""How often anything alive says so: a worker beats its runs' leases and its own row in the
store, and each process of a run's pool touches its heartbeat file."""

STALE_AFTER_SECONDS = seconds_setting("STUDIO_STALE_AFTER_SECONDS",
                                      max(10.0, 2 * HEARTBEAT_SECONDS), 2 * HEARTBEAT_SECONDS,
                                      86_400.0)
"""A running run without a heartbeat for this long is orphaned (its lease expires, another
worker may claim it). At least two beats: with a lease of one beat, a live worker whose beat
came a moment late (a busy machine, a slow commit) had its run taken by a second worker."""

STALE_HEARTBEAT_SECONDS = seconds_setting("STUDIO_WEDGED_AFTER_SECONDS",
                                          max(20.0, 10 * HEARTBEAT_SECONDS),
                                          3 * HEARTBEAT_SECONDS, 86_400.0)
"""A pool process whose heartbeat is older than this is wedged (SIGSTOPped, or stuck holding
the GIL): its threads no longer run. A process waiting on a slow model still beats, so a long
call is never mistaken for a wedge; the shard deadline stays the last resort."""

HEARTBEAT_CHECK_SECONDS = 1.0
"""How often a run waiting for a shard looks at its processes' heartbeats."""

# --------------------------------------------------------------------------- grace and polling

PROCESS_START_SECONDS = 120.0
"""Allowed on top of a shard's deadline while a new pool's processes are still starting (a
fresh interpreter imports ADK and LiteLLM: seconds, more on a loaded machine)."""

STALL_SLACK_SECONDS = 10.0
"""Added to a shard's deadline: backoff between retries and a process building the run."""

OUTAGE_RETRY_SECONDS = 2.0
"""How often a process waiting for its database to answer again tries it (a worker started
before its database, a run stopped by an outage)."""
