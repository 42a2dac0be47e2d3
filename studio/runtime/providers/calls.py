"""What a real provider needs at each model call: a wait when it says ``Retry-After``, a shared
per-model rate limit, and the price of the call.

ADK's ``LiteLlm`` sends every request through its ``llm_client``; the studio gives it
:func:`metered_client`, so these apply to one model request, never to a whole agent turn
with its tools (a retried agent would call its tools again).

- **Retry-After**: a 429 or 503 whose response names a wait (``Retry-After`` or
  ``retry-after-ms``) is retried with the same request after that wait, capped at
  :data:`MAX_RETRY_AFTER_SECONDS`, at most :data:`MAX_CALL_RETRIES` times. The OpenAI client's
  own retries are turned off for it (``max_retries=0``) so that the two do not multiply. A
  failure without a wait goes up to the executor's retries, as before.
- **Rate limits** (:func:`set_rate_limits`): one limiter per model string for the whole
  process, so the runs a worker (or the studio's server) holds share it: at most ``requests``
  calls start in any ``per_seconds`` window. Thread-safe: each run drives its own event loop in
  its own thread. They are the server's: :data:`RATE_LIMITS_ENV` in its environment, which no
  run replaces; a trusted run's own ``rate_limits`` (a project run from the command line, the
  library) add limits for other models. A project from the browser may not set any
  (:mod:`studio.projects.files.allowlist`).
- **Cost** (:func:`metered`): LiteLLM prices each reply from its local cost map
  (``response_cost``; ADK's own Gemini class by :func:`count_usage`); the calls made inside a
  ``metered()`` block add up in its :class:`CallMeter`. A model without a price (the embedded
  and scripted models) costs 0; a call whose reported usage or price no call could have
  (:func:`studio.model.costs.implausible_call`) is kept raw and not priced.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
import logging
import math
import os
import re
import threading
import time
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any

from pydantic import ValidationError

from studio.model.config import RateLimit
from studio.model.costs import implausible_call
from studio.model.errors import ConfigError

logger = logging.getLogger(__name__)

MAX_RETRY_AFTER_SECONDS = 120.0
"""The longest ``Retry-After`` waited for; a longer one fails the call (the executor decides)."""
MAX_CALL_RETRIES = 3
"""Retries of one model request that named a wait."""
RETRY_STATUSES = frozenset({429, 503})


# ---------------------------------------------------------------------------------- cost


@dataclass
class CallMeter:
    """The model calls made inside one :func:`metered` block (an agent's and its critic's)."""

    calls: int = 0
    cost_usd: float = 0.0
    retries_after: list[float] = field(default_factory=list)
    """The waits honoured, in seconds, in order."""
    unpriced: list[dict[str, Any]] = field(default_factory=list)
    """Calls whose reported usage or price could not be believed
    (:func:`studio.model.costs.implausible_call`): left out of ``cost_usd``, kept raw here."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, cost_usd: float) -> None:
        with self._lock:
            self.calls += 1
            self.cost_usd += cost_usd

    def add_unpriced(self, report: dict[str, Any]) -> None:
        with self._lock:
            self.calls += 1
            self.unpriced.append(report)


_METER: contextvars.ContextVar[CallMeter | None] = contextvars.ContextVar("studio_call_meter",
                                                                          default=None)


@contextlib.contextmanager
def metered() -> Iterator[CallMeter]:
    """Count the model calls made inside the block (tasks it starts share the meter: they copy
    the context, and the meter in it is the same object)."""
    meter = CallMeter()
    token = _METER.set(meter)
    try:
        yield meter
    finally:
        _METER.reset(token)


def response_cost(response: object) -> float:
    """LiteLLM's price of one reply in US dollars; 0 when it has none (an unpriced model);
    an infinite price as it is (:func:`_count` does not believe it)."""
    hidden = getattr(response, "_hidden_params", None) or {}
    cost = hidden.get("response_cost") if isinstance(hidden, dict) else None
    try:
        value = float(cost or 0.0)
    except (TypeError, ValueError, OverflowError):
        return 0.0
    return value if not math.isnan(value) and value > 0 else 0.0


