"""Fan a batch's agent->critic chains out to worker processes (``EvolutionConfig.processes``).

The studio's own CPU per model call (ADK events, LiteLLM, pydantic) is bound by one Python
process's GIL. With ``processes=N`` the chains of a batch run in N processes, each with its own
event loop, ADK runners, LiteLLM clients and (for the embedded model) its own copy of the model.
Only the engine's process touches the store: a process returns its chains' results and the
engine commits them as trials, so every guarantee of the store (first decision wins, a pair
judged once, resume) is unchanged.

A process rebuilds the agent and the critic from the run's spec, so only runs defined by a spec
(a project file or a :class:`RunSpec`) can use processes; a run started from Python objects
cannot (its agent may hold code that does not cross a process boundary).

Each process runs at most ``ceil(max_concurrency / processes)`` chains at once, so the run's
concurrency limit holds in total. Work is sent in shards of ``SHARD_ROUNDS`` times that many
examples (a process refills a freed slot from its shard at once); a shard's trials are
committed as soon as it returns.

Starting a process costs the imports of ADK, LiteLLM, google-genai and SQLAlchemy (about 5 s of
CPU in a fresh interpreter; on a 2-core machine those seconds are taken from the run). So where
the platform has it (Linux, macOS), the processes fork from multiprocessing's *forkserver*: a
clean, single-threaded interpreter started once per engine process, which imports
:data:`PRELOADED` (and the run's setup function's module) once; each process forks from it
already holding them (on a loaded 2-core machine, two processes were ready in 6.8 s instead of
14.8 s, and a next pool in 1.5 s instead of 12.4 s: ``bench/bench_forkserver.py``). Elsewhere
they are spawned as fresh interpreters. The forkserver is started from the engine's process, so
it imports under the engine's environment; each process still gets the engine's *current*
environment (:func:`start_in_process`) and beats at the engine's :data:`HEARTBEAT_SECONDS`, so a
setting the forkserver read at import can never disagree with the engine about how a process
shows it is alive. The processes are also shared by the runs of this process: one pool per
process count, started by the first run that asks for it and reused by the next ones (a studio
server or a ``studio worker`` runs many). Each run sends its setup (spec, config) with its
shards; a process builds a run's agent and critic once and keeps the last few runs'.
A new process makes one call of the offline scripted model before it takes work
(:mod:`studio.runtime.warm`): the imports of a first call, counted inside a shard's first call,
could exceed a short call timeout and fail trials a warm process judges in time.
The processes stay up until this process exits (each holds ADK, LiteLLM and, once a run used
it, the embedded model), and exit on their own when it is killed (:func:`die_with_parent`).
While a new pool starts, the engine judges in its own process until
the first worker is ready: a short run never waits for processes it does not need.
"""

from __future__ import annotations

import asyncio
import logging
import math
import multiprocessing
import os
import sys
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.context import BaseContext
from typing import TYPE_CHECKING, Any, TypedDict, TypeVar

from studio.critics.feedback import judge_sample
from studio.critics.protocol import Critic, Sample
from studio.engine.run.agent_texts import apply_components
from studio.model.config import EvolutionConfig
from studio.model.errors import ConfigError, StudioError
from studio.model.limits import MAX_OUTPUT_CHARS, clip
from studio.model.media import example_media
from studio.model.records import (
    Feedback,
    RunSpec,
    example_expected,
    example_input_text,
    example_state,
)
from studio.runtime.eventloop import StudioEventLoop
from studio.runtime.execution import AgentExecutor
from studio.runtime.protocol import ExecutionResult
from studio.runtime.providers.calls import metered
from studio.runtime.providers.local import THREADS_VARIABLE, default_threads
from studio.runtime.slots import finishing
from studio.runtime.timing import (
    HEARTBEAT_CHECK_SECONDS,
    HEARTBEAT_SECONDS,
    PROCESS_START_SECONDS,
    STALE_HEARTBEAT_SECONDS,
    STALL_SLACK_SECONDS,
)
from studio.runtime.tracing import TrialIds, current_span, end_trial_span, start_trial_span
from studio.runtime.warm import warm_up
from studio.runtime.workflows import primary_for

if TYPE_CHECKING:
    from google.adk.agents import BaseAgent
    from opentelemetry.trace import Span

T = TypeVar("T")

CRITIC_NOT_CALLED = "the critic was not called"
"""In a trial's error when the agent failed: the run's failure message blames the agent."""


