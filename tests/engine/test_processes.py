"""``processes=N``: a batch's chains run in worker processes and the engine commits them; the
run is the same run as with one process (a seeded scripted world, real ADK and LiteLLM in every
process)."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from studio.engine import EvolutionConfig, build_engine, create_run
from studio.engine.hosting.build import process_setup
from studio.engine.scoring import processes
from studio.model.errors import ConfigError
from studio.store import open_store
from tests.helpers import demo_spec, trainset, wait_until, writer


def evolved(tmp_path, processes: int) -> tuple[list, list, list]:
    """Trials, proposals and decisions of one seeded run, in a comparable form."""
    store = open_store(f"sqlite:///{tmp_path}/p{processes}.db", cached=False)
    try:
        run_id = create_run(store, spec=demo_spec("scripted/demo@20ms"), trainset=trainset(5),
                            config=EvolutionConfig(max_iterations=3, minibatch_size=3, seed=7,
                                                   max_concurrency=4,
                                                   processes=processes)).id
        assert asyncio.run(build_engine(store, run_id).run()) == "max_iterations"
        candidates = {c.id: c.components for c in store.candidates(run_id)}
        trials = sorted((t.iteration, t.phase.value, str(candidates[t.candidate_id]),
                         t.split.value, t.example_index, t.score, t.output, t.feedback_text,
                         t.error) for t in store.trials(run_id))
        proposals = [(p.iteration, p.text, p.status.value) for p in store.proposals(run_id)]
        decisions = [(d.action.value, d.automatic) for d in store.decisions(run_id)]
        return trials, proposals, decisions
    finally:
        store.close()


@pytest.fixture(autouse=True, scope="module")
def _stop_shared_processes():
    yield
    processes.shutdown_pools()


@pytest.mark.slow  # real processes: seconds, not the fast tier's 1 s
def test_two_processes_give_the_same_trials_scores_and_decisions_as_one(tmp_path, monkeypatch):
    one = evolved(tmp_path, 1)
    pids = set()
    real = processes.ProcessFanOut.run_shard

    async def recording(self, components, examples, input_key):
        results = await real(self, components, examples, input_key)
        pids.update(self._pool._processes)
        return results

    monkeypatch.setattr(processes.ProcessFanOut, "run_shard", recording)
    # every batch goes to the processes: wait for them instead of judging here meanwhile
    monkeypatch.setattr(processes.ProcessFanOut, "ready",
                        property(lambda self: all(f.result(60) for f in self._warming)))
    two = evolved(tmp_path, 2)
    assert one[0] and one[1]  # the world evolved: trials were judged and proposals made
    assert len(pids) == 2 and os.getpid() not in pids  # judged in two other processes
    assert two == one


@pytest.mark.slow
def test_batches_are_judged_here_until_a_process_is_ready(tmp_path, monkeypatch):
    monkeypatch.setattr(processes.ProcessFanOut, "ready", property(lambda self: False))
    assert evolved(tmp_path, 2) == evolved(tmp_path, 1)


def test_a_run_given_python_objects_cannot_use_processes(store):
    run_id = create_run(store, spec=demo_spec(), trainset=trainset(2),
                        config=EvolutionConfig(max_iterations=1, processes=2)).id
    with pytest.raises(ConfigError, match="processes > 1 needs a run defined by a spec"):
        build_engine(store, run_id, agent=writer())


@pytest.mark.slow
def test_worker_processes_never_run_the_parent_s_main_script(tmp_path, monkeypatch):
    """Under Streamlit the parent's ``__main__`` is the studio's page script; spawn would run it
    again in every worker process (drawing pages, opening the default store)."""
    import sys
    import types

    touched = tmp_path / "main-ran"
    script = tmp_path / "page.py"
    script.write_text(f"open({str(touched)!r}, 'w').close()\n")
    processes.shutdown_pools()  # so the processes are spawned here
    page = types.ModuleType("__main__")
    page.__file__ = str(script)
    monkeypatch.setitem(sys.modules, "__main__", page)
    fan = processes.ProcessFanOut(demo_spec("scripted/demo"),
                                  EvolutionConfig(max_concurrency=2, processes=2), "x",
                                  process_setup)
    try:
        fan.start()
        [result] = asyncio.run(fan.run_shard({"instruction": "Write a haiku."},
                                             [{"topic": "rain"}], None))
    finally:
        fan.close()
    assert result.error is None and result.output
    assert not touched.exists()
    assert page.__file__ == str(script)  # put back for the parent


def pids_of_a_run(tmp_path, name: str) -> set[int]:
    """The worker processes that judged one seeded processes=2 run."""
    store = open_store(f"sqlite:///{tmp_path}/{name}.db", cached=False)
    pids: set[int] = set()
    try:
        run_id = create_run(store, spec=demo_spec("scripted/demo"), trainset=trainset(4),
                            config=EvolutionConfig(max_iterations=1, minibatch_size=2, seed=3,
                                                   max_concurrency=2, processes=2)).id
        engine = build_engine(store, run_id)
        real = engine.ctx.fan_out.run_shard

        async def recording(components, examples, input_key):
            results = await real(components, examples, input_key)
            pids.update(engine.ctx.fan_out._pool._processes)
            return results

        engine.ctx.fan_out.run_shard = recording
        engine.ctx.fan_out.start()
        wait_until(lambda: engine.ctx.fan_out.ready, timeout=120)  # judged in the processes
        assert asyncio.run(engine.run()) == "max_iterations"
        assert store.count_trials(run_id) > 0
    finally:
        store.close()
    return pids


@pytest.mark.slow
def test_the_next_run_reuses_the_worker_processes(tmp_path):
    """Starting a process costs seconds of imports: runs share the pool instead."""
    first = pids_of_a_run(tmp_path, "first")
    second = pids_of_a_run(tmp_path, "second")
    assert first and second == first


def parent_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1].split()[1])


@pytest.mark.slow
@pytest.mark.skipif("forkserver" not in multiprocessing.get_all_start_methods(),
                    reason="no forkserver on this platform: processes are spawned")
def test_worker_processes_fork_from_a_server_that_already_imported_adk_and_litellm(tmp_path):
    """A spawned process imports ADK, LiteLLM and google-genai again (seconds of CPU each, taken
    from the run): the processes fork from one server that imported them once."""
    pids = pids_of_a_run(tmp_path, "forked")
    [server] = {parent_of(pid) for pid in pids}
    assert server != os.getpid() and parent_of(server) == os.getpid()  # started by the engine
    assert b"multiprocessing.forkserver" in Path(f"/proc/{server}/cmdline").read_bytes()
    loaded = Path(f"/proc/{server}/maps").read_text()  # C extensions its imports loaded
    assert "pydantic_core" in loaded and "_tiktoken" in loaded  # pydantic; LiteLLM's tokenizer


@pytest.mark.slow
def test_a_killed_worker_process_is_replaced_and_the_run_still_completes(tmp_path):

    first = pids_of_a_run(tmp_path, "before")
    for pid in first:
        os.kill(pid, signal.SIGKILL)
    after = pids_of_a_run(tmp_path, "after")
    assert after and not after & first


@pytest.mark.slow  # real processes: seconds, not the fast tier's 1 s
def test_every_caller_that_saw_a_pool_break_lands_on_one_new_pool():
    """When a process dies, every pending future of its pool breaks at once; each of their
    callers asks for a new pool, and all must get the same one (not start a pool each)."""
    from concurrent.futures.process import BrokenProcessPool

    processes.shutdown_pools()
    pool = processes.shared_pool(3)
    with processes._main_not_rerun():  # spawn would re-run pytest's __main__ otherwise
        pids = {pool.submit(os.getpid).result(timeout=60) for _ in range(6)}
        pending = [pool.submit(wait_seconds, 30) for _ in range(3)]
    os.kill(next(iter(pids)), signal.SIGKILL)
    for future in pending:
        with pytest.raises(BrokenProcessPool):
            future.result(timeout=60)
    replacements = {id(processes.shared_pool(3, broken=pool)) for _ in pending}
    assert len(replacements) == 1
    current = processes.shared_pool(3)
    assert id(current) in replacements and current is not pool
    assert processes.shared_pool(3, broken=current) is not current  # a new break: replaced
    wait_until(lambda: not any(pid_alive(pid) for pid in pids), timeout=30)
    processes.shutdown_pools()


def wait_seconds(seconds: float) -> float:
    import time

    time.sleep(seconds)
    return seconds


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (exited, not yet reaped by its parent) is not alive
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


PARENT_WITH_A_POOL = """
import os, sys, time
from studio.engine.scoring import processes
pool = processes.shared_pool(2)
with processes._main_not_rerun():
    pids = set()
    while len(pids) < 2:
        pids |= {f.result(timeout=120) for f in [pool.submit(os.getpid) for _ in range(4)]}
