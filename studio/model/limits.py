"""Size caps on text that the studio does not control: what a model writes, what a person types,
what a project or dataset holds. Without them one runaway reply or paste (a 10 MB instruction)
costs minutes of CPU, hundreds of MB of memory and tens of MB of database per iteration.

Text a person or a project supplies over its cap is refused with an error naming the field and
the cap. Text a model writes over its cap is kept up to the cap with a marker saying how much was
cut, so a run goes on and a reader sees that it was cut. docs/security.md lists them.
"""

from __future__ import annotations

from studio.model.errors import ConfigError

MAX_COMPONENT_CHARS = 50_000
"""An instruction, output schema or generation config: in a project, a proposal or an edit."""

MAX_DEMOS = 8
"""Few-shot demonstrations one agent is shown (each is two more turns in every request)."""

MAX_DEMO_CHARS = 1_000
"""A demonstration's input, and its output."""

MAX_FEEDBACK_CHARS = 20_000
"""A critic's feedback text, and a person's corrected feedback."""

MAX_DIMENSIONS = 50
"""Per-dimension scores kept from one critic reply."""

MAX_OUTPUT_CHARS = 200_000
"""An agent's output as stored and judged."""

MAX_JUDGE_SAMPLES = 10
"""Times an ADK eval metric may ask its judge model about one trial
(``judge_model_options.num_samples``; ADK's default is 5), from any project: each sample is a
paid model call, and each counts against the run's ``max_metric_calls``."""

MAX_DATASET_ROWS = 100_000
"""Examples in one dataset split."""

REFLECTION_FIELD_CHARS = 1_500
"""Characters of each trial's input, output and feedback shown to the reflection agent."""

MAX_REFLECTION_TRIALS_CHARS = 60_000
"""All trials shown to the reflection agent together (trials past it are left out, counted)."""


def clip(text: str, limit: int) -> str:
    """``text`` up to ``limit`` characters, with a marker saying how many were cut."""
    if len(text) <= limit:
        return text
    return text[:limit] + f" ... [{len(text) - limit:,} more characters cut]"


def too_long(text: str, limit: int, what: str) -> str | None:
    """Why ``text`` is refused, or None when it fits."""
    if len(text) <= limit:
        return None
    return f"{what} is {len(text):,} characters; the limit is {limit:,}"

MAX_TOOLS = 32
"""Python function tools one agent may name: each is described to the model in every call."""

MAX_TOOL_REF_CHARS = 200
"""A tool reference ``package.module:function``."""
MAX_IMAGE_BYTES = 5_000_000
"""One image in a dataset (PNG, JPEG, GIF or WEBP), decoded: 5 MB, what the strictest hosted
vision APIs accept per image."""

MAX_VIDEO_BYTES = 20_000_000
"""One video in a dataset (MP4 or WEBM), decoded: sent inline, so kept to a short clip."""

MAX_MEDIA_PER_EXAMPLE = 16
"""Images and videos in one example (each in its own column)."""

MAX_DATASET_MEDIA_BYTES = 100_000_000
"""All images and videos of one dataset split together, decoded (the examples are stored and
held in memory by the run as data URIs)."""

THUMBNAIL_PIXELS = 160
"""The longest side of a thumbnail the studio shows next to a trial."""

MAX_NAME_CHARS = 200
"""A project's or run's name, an author, a worker id: the width of those database columns, so
SQLite (which ignores column widths) and PostgreSQL (which refuses past them) agree."""

MAX_QUEUE_CHARS = 64
"""A queue name (``studio queue --queue``, ``studio worker --queue``)."""

MAX_COMPONENT_NAME_CHARS = 200
"""A component's name (``instruction``, ``output_schema``, ``<agent>.instruction``)."""


def check_length(text: str, limit: int, what: str) -> str:
    """``text`` when it fits in ``limit`` characters.

    Raises:
        ConfigError: naming ``what`` and the limit, so both backends refuse it the same way.
    """
    if len(text) > limit:
        raise ConfigError(f"{len(text):,} characters is too long: the limit is {limit:,}; "
                          "shorten it", where=what, value=text[:40] + "...")
    return text