@dataclass
class ChainResult:
    """One example's agent call and critic verdict, before it is a trial."""

    input_text: str
    output: str
    feedback: Feedback
    error: str | None
    trace: dict[str, Any] = field(default_factory=dict)
    latency_s: float = 0.0
    tokens: int = 0
    cost_usd: float = 0.0
    """LiteLLM's price of the agent's and the critic's model calls (US dollars)."""
    span: Span | None = None
    """The open trial span (tracing on, this process), ended when the trial is committed."""

    def __getstate__(self) -> dict[str, object]:  # to the engine's process: a span stays here
        return {**self.__dict__, "span": None}


async def run_chain(executor: AgentExecutor, agent: BaseAgent, critic: Critic, data: dict[str, Any],
                    input_key: str | None, primary: str | None = None,
                    ids: TrialIds | None = None) -> ChainResult:
    """Run the agent (or workflow) on one example and let the critic judge its output (in a
    workflow, the ``primary`` agent's last reply). The example's images and videos go to the
    agent (and to a critic agent) as parts of the message; the text and the state hold their
    labels. The model calls of both are priced (``cost_usd``) and, when tracing is on, made
    under a trial span for ``ids`` that the commit ends (:mod:`studio.runtime.tracing`)."""
    span = start_trial_span(ids)
    with current_span(span), metered() as meter:
        try:
            result = await _chain(executor, agent, critic, data, input_key, primary)
        except BaseException:
            end_trial_span(span, error="the chain did not finish", cost_usd=meter.cost_usd)
            raise
    result.cost_usd, result.span = meter.cost_usd, span
    if meter.unpriced:  # the raw reports of calls whose price was not believed
        result.trace = {**result.trace, "unpriced_calls": meter.unpriced}
    return result


async def _chain(executor: AgentExecutor, agent: BaseAgent, critic: Critic, data: dict[str, Any],
                 input_key: str | None, primary: str | None) -> ChainResult:
    input_text = example_input_text(data, input_key)
    media = example_media(data)
    result = await executor.execute(agent, input_text, state=example_state(data),
                                    output_author=primary, media=media)
    output = clip(result.output, MAX_OUTPUT_CHARS)  # the critic judges what the store keeps
    if result.error:
        return ChainResult(input_text, output, Feedback(),
                           f"the agent failed ({CRITIC_NOT_CALLED}): {result.error}",
                           result.trace, result.latency_s, result.tokens)
    if not output.strip():  # nothing to judge: "could not evaluate", never a 0 for ""
        return ChainResult(input_text, output, Feedback(), _no_content(result, primary),
                           result.trace, result.latency_s, result.tokens)
    sample = Sample(input_text=input_text, output=output, expected=example_expected(data),
                    example=data, trace=result.trace, media=tuple(media))
    with finishing():  # before other chains' agent calls: this trial ends and streams first
        feedback, error = await judge_sample(critic, sample)
    return ChainResult(input_text, output, feedback, error, result.trace, result.latency_s,
                       result.tokens)


def _no_content(result: ExecutionResult, primary: str | None) -> str:
    """The error of a reply with no text: an empty ``choices`` list, ``content: null``, only
    whitespace, or only tool calls (the critic was not called)."""
    who = f"the workflow's agent {primary!r}" if primary else "the agent"
    calls = len((result.trace or {}).get("tool_calls") or [])
    what = f"only {calls} tool call(s) and no text" if calls else "no text"
    return (f"{who}'s model returned no content ({what}: an empty reply, e.g. no choices or "
            f"content null); could not evaluate ({CRITIC_NOT_CALLED})")


def check_processes(config: EvolutionConfig, spec: RunSpec, *, from_objects: bool) -> None:
    """Raises ConfigError when the run cannot fan out to processes."""
    if config.processes > 1 and (from_objects or not spec.resumable):
        raise ConfigError("processes > 1 needs a run defined by a spec (a project file or a "
                          "RunSpec): a worker process rebuilds the agent and the critic from it; "
                          "this run was given Python objects", where="run.processes",
                          value=config.processes)


SHARD_ROUNDS = 2
"""Examples per shard, in multiples of a process's concurrency. A process refills its slots
only within a shard, so each shard ends with a tail of empty slots: two rounds halve that tail
for a little later commits (figures in ``bench/README.md``)."""


logger = logging.getLogger(__name__)