# ---------------------------------------------------------------------------- rate limits


class SlidingWindowLimiter:
    """At most ``requests`` starts in any ``per_seconds`` window, for every thread and loop of
    the process: a caller reserves the next free start time under a lock and sleeps until it."""

    def __init__(self, limit: RateLimit, clock=time.monotonic) -> None:
        self.limit = limit
        self._clock = clock
        self._starts: deque[float] = deque()
        self._lock = threading.Lock()

    def reserve(self) -> float:
        """Seconds to wait before this call may start (its start is booked already)."""
        with self._lock:
            now = self._clock()
            window = self.limit.per_seconds
            while self._starts and self._starts[0] <= now - window:
                self._starts.popleft()
            start = now
            if len(self._starts) >= self.limit.requests:
                start = max(now, self._starts[-self.limit.requests] + window)
            self._starts.append(start)
            return start - now

    async def acquire(self) -> None:
        delay = self.reserve()
        if delay > 0:
            await asyncio.sleep(delay)


_LIMITERS: dict[str, SlidingWindowLimiter] = {}
_LIMITERS_LOCK = threading.Lock()


def set_rate_limit(model: str, limit: RateLimit) -> SlidingWindowLimiter:
    """The process's limiter for ``model``: made, or replaced when ``limit`` differs (a run with
    the same limit shares the existing one, and so its booked starts)."""
    if not isinstance(model, str) or not model.strip():
        raise ConfigError("a rate limit's model must be a model string such as "
                          "'openai/gpt-4o-mini'", where="run.rate_limits", value=model)
    with _LIMITERS_LOCK:
        current = _LIMITERS.get(model)
        if current is None or current.limit != limit:
            current = _LIMITERS[model] = SlidingWindowLimiter(limit)
        return current


RATE_LIMITS_ENV = "STUDIO_RATE_LIMITS"
"""The server's rate limits per model, as JSON: ``{"openai/gpt-4o-mini": 500,
"gemini/gemini-2.5-flash": {"requests": 10, "per_seconds": 1}}`` (a bare number is requests per
minute). Every run of the process shares them and none replaces them."""


def server_rate_limits() -> dict[str, RateLimit]:
    """The limits :data:`RATE_LIMITS_ENV` sets (none when it is unset).

    Raises:
        ConfigError: the variable is not a JSON object of model -> limit, naming the model.
    """
    text = os.environ.get(RATE_LIMITS_ENV, "").strip()
    if not text:
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"is not JSON ({exc.msg}); write e.g. "
                          '{"openai/gpt-4o-mini": 500}', where=RATE_LIMITS_ENV) from exc
    if not isinstance(data, dict):
        raise ConfigError('must be a JSON object of model -> limit, e.g. {"openai/gpt-4o-mini": '
                          "500}", where=RATE_LIMITS_ENV)
    limits = {}
    for model, limit in data.items():
        try:
            limits[model] = RateLimit.model_validate(limit)
        except ValidationError as exc:
            problem = exc.errors()[0]
            raise ConfigError(f"{problem['msg']} (got {limit!r}); a limit is requests per "
                              "minute or {\"requests\": N, \"per_seconds\": S}",
                              where=f"{RATE_LIMITS_ENV}: {model}", value=limit) from exc
    return limits


def set_rate_limits(limits: dict[str, RateLimit]) -> None:
    """Apply the server's limits (:data:`RATE_LIMITS_ENV`), and a trusted run's ``rate_limits``
    (see :class:`studio.model.config.EvolutionConfig`) for the models the server does not
    limit: a run never replaces a limit the server set."""
    server = server_rate_limits()
    for model, limit in server.items():
        set_rate_limit(model, limit)
    for model, limit in limits.items():
        if model not in server:
            set_rate_limit(model, limit)


def clear_rate_limits() -> None:
    """Forget every limiter (tests; a process that changes projects keeps them otherwise)."""
    with _LIMITERS_LOCK:
        _LIMITERS.clear()


