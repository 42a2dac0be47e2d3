"""Where a run's CPU goes, beside gepa-adk, on the shared harness's work (issue 22).

``bench_peers.py`` prints each tool's CPU per model call; this says what the studio's extra is
made of. Each tool runs the harness's world once per repeat, through ``peers_preload.py`` (the
same first-call imports before the clock), in a child process that measures, inside the
harness's clock only:

* the process CPU spent before the first model call starts and after the last one returns
  (setup and teardown: a run's fixed part);
* for the studio, the thread CPU of every ``Store`` method the run calls (count and total): its
  durable store, which gepa-adk (it keeps nothing) does not have;
* for the studio, the CPU of SQLAlchemy's statement compiles (once per statement and process).

    python bench/bench_cpu_share.py                         # the slow world, twice each
    python bench/bench_cpu_share.py --worlds slow fast --repeats 3
    python bench/bench_cpu_share.py --store-floor   # + an insert and a select: SQLAlchemy, sqlite3

The clock starts where the harness's does: its ``main()`` imports ``gepa_side`` right before
``t0``, and the child starts measuring at that import.
"""

from __future__ import annotations

import argparse
import builtins
import collections
import json
import os
import runpy
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_peers import (  # noqa: E402
    PEERS,
    PRELOAD,
    ROOT,
    TOOLS,
    WORLDS,
    HarnessError,
    harness_env,
    peer_python,
)

MARK = "cpu-share: "


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worlds", nargs="+", choices=list(WORLDS), default=["slow"])
    parser.add_argument("--tools", nargs="+", choices=["studio", "gepa-adk"],
                        default=["studio", "gepa-adk"])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--store-floor", action="store_true",
                        help="also time one committed insert and one select through SQLAlchemy "
                             "Core (as the store runs them) and through sqlite3 directly")
    args = parser.parse_args(argv)
    if args.store_floor:
        print(store_floor(), "\n", flush=True)
    pythons = {t: peer_python(TOOLS[t].peer) if TOOLS[t].peer else sys.executable
               for t in args.tools}
    for name in args.worlds:
        runs: dict[str, list[dict]] = {t: [] for t in args.tools}
        for _ in range(args.repeats):
            for tool in args.tools:
                runs[tool].append(child_run(tool, WORLDS[name], pythons[tool]))
        print(report(name, runs), "\n", flush=True)


def child_run(tool: str, world: dict[str, str], python: str) -> dict:
    """One measured run of ``tool`` on ``world`` in a fresh directory and database."""
    with tempfile.TemporaryDirectory(prefix="cpu-share-") as tmp:
        done = subprocess.run([python, __file__, "--child"], cwd=tmp,
                              env=harness_env(tool, world, ROOT, tmp),
                              capture_output=True, text=True, timeout=900)
    lines = [ln[len(MARK):] for ln in done.stderr.splitlines() if ln.startswith(MARK)]
    harness = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
    if done.returncode != 0 or not lines or not harness:
        raise HarnessError(f"{tool}: exit {done.returncode}: {done.stderr.strip()[-800:]}")
    return {**json.loads(lines[-1]), **json.loads(harness[-1])}


def report(name: str, runs: dict[str, list[dict]]) -> str:
    def mean(tool: str, key: str) -> float:
        return statistics.mean(r[key] for r in runs[tool])

    lines = [f"### {name}: " + " ".join(f"{k}={v}" for k, v in WORLDS[name].items()), "",
             "| tool | calls | process CPU s | before first call | after last call "
             "| store s (calls) | SQL compiles s (n) |", "|---|---|---|---|---|---|---|"]
    for tool, rs in runs.items():
        store = (f"{mean(tool, 'store_s'):.3f} ({rs[0]['store_calls']})"
                 if "store_s" in rs[0] else "-")
        compiles = (f"{mean(tool, 'compile_s'):.3f} ({rs[0]['compiles']})"
                    if rs[0].get("compiles") else "-")
        lines.append(f"| {TOOLS[tool].label} | {sum(rs[0]['calls'].values())} | "
                     f"{mean(tool, 'cpu_s'):.3f} | {mean(tool, 'before_s'):.3f} | "
                     f"{mean(tool, 'after_s'):.3f} | {store} | {compiles} |")
    if "studio" in runs and "store_s" in runs["studio"][0]:
        methods: dict[str, list[float]] = collections.defaultdict(list)
        for r in runs["studio"]:
            for method, (_count, seconds) in r["store_methods"].items():
                methods[method].append(seconds)
        top = sorted(methods.items(), key=lambda kv: -statistics.mean(kv[1]))[:10]
        counts = runs["studio"][0]["store_methods"]
        lines += ["", "The studio's store, thread CPU per method (mean of the runs):", ""]
        lines += [f"- `{m}`: {1000 * statistics.mean(s):.1f} ms in {counts.get(m, [0])[0]} calls"
                  for m, s in top]
    return "\n".join(lines)