_POOLS: dict[int, ProcessPoolExecutor] = {}
_POOLS_LOCK = threading.Lock()

START_METHOD = ("forkserver" if "forkserver" in multiprocessing.get_all_start_methods()
                else "spawn")
"""How worker processes start: forked from the forkserver, else (no forkserver on this
platform) spawned. Never "fork": the engine's process holds threads and their locks."""

PRELOADED = ("litellm", "google.genai", "google.adk.agents", "google.adk.runners",
             "google.adk.models.lite_llm", "google.adk.workflow", "google.adk.auth.auth_handler",
             "google.adk.agents.remote_a2a_agent", "sqlalchemy", __name__)
"""What the forkserver imports once for every worker process: what a process's build and
warm-up call import (ADK's workflow runner pulls in its auth and A2A modules), without
running anything. Each module is imported with the engine's environment (see the module's
docstring); never ``__main__`` (:func:`_main_not_rerun`)."""


def _start_context(preload: tuple[str, ...]) -> BaseContext:
    """The multiprocessing context worker processes start from. ``preload`` adds modules to
    :data:`PRELOADED` (the run's setup function's, which each process imports by name); only
    the first pool's list counts: the forkserver starts once per process."""
    context = multiprocessing.get_context(START_METHOD)
    if START_METHOD == "forkserver":
        context.set_forkserver_preload(list(dict.fromkeys((*PRELOADED, *preload))))
    return context


def shared_pool(processes: int, *, broken: ProcessPoolExecutor | None = None,
                preload: tuple[str, ...] = ()) -> ProcessPoolExecutor:
    """The worker processes the runs of this process share, one pool per process count.

    ``broken``: the pool a caller saw break (a process was killed). It is replaced only if it
    is still the shared one: when a process dies every pending future of its pool breaks, and
    all their callers must land on ONE new pool, not start one each. ``preload``: modules the
    forkserver imports besides :data:`PRELOADED` (:func:`_start_context`)."""
    with _POOLS_LOCK:
        pool = _POOLS.get(processes)
        if pool is None or (broken is not None and pool is broken):
            pool = ProcessPoolExecutor(max_workers=processes, mp_context=_start_context(preload),
                                       initializer=start_in_process,
                                       initargs=(_engine_alive(), _heartbeat_dir(),
                                                 HEARTBEAT_SECONDS, worker_environment(processes)))
            _POOLS[processes] = pool
            if broken is not None:
                broken.shutdown(wait=False, cancel_futures=True)  # its live processes exit
        return pool


def worker_environment(processes: int) -> dict[str, str]:
    """The engine's current environment, for each of ``processes`` worker processes. Each one
    that runs the embedded model loads its own copy, so each gets its share of the cores for it
    (:func:`~studio.runtime.providers.local.default_threads`) unless the user set the threads."""
    environment = dict(os.environ)
    if not environment.get(THREADS_VARIABLE):
        environment[THREADS_VARIABLE] = str(default_threads(sharing=processes))
    return environment


def shard_deadline(config: EvolutionConfig) -> float:
    """How long a shard may take before its process counts as stalled: each of its rounds is
    an agent call and a critic call, each up to every attempt's ``call_timeout_seconds``."""
    per_chain = 2 * config.call_timeout_seconds * (config.max_retries + 1)
    return per_chain * SHARD_ROUNDS + STALL_SLACK_SECONDS


_HEARTBEAT_DIR: list[str] = []
_ENGINE_ALIVE: list[Connection] = []


def _engine_alive() -> Connection:
    """The read end of a pipe whose write end only this process holds (never inherited: every
    process is started with the descriptors it is given): its worker processes read it, and
    reach its end when this process is gone (:func:`die_with_parent`)."""
    if not _ENGINE_ALIVE:
        reader, writer = multiprocessing.Pipe(duplex=False)
        _ENGINE_ALIVE.extend((reader, writer))  # the writer stays open while this process lives
    return _ENGINE_ALIVE[0]


def _heartbeat_dir() -> str:
    """This process's folder of its worker processes' heartbeat files (one per pid)."""
    if not _HEARTBEAT_DIR:
        import atexit
        import shutil
        import tempfile

        _HEARTBEAT_DIR.append(tempfile.mkdtemp(prefix=f"studio-heartbeats-{os.getpid()}-"))
        atexit.register(shutil.rmtree, _HEARTBEAT_DIR[0], ignore_errors=True)
    return _HEARTBEAT_DIR[0]