print(*sorted(pids), flush=True)
time.sleep(600)
"""


@pytest.mark.slow  # real processes: seconds, not the fast tier's 1 s
def test_worker_processes_die_with_a_sigkilled_parent(tmp_path):
    """A SIGKILLed run cannot shut its pool down; its processes must not linger (~300 MB
    each), however the parent died."""
    import subprocess
    import sys

    parent = subprocess.Popen([sys.executable, "-c", PARENT_WITH_A_POOL], cwd=tmp_path,
                              stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])})
    try:
        children = {int(pid) for pid in parent.stdout.readline().split()}
        assert len(children) == 2 and all(pid_alive(pid) for pid in children)
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=30)
        wait_until(lambda: not any(pid_alive(pid) for pid in children), timeout=30)
    finally:
        parent.kill()
        parent.wait(timeout=30)


@dataclass
class WedgedRun:
    """A run of four examples on two worker processes, both SIGSTOPped once their shards are
    out: they neither answer nor die."""

    store: Any
    run_id: str
    pool: Any
    thread: threading.Thread
    outcome: list[str] = field(default_factory=list)
    stopped: list[int] = field(default_factory=list)

    def scored_once_each(self) -> bool:
        trials = self.store.trials(self.run_id)
        return sorted(t.example_index for t in trials) == [0, 1, 2, 3] and all(
            t.score is not None for t in trials)


@contextmanager
def wedged_run(tmp_path: Path, config: EvolutionConfig) -> Iterator[WedgedRun]:
    processes.shutdown_pools()
    store = open_store(f"sqlite:///{tmp_path}/wedged.db", cached=False)
    run_id = create_run(store, spec=demo_spec("scripted/demo@400ms"), trainset=trainset(4),
                        config=config).id
    engine = build_engine(store, run_id)
    engine.ctx.fan_out.start()
    wait_until(lambda: engine.ctx.fan_out.ready and all(
        f.done() for f in engine.ctx.fan_out._warming), timeout=120)
    wedged = WedgedRun(store, run_id, processes._POOLS[2], threading.Thread(
        target=lambda: wedged.outcome.append(asyncio.run(engine.run()))))
    wedged.thread.start()
    try:
        wait_until(lambda: len(wedged.pool._pending_work_items) == 2, timeout=60,
                   message="both shards sent")
        for pid in list(wedged.pool._processes):
            os.kill(pid, signal.SIGSTOP)
            wedged.stopped.append(pid)
        yield wedged
    finally:
        for pid in wedged.stopped:  # never leave a stopped process behind
            if Path(f"/proc/{pid}").exists():
                os.kill(pid, signal.SIGKILL)
        wedged.thread.join(timeout=120)
        store.close()
        processes.shutdown_pools()


@pytest.mark.slow
def test_stopped_worker_processes_are_replaced_and_their_shards_judged_again(tmp_path):
    """Past the shard's deadline the pool is replaced (the stopped processes killed) and its
    shards judged again, so the run completes with every example scored once."""
    config = EvolutionConfig(max_iterations=0, seed=3, max_concurrency=2, processes=2,
                             call_timeout_seconds=1.5, max_retries=0)
    assert processes.shard_deadline(config) < 20
    with wedged_run(tmp_path, config) as wedged:
        wedged.thread.join(timeout=120)
        assert wedged.outcome == ["max_iterations"] and wedged.scored_once_each()
        assert processes._POOLS[2] is not wedged.pool
        assert not set(wedged.stopped) & set(processes._POOLS[2]._processes)
        wait_until(lambda: all(not Path(f"/proc/{pid}").exists() or "Z" in Path(
            f"/proc/{pid}/stat").read_text().split()[2] for pid in wedged.stopped), timeout=30)


@pytest.mark.slow
def test_a_wedged_process_is_noticed_by_its_heartbeat_long_before_the_shard_deadline(
        tmp_path, monkeypatch):
    """With the default call timeout a shard's deadline is over an hour: a SIGSTOPped process
    is noticed by its stale heartbeat instead (its threads stop with it), replaced, and its
    shard judged again. The wedge age is halved from its production 20 s to 10 beats (still
    ten times the processes' one-second beat: never a live process late on a loaded machine)."""
    monkeypatch.setattr(processes, "STALE_HEARTBEAT_SECONDS", 10 * processes.HEARTBEAT_SECONDS)
    config = EvolutionConfig(max_iterations=0, seed=3, max_concurrency=2, processes=2)
    assert processes.shard_deadline(config) > 3600
    with wedged_run(tmp_path, config) as wedged:
        # noticed within two wedge ages, then the shard judged again on new processes, which
        # may take their own start-up grace on a loaded machine
        wedged.thread.join(timeout=processes.STALE_HEARTBEAT_SECONDS * 2
                           + processes.PROCESS_START_SECONDS + 60)
        assert wedged.outcome == ["max_iterations"] and wedged.scored_once_each()
        assert not set(wedged.stopped) & set(processes._POOLS[2]._processes)


@pytest.mark.slow  # real processes: seconds, not the fast tier's 1 s
def test_a_live_process_keeps_beating_and_is_never_counted_stalled(tmp_path):
    pool = processes.shared_pool(1)
    try:
        pid = pool.submit(os.getpid).result(timeout=120)
        beat = Path(processes._heartbeat_dir()) / str(pid)
        wait_until(beat.exists, timeout=30, message="the first heartbeat")
        first = beat.stat().st_mtime
        wait_until(lambda: beat.stat().st_mtime > first, timeout=30, message="a second beat")
        assert processes.stalled_processes(pool) == []
    finally:
        processes.shutdown_pools()


def test_each_worker_process_gets_its_share_of_the_cores_for_the_embedded_model(monkeypatch):
    """Every worker process loads its own embedded model: N of them with all the cores each
    would spin on each other's cores (llama.cpp's threads busy-wait), so each gets its share,
    unless the user chose the threads."""
    from studio.runtime.providers.local import THREADS_VARIABLE, default_threads

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    monkeypatch.delenv(THREADS_VARIABLE, raising=False)
    monkeypatch.setenv("STUDIO_PROBE", "engine's")
    environment = processes.worker_environment(2)
    assert environment["STUDIO_PROBE"] == "engine's"  # the engine's current environment
    assert environment[THREADS_VARIABLE] == str(default_threads(sharing=2)) == str(
        max(1, cores // 2))
    assert default_threads(sharing=cores * 4) == 1 and default_threads() == cores
    monkeypatch.setenv(THREADS_VARIABLE, "3")
    assert processes.worker_environment(2)[THREADS_VARIABLE] == "3"
    monkeypatch.delattr(os, "sched_getaffinity", raising=False)  # as on macOS
    assert default_threads() == os.cpu_count()