def limiter_for(model: str) -> SlidingWindowLimiter | None:
    return _LIMITERS.get(model)


# ------------------------------------------------------------------------------ retries


def retry_after_seconds(exc: BaseException) -> float | None:
    """The wait a 429/503 names (``retry-after-ms``, ``Retry-After`` seconds or HTTP date), or
    None when it is another error or names none."""
    status = getattr(exc, "status_code", None)
    response = getattr(exc, "response", None)
    if status is None and response is not None:
        status = getattr(response, "status_code", None)
    if status not in RETRY_STATUSES:
        return None
    headers = _headers_of(exc)
    millis = headers.get("retry-after-ms")
    if millis is not None:
        return _non_negative(millis, scale=1000.0)
    value = headers.get("retry-after")
    if value is None:
        return None
    seconds = _non_negative(value)
    if seconds is not None:
        return seconds
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


def _headers_of(exc: BaseException) -> dict[str, str]:
    found: dict[str, str] = {}
    for source in (getattr(exc, "litellm_response_headers", None),
                   getattr(getattr(exc, "response", None), "headers", None)):
        try:
            items = dict(source or {}).items()
        except (TypeError, ValueError):
            continue
        for name, value in items:
            found.setdefault(str(name).lower(), str(value))
    return found


def _non_negative(text: str, scale: float = 1.0) -> float | None:
    try:
        value = float(text) / scale
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) and value >= 0 else None


# ------------------------------------------------------------------------------ client


_CLIENT_CLASS: list[type] = []


def metered_client() -> Any:
    """A new :class:`MeteredLiteLLMClient` (the class is made on first use: ADK's LiteLLM module
    takes seconds to import, and the limits and the meter are used without it)."""
    if not _CLIENT_CLASS:
        _CLIENT_CLASS.append(_client_class())
    return _CLIENT_CLASS[0]()


def _client_class() -> type:
    from google.adk.models.lite_llm import LiteLLMClient

    class MeteredLiteLLMClient(LiteLLMClient):
        """ADK's LiteLLM client with the studio's rate limit, Retry-After retries and cost."""

        async def acompletion(self, model: object, messages: object, tools: object,
                              **kwargs: object) -> Any:
            return await _call(super().acompletion, model, messages, tools, kwargs)

    return MeteredLiteLLMClient


async def _call(send: Any, model: Any, messages: Any, tools: Any,
                kwargs: dict[str, Any]) -> Any:
    """One model request: rate-limited, retried after the wait a 429/503 names, priced."""
    kwargs.setdefault("max_retries", 0)  # ours honour Retry-After; the SDK's would multiply
    limiter = limiter_for(str(model))
    retries = 0
    while True:
        if limiter is not None:
            await limiter.acquire()
        try:
            response = await send(model=model, messages=messages, tools=tools, **kwargs)
        except Exception as exc:
            wait = retry_after_seconds(exc)
            if wait is None or wait > MAX_RETRY_AFTER_SECONDS or retries >= MAX_CALL_RETRIES:
                _note_reply_cut_short(exc)
                raise
            retries += 1
            _said_wait(model, wait, retries)
            await asyncio.sleep(wait)
            continue
        _count(response, kwargs)
        return response


# --------------------------------------------------------------------- transport faults


REPLY_CUT_SHORT = "studio_reply_cut_short"
"""The attribute :func:`_note_reply_cut_short` sets on a failed call's exception: how much of
the reply arrived before the server closed the connection."""
_CUT_SHORT_ERRORS = ("ClientPayloadError", "ContentLengthError", "TransferEncodingError")
"""aiohttp's errors for a body that ended before its length (LiteLLM's default transport)."""
_CUT_SHORT_PHRASES = ("complete message body", "incomplete chunked read")
"""httpx's ``RemoteProtocolError`` for the same, on its own transport."""