def all_beating(pool: ProcessPoolExecutor | None) -> bool:
    """Every process of ``pool`` has started and beaten at least once."""
    pids = list(getattr(pool, "_processes", None) or {})
    return bool(pids) and all(os.path.exists(os.path.join(_heartbeat_dir(), str(pid)))
                              for pid in pids)


def stalled_processes(pool: ProcessPoolExecutor | None) -> list[int]:
    """The pids of ``pool``'s processes whose heartbeat is stale (a process still starting has
    no file yet and is not counted: the pool's start is bounded by the shard deadline)."""
    now = time.time()
    stalled = []
    for pid in list(getattr(pool, "_processes", None) or {}):
        try:
            beat = os.stat(os.path.join(_heartbeat_dir(), str(pid))).st_mtime
        except FileNotFoundError:
            continue
        if now - beat > STALE_HEARTBEAT_SECONDS:
            stalled.append(pid)
    return stalled


class ProcessStalled(Exception):
    """A worker process holding a shard stopped answering (its message says how it was seen)."""


def replace_stalled_pool(processes: int, pool: ProcessPoolExecutor | None
                         ) -> ProcessPoolExecutor:
    """A new shared pool in place of ``pool``, whose processes are killed first: a stopped or
    wedged process would never exit on a shutdown request (the pool's other shards break and
    are judged again by their callers)."""
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        process.kill()  # SIGKILL ends a SIGSTOPped process too
    return shared_pool(processes, broken=pool)


def shutdown_pools() -> None:
    """Stop every shared worker process (tests; a process exiting stops them itself)."""
    with _POOLS_LOCK:
        pools = list(_POOLS.values())
        _POOLS.clear()
    for pool in pools:
        pool.shutdown(wait=True, cancel_futures=True)