def store_floor(n: int = 300) -> str:
    """CPU per committed insert (a JSON trace) and per select, SQLAlchemy Core with a built-once
    bound statement against sqlite3 with the same SQL: what any store on SQLite pays, and the
    part SQLAlchemy adds."""
    import sqlite3

    from sqlalchemy import (
        JSON,
        Column,
        Integer,
        MetaData,
        String,
        Table,
        bindparam,
        create_engine,
        insert,
        select,
    )

    trace = {"events": [{"text": "x" * 50, "i": i} for i in range(20)]}
    with tempfile.TemporaryDirectory(prefix="store-floor-") as tmp:
        engine = create_engine(f"sqlite:///{tmp}/floor.db")
        table = Table("t", MetaData(), Column("id", Integer, primary_key=True),
                      Column("run", String), Column("trace", JSON), Column("score", Integer))
        table.metadata.create_all(engine)
        add = insert(table)
        read = select(table).where(table.c.run == bindparam("run"), table.c.id > bindparam("after"))
        raw = sqlite3.connect(f"{tmp}/floor.db", isolation_level=None)

        def sa_insert(i):
            with engine.begin() as c:
                c.execute(add, {"run": "r", "trace": trace, "score": i})

        def sa_select(_):
            with engine.connect() as c:
                c.execute(read, {"run": "r", "after": 10**9}).all()

        def raw_insert(i):
            raw.execute("BEGIN")
            raw.execute("INSERT INTO t (run, trace, score) VALUES (?, ?, ?)",
                        ("r", json.dumps(trace), i))
            raw.execute("COMMIT")

        def raw_select(_):
            raw.execute("SELECT id, run, trace, score FROM t WHERE run = ? AND id > ?",
                        ("r", 10**9)).fetchall()

        def per_call(step) -> float:
            for i in range(30):
                step(i)
            began = time.thread_time()
            for i in range(n):
                step(i)
            return 1000 * (time.thread_time() - began) / n

        figures = {name: per_call(step) for name, step in (
            ("sa_insert", sa_insert), ("raw_insert", raw_insert),
            ("sa_select", sa_select), ("raw_select", raw_select))}
        raw.close()
        engine.dispose()
    return ("Store floor (CPU ms per call, SQLAlchemy Core / sqlite3): committed insert "
            f"{figures['sa_insert']:.3f} / {figures['raw_insert']:.3f}, select "
            f"{figures['sa_select']:.3f} / {figures['raw_select']:.3f}")


# --- the child: instruments the tool, then runs the harness through peers_preload ----------

class Clock:
    """What the child measures; starts at the harness's ``import gepa_side`` (before t0)."""

    def __init__(self) -> None:
        self.on = False
        self.start = self.first = self.last = 0.0
        self.store: dict[str, list[float]] = collections.defaultdict(lambda: [0, 0.0])
        self.compiles = [0, 0.0]

    def begin(self) -> None:
        self.on, self.start = True, time.process_time()

    def model_call(self, started: bool) -> None:
        now = time.process_time()
        if started and not self.first:
            self.first = now
        if not started:
            self.last = now

    def figures(self) -> dict:
        end = time.process_time()
        out = {"before_s": round(self.first - self.start, 4),
               "after_s": round(end - self.last, 4)}
        if self.store:
            out.update(store_s=round(sum(v[1] for v in self.store.values()), 4),
                       store_calls=sum(v[0] for v in self.store.values()),
                       store_methods={k: [v[0], round(v[1], 4)] for k, v in self.store.items()})
        if self.compiles[0]:
            out.update(compiles=self.compiles[0], compile_s=round(self.compiles[1], 4))
        return out


def instrument_store(clock: Clock) -> None:
    """Time every public ``Store`` method (outermost call only: a method calling another is
    counted once), in the calling thread's CPU."""
    from studio.store import repository

    inside = threading.local()
    for name, attr in list(vars(repository.Store).items()):
        if name.startswith("_") or getattr(attr, "__wrapped__", None) is None:
            continue

        def timed(*args, _method=attr, _name=name, **kwargs):
            if getattr(inside, "depth", 0) or not clock.on:
                return _method(*args, **kwargs)
            inside.depth, began = 1, time.thread_time()
            try:
                return _method(*args, **kwargs)
            finally:
                inside.depth = 0
                entry = clock.store[_name]
                entry[0] += 1
                entry[1] += time.thread_time() - began

        setattr(repository.Store, name, timed)


def instrument_compiles(clock: Clock) -> None:
    from sqlalchemy.sql import compiler

    original = compiler.Compiled.__init__

    def timed(self, *args, **kwargs):
        if not clock.on:
            return original(self, *args, **kwargs)
        began = time.thread_time()
        try:
            return original(self, *args, **kwargs)
        finally:
            clock.compiles[0] += 1
            clock.compiles[1] += time.thread_time() - began

    compiler.Compiled.__init__ = timed


def instrument_calls(clock: Clock) -> None:
    """Mark the first model call's start and the last one's end: the harness's provider
    (``Anchor`` in its ``__main__``) is wrapped once the clock starts."""
    anchor = sys.modules["__main__"].Anchor
    original = anchor.acompletion

    async def acompletion(self, *args, **kwargs):
        clock.model_call(started=True)
        try:
            return await original(self, *args, **kwargs)
        finally:
            clock.model_call(started=False)

    anchor.acompletion = acompletion


def child() -> None:
    tool = os.environ["TOOL"]
    sys.argv = [str(PRELOAD)]
    preload = runpy.run_path(str(PRELOAD), run_name="peers_preload")
    preload["preload"](tool)
    clock = Clock()
    if tool == "studio":
        instrument_store(clock)
        instrument_compiles(clock)
    importing = builtins.__import__

    def watch(name, *args, **kwargs):
        if name == "gepa_side" and not clock.on:
            clock.begin()
            instrument_calls(clock)
        return importing(name, *args, **kwargs)

    builtins.__import__ = watch
    sys.argv = [str(PEERS / "side_by_side.py")]
    try:
        runpy.run_path(sys.argv[0], run_name="__main__")
    finally:
        builtins.__import__ = importing
    print(MARK + json.dumps(clock.figures()), file=sys.stderr)


if __name__ == "__main__":
    child() if sys.argv[1:] == ["--child"] else main()