def _note_reply_cut_short(exc: BaseException) -> None:
    """Mark ``exc`` when the server closed the connection in the middle of its reply. The
    cause is only here: LiteLLM and then ADK raise the same exception again further up,
    where Python replaces its context, and the OpenAI client says only "Connection error."
    for a cut body, a reset and a refusal alike."""
    detail = _cut_short_detail(exc)
    if detail is not None:
        with contextlib.suppress(AttributeError, TypeError):  # an exception without a dict
            setattr(exc, REPLY_CUT_SHORT, detail)


def _cut_short_detail(exc: BaseException) -> str | None:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        name, text = type(current).__name__, str(current)
        if name in _CUT_SHORT_ERRORS or (name == "RemoteProtocolError" and any(
                phrase in text for phrase in _CUT_SHORT_PHRASES)):
            counted = re.search(r"received \d+ (?:of \d+ bytes|bytes, expected \d+)", text)
            return counted.group(0) if counted else " ".join(text.split())[:200]
        current = current.__cause__ or current.__context__
    return None


def reply_cut_short(exc: BaseException) -> str | None:
    """How much of the reply arrived when the server closed the connection mid-reply (e.g.
    "received 132 of 265 bytes"), from the mark :func:`_note_reply_cut_short` left on ``exc``
    or an exception it wraps; None for any other failure."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        detail = getattr(current, REPLY_CUT_SHORT, None)
        if isinstance(detail, str):
            return detail
        current = current.__cause__ or current.__context__
    return None


def _said_wait(model: object, wait: float, retries: int) -> None:
    logger.info("model %s asked to wait %.1f s (Retry-After); retry %d of the same request",
                model, wait, retries)
    meter = _METER.get()
    if meter is not None:
        meter.retries_after.append(wait)


def _count(response: object, kwargs: Mapping[str, object]) -> None:
    meter = _METER.get()
    if meter is None:
        return
    if kwargs.get("stream"):
        meter.add(0.0)
        return
    model = str(kwargs.get("model") or getattr(response, "model", "") or "")
    _add_call(meter, model, response_cost(response), reported_usage(response))


def count_usage(model: str, prompt_tokens: int, completion_tokens: int) -> None:
    """Price a call made outside LiteLLM (ADK's own Gemini class) from the usage it reports,
    by LiteLLM's cost map (``model`` as the map names it: ``gemini/gemini-2.5-flash``), into
    the current :func:`metered` block."""
    meter = _METER.get()
    if meter is None:
        return
    usage: dict[str, float] = {"prompt_tokens": prompt_tokens,
                               "completion_tokens": completion_tokens,
                               "total_tokens": prompt_tokens + completion_tokens}
    _add_call(meter, model, _map_price(model, prompt_tokens, completion_tokens), usage)


def _map_price(model: str, prompt_tokens: int, completion_tokens: int) -> float:
    import litellm

    try:
        prompt, completion = litellm.cost_per_token(model=model, prompt_tokens=prompt_tokens,
                                                    completion_tokens=completion_tokens)
    except Exception:  # a model the cost map does not price (a Vertex endpoint): free here
        return 0.0
    return float(prompt) + float(completion)


def _add_call(meter: CallMeter, model: str, cost: float, usage: dict[str, float]) -> None:
    """One call into the meter: its price, or, when its usage or price cannot be believed
    (:func:`studio.model.costs.implausible_call`), its raw report instead."""
    why = implausible_call(max(usage.values(), default=0), cost)
    if why is None:
        meter.add(cost)
        return
    logger.warning("model %s %s: its price is left out of the cost", model or "?", why)
    meter.add_unpriced({"model": model, "usage": usage, "reported_cost_usd": cost, "why": why})


def reported_usage(response: object) -> dict[str, float]:
    """The token counts a reply reports (``usage``), as numbers; none that are not."""
    usage = getattr(response, "usage", None)
    counts = {}
    for key in ("prompt_tokens", "completion_tokens", "total_tokens"):
        value = getattr(usage, key, None) if usage is not None else None
        if isinstance(value, int | float) and not isinstance(value, bool):
            counts[key] = value
    return counts