class ProcessFanOut:
    """One run's use of the shared worker processes (see the module's docstring)."""

    def __init__(self, spec: RunSpec, config: EvolutionConfig, default_model: str,
                 setup: Callable[..., tuple[BaseAgent, Critic, AgentExecutor]]) -> None:
        """``setup(spec, config, default_model, concurrency)`` runs in each process and returns
        ``(agent template, critic, executor)``: a module-level function (it crosses the process
        boundary by name), given by the engine's builder."""
        self.processes = config.processes
        per_process = max(1, math.ceil(config.max_concurrency / config.processes))
        self.shard_size = per_process * SHARD_ROUNDS
        self.shard_deadline_s = shard_deadline(config)
        self._preload = (setup.__module__,)
        self._setup = (setup, spec.model_dump(mode="json", by_alias=True),
                       config.model_dump(mode="json"), default_model, per_process)
        self._key = uuid.uuid4().hex
        """Names this run's setup in the processes (built once there, kept for a few runs)."""
        self._pool: ProcessPoolExecutor | None = None
        self._warming: list[Future] = []
        self._warming_pool: ProcessPoolExecutor | None = None

    def start(self) -> None:
        """Have each process build this run's agent and critic in the background (a new pool
        starts its processes on these submits). Once is enough: a second call (the engine's,
        after a caller warmed the processes up) would make :attr:`ready` wait again."""
        if self._warming and self._warming_pool is self._pool:
            return
        with _main_not_rerun():
            self._warming = [self._submit(_prepare, self._key, self._setup)
                             for _ in range(self.processes)]
        self._warming_pool = self._pool

    @property
    def ready(self) -> bool:
        """True once a worker process can take work (raises what a process failed with)."""
        for future in self._warming:
            if future.done():
                try:
                    future.result()
                except BrokenProcessPool:  # a process of the shared pool died: a new pool
                    self._pool = shared_pool(self.processes, broken=self._warming_pool)
                    self._warming = []
                    self.start()
                    return False
                except Exception as exc:  # the process could not start or build the agent
                    raise StudioError(f"a worker process for processes={self.processes} "
                                      f"could not start: {type(exc).__name__}: {exc}") from exc
                return True
        return False

    def shards(self, items: list[T]) -> list[list[T]]:
        """At least one shard per process, none larger than ``shard_size``, sizes balanced."""
        count = max(min(self.processes, len(items)), math.ceil(len(items) / self.shard_size))
        size = math.ceil(len(items) / count) if items else 1
        return [items[i:i + size] for i in range(0, len(items), size)]

    async def run_shard(self, components: dict[str, str],
                        examples: list[dict[str, Any]], input_key: str | None
                        ) -> list[ChainResult]:
        """The shard's chain results. A process that died, or stopped answering (no result
        within :attr:`shard_deadline_s`: wedged, SIGSTOPped), is replaced and the shard judged
        again once: nothing of it was committed.

        Raises:
            StudioError: the shard failed the same way on the replacement processes too.
        """
        shard = (_judge_shard, self._key, self._setup, components, examples, input_key)
        for attempt in (1, 2):
            with _main_not_rerun():
                future = self._submit(*shard)
            pool = self._pool
            try:
                return await self._answer(future, pool)
            except BrokenProcessPool:  # a process died
                self._pool = shared_pool(self.processes, broken=pool)
                what = "a worker process died"
            except ProcessStalled as stalled:  # wedged: it neither answers nor dies
                self._pool = replace_stalled_pool(self.processes, pool)
                what = str(stalled)
            logger.warning("%s while judging a shard of %d example(s); judging it again on new "
                           "processes (attempt %d)", what, len(examples), attempt + 1)
        raise StudioError(f"{what} twice while judging a shard of {len(examples)} example(s) "
                          f"with processes={self.processes}; check the machine's memory and "
                          f"the models, or run with processes: 1")

    async def _answer(self, future: Future, pool: ProcessPoolExecutor | None
                      ) -> list[ChainResult]:
        """The shard's result, checking the pool's heartbeats while it is out.

        Raises:
            ProcessStalled: a process's heartbeat went stale, or no answer came within
                :attr:`shard_deadline_s`.
        """
        waiting = asyncio.wrap_future(future)
        sent = time.monotonic()
        all_up: float | None = None  # the deadline counts once every process is up
        while True:
            done, _ = await asyncio.wait({waiting}, timeout=HEARTBEAT_CHECK_SECONDS)
            if done:
                return waiting.result()
            stalled = stalled_processes(pool)
            if stalled:
                waiting.cancel()
                raise ProcessStalled(f"worker process {stalled[0]} stopped answering (no "
                                     f"heartbeat for {STALE_HEARTBEAT_SECONDS:g} s)")
            if all_up is None and all_beating(pool):
                all_up = time.monotonic()
            waited = time.monotonic() - (all_up or sent)
            if waited > self.shard_deadline_s + (0 if all_up else PROCESS_START_SECONDS):
                waiting.cancel()
                raise ProcessStalled(f"a worker process returned no result within "
                                     f"{self.shard_deadline_s:g} s")

    def _submit(self, fn: Callable, *args: object) -> Future:
        """Submit to the shared pool; a pool that broke (a process died) is replaced once."""
        self._pool = self._pool or shared_pool(self.processes, preload=self._preload)
        try:
            return self._pool.submit(fn, *args)
        except BrokenProcessPool:
            self._pool = shared_pool(self.processes, broken=self._pool, preload=self._preload)
            return self._pool.submit(fn, *args)

    def close(self) -> None:
        """The run is over: the processes stay for the next run (pending shards are
        cancelled by the task group that awaited them)."""
        self._pool = None


_MAIN_LOCK = threading.Lock()


@contextmanager
def _main_not_rerun() -> Iterator[None]:
    """Spawn and the forkserver run the parent's ``__main__`` again in each child, by the path
    (or module name) in the preparation data sent with each new process. Under Streamlit that is
    the studio's page script (it would open the default store and draw pages), under pytest a
    test's: the child needs neither, so the path is hidden while processes are started (the
    forkserver itself imports ``__main__`` only when it is preloaded, which it never is)."""
    main = sys.modules.get("__main__")
    with _MAIN_LOCK:
        saved: dict[str, object] = {
            name: main.__dict__[name] for name in ("__file__", "__spec__")
            if main is not None and name in main.__dict__}
        if main is not None:
            main.__dict__.pop("__file__", None)
            main.__spec__ = None  # read as an attribute by spawn: present, but names nothing
        try:
            yield
        finally:
            if main is not None:
                main.__dict__.pop("__spec__", None)
                main.__dict__.update(saved)


# --------------------------------------------------------------------------- in the process

