"""The studio against the tools a user would pick instead, on the same scripted work (issue 22).

Drives the shared side-by-side harness (``../shared/peers``, its README says how each tool is
driven and budgeted): gepa-adk 2.8 ``evolve()``, GEPA 0.1.4 ``optimize()`` with parallel
proposals (``IndependentSampling(3)``), ADK 2.13's ``GEPARootAgentOptimizer`` and the studio's
``evolve()`` (this checkout, in this interpreter's environment). The peers need Python 3.12:
their environments are built once by the harness's ``peer-python`` (pip, from the configured
package registry) and reused after.

The tools run alternating, each ``--repeats`` times per world, because the machine is shared
and noisy: only ratios measured in one session mean anything. Printed per world: one row per
tool (wall range, calls writer/critic/reflector, calls in flight, score), then the studio's
ratios: its wall over the fastest peer's, over the throughput bound (calls x latency /
concurrency) and its CPU per model call over gepa-adk's.

    python bench/bench_peers.py                      # the three worlds, twice each
    python bench/bench_peers.py --worlds slow --repeats 3 --tools studio gepa-adk
    python bench/bench_peers.py --baseline-root /tmp/main   # + main's studio: before/after

Every tool runs through ``bench/peers_preload.py``, which imports before the clock the modules
every ADK/LiteLLM tool imports lazily on its first model call (one list for all) and then the
tool's own stack, and runs the harness unmodified (that file says why this is fair);
``--import-in-clock`` runs the harness as it is, for every tool. The mode is printed. Each studio
checkout's sources are compiled first (``compileall``): with ``PYTHONDONTWRITEBYTECODE`` set, a
checkout extracted with ``git archive`` would otherwise compile every module in every run (~0.2 s
of CPU in the clock that an installed peer never pays).

``--split`` runs each tool on two sizes of each world (N and ITERS as given, and three times
both) and prints, from the CPU of the two, the CPU per extra model call (the slope) and the
fixed CPU of a run (the intercept): what "CPU per model call" is made of.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PEERS = Path(os.environ.get("STUDIO_PEERS_DIR") or next(
    (up / "shared" / "peers" for up in ROOT.parents if (up / "shared" / "peers").is_dir()),
    ROOT.parent / "shared" / "peers"))
"""The shared harness: ``shared/peers`` beside this checkout or a parent of it (``/work/main``
and ``/work/wt/<name>`` both find ``/work/shared``; override: STUDIO_PEERS_DIR)."""

WORLDS = {
    "slow": {"LATENCY": "0.5", "N": "10", "ITERS": "4", "CONC": "5"},
    "fast": {"LATENCY": "0.1", "N": "20", "ITERS": "6", "CONC": "5"},
    "uneven": {"LATENCY": "0.2", "N": "10", "ITERS": "6", "CONC": "5", "JITTER": "0.5",
               "REJECT_EVERY": "3"},
    "probe": {"LATENCY": "0.1", "N": "10", "ITERS": "4", "CONC": "5"},
}
"""The issue's two worlds, and one with uneven latency (lognormal, sigma 0.5) where every third
reflection proposes a text the gate must reject: speed must not come from one world. ``probe``
(not run unless named): a short world for ``--split`` (with x3: the lead's N=30, 12 iterations)."""


@dataclass(frozen=True)
class Tool:
    label: str
    env: dict[str, str]
    peer: str | None
    """The peer environment it runs in (``peer-python`` kind); None: the studio's own."""


TOOLS = {
    "gepa-adk": Tool("gepa-adk 2.8", {"TOOL": "gepa-adk"}, "gepa-adk"),
    "gepa": Tool("GEPA 0.1.4, parallel proposals n=3", {"TOOL": "gepa", "GEPA_PARALLEL": "3"},
                 "gepa"),
    "adk-optimize": Tool("ADK GEPARootAgentOptimizer", {"TOOL": "adk-optimize"}, "gepa"),
    "studio": Tool("studio (default minibatch 3)", {"TOOL": "studio"}, None),
    "studio-base": Tool("studio at --baseline-root", {"TOOL": "studio"}, None),
}
STUDIOS = ("studio", "studio-base")
PEER_TOOLS = ("gepa-adk", "gepa", "adk-optimize")
PRELOAD = ROOT / "bench" / "peers_preload.py"
"""The wrapper every tool runs through unless ``--import-in-clock`` (its docstring says why)."""


class HarnessError(RuntimeError):
    """A tool's run did not print its figures (the harness's stderr tail says why)."""


def peer_python(kind: str) -> str:
    """The peer's Python 3.12, built once by the harness's script (minutes the first time)."""
    done = subprocess.run([str(PEERS / "peer-python"), kind], capture_output=True, text=True)
    if done.returncode != 0:
        raise HarnessError(f"peer-python {kind} failed ({done.returncode}): {done.stderr.strip()}"
                           f"; see its log under ~/.cache/studio-peers")
    return done.stdout.strip().splitlines()[-1]


def harness_env(tool: str, world: dict[str, str], root: Path, folder: str) -> dict[str, str]:
    """The environment of one harness run: the world's knobs, the tool's, the harness and the
    studio of ``root`` importable, a studio's database in ``folder`` (a fresh one per run)."""
    env = {**os.environ, **world, **TOOLS[tool].env, "STUDIO_PEERS_DIR": str(PEERS),
           "PYTHONPATH": os.pathsep.join([str(PEERS), str(root)])}
    if tool in STUDIOS:
        env["STUDIO_DB_URL"] = f"sqlite:///{folder}/sbs.db"
    return env


def run_once(tool: str, world: dict[str, str], python: str, root: Path = ROOT,
             import_in_clock: bool = False) -> dict:
    """One run of ``tool`` on ``world`` in a fresh directory (and a fresh studio database);
    the studio imported from ``root``; the first-call imports before the clock (the same list
    for every tool: ``peers_preload.py``) unless ``import_in_clock``."""
    with tempfile.TemporaryDirectory(prefix="peers-") as tmp:
        script = PEERS / "side_by_side.py" if import_in_clock else PRELOAD
        done = subprocess.run([python, str(script)], cwd=tmp,
                              env=harness_env(tool, world, root, tmp), capture_output=True,
                              text=True, timeout=900)
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
    if done.returncode != 0 or not lines:
        raise HarnessError(f"{tool} on {world}: exit {done.returncode}; stderr tail: "
                           f"{done.stderr.strip()[-800:]}")
    run = json.loads(lines[-1])
    skipped = [ln.split(":", 2)[-1].strip() for ln in done.stderr.splitlines()
               if ln.startswith("peers_preload: not importable here:")]
    run["preload_skipped"] = skipped[-1] if skipped else ""
    return run


def throughput_bound(run: dict) -> float:
    """Total calls x latency / concurrency: no schedule can beat it."""
    return sum(run["calls"].values()) * run["latency_s"] / run["concurrency"]


def spread(values: list[float]) -> str:
    low, high = min(values), max(values)
    return f"{low:.1f}" if abs(high - low) < 0.05 else f"{low:.1f}-{high:.1f}"


def table(name: str, world: dict[str, str], runs: dict[str, list[dict]]) -> str:
    knobs = " ".join(f"{k}={v}" for k, v in world.items())
    lines = [f"### {name}: {knobs}", "",
             "| tool | wall s | calls w/c/r | mean in flight | CPU ms/call | wall / bound "
             "| score |",
             "|---|---|---|---|---|---|---|"]
    for tool, rs in runs.items():
        calls = "/".join(str(rs[0]["calls"][r]) for r in ("writer", "critic", "reflector"))
        walls = [r["wall_s"] for r in rs]
        label = f"**{TOOLS[tool].label}**" if tool in STUDIOS else TOOLS[tool].label
        lines.append(
            f"| {label} | {spread(walls)} | {calls} | "
            f"{statistics.mean(r['mean_inflight'] for r in rs):.1f} | "
            f"{statistics.mean(r['cpu_ms_per_call'] for r in rs):.1f} | "
            f"{statistics.mean(r['wall_s'] / throughput_bound(r) for r in rs):.2f} | "
            f"{rs[0]['original']:.1f} -> {statistics.mean(r['final'] for r in rs):.2f} |")
    skipped = [f"{t}: {rs[0]['preload_skipped']}" for t, rs in runs.items()
               if rs[0].get("preload_skipped")]
    if skipped:  # that tool's venv cannot import them: it pays what its environment makes it
        lines += ["", "Not importable before the clock (left to the tool): " + "; ".join(skipped)]
    for tool in STUDIOS:
        if tool in runs:
            lines += ["", f"{TOOLS[tool].label}:", *ratios(runs, tool)]
    return "\n".join(lines)


def ratios(runs: dict[str, list[dict]], tool: str = "studio") -> list[str]:
    """The issue's targets, from the mean of each tool's runs."""
    studio = runs[tool]
    wall = statistics.mean(r["wall_s"] for r in studio)
    bound = statistics.mean(r["wall_s"] / throughput_bound(r) for r in studio)
    out = [f"- studio wall / throughput bound: {bound:.2f} (target 1.15)"]
    peers = {t: statistics.mean(r["wall_s"] for r in rs) for t, rs in runs.items()
             if t in ("gepa-adk", "gepa")}
    if peers:
        fastest = min(peers, key=peers.get)
        out.insert(0, f"- studio wall / fastest peer's ({fastest}, {peers[fastest]:.1f} s): "
                      f"{wall / peers[fastest]:.2f} (target 0.85)")
    if "gepa-adk" in runs:
        cpu = statistics.mean(r["cpu_ms_per_call"] for r in studio)
        theirs = statistics.mean(r["cpu_ms_per_call"] for r in runs["gepa-adk"])
        calls = sum(studio[0]["calls"].values()) / sum(runs["gepa-adk"][0]["calls"].values())
        out += [f"- studio CPU per model call / gepa-adk's: {cpu / theirs:.2f} (target 1.0)",
                f"- studio model calls / gepa-adk's: {calls:.2f} (target <= 1.0)"]
    return out


def scaled(world: dict[str, str], factor: int) -> dict[str, str]:
    """``world`` with ``factor`` times the examples and the iterations (the same latency,
    concurrency and knobs): about ``factor`` times the model calls, the same fixed costs."""
    return {**world, "N": str(int(world["N"]) * factor),
            "ITERS": str(int(world["ITERS"]) * factor)}


def split_cpu(small: list[dict], large: list[dict]) -> tuple[float, float]:
    """(CPU ms per extra model call, fixed CPU s of a run) from runs of one tool on two sizes
    of a world: the line through the two (mean calls, mean CPU) points."""
    def point(runs: list[dict]) -> tuple[float, float]:
        return (statistics.mean(sum(r["calls"].values()) for r in runs),
                statistics.mean(r["cpu_s"] for r in runs))
    (calls_s, cpu_s), (calls_l, cpu_l) = point(small), point(large)
    slope = (cpu_l - cpu_s) / (calls_l - calls_s)
    return 1000 * slope, cpu_s - slope * calls_s


def split_table(name: str, world: dict[str, str], factor: int,
                small: dict[str, list[dict]], large: dict[str, list[dict]]) -> str:
    knobs = " ".join(f"{k}={v}" for k, v in world.items())
    lines = [f"### {name}, split: {knobs} and x{factor} examples and iterations", "",
             "| tool | calls (small / large) | CPU ms/call (small / large) "
             "| CPU ms per extra call | fixed CPU s |", "|---|---|---|---|---|"]
    for tool in small:
        per_call, fixed = split_cpu(small[tool], large[tool])
        calls = "/".join(str(sum(rs[0]["calls"].values())) for rs in (small[tool], large[tool]))
        cpu = " / ".join(f"{statistics.mean(r['cpu_ms_per_call'] for r in rs):.1f}"
                         for rs in (small[tool], large[tool]))
        lines.append(f"| {TOOLS[tool].label} | {calls} | {cpu} | {per_call:.2f} | {fixed:.2f} |")
    return "\n".join(lines)


def run_all(tools: list[str], world: dict[str, str], repeats: int, name: str,
            pythons: dict[str, str], roots: dict[str, Path], import_in_clock: bool
            ) -> dict[str, list[dict]]:
    """Every tool ``repeats`` times on ``world``, alternating (load changes over minutes)."""
    runs: dict[str, list[dict]] = {t: [] for t in tools}
    for _ in range(repeats):
        for tool in tools:
            runs[tool].append(run_once(tool, world, pythons[tool], roots.get(tool, ROOT),
                                       import_in_clock))
            print(f"  {name} {tool}: {runs[tool][-1]['wall_s']:.1f} s, "
                  f"{runs[tool][-1]['cpu_ms_per_call']:.1f} ms/call", file=sys.stderr)
    return runs


def mode_line(import_in_clock: bool) -> str:
    if import_in_clock:
        return ("Mode: --import-in-clock (the harness as it is: each tool's first model call "
                "imports what it imports lazily, inside the clock).")
    return ("Mode: preloaded (bench/peers_preload.py: the same first-call imports for every "
            "tool, then its own stack, before the clock).")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worlds", nargs="+", choices=list(WORLDS),
                        default=[w for w in WORLDS if w != "probe"])
    parser.add_argument("--tools", nargs="+", choices=[t for t in TOOLS if t != "studio-base"],
                        default=[t for t in TOOLS if t != "studio-base"])
    parser.add_argument("--repeats", type=int, default=2, help="runs per tool and world (>= 2)")
    parser.add_argument("--json", type=Path, help="also write every run's figures here")
    parser.add_argument("--baseline-root", type=Path,
                        help="also run the studio of this checkout (e.g. main, extracted with "
                             "git archive), alternating with the others: before/after in one "
                             "session")
    parser.add_argument("--import-in-clock", action="store_true",
                        help="run the harness as it is, for every tool: what each tool imports "
                             "lazily on its first model call is inside the timed region")
    parser.add_argument("--split", type=int, nargs="?", const=3, metavar="FACTOR",
                        help="also run every world with FACTOR (default 3) times the examples "
                             "and iterations, and print each tool's CPU per extra model call "
                             "and fixed CPU per run")
    args = parser.parse_args(argv)
    tools = [*args.tools, *(["studio-base"] if args.baseline_root else [])]
    roots = {"studio-base": args.baseline_root.resolve()} if args.baseline_root else {}
    if args.baseline_root:
        TOOLS["studio-base"] = Tool(f"studio at {args.baseline_root}", {"TOOL": "studio"}, None)
    pythons = {t: peer_python(TOOLS[t].peer) if TOOLS[t].peer else sys.executable
               for t in tools}
    for root in {ROOT, *roots.values()}:  # as an installed package is: no compiling in the clock
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(root / "studio")],
                       check=True)
    print(mode_line(args.import_in_clock), "\n", flush=True)
    every: dict[str, dict[str, list[dict]]] = {}
    for name in args.worlds:
        world = WORLDS[name]
        every[name] = runs = run_all(tools, world, args.repeats, name, pythons, roots,
                                     args.import_in_clock)
        print(table(name, world, runs), "\n", flush=True)
        if args.split:
            every[f"{name} x{args.split}"] = large = run_all(
                tools, scaled(world, args.split), args.repeats, f"{name} x{args.split}",
                pythons, roots, args.import_in_clock)
            print(split_table(name, world, args.split, runs, large), "\n", flush=True)
    if args.json:
        args.json.write_text(json.dumps(every, indent=1))


if __name__ == "__main__":
    main()
