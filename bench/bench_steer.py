"""How fast a person's Stop and Pause reach a run in the middle of a big validation batch.

    python bench/bench_steer.py [--repeats 3] [--examples 2000] [--latency 50ms]

A ``studio run`` process judges the seed on ``--examples`` validation examples at ``--latency``
a model call, four at a time (issue 32's case: a 2,000-example validation). Two seconds after
its first trial, ``studio stop RUN`` (or ``studio pause RUN``) is run from another process, as
a second shell or the Run page would. Printed per action, medians over ``--repeats``:

- seconds from the command's return to the run's status (STOPPED, PAUSED), also in heartbeats
  (``STUDIO_HEARTBEAT_SECONDS``: a request reaches a run in another process through the store,
  at the latest on its next beat; target: within two beats, 2 s, on an idle machine);
- trials committed after the run said so (target: at most the chains already begun, 8);
- the share of the validation judged when it stopped (the rest is left to ``studio resume``).

This is where the latency lives rather than in a timed test (``tests/engine/test_stop_mid_batch.py``
asserts what is kept and judged, on any machine).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from studio.model.records import RunStatus  # noqa: E402
from studio.runtime.timing import HEARTBEAT_SECONDS  # noqa: E402
from studio.store import open_store  # noqa: E402
from tests.engine.test_stop_mid_batch import big_validation_project  # noqa: E402
from tests.helpers import wait_until  # noqa: E402

IN_FLIGHT = 8
STATUS = {"stop": RunStatus.STOPPED, "pause": RunStatus.PAUSED}


def studio(url: str, *args: str, **popen) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-m", "studio.cli", "--db", url, *args], cwd=ROOT,
                            env=env, stdin=subprocess.DEVNULL, **popen)


def one(action: str, examples: int, latency: str) -> tuple[float, int, float]:
    """(seconds to take effect, trials after, share judged) for one run."""
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite:///{folder}/studio.db"
        run = studio(url, "run", str(big_validation_project(Path(folder), examples, latency)),
                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        store = open_store(url, cached=False)
        try:
            run_id = run.stderr.readline().split()[1]
            wait_until(lambda: store.count_trials(run_id) > 0, 120, message="the first trial")
            time.sleep(2.0)  # two seconds into the validation, as in the issue
            assert studio(url, action, run_id, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL).wait(60) == 0
            asked = time.monotonic()
            wait_until(lambda: store.get_run(run_id).status is STATUS[action], 120, step=0.02,
                       message=f"the {action}")
            took = time.monotonic() - asked
            said = store.count_trials(run_id)
            time.sleep(1.0)
            after = store.count_trials(run_id) - said
            return took, after, store.count_trials(run_id) / examples
        finally:
            run.kill()
            run.wait(10)
            store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--examples", type=int, default=2000)
    parser.add_argument("--latency", default="50ms")
    args = parser.parse_args()
    print(f"{args.examples} validation examples at {args.latency} a call, four at a time; "
          f"heartbeat {HEARTBEAT_SECONDS:g} s; median of {args.repeats}")
    for action in ("stop", "pause"):
        runs = [one(action, args.examples, args.latency) for _ in range(args.repeats)]
        took = statistics.median(r[0] for r in runs)
        after = max(r[1] for r in runs)
        share = statistics.median(r[2] for r in runs)
        print(f"  studio {action:5}: {took:.2f} s to take effect ({took / HEARTBEAT_SECONDS:.1f} "
              f"beats; max {max(r[0] for r in runs):.2f} s), at most {after} trials after it "
              f"(bound {IN_FLIGHT}), {share:.1%} of the validation judged")


if __name__ == "__main__":
    main()
