"""Worker processes forked from a preloaded forkserver against spawned ones (``processes: N``).

Each start method runs in its own child, in turn, ``--repeats`` times: the child asks for a
pool of ``--processes`` processes the way a run does (``ProcessFanOut.start`` with the engine's
real setup function), and times until every process has built the run's agent and critic and
beaten once (ready to take work); then it stops that pool and asks for the next one (a broken
pool's replacement, the next test's pool: the forkserver, once started, stays). The CPU is the
child's children's (``RUSAGE_CHILDREN``, after the pools and the forkserver exited and were
reaped): every worker's imports and warm-up, and the forkserver's own imports, for both pools.

    python bench/bench_forkserver.py                 # 2 processes, 2 repeats each
    python bench/bench_forkserver.py --processes 4 --repeats 3
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
METHODS = ("spawn", "forkserver")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--one", choices=METHODS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(one_pool(args.one, args.processes)))
        return
    figures: dict[str, list[dict[str, float]]] = {method: [] for method in METHODS}
    for _ in range(args.repeats):
        for method in METHODS:  # interleaved: a load change hits both alike
            figures[method].append(measure(method, args.processes))
    def median(method: str, key: str) -> float:
        return statistics.median(f[key] for f in figures[method])

    print(f"{args.processes} processes, median of {args.repeats}:")
    for method in METHODS:
        print(f"{method:>10}: first pool ready in {median(method, 'first_s'):5.2f} s, next pool "
              f"in {median(method, 'next_s'):5.2f} s; children's CPU for both "
              f"{median(method, 'children_cpu_s'):5.2f} s")
    print("spawn / forkserver: " + ", ".join(
        f"{median('spawn', key) / median('forkserver', key):.1f}x {what}"
        for key, what in (("first_s", "the first pool's time to ready"),
                          ("next_s", "the next pool's"), ("children_cpu_s", "the CPU"))))


def measure(method: str, processes: int) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, __file__, "--one", method, "--processes",
                          str(processes)], env=env, check=True, capture_output=True,
                         text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def one_pool(method: str, processes: int) -> dict[str, float]:
    """In a child: one pool of ``processes`` started with ``method``, until every process is
    ready, then everything it started stopped and reaped."""
    import multiprocessing.forkserver

    from studio.engine import EvolutionConfig
    from studio.engine.hosting.build import process_setup
    from studio.engine.scoring import processes as fan_out
    from tests.helpers import demo_spec, wait_until

    fan_out.START_METHOD = method
    config = EvolutionConfig(max_concurrency=processes, processes=processes)

    def ready_in() -> float:
        fan = fan_out.ProcessFanOut(demo_spec("scripted/demo"), config, "x", process_setup)
        started = time.monotonic()
        fan.start()
        wait_until(lambda: all(f.done() for f in fan._warming)
                   and fan_out.all_beating(fan._pool),
                   timeout=300, message="every process built the run and beat")
        seconds = time.monotonic() - started
        assert all(f.result() for f in fan._warming)
        fan_out.shutdown_pools()
        return seconds

    first, next_ = ready_in(), ready_in()
    multiprocessing.forkserver._forkserver._stop()  # reaped here: its CPU (and its children's)
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"first_s": first, "next_s": next_,
            "children_cpu_s": usage.ru_utime + usage.ru_stime}


if __name__ == "__main__":
    main()