def start_in_process(engine_alive: Connection, heartbeat_dir: str, beat_seconds: float,
                     environment: dict[str, str]) -> None:
    """A worker process's initializer: take the engine's current environment (a forked
    process starts with the forkserver's, as it was when the forkserver started), exit with the
    engine, load what a first model call imports (counted inside a shard's first call, seconds
    of imports could exceed a short call timeout and fail its trials), then beat every
    ``beat_seconds`` (the engine's setting) while alive. The first beat says the process can
    take work: a shard's deadline counts from it, its start from :data:`PROCESS_START_SECONDS`."""
    os.environ.clear()
    os.environ.update(environment)
    die_with_parent(engine_alive)
    _loop().run_until_complete(warm_up())
    threading.Thread(target=_beat, args=(os.path.join(heartbeat_dir, str(os.getpid())),
                                         beat_seconds), daemon=True, name="heartbeat").start()


def _beat(path: str, every: float) -> None:
    while True:
        with open(path, "a"):
            os.utime(path)
        time.sleep(every)


def die_with_parent(engine_alive: Connection) -> None:
    """Exit this worker process soon after the engine's process dies, however it died.

    A SIGKILLed engine cannot shut its pool down, and each orphan holds ADK, LiteLLM and maybe
    the embedded model (~300 MB). Watching the parent pid is no use: a process's parent is the
    forkserver, which exits only once every process it started has (each holds its "alive"
    pipe). Linux's parent-death signal (``PR_SET_PDEATHSIG``) fires when the *thread* that
    started the process ends, and pools are shared by runs started from short-lived threads
    (Streamlit script runs, ``asyncio.to_thread``). So a daemon thread reads ``engine_alive``,
    on which nothing is ever sent: the read returns at its end, when the engine is gone (at
    once if it died while this process was starting).
    """
    threading.Thread(target=_exit_at_end, args=(engine_alive,), daemon=True,
                     name="die-with-parent").start()


def _exit_at_end(engine_alive: Connection) -> None:
    with suppress(EOFError, OSError):
        engine_alive.recv_bytes()
    os._exit(0)  # no cleanup to wait for: the engine held every store write


KEPT_RUNS = 4
"""Runs whose agent and critic a process keeps built (runs in progress at once, in practice)."""
class _RunState(TypedDict):
    """What a process keeps built for one run (:func:`_run_state`)."""

    executor: AgentExecutor
    template: BaseAgent
    critic: Critic
    agents: dict[tuple[tuple[str, str], ...], BaseAgent]
    """The template with each set of components applied, by the components."""
    primary: str | None
    concurrency: int


_RUNS: OrderedDict[str, _RunState] = OrderedDict()
_LOOP: list[asyncio.AbstractEventLoop] = []


def _run_state(key: str, setup: tuple) -> _RunState:
    """This process's agent template, critic and executor for the run named ``key``."""
    state = _RUNS.get(key)
    if state is not None:
        _RUNS.move_to_end(key)
        return state
    build, spec, config, default_model, concurrency = setup
    template, critic, executor = build(RunSpec.model_validate(spec),
                                       EvolutionConfig.model_validate(config), default_model,
                                       concurrency)
    state = _RUNS[key] = _RunState(executor=executor, template=template, critic=critic,
                                   agents={}, primary=primary_for(template, spec.get("primary")),
                                   concurrency=concurrency)
    while len(_RUNS) > KEPT_RUNS:
        _RUNS.popitem(last=False)
    return state


def _loop() -> asyncio.AbstractEventLoop:
    """One loop per process for its lifetime: clients and limits stay bound to it."""
    if not _LOOP:
        _LOOP.append(StudioEventLoop())
    return _LOOP[0]


def _prepare(key: str, setup: tuple) -> int:
    _run_state(key, setup)
    return os.getpid()


def _judge_shard(key: str, setup: tuple, components: dict[str, str],
                 examples: list[dict[str, Any]], input_key: str | None) -> list[ChainResult]:
    run = _run_state(key, setup)
    wanted = tuple(sorted(components.items()))
    agents = run["agents"]
    if wanted not in agents:
        agents[wanted] = apply_components(run["template"], components)
    agent = agents[wanted]

    async def judge_all() -> list[ChainResult]:
        slots = asyncio.Semaphore(run["concurrency"])

        async def one(data: dict[str, Any]) -> ChainResult:
            async with slots:
                return await run_chain(run["executor"], agent, run["critic"], data,
                                       input_key, run["primary"])

        return list(await asyncio.gather(*(one(data) for data in examples)))

    return _loop().run_until_complete(judge_all())
