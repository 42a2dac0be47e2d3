"""What watching a run costs the studio server ("watching is cheap").

Prints:

1. **Server CPU per watching tab**: a real ``streamlit run studio/app.py`` server while a CLI run
   of the scripted model (slow latency, so it lasts) is in progress in another process; 0, 1, 5
   and 10 tabs of one headless Chromium on the run's Run page; the server's CPU (utime + stime
   from /proc over a fixed window) minus the 0-tab figure, divided by the number of tabs
   (target: <= 5 % of a core per tab).
2. **Wall time of a run in the studio's process** (started with *Start run* in the browser, so
   the engine shares the server's process and its GIL) with 0 and with 10 tabs watching it, and
   the ratio (target: <= 1.10). The run pauses after its baseline while the tabs open and show
   the live table; the timed part is from its resume to its end (watching, not page loads,
   whose Chromium CPU is printed apart). The 10 Chromium tabs run on the same cores as the run
   and the server, so two more figures tell their costs apart: the same 10 tabs from a Chromium at
   ``nice 19`` (its renderers then take only CPU the run and the server leave), and the CPU
   seconds of the server and of the Chromium processes during each run.

Figures are measured in the same run of this script; compare ratios, not seconds.

    python bench/bench_watch.py [--tabs 1 5 10] [--window 20] [--skip-cpu] [--skip-wall] [--quick]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("STUDIO_HOME", tempfile.mkdtemp(prefix="bench-watch-home-"))

import studio  # noqa: E402,F401  (sets LITELLM_LOCAL_MODEL_COST_MAP first)

EXAMPLE = ROOT / "examples" / "haiku_scripted.yaml"
TICKS = os.sysconf("SC_CLK_TCK")


def project_file(folder: Path, *, latency_ms: int, n_train: int, max_iterations: int,
                 name: str) -> Path:
    """The scripted example with more examples (so trials keep coming) and a given latency."""
    import yaml

    data = yaml.safe_load(EXAMPLE.read_text())
    for role in ("agent", "critic", "reflection"):
        data[role]["model"] = f"scripted/demo@{latency_ms}ms"
    words = ["autumn", "city", "river", "mountain", "paper", "snow", "harbor", "desert", "owl",
             "lantern", "bridge", "rain"]
    topics = [f"{a} {b}" for a in words for b in words if a != b]
    data["dataset"] = {"train": [{"topic": t} for t in topics[:n_train]],
                       "val": [{"topic": t} for t in topics[n_train:n_train + 4]]}
    data["run"]["max_iterations"] = max_iterations
    data["name"] = name
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime


def cpu_share(pid: int, window: float) -> float:
    """The share of one core the process used over the next ``window`` seconds."""
    before, started = cpu_seconds(pid), time.monotonic()
    time.sleep(window)  # a measuring window, not a wait for a condition
    return (cpu_seconds(pid) - before) / (time.monotonic() - started)


def open_tabs(context, pages: list, count: int, url: str) -> None:
    """Open tabs on ``url`` until there are ``count``, each showing the live table."""
    while len(pages) < count:
        page = context.new_page()
        page.goto(url)
        pages.append(page)
    for page in pages:
        page.get_by_text(re.compile(r"newest trial #\d+")).first.wait_for(timeout=120_000)


def newest(page) -> int:
    text = page.get_by_text(re.compile(r"newest trial #\d+")).first.inner_text()
    return int(re.search(r"newest trial #(\d+)", text).group(1))


def profile_server(pid: int, seconds: float, out: Path) -> subprocess.Popen:
    """py-spy (``--py-spy``) samples the server during a window: collapsed stacks in ``out``."""
    return subprocess.Popen([os.environ.get("PY_SPY", "py-spy"), "record", "--pid", str(pid),
                             "--duration", str(int(seconds)), "--rate", "200", "--format", "raw",
                             "--output", str(out), "--nonblocking"],
                            stdout=subprocess.DEVNULL,
                            stderr=open(out.with_suffix(".log"), "w"))  # noqa: SIM115


def cpu_per_tab(work: Path, tab_counts: list[int], window: float,
                profile: Path | None = None) -> list[tuple[int, float]]:
    from studio.projects.workspace import stop_run
    from studio.store import open_store
    from tests.ui.browser import free_port, server_pid, studio_server

    db = work / "watch.db"
    store = open_store(f"sqlite:///{db}")
    path = project_file(work, latency_ms=600, n_train=120, max_iterations=10_000,
                        name="watched")
    cli = subprocess.Popen(
        [sys.executable, "-m", "studio.cli", "--db", f"sqlite:///{db}", "run", str(path)],
        cwd=ROOT, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    results: list[tuple[int, float]] = []
    try:
        run_id = None
        for _ in range(100):
            found = re.search(r"run (\w+) started", cli.stderr.readline())
            if found:
                run_id = found.group(1)
                break
        if not run_id:
            raise RuntimeError("the CLI did not report its run")
        threading.Thread(target=cli.stderr.read, daemon=True).start()
        port = free_port()
        with studio_server(db, port=port) as url:
            pid = server_pid(port)
            from playwright.sync_api import sync_playwright

            from tests.ui.browser import CHROMIUM, CHROMIUM_ARGS
            with tempfile.TemporaryDirectory(prefix="bench-watch-chromium-") as profile_dir, \
                    sync_playwright() as playwright:
                context = playwright.chromium.launch_persistent_context(
                    profile_dir, executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True,
                    viewport={"width": 1400, "height": 1000})
                pages: list = []
                # warm the server (imports, first page) before the 0-tab window
                warm = context.pages[0] if context.pages else context.new_page()
                warm.goto(f"{url}/run?run={run_id}")
                warm.get_by_text(re.compile(r"newest trial #\d+")).first.wait_for(
                    timeout=120_000)
                warm.goto("about:blank")
                time.sleep(2)
                idle = cpu_share(pid, window)
                results.append((0, idle))
                print(f"  0 tabs: server {idle * 100:5.1f} % of a core "
                      f"({store.count_trials(run_id)} trials so far)", flush=True)
                for count in tab_counts:
                    open_tabs(context, pages, count, f"{url}/run?run={run_id}")
                    before = [newest(p) for p in pages]
                    spy = profile_server(pid, window, profile) \
                        if profile and count == max(tab_counts) else None
                    share = cpu_share(pid, window)
                    if spy is not None:
                        spy.wait(timeout=60)
                    after = [newest(p) for p in pages]
                    live = sum(a > b for a, b in zip(after, before, strict=True))
                    results.append((count, share))
                    print(f"{count:3d} tabs: server {share * 100:5.1f} % of a core, "
                          f"{(share - idle) / count * 100:5.1f} % per tab "
                          f"({live}/{count} tabs saw new trials in the window; "
                          f"{store.count_trials(run_id)} trials so far)", flush=True)
                context.close()
    finally:
        try:
            if run_id:
                stop_run(store, run_id)
            cli.wait(timeout=60)
        except Exception:
            cli.kill()
    return results


def descendants(root: int) -> list[int]:
    """Pids of every process under ``root`` (from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def chromium_cpu() -> dict[int, float]:
    """CPU seconds so far of each Chromium process this bench started."""
    seconds = {}
    for pid in descendants(os.getpid()):
        try:
            if "chrom" in Path(f"/proc/{pid}/comm").read_text():
                seconds[pid] = cpu_seconds(pid)
        except OSError:
            continue
    return seconds


def niced_chromium(work: Path) -> str:
    """A launcher running Chromium at ``nice 19``: the renderers then use only CPU that the
    server and the run leave over, which isolates what the browsers cost the run."""
    from tests.ui.browser import CHROMIUM

    path = work / "chromium-nice19"
    path.write_text(f'#!/bin/sh\nexec nice -n 19 {CHROMIUM} "$@"\n')
    path.chmod(0o755)
    return str(path)


def wall_times(work: Path, tabs: int, *, max_iterations: int = 30, timeout: float = 300.0,
               profile: Path | None = None) -> dict[str, float]:
    """Seconds a run started in the studio's process takes with 0 tabs, ``tabs`` tabs, and
    ``tabs`` tabs of a Chromium at ``nice 19``; with the server's and Chromium's CPU seconds
    during each run, so the server's share and the browsers' share are told apart.

    Each wait has a deadline and says what it waited for (a run that ends without finishing, or
    does not end in ``timeout`` seconds, is an error naming its status, not a silent hang)."""
    from playwright.sync_api import sync_playwright

    from studio.projects.workspace import import_example
    from studio.store import open_store
    from tests.ui.browser import CHROMIUM, CHROMIUM_ARGS, free_port, server_pid, studio_server

    db = work / "wall.db"
    store = open_store(f"sqlite:///{db}")
    path = project_file(work, latency_ms=40, n_train=60, max_iterations=max_iterations,
                        name="timed")
    project = import_example(store, path)
    out: dict[str, float] = {}
    port = free_port()
    cases = [("warm-up", 0, CHROMIUM),  # the server's first run imports what runs need
             ("0 tabs", 0, CHROMIUM), (f"{tabs} tabs", tabs, CHROMIUM),
             (f"{tabs} tabs, Chromium at nice 19", tabs, niced_chromium(work))]
    with studio_server(db, port=port) as url, sync_playwright() as playwright:
        pid = server_pid(port)
        for label, watching, executable in cases:
            with tempfile.TemporaryDirectory(prefix="bench-watch-chromium-") as profile_dir:
                context = playwright.chromium.launch_persistent_context(
                    profile_dir, executable_path=executable, args=CHROMIUM_ARGS,
                    headless=True, viewport={"width": 1400, "height": 1000})
                context.set_default_timeout(120_000)
                first = context.pages[0] if context.pages else context.new_page()
                run_id = start_in_browser(store, first, f"{url}/run?project={project.id}")
                held = hold_after_baseline(store, run_id, timeout)
                loading = chromium_cpu()
                if watching == 0:
                    first.goto("about:blank")
                pages = [first] if watching else []
                for _ in range(max(0, watching - 1)):
                    pages.append(context.new_page())
                    pages[-1].goto(f"{url}/run?run={run_id}")
                for page in pages:  # loaded and live before the timed part starts
                    page.get_by_text(re.compile(r"newest trial #\d+")).first.wait_for()
                time.sleep(1)  # a settling window, not a wait for a condition
                server_before, browser_before = cpu_seconds(pid), chromium_cpu()
                opening = sum(after - loading.get(p, 0.0) for p, after in browser_before.items())
                store.update_run(run_id, control=None)  # the run goes on
                spy = profile_server(pid, 30, profile) if profile and watching else None
                run = wait_finished(store, run_id, timeout)
                server = cpu_seconds(pid) - server_before
                browser_after = chromium_cpu()
                browser = sum(after - browser_before.get(p, 0.0)
                              for p, after in browser_after.items())
                if spy is not None:
                    spy.wait(timeout=60)
                if watching and executable == CHROMIUM:  # the same tabs, the run now finished
                    time.sleep(2)  # the pages notice the end: a settling window
                    idle_server, idle_browser = cpu_seconds(pid), chromium_cpu()
                    time.sleep(5)  # a measuring window, not a wait for a condition
                    after = chromium_cpu()
                    print(f"  the same {watching} tabs on the finished run's page (refresh every "
                          f"5 s), over 5 s: server {(cpu_seconds(pid) - idle_server) / 5:.2f} "
                          f"cores, Chromium "
                          f"{sum(a - idle_browser.get(p, 0.0) for p, a in after.items()) / 5:.2f}"
                          f" cores", flush=True)
                context.close()
            resumed = [e for e in store.events(run_id) if e.kind.value == "run_resumed"
                       and e.created_at >= held][0].created_at
            wall = (run.finished_at - resumed).total_seconds()
            if label == "warm-up":
                continue
            out[label], out[f"{label} server"], out[f"{label} browser"] = wall, server, browser
            print(f"run in the studio's process, {label}: {wall:.1f} s "
                  f"({store.count_trials(run_id)} trials); server CPU {server:.1f} s, Chromium "
                  f"CPU {browser:.1f} s ({browser / wall:.2f} cores while the run lasted; "
                  f"opening the tabs took {opening:.1f} s of Chromium CPU before)",
                  flush=True)
    return out


def hold_after_baseline(store, run_id: str, timeout: float):
    """Pause the run once its baseline is scored (so the tabs load before the timed part, which
    then measures watching, not opening pages); when the pause took effect."""
    from studio.model.records import RunRequest, RunStatus

    store.update_run(run_id, control=RunRequest.PAUSE)
    deadline = time.monotonic() + timeout
    while (run := store.get_run(run_id)).status is not RunStatus.PAUSED:
        if time.monotonic() > deadline or not run.status.is_active:
            raise RuntimeError(f"run {run_id} did not pause within {timeout:.0f} s "
                               f"({run.status.value})")
        time.sleep(0.05)
    return [e for e in store.events(run_id) if e.kind.value == "run_paused"][-1].created_at


def start_in_browser(store, page, url: str, timeout: float = 60.0) -> str:
    """Click *Start run* on ``url``; the id of the run it started."""
    known = {r.id for r in store.list_runs(limit=100)}
    page.goto(url)
    page.get_by_role("button", name="Start run").click()
    deadline = time.monotonic() + timeout
    while not (new := [r for r in store.list_runs(limit=100) if r.id not in known]):
        if time.monotonic() > deadline:
            raise RuntimeError(f"no run started within {timeout:.0f} s of clicking Start run")
        time.sleep(0.05)
    return new[0].id


def wait_finished(store, run_id: str, timeout: float):
    """The run once it is no longer active; an error if it did not complete in ``timeout``."""
    deadline = time.monotonic() + timeout
    while (run := store.get_run(run_id)).status.is_active:
        if time.monotonic() > deadline:
            raise RuntimeError(f"run {run_id} still {run.status.value} after {timeout:.0f} s "
                               f"({store.count_trials(run_id)} trials); look at the server with "
                               "`py-spy dump --pid <streamlit pid>`")
        time.sleep(0.1)
    if run.finished_at is None or run.started_at is None:
        raise RuntimeError(f"run {run_id} ended {run.status.value}: {run.error}")
    return run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tabs", type=int, nargs="+", default=[1, 5, 10])
    parser.add_argument("--window", type=float, default=20.0, help="seconds of CPU measured")
    parser.add_argument("--skip-cpu", action="store_true")
    parser.add_argument("--skip-wall", action="store_true")
    parser.add_argument("--quick", action="store_true",
                        help="short windows and a short timed run (a shared machine)")
    parser.add_argument("--py-spy", type=Path, metavar="FILE",
                        help="sample the server with py-spy (collapsed stacks) during the window "
                             "with the most tabs (py-spy from PATH or $PY_SPY)")
    args = parser.parse_args(argv)
    if args.quick:
        args.window = min(args.window, 5.0)

    from studio.runtime.logs import quiet_library_logs

    quiet_library_logs()
    work = Path(tempfile.mkdtemp(prefix="bench-watch-"))
    if not args.skip_cpu:
        print(f"server CPU while a CLI run is in progress ({args.window:.0f} s windows):")
        cpu_per_tab(work, sorted(args.tabs), args.window, args.py_spy)
    if not args.skip_wall:
        tabs = max(args.tabs)
        times = wall_times(work, tabs, max_iterations=16 if args.quick else 30,
                           profile=args.py_spy.with_suffix(".wall.txt") if args.py_spy else None)
        idle, watched, niced = "0 tabs", f"{tabs} tabs", f"{tabs} tabs, Chromium at nice 19"
        print(f"wall time ratio, {tabs} tabs / 0 tabs: {times[watched] / times[idle]:.2f} "
              f"(target <= 1.10); with Chromium at nice 19: {times[niced] / times[idle]:.2f}")
        print(f"what {tabs} tabs added: server CPU "
              f"{times[watched + ' server'] - times[idle + ' server']:+.1f} s "
              f"({times[watched + ' server'] / times[idle + ' server']:.2f}x the 0-tab run's "
              f"server CPU, which includes the run itself); the browsers' own CPU "
              f"{times[watched + ' browser']:.1f} s on a 2-core machine "
              f"({os.cpu_count()} cores here) shared by the run, the server and the tabs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
