"""Workers benchmark: queued runs on PostgreSQL, 3 `studio worker` processes against 1, and what
a `kill -9` of a worker costs.

    python bench/bench_workers.py [--url postgresql://...] [--runs 12] [--latency-ms 100]

Every run uses the scripted model at a fixed latency, so a run's wall time is mostly waiting:
three workers should take about a third of one worker's wall (target: ratio <= 0.45). The
workers start first and are timed from the moment the runs are queued, so process start-up
(importing ADK) is not counted. Then one of three workers is killed with SIGKILL while it holds a
run that a person has corrected: its run must finish on another worker, with no (candidate,
example) pair judged twice and no decision or correction lost.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path

from sqlalchemy import func, select

import studio  # noqa: F401
import studio.store.schema as tables
from studio.engine import EvolutionConfig, create_run
from studio.model.records import AgentSpec, CriticSpec, ReflectionSpec, RunSpec, RunStatus
from studio.store import open_store

ROOT = Path(__file__).resolve().parents[1]
TOPICS = ["autumn leaves", "morning coffee", "city rain", "old bridge", "snow owl"]
VALSET = [{"topic": "harbor fog"}, {"topic": "desert wind"}, {"topic": "paper lantern"}]
LEASE_ENV = {"STUDIO_HEARTBEAT_SECONDS": "0.5", "STUDIO_STALE_AFTER_SECONDS": "3"}


def spec(latency_ms: int) -> RunSpec:
    model = f"scripted/demo@{latency_ms}ms"
    return RunSpec(agent=AgentSpec(name="writer", model=model,
                                   instruction="Write a haiku about the given topic."),
                   critic=CriticSpec(name="rule_critic", agent=AgentSpec(name="critic",
                                                                         model=model)),
                   reflection=ReflectionSpec(model=model))


def wait_for(predicate, timeout: float, what: str, step: float = 0.1):
    deadline = time.monotonic() + timeout
    while not (value := predicate()):
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(step)
    return value


def start_workers(url: str, queue: str, count: int) -> list[subprocess.Popen]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), **LEASE_ENV}
    return [subprocess.Popen([sys.executable, "-m", "studio.cli", "--db", url, "worker",
                              "--queue", queue, "--poll-seconds", "0.1"],
                             cwd=ROOT, env=env, stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for _ in range(count)]


def stop_workers(workers: list[subprocess.Popen]) -> None:
    for process in workers:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    for process in workers:
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            process.kill()


def create_runs(store, count: int, args) -> list[str]:
    """Runs stored but not yet queued (their examples written), so queuing is one update each."""
    config = EvolutionConfig(max_iterations=args.iterations, minibatch_size=3,
                             max_concurrency=4, seed=0)
    return [create_run(store, spec=spec(args.latency_ms), trainset=[{"topic": t} for t in TOPICS],
                       valset=VALSET, config=config, name=f"bench {i}").id for i in range(count)]


def all_done(store, runs: list[str]) -> bool:
    """One query (the bench's own polling must not eat the CPU the workers need)."""
    query = select(func.count()).select_from(tables.runs).where(
        tables.runs.c.id.in_(runs), tables.runs.c.status == RunStatus.COMPLETED.value)
    with store.engine.connect() as c:
        return c.execute(query).scalar_one() == len(runs)


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU of processes so far (Linux /proc)."""
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def timed_batch(store, url: str, workers: int, args) -> tuple[float, float]:
    """Wall seconds for ``workers`` live workers to complete ``args.runs`` queued runs, and the
    CPU seconds the workers spent on them."""
    queue = f"bench-{uuid.uuid4().hex[:8]}"
    runs = create_runs(store, args.runs, args)
    processes = start_workers(url, queue, workers)
    try:
        wait_for(lambda: len(store.live_workers(60, queue)) == workers, 120, "workers to start")
        cpu = cpu_seconds([p.pid for p in processes])
        started = time.monotonic()
        for run_id in runs:
            store.enqueue_run(run_id, queue)
        wait_for(lambda: all_done(store, runs), 1800, "the runs to complete", step=0.05)
        wall = time.monotonic() - started
        return wall, cpu_seconds([p.pid for p in processes]) - cpu
    finally:
        stop_workers(processes)


def judged_twice(store, runs: list[str]) -> int:
    pairs = Counter((t.candidate_id, t.example_id) for r in runs
                    for t in store.trials(r, with_trace=False))
    return sum(1 for n in pairs.values() if n > 1)


def kill_one(store, url: str, args) -> dict[str, object]:
    """Kill -9 the worker holding a corrected run mid-run; what survives."""
    queue = f"bench-{uuid.uuid4().hex[:8]}"
    runs = create_runs(store, 3, args)
    processes = start_workers(url, queue, 3)
    try:
        wait_for(lambda: len(store.live_workers(60, queue)) == 3, 120, "workers to start")
        for run_id in runs:
            store.enqueue_run(run_id, queue)
        victim_run = runs[0]
        first = wait_for(lambda: store.trials(victim_run, with_trace=False), 120,
                         "a trial of the first run")[0]
        store.add_override(first.id, score=0.0, feedback="bench: a person's correction",
                           author="bench")
        wait_for(lambda: store.decisions(victim_run), 120, "a decision in the first run")
        overrides = {o.id for o in store.overrides(victim_run, include_undone=False)}
        decisions = {d.id for d in store.decisions(victim_run)}
        holder = store.get_run(victim_run).worker
        pid = int(holder.split(":")[1])
        victim = next(p for p in processes if p.pid == pid)
        victim.send_signal(signal.SIGKILL)
        victim.wait(30)
        killed_at = time.monotonic()
        wait_for(lambda: all_done(store, runs), 1800, "the runs to complete")
        judges = {t.worker for t in store.trials(victim_run, with_trace=False)}
        kept = ({o.id for o in store.overrides(victim_run, include_undone=False)} & overrides,
                {d.id for d in store.decisions(victim_run)} & decisions)
        return {
            "finished_elsewhere": bool(judges - {holder}),
            "judged_twice": judged_twice(store, runs),
            "lost": len(overrides - kept[0]) + len(decisions - kept[1]),
            "kept": f"{len(kept[1])} decisions, {len(kept[0])} corrections",
            "recovered_s": time.monotonic() - killed_at,
        }
    finally:
        stop_workers(processes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", default=os.environ.get("STUDIO_TEST_PG_URL"))
    parser.add_argument("--runs", type=int, default=12)
    parser.add_argument("--latency-ms", type=int, default=100)
    parser.add_argument("--iterations", type=int, default=2)
    args = parser.parse_args()
    if not args.url:
        raise SystemExit("give --url postgresql://... (or set STUDIO_TEST_PG_URL)")
    store = open_store(args.url, cached=False)
    print(f"{args.runs} queued runs, scripted model at {args.latency_ms} ms, "
          f"{args.iterations} iterations each; lease {LEASE_ENV}")
    one, one_cpu = timed_batch(store, args.url, 1, args)
    print(f"1 worker : {one:7.2f} s wall, {one_cpu:6.2f} s worker CPU")
    three, three_cpu = timed_batch(store, args.url, 3, args)
    print(f"3 workers: {three:7.2f} s wall, {three_cpu:6.2f} s worker CPU")
    print(f"ratio 3/1: {three / one:.3f} (target <= 0.45)")
    cores = len(os.sched_getaffinity(0))
    print(f"CPU floor of the 3-worker wall on {cores} cores (if nothing else ran): "
          f"{three_cpu / min(3, cores):.2f} s; load average now {os.getloadavg()[0]:.1f}")
    result = kill_one(store, args.url, args)
    print("kill -9 of one of 3 workers mid-run:")
    print(f"  its run finished on another worker: {'yes' if result['finished_elsewhere'] else 'no'}"
          f" ({result['recovered_s']:.1f} s after the kill, lease "
          f"{LEASE_ENV['STUDIO_STALE_AFTER_SECONDS']} s)")
    print(f"  pairs judged twice (from the store): {result['judged_twice']}")
    print(f"  decisions/corrections lost: {result['lost']} (kept {result['kept']})")
    store.close()


if __name__ == "__main__":
    main()
